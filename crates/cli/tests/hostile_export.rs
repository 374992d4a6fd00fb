//! `oio export` with hostile workload files: names, descriptions and roles that try to add
//! options, sections, files or commands to fio, diskspd and vdbench output. The fio job is
//! read back by the real fio (`--parse-only`, `--showcmd`).

use crate::common::{missing, oio, scratch};
use std::path::Path;
use std::process::{Command, Stdio};

/// TOML basic-string escapes for any text (TOML itself refuses raw control characters).
fn toml_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

const NAMES: &[&str] = &[
    "s]\nfilename=/dev/vdz\nrw=randwrite\n[t",
    "global",
    "[global]\nfilename=/dev/vdz",
    "a;filename=/dev/vdz#c",
    "x & calc.exe | del /q C:\\ > nul",
    "%COMSPEC% /c calc %~",
    "\"quoted\" and 'single'",
    "$(touch /tmp/oio-pwned) `id` ${HOME}",
    "cr\rfilename=/dev/vdz",
    "nul\u{0}filename=/dev/vdz",
    "日本語\u{2028}filename=/dev/vdz",
    "include /etc/passwd",
    "main",
];

fn hostile_workload(dir: &Path) -> std::path::PathBuf {
    let long = format!("{}\nfilename=/dev/vdz\n[x]", "a".repeat(9000));
    let mut t = format!(
        "name = {}\ndescription = {}\n",
        toml_str("w\n[evil]\nfilename=/dev/vdz\nstart_cmd=calc"),
        toml_str(&format!(
            "d\r\n[evil]\nfilename=/dev/vdz %PATH% {}",
            "y".repeat(9000)
        ))
    );
    for n in NAMES.iter().copied().chain([long.as_str()]) {
        t.push_str(&format!(
            "[[stream]]\nname = {}\ntarget = {}\nread_pct = 30\nbs = \"4k\"\noutstanding = 2\n",
            toml_str(n),
            toml_str("log\nfilename=/dev/vdz")
        ));
    }
    let p = dir.join("hostile.toml");
    std::fs::write(&p, t).unwrap();
    p
}

fn export(dir: &Path, tool: &str, target: &str) -> (bool, String, String) {
    let out = oio()
        .current_dir(dir)
        .args([
            "export",
            "hostile.toml",
            "--to",
            tool,
            &format!("--target={target}"),
            "--size",
            "1m",
            "--time",
            "1s",
        ])
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn have_fio() -> bool {
    Command::new("fio")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn fio_reads_one_job_per_stream_and_only_the_intended_file() {
    let d = scratch();
    hostile_workload(d.path());
    let (ok, job, err) = export(d.path(), "fio", "data.bin");
    assert!(ok, "{err}");
    std::fs::write(d.path().join("job.fio"), &job).unwrap();
    if !have_fio() {
        missing("fio (scripts/test installs it)");
        return;
    }
    let parse = Command::new("fio")
        .current_dir(d.path())
        .args(["--parse-only", "job.fio"])
        .output()
        .unwrap();
    assert!(
        parse.status.success(),
        "fio --parse-only: {}{}",
        String::from_utf8_lossy(&parse.stdout),
        String::from_utf8_lossy(&parse.stderr)
    );
    let show = Command::new("fio")
        .current_dir(d.path())
        .args(["--showcmd", "job.fio"])
        .output()
        .unwrap();
    assert!(show.status.success());
    let cmd = String::from_utf8_lossy(&show.stdout);
    let args: Vec<&str> = cmd.split_whitespace().collect();
    let jobs = args.iter().filter(|a| a.starts_with("--name=")).count();
    assert_eq!(jobs, NAMES.len() + 1, "{cmd}");
    // Only the options the exporter writes, and one file: data.bin.
    let allowed = [
        "size",
        "ioengine",
        "direct",
        "time_based",
        "runtime",
        "norandommap",
        "randrepeat",
        "filename",
        "name",
        "rw",
        "rwmixread",
        "bssplit",
        "iodepth",
        // Each stream one reporting group, so fio's output has one record per stream.
        "group_reporting",
        "new_group",
    ];
    for a in &args[1..] {
        // `--key=value`, or `--new_group` alone.
        let key = a
            .strip_prefix("--")
            .map(|a| a.split_once('=').map_or(a, |(k, _)| k));
        assert!(
            key.is_some_and(|k| allowed.contains(&k)),
            "fio sees {a:?}: {cmd}"
        );
        if key == Some("filename") {
            assert_eq!(*a, "--filename=data.bin", "{cmd}");
        }
    }
    assert_eq!(
        args.iter().filter(|a| a.starts_with("--filename=")).count(),
        1,
        "one global section: {cmd}"
    );
    // Names are kept where they are safe.
    assert!(args.contains(&"--name=main"), "{cmd}");
}

#[test]
fn diskspd_and_vdbench_carry_names_only_in_inert_comments() {
    let d = scratch();
    hostile_workload(d.path());
    let (ok, cmd, err) = export(d.path(), "diskspd", "D:\\oio test.dat");
    assert!(ok, "{err}");
    let mut commands = 0;
    for line in cmd.lines() {
        if let Some(rem) = line.strip_prefix("REM ") {
            let rest = rem.replace("%%", "");
            assert!(
                !rest.contains(['%', '^', '&', '|', '<', '>', '"', '!', '`', '$', '\r', '\0']),
                "{line:?}"
            );
        } else {
            // The target made once (its output to nul), then every stream together: all but
            // the last started in the background, each into its own numbered output file.
            let (cmd, quotes) = match line.strip_prefix("start \"\" /b ") {
                Some(rest) => (rest, 4),
                None => (line, 2),
            };
            assert!(cmd.starts_with("diskspd.exe "), "{line:?}");
            let tail = if commands == 0 {
                " \"D:\\oio test.dat\" > nul".to_string()
            } else {
                format!(" -D \"D:\\oio test.dat\" > oio-stream-{commands}.txt")
            };
            assert!(cmd.ends_with(&tail), "{line:?}");
            assert_eq!(line.matches('"').count(), quotes, "{line:?}");
            commands += 1;
        }
    }
    assert_eq!(commands, NAMES.len() + 2);

    let (ok, v, err) = export(d.path(), "vdbench", "/dev/oio-test");
    assert!(ok, "{err}");
    let defs: Vec<&str> = v.lines().filter(|l| !l.starts_with("* ")).collect();
    assert_eq!(defs.iter().filter(|l| l.starts_with("sd=")).count(), 1);
    assert_eq!(
        defs.iter().filter(|l| l.starts_with("wd=")).count(),
        2 * (NAMES.len() + 1)
    );
    assert_eq!(defs.iter().filter(|l| l.starts_with("rd=")).count(), 1);
    assert_eq!(defs.len(), 2 + 2 * (NAMES.len() + 1), "{v}");
    // Each definition has exactly the parameters the exporter writes.
    for l in &defs {
        let keys: Vec<&str> = l
            .split(',')
            .map(|kv| kv.split_once('=').map_or(kv, |(k, _)| k))
            .collect();
        let want: &[&str] = match keys[0] {
            "sd" => &["sd", "lun", "size", "openflags"],
            "wd" => &["wd", "sd", "rdpct", "xfersize", "seekpct", "skew"],
            "rd" => &["rd", "wd", "iorate", "elapsed", "interval", "threads"],
            _ => panic!("{l}"),
        };
        assert_eq!(keys, want, "{l}");
        let name = l.split(',').next().unwrap().split_once('=').unwrap().1;
        assert!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "{l}"
        );
    }
}

#[test]
fn targets_that_would_inject_are_refused_naming_the_field() {
    let d = scratch();
    hostile_workload(d.path());
    for (tool, target) in [
        ("fio", "data.bin\nfilename=/dev/vdz"),
        ("fio", "data.bin;x"),
        ("fio", "${HOME}/x"),
        ("diskspd", "a\" & calc & \""),
        ("diskspd", "%TEMP%\\x"),
        ("diskspd", "-w100"),
        ("vdbench", "/tmp/x,openflags=o_sync"),
        ("vdbench", "/tmp/x\nrd=evil"),
    ] {
        let (ok, out, err) = export(d.path(), tool, target);
        assert!(!ok, "{tool} {target:?} exported: {out}");
        assert!(out.is_empty(), "{out}");
        assert!(
            err.contains("cannot export to") && err.contains("target path"),
            "{err}"
        );
    }
}
