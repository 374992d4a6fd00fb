//! The words and conventions a user meets: help snapshots, no internal wording, no escape
//! codes in a pipe, shell completions, the manual page, `--version`, `--quiet`.

use crate::common::{missing, oio, scratch};
use clap::CommandFactory;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Every command path, `[]` for `oio` itself, then `["run"]`, `["tpcc", "build"]`, …
fn command_paths() -> Vec<Vec<String>> {
    fn walk(cmd: &clap::Command, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
        out.push(prefix.clone());
        for sub in cmd.get_subcommands() {
            if sub.get_name() == "help" {
                continue;
            }
            let mut p = prefix.clone();
            p.push(sub.get_name().to_string());
            walk(sub, p, out);
        }
    }
    let mut cmd = oio::Cli::command();
    cmd.build();
    let mut out = Vec::new();
    walk(&cmd, Vec::new(), &mut out);
    out
}

/// `oio PATH --help` at a fixed width, without colour, as a user reads it in a pipe.
fn help(path: &[String]) -> String {
    let out = oio()
        .args(path)
        .arg("--help")
        .env("COLUMNS", "100")
        .output()
        .expect("oio runs");
    assert!(out.status.success(), "oio {path:?} --help failed");
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../telemetry/tests/fixtures")
        .join(name)
}

#[test]
fn clap_definitions_are_consistent() {
    oio::Cli::command().debug_assert();
}

#[test]
fn help_of_every_command_matches_its_snapshot() {
    let paths = command_paths();
    // Completions and man are among them: a command added later gets a snapshot too.
    assert!(paths.len() > 12, "{paths:?}");
    for path in paths {
        let name = if path.is_empty() {
            "help-oio".to_string()
        } else {
            format!("help-oio-{}", path.join("-"))
        };
        insta::assert_snapshot!(name, help(&path));
    }
}

/// "seed" is how the project's source documents are called; users never saw them. The one
/// use left is the random-number seed (`--seed`, "random-number seed"): taken out first.
fn internal_wording(text: &str) -> Option<String> {
    let lower = text.to_lowercase();
    let cleaned = lower
        .replace("--seed", "")
        .replace("random-number seed", "");
    cleaned.find("seed").map(|at| {
        let from = cleaned[..at].rfind('\n').map_or(0, |n| n + 1);
        let to = cleaned[at..].find('\n').map_or(cleaned.len(), |n| at + n);
        cleaned[from..to].to_string()
    })
}

#[test]
fn the_word_seed_is_only_the_random_number_seed() {
    // The check itself: it finds the wording this test exists to keep out.
    assert!(internal_wording("--busy-queue <N>  seed 002's busy filter").is_some());
    assert!(internal_wording("--seed <N>  Random-number seed for offsets").is_none());

    let mut texts: Vec<(String, String)> = Vec::new();
    for path in command_paths() {
        texts.push((format!("oio {} --help", path.join(" ")), help(&path)));
    }
    let out = oio().arg("profiles").output().unwrap();
    let list = String::from_utf8_lossy(&out.stdout).into_owned();
    texts.push(("oio profiles".into(), list.clone()));
    for name in oio_core::profiles::names() {
        let out = oio().args(["profiles", name]).output().unwrap();
        assert!(out.status.success());
        texts.push((
            format!("oio profiles {name}"),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        ));
        let w = oio_core::profiles::profile(name).expect("a built-in profile");
        texts.push((format!("profile {name} description"), w.description));
    }
    let out = oio().arg("man").output().unwrap();
    texts.push((
        "oio man".into(),
        String::from_utf8_lossy(&out.stdout).into(),
    ));
    // A message: the error for a profile that does not exist lists the profiles.
    let out = oio().args(["run", "--profile", "nope"]).output().unwrap();
    texts.push((
        "oio run --profile nope".into(),
        String::from_utf8_lossy(&out.stderr).into(),
    ));
    for (what, text) in &texts {
        assert!(!text.is_empty(), "{what} printed nothing");
        if let Some(line) = internal_wording(text) {
            panic!("{what} says \"seed\" (internal wording): {line}");
        }
    }
}

/// Runs oio the way a user's pipe does: colour left to the auto policy (no NO_COLOR), a
/// terminal type that supports colour, stdout a pipe.
fn piped(dir: &Path, args: &[&str]) -> std::process::Output {
    let out = oio()
        .current_dir(dir)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env("TERM", "xterm-256color")
        .args(args)
        .output()
        .expect("oio runs");
    assert!(
        out.status.success(),
        "oio {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn has_escape(bytes: &[u8]) -> bool {
    bytes.windows(2).any(|w| w == b"\x1b[")
}

#[test]
fn stdout_of_every_printing_command_is_free_of_escape_codes_in_a_pipe() {
    let dir = scratch();
    let d = dir.path();
    std::fs::copy(
        fixture("fio_3_33_jsonplus_randrw70_bssplit.json"),
        d.join("fio.json"),
    )
    .unwrap();
    let record = fixture("capture_loop0_fio_randrw70/oio_record.json");
    let record = record.to_str().unwrap();
    let null_run = [
        "--engine", "null", "--time", "1s", "--ramp", "0", "--size", "1M",
    ];
    let mut cases: Vec<Vec<&str>> = vec![
        vec!["--help"],
        vec!["run", "--help"],
        vec!["profiles"],
        vec!["profiles", "tempdb"],
        vec!["export", "tempdb", "--to", "fio"],
        vec!["export", "tempdb", "--to", "diskspd"],
        vec!["import", "fio.json"],
        vec!["characterize", record],
        vec!["completions", "bash"],
        vec!["man"],
        vec!["--version"],
    ];
    let mut run_a = vec!["run", "--rw", "randrw", "t.dat", "--out", "a"];
    run_a.extend(null_run);
    let mut run_b = vec!["run", "--rw", "randrw", "t.dat", "--out", "b"];
    run_b.extend(null_run);
    let mut open = vec![
        "run", "--rw", "randrw", "--rate", "2000", "t.dat", "--out", "o",
    ];
    open.extend(null_run);
    let mut blend = vec!["blend", "--streams", "2", "b.dat", "--out", "bl"];
    blend.extend(null_run);
    let mut sweep = vec![
        "sweep",
        "randread",
        "--sim",
        "servers=4,service=100us",
        "--qd",
        "1,2",
        "s.dat",
        "--out",
        "sw",
    ];
    sweep.extend(null_run.iter().skip(2).copied());
    cases.extend([run_a, run_b, open, blend, sweep]);
    cases.push(vec!["compare", "a", "b"]);
    cases.push(vec!["report", "a", "-o", "r.html"]);

    for args in &cases {
        let out = piped(d, args);
        assert!(
            !has_escape(&out.stdout),
            "oio {args:?} wrote escape codes into a pipe: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    // The check can fail: asked for colour, the same summary has escape codes.
    let out = piped(d, &["import", "fio.json", "--color", "always"]);
    assert!(has_escape(&out.stdout), "--color always did not colour");
}

#[test]
fn bash_loads_the_completions() {
    if Command::new("bash").arg("--version").output().is_err() {
        missing("bash");
        return;
    }
    let bin = assert_cmd::cargo::cargo_bin("oio");
    let dir = bin.parent().unwrap();
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .env("PATH", path)
        .args(["-c", "source <(oio completions bash) && complete -p oio"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("oio"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The other shells' scripts are generated and name the commands.
    for shell in ["zsh", "fish", "powershell", "elvish"] {
        let out = oio().args(["completions", shell]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{shell}");
        assert!(
            text.contains("characterize") && text.contains("busy-queue"),
            "{shell}: {text}"
        );
    }
    let out = oio().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );
}

/// Renders roff with groff as man does (UTF-8 input through preconv, -k), warnings on: nothing on stderr, the page's text on stdout.
fn render_roff(page: &[u8]) -> Option<String> {
    let mut child = Command::new("groff")
        .args(["-k", "-man", "-Tutf8", "-ww", "-P-cbou"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    use std::io::Write;
    child.stdin.take().unwrap().write_all(page).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "groff warns: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn the_manual_page_renders() {
    let out = oio().arg("man").output().unwrap();
    assert!(out.status.success());
    assert!(out.stdout.starts_with(b".ie"), "not roff");
    let Some(text) = render_roff(&out.stdout) else {
        missing("groff (Debian package groff-base)");
        return;
    };
    for want in ["NAME", "SYNOPSIS", "--quiet", "oio-run(1)", "characterize"] {
        // groff may hyphenate with U+2010; compare on the plain ASCII words.
        assert!(
            text.replace('\u{2010}', "-").contains(want),
            "{want} not in the page: {text}"
        );
    }
    let out = oio().args(["man", "run"]).output().unwrap();
    assert!(out.status.success());
    let text = render_roff(&out.stdout).unwrap();
    assert!(text.contains("oio-run") && text.contains("--qd"), "{text}");

    let out = oio().args(["man", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected one of: run, blend"));

    // And through man itself, as the help of `oio man` says.
    if Command::new("man").arg("--version").output().is_err() {
        missing("man (Debian package man-db)");
        return;
    }
    let page = oio().arg("man").output().unwrap().stdout;
    let mut child = Command::new("man")
        .args(["-l", "-"])
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "80")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(&page).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("SUBCOMMANDS"));
}

#[test]
fn version_names_the_commit() {
    let out = oio().arg("--version").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        text.starts_with(&format!("oio {version} (commit ")) && text.ends_with(')'),
        "{text}"
    );
    let head = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    match head {
        Ok(h) if h.status.success() => {
            let h = String::from_utf8_lossy(&h.stdout).trim().to_string();
            assert!(text.contains(&h), "{text} is not built from HEAD {h}");
        }
        _ => missing("git and the repository (the commit is then \"unknown\")"),
    }
}

#[test]
fn quiet_leaves_only_the_result_path() {
    let dir = scratch();
    let d = dir.path();
    let args = [
        "run", "--rw", "randrw", "--engine", "null", "--time", "1s", "--ramp", "0", "--size", "1M",
        "t.dat", "-q",
    ];
    let out = piped(d, &args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    assert!(d.join(lines[0]).is_file(), "{stdout} is not the result");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // With --json: the JSON on stdout, the path alone on stderr.
    let json_args = [
        "--quiet", "run", "--json", "--engine", "null", "--time", "1s", "--ramp", "0", "--size",
        "1M", "t.dat",
    ];
    let out = piped(d, &json_args);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert!(v["summary"].is_object());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(d.join(lines[0]).is_file(), "{stderr}");
    // Errors still show.
    let out = oio()
        .args(["-q", "run", "--profile", "nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no built-in profile 'nope'"));
    // Without -q the same run prints its summary.
    let out = piped(d, &args[..args.len() - 1]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("IOPS"));
}

#[test]
fn open_loop_summary_rows_line_up_with_the_columns() {
    let dir = scratch();
    let out = piped(
        dir.path(),
        &[
            "run", "--rw", "randrw", "--rate", "2000", "--engine", "null", "--time", "1s",
            "--ramp", "0", "--size", "1M", "t.dat",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let header = text
        .lines()
        .find(|l| l.contains("IOPS") && l.contains("p99.9"))
        .unwrap_or_else(|| panic!("no table: {text}"));
    let width = header.chars().count();
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| {
            let name = l.split_whitespace().next().unwrap_or("");
            [
                "read",
                "write",
                "total",
                "read·svc",
                "write·svc",
                "total·svc",
                "read·lag",
                "write·lag",
                "total·lag",
            ]
            .contains(&name)
        })
        .collect();
    assert!(rows.iter().any(|r| r.contains("·svc")), "{text}");
    assert!(rows.iter().any(|r| r.contains("·lag")), "{text}");
    for r in rows {
        // Numbers are right-aligned under right-aligned headings: same width, same ends.
        assert_eq!(r.chars().count(), width, "out of line:\n{header}\n{r}");
    }
}

#[test]
fn characterize_of_a_recording_names_it_and_uses_one_size_style() {
    let record = fixture("capture_loop0_fio_randrw70/oio_record.json");
    let out = oio().arg("characterize").arg(&record).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next().unwrap();
    assert!(first.starts_with(record.to_str().unwrap()), "{first}");
    assert!(!text.contains("from  ("), "an empty file name: {text}");
    for row in text
        .lines()
        .filter(|l| l.starts_with("read ") || l.starts_with("write "))
    {
        // `34.0 KiB` (mean size) and `32.0 KiB 100%` (sizes): no bare byte counts, no `32k`.
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert!(matches!(cols[6], "B" | "KiB" | "MiB"), "{row}");
        assert!(matches!(cols[9], "B" | "KiB" | "MiB"), "{row}");
    }
}

#[test]
fn quiet_commands_print_only_their_result_paths_on_stdout() {
    let dir = scratch();
    let d = dir.path();
    let run = "--engine null --time 1s --ramp 0 --size 1M t.dat";
    let (a, b) = (
        format!("--rw randread {run}"),
        format!("--rw randwrite {run}"),
    );
    let rest = [
        "--engine", "null", "--time", "1s", "--ramp", "0", "--size", "1M", "t.dat", "-q",
    ];
    let repeat: Vec<&str> = ["run", "--repeat", "2", "--rw", "randread"]
        .into_iter()
        .chain(rest)
        .collect();
    let sweep: Vec<&str> = ["sweep", "randread", "--qd", "1,2"]
        .into_iter()
        .chain(rest)
        .collect();
    let compare = vec!["compare", "--run", &a, "--run", &b, "--repeat", "2", "-q"];
    // TPC-C on SQLite: a build, a worker sequence (two results and the series) and a fleet of
    // two local agents.
    let db = format!("sqlite:{}", d.join("q.db").display());
    let build = vec!["tpcc", "build", "--db", &db, "-W", "1", "-q"];
    let tpcc = vec![
        "tpcc",
        "run",
        "--db",
        &db,
        "--workers",
        "1,2",
        "--time",
        "1s",
        "--ramp",
        "0s",
        "-q",
    ];
    let launcher = format!(
        "{} agent --stdio",
        assert_cmd::cargo::cargo_bin("oio").display()
    );
    // Both local agents use the same t.dat: reads share it (two writers would not: one run
    // writes to a target at a time).
    let fleet: Vec<&str> = [
        "fleet",
        "run",
        "--hosts",
        "h1,h2",
        "--launcher",
        &launcher,
        "--rw",
        "randread",
    ]
    .into_iter()
    .chain(rest)
    .collect();
    for (args, paths) in [
        (repeat, 2),
        (sweep, 3),
        (compare, 4),
        (build, 1),
        (tpcc, 3),
        (fleet, 1),
    ] {
        let out = piped(d, &args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(stdout.lines().count(), paths, "{args:?}: {stdout}");
        for line in stdout.lines() {
            assert!(
                d.join(line).is_file(),
                "{args:?}: '{line}' is not a result file"
            );
        }
        assert!(
            out.stderr.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The long options of the subcommand at `path` (`["fleet", "tpcc", "run"]`).
fn long_options(path: &[&str]) -> std::collections::BTreeSet<String> {
    let mut cmd = oio::Cli::command();
    cmd.build();
    let mut c = &cmd;
    for p in path {
        c = c
            .get_subcommands()
            .find(|s| s.get_name() == *p)
            .unwrap_or_else(|| panic!("no subcommand {p} in {path:?}"));
    }
    c.get_arguments()
        .filter_map(|a| a.get_long().map(str::to_string))
        .collect()
}

/// One plan per domain (issue 36): every option of `oio tpcc run` is taken by `oio fleet tpcc
/// run` and `scale` by construction (one flag group), so none can be silently defaulted on
/// the hosts.
#[test]
fn every_tpcc_run_option_is_taken_by_the_fleet() {
    let single = long_options(&["tpcc", "run"]);
    assert!(single.len() > 25, "{single:?}");
    for fleet in [
        &["fleet", "tpcc", "run"][..],
        &["fleet", "tpcc", "scale"][..],
    ] {
        let theirs = long_options(fleet);
        let missing: Vec<_> = single.difference(&theirs).collect();
        assert!(missing.is_empty(), "{fleet:?} lacks {missing:?}");
    }
}

/// `oio fleet sql run` takes every option of `oio sql run` (one flag group, the same
/// `SqlRunArgs`), so none can be silently defaulted on the hosts. Exceptions, each with why.
#[test]
fn every_sql_run_option_is_taken_by_the_fleet_sql_run() {
    // --repeat: a fleet run is one step on every host (repeat the fleet run for repeats).
    let exceptions = ["repeat"];
    let single = long_options(&["sql", "run"]);
    assert!(single.len() > 20, "{single:?}");
    let fleet = long_options(&["fleet", "sql", "run"]);
    let missing: Vec<_> = single
        .difference(&fleet)
        .filter(|o| !exceptions.contains(&o.as_str()))
        .collect();
    assert!(missing.is_empty(), "fleet sql run lacks {missing:?}");
    for e in exceptions {
        assert!(
            single.contains(e),
            "the exception --{e} is no option of oio sql run"
        );
    }
}

/// `oio fleet sweep` takes every option of `oio sweep` (one flag group for the sweep's rules,
/// `crate::sweep_args`), so a fleet sweep is the same experiment with its runs elsewhere.
#[test]
fn every_sweep_option_is_taken_by_the_fleet_sweep() {
    let single = long_options(&["sweep"]);
    assert!(single.len() > 30, "{single:?}");
    let fleet = long_options(&["fleet", "sweep"]);
    let missing: Vec<_> = single.difference(&fleet).collect();
    assert!(missing.is_empty(), "fleet sweep lacks {missing:?}");
}

/// `oio fleet run` takes every option of `oio run` (the same flag groups and `--record-device`).
#[test]
fn every_run_option_is_taken_by_the_fleet_run() {
    let single = long_options(&["run"]);
    assert!(single.len() > 30, "{single:?}");
    let fleet = long_options(&["fleet", "run"]);
    let missing: Vec<_> = single.difference(&fleet).collect();
    assert!(missing.is_empty(), "fleet run lacks {missing:?}");
}

/// Human-readable text reaches the terminal one way, through `output::terminal` (which
/// escapes any control a name from outside would carry): no command opens anstream's stdout or
/// stderr, or prints with the print macros, by itself. Machine output (JSON, exported files,
/// the agent protocol) goes to `std::io::stdout()` and is not matched here.
#[test]
fn human_text_reaches_the_terminal_through_one_filter() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    // The filter itself, the one colour policy, and the fleet's tables (their names escaped one
    // by one with `printable`).
    let allowed = ["output/terminal.rs", "output/style.rs", "output/fleet.rs"];
    let mut stack = vec![src.clone()];
    let mut offenders = Vec::new();
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let rel = p.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
            if allowed.contains(&rel.as_str()) || p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                let hit = [
                    "anstream::stdout()",
                    "anstream::stderr()",
                    "println!",
                    "eprintln!",
                    "print!(",
                    "eprint!(",
                ]
                .iter()
                .any(|m| code.contains(m));
                if hit {
                    offenders.push(format!("{rel}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "print through crate::output::terminal:\n{}",
        offenders.join("\n")
    );
}
