//! Issue 37: what others hand oio is input, never a command. Files that are not files (FIFOs,
//! devices, kernel files), results whose plans name paths elsewhere, names that would drive
//! the terminal, and inputs that would make a figure that means nothing.

use crate::common::{json_files, oio, run_json, scratch};
use serde_json::Value;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn mkfifo(p: &Path) {
    let st = std::process::Command::new("mkfifo")
        .arg(p)
        .status()
        .unwrap();
    assert!(st.success());
}

/// A FIFO with no writer, a device that never ends and a kernel file that blocks, named where
/// a file is expected: each refused at once, naming what it is, with nothing allocated for it.
#[test]
fn fifos_devices_and_kernel_files_are_refused_at_once() {
    let d = scratch();
    let fifo = d.path().join("inventory.toml");
    mkfifo(&fifo);
    let wl = d.path().join("w.toml");
    mkfifo(&wl);
    let fifo_s = fifo.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["fleet", "check", "--inventory", fifo_s], "is a FIFO"),
        (
            vec![
                "run",
                "--engine",
                "null",
                "--workload",
                wl.to_str().unwrap(),
            ],
            "is a FIFO",
        ),
        (vec!["import", "/dev/zero"], "is a character device"),
        (
            vec!["compare", "/dev/zero", "/dev/zero"],
            "is a character device",
        ),
        (vec!["rerun", "/dev/zero"], "is a character device"),
        (vec!["rerun", fifo_s], "is a FIFO"),
        (vec!["characterize", "/proc/self/status"], "procfs"),
        (
            vec!["replay", "/dev/zero", "--engine", "null"],
            "is a character device",
        ),
    ];
    for (args, says) in cases {
        let t0 = Instant::now();
        let o = oio()
            .current_dir(d.path())
            .args(&args)
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        // Refused before reading: far below the time a read of GBs (or a wait) would take.
        assert!(t0.elapsed() < Duration::from_secs(30), "{args:?}");
    }
}

/// A results directory with links to a kernel file and a FIFO: the report is written, each
/// link passed over with a notice.
#[test]
fn a_results_directory_with_links_to_kernel_files_and_fifos_is_reported() {
    let d = scratch();
    let res = d.path().join("res");
    run_json(
        d.path(),
        &[
            "run", "--engine", "null", "--time", "200ms", "--ramp", "0", "--size", "1M", "--out",
            "res", "t.dat",
        ],
    );
    std::os::unix::fs::symlink("/proc/kmsg", res.join("kmsg.json")).unwrap();
    mkfifo(&res.join("pipe.json"));
    let o = oio()
        .current_dir(d.path())
        .args(["report", "res", "-o", "r.html"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("kmsg.json"), "{err}");
    assert!(err.contains("pipe.json"), "{err}");
    assert!(d.path().join("r.html").exists());
}

/// A result edited to name a target and logs elsewhere (issue 37: `/etc/oio-from-rerun.dat`,
/// `/etc/cron.d/x_lat.1.log`, `/root/.bashrc.hlog` were created): the rerun creates no file
/// the command line does not name. The new target is refused; the logs go under --out; every
/// path written is printed. --target and --trust-plan-paths say otherwise.
#[test]
fn a_rerun_writes_only_where_its_command_line_says() {
    let d = scratch();
    let out = oio()
        .current_dir(d.path())
        .args([
            "run",
            "--engine",
            "null",
            "--rw",
            "randwrite",
            "--size",
            "1M",
            "--time",
            "200ms",
            "--ramp",
            "0",
            "--lat-log",
            "mine",
            "--hdr-log",
            "mine.hlog",
            "-q",
            "t.dat",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let file = json_files(&d.path().join("oio-results")).remove(0);
    let elsewhere = d.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let mut v: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let planted = elsewhere.join("oio-from-rerun.dat");
    v["plan"]["run"]["targets"][0]["paths"][0] = Value::from(planted.to_str().unwrap());
    v["plan"]["run"]["lat_log"] = Value::from(elsewhere.join("x").to_str().unwrap());
    v["plan"]["run"]["hdr_log"] = Value::from(elsewhere.join(".bashrc.hlog").to_str().unwrap());
    let evil = d.path().join("evil.json");
    std::fs::write(&evil, serde_json::to_string(&v).unwrap()).unwrap();
    let evil_s = evil.to_str().unwrap();

    let o = oio()
        .current_dir(d.path())
        .args(["rerun", evil_s, "--out", "again"])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("oio-from-rerun.dat', which does not exist"),
        "{err}"
    );
    assert!(err.contains("--trust-plan-paths"), "{err}");
    assert_eq!(
        std::fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "nothing created"
    );

    // The target named on the command line: the run goes ahead, its logs under --out.
    let o = oio()
        .current_dir(d.path())
        .args(["rerun", evil_s, "--out", "again", "--target", "t2.dat"])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0, "{err}");
    assert!(d.path().join("again/.bashrc.hlog").exists(), "{err}");
    assert!(d.path().join("again/x_lat.1.log").exists(), "{err}");
    assert!(err.contains("latency log: again/x"), "{err}");
    assert!(
        err.contains("HdrHistogram log: again/.bashrc.hlog"),
        "{err}"
    );
    assert!(
        err.contains("target t2.dat does not exist: it will be created (1m)"),
        "{err}"
    );

    // Trusted, the result's paths are taken as they are.
    let o = oio()
        .current_dir(d.path())
        .args(["rerun", evil_s, "--out", "again", "--trust-plan-paths"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(planted.exists());
    assert!(elsewhere.join("x_lat.1.log").exists());
}

/// `--time 0` measures nothing: refused, not a "completed" result with IOPS 0.0.
#[test]
fn a_run_of_no_time_is_refused() {
    let d = scratch();
    let o = oio()
        .current_dir(d.path())
        .args([
            "run", "--engine", "null", "--time", "0", "--size", "1M", "t.dat",
        ])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--time 0: expected a measured time above 0"),
        "{err}"
    );
    let saved = std::fs::read_dir(d.path().join("oio-results"))
        .map(|r| r.count())
        .unwrap_or(0);
    assert_eq!(saved, 0, "no result saved");
}

/// I/Os above 1 MiB on one target (issue 37: `--bs 2m` failed "stripe 1m is smaller than the
/// largest I/O"): the stripe unit follows the largest I/O unless --stripe sets it.
#[test]
fn ios_above_one_mib_run_and_the_stripe_can_be_set() {
    let d = scratch();
    let r = run_json(
        d.path(),
        &[
            "run", "--engine", "null", "--bs", "2m", "--rw", "read", "--ios", "64", "--ramp", "0",
            "--size", "64M", "t.dat",
        ],
    );
    assert_eq!(r["summary"]["total"]["ios"], 64);
    assert_eq!(r["summary"]["total"]["bytes"], 64 * (2 << 20));
    let o = oio()
        .current_dir(d.path())
        .args([
            "run", "--engine", "null", "--bs", "2m", "--stripe", "1m", "--ios", "4", "--size",
            "64M", "t.dat",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("stripe 1m is smaller than the largest I/O 2m"),
        "{}",
        stderr(&o)
    );
}

/// A file name that carries terminal controls (a title change, a screen clear, a spoofed
/// line) is printed with them escaped: nothing that came from outside drives the terminal.
#[test]
fn names_from_outside_never_reach_the_terminal_raw() {
    let d = scratch();
    let res = d.path().join("res");
    std::fs::create_dir(&res).unwrap();
    let name = "x\u{1b}]0;owned\u{7}\u{1b}[2J\roio: all good.json";
    std::fs::write(res.join(name), "not json").unwrap();
    let o = oio()
        .current_dir(d.path())
        .args(["report", "res", "-o", "r.html"])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(!err.contains('\u{1b}'), "{err:?}");
    assert!(!err.contains('\r'), "{err:?}");
    assert!(
        err.contains("x\\u{1b}]0;owned\\u{7}\\u{1b}[2J\\u{d}oio: all good.json"),
        "{err:?}"
    );
}

/// A result handed over with terminal controls in its names (workload, stream, target, host,
/// a warning): every command that reads it prints them escaped, colours forced on as on a
/// terminal, and no spoofed line starts a row. Only oio's own colour sequences reach stdout.
#[test]
fn names_inside_documents_never_reach_the_terminal_raw() {
    let d = scratch();
    let out = d.path().join("r");
    run_json(
        d.path(),
        &[
            "run",
            "--engine",
            "null",
            "--sim",
            "servers=4,service=1ms,clock=virtual",
            "--time",
            "1",
            "--ramp",
            "0",
            "--size",
            "1M",
            "t.dat",
            "--out",
            "r",
        ],
    );
    let file = json_files(&out).pop().expect("a result");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let evil = "\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}]0;pwn\u{7}\u{1b}[2J\rSPOOF\nverdict: PASS\u{9b}31m";
    let set =
        |v: &mut Value, ptr: &str| *v.pointer_mut(ptr).unwrap() = Value::from(format!("n{evil}"));
    for ptr in [
        "/workload/name",
        "/plan/run/workload/name",
        "/streams/0/name",
        "/targets/0/path",
        "/host/hostname",
        "/warnings/0",
    ] {
        set(&mut v, ptr);
    }
    let hostile = d.path().join("hostile.json");
    std::fs::write(&hostile, serde_json::to_vec(&v).unwrap()).unwrap();
    let h = hostile.to_str().unwrap();
    for args in [
        vec!["import", h, "-o", "imported.json"],
        vec!["compare", h, h],
        vec!["diagnose", "--all", h],
        vec!["report", h, "-o", "r.html"],
        vec!["rerun", h, "--out", "again", "--target", "t.dat"],
    ] {
        let o = oio()
            .current_dir(d.path())
            .env("CLICOLOR_FORCE", "1")
            .args(&args)
            .output()
            .unwrap();
        for (stream, text) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
            let text = String::from_utf8_lossy(text);
            // ESC only as the start of an SGR colour sequence (ESC [ digits ; ... m).
            let mut rest = text.as_ref();
            while let Some(i) = rest.find('\u{1b}') {
                rest = &rest[i + 1..];
                let params: String = rest
                    .chars()
                    .skip(1)
                    .take_while(|c| c.is_ascii_digit() || *c == ';')
                    .collect();
                let sgr = rest.starts_with('[') && rest[1 + params.len()..].starts_with('m');
                assert!(
                    sgr,
                    "oio {args:?}: {stream} has a raw control sequence: {text:?}"
                );
            }
            for c in ['\u{7}', '\r', '\u{9b}'] {
                assert!(
                    !text.contains(c),
                    "oio {args:?}: {stream} has {c:?}: {text:?}"
                );
            }
            assert!(
                !text.lines().any(|l| l.starts_with("verdict")),
                "oio {args:?}: {stream} has a spoofed line: {text}"
            );
        }
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("SPOOF")
                || String::from_utf8_lossy(&o.stderr).contains("SPOOF")
                || !matches!(args[0], "import" | "rerun"),
            "oio {args:?} printed the name, escaped: {}",
            String::from_utf8_lossy(&o.stdout)
        );
    }
}

/// A TPC-C build that the filesystem cannot hold is refused before anything is written, and
/// warehouse counts beyond any schema are refused by the parser (they aborted on allocation).
#[test]
fn tpcc_builds_beyond_the_disk_or_any_schema_are_refused_before_writing() {
    let d = scratch();
    let o = oio()
        .current_dir(d.path())
        .args(["tpcc", "build", "--db", "sqlite:big.db", "-W", "100000"])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--warehouses 100000 needs about"), "{err}");
    assert!(!d.path().join("big.db").exists(), "nothing written");
    for w in ["100001", "4294967295"] {
        let o = oio()
            .current_dir(d.path())
            .args(["tpcc", "build", "--db", "sqlite:big.db", "-W", w])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("100000"), "{}", stderr(&o));
    }
    let o = oio()
        .current_dir(d.path())
        .args([
            "tpcc",
            "run",
            "--db",
            "sqlite:big.db",
            "--repeat",
            "4294967295",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// A trace larger than the memory oio may take (issue 37: a 10 M-line iolog aborted under
/// `ulimit -v 512M`): refused as it is read, naming the limit, not killed by the allocator.
#[test]
fn a_trace_beyond_the_memory_budget_is_refused_while_it_is_read() {
    use std::io::Write;
    let d = scratch();
    let trace = d.path().join("big.iolog");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&trace).unwrap());
    writeln!(f, "fio version 2 iolog\nt.dat add\nt.dat open").unwrap();
    // 3 M I/Os: 96 MB kept with their vector's slack, above the budget under a 320 MiB
    // address space (three quarters of what is left once the binary is loaded).
    for i in 0..3_000_000u64 {
        writeln!(f, "t.dat read {} 4096", (i * 4096) % (1 << 30)).unwrap();
    }
    writeln!(f, "t.dat close").unwrap();
    drop(f);
    let bin = assert_cmd::cargo::cargo_bin("oio");
    let o = std::process::Command::new("sh")
        .current_dir(d.path())
        .arg("-c")
        .arg(format!(
            "ulimit -v 327680; exec '{}' replay big.iolog --engine null",
            bin.display()
        ))
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("more than fit in the memory oio may take here"),
        "{err}"
    );
    assert!(err.contains("ulimit -v"), "{err}");
}

/// A blkparse trace larger than the memory oio may take is refused as it is read, naming the
/// line and the limit, whether its I/Os are issued (`Q`, `D`, `C` each) or only queued (a
/// filtered trace of `Q` events, which once grew a map the budget did not count and aborted
/// under `ulimit -v`).
#[test]
fn a_blkparse_trace_beyond_the_memory_budget_is_refused_while_it_is_read() {
    use std::io::Write;
    let d = scratch();
    // Each queued entry costs less than an issued I/O: more of them.
    for (name, actions, n) in [
        ("issued.blk", &["Q", "D", "C"][..], 300_000u64),
        ("queued.blk", &["Q"][..], 900_000),
    ] {
        let mut f = std::io::BufWriter::new(std::fs::File::create(d.path().join(name)).unwrap());
        let mut seq = 0;
        for i in 0..n {
            let sector = (i * 16) % (1 << 30);
            for (k, a) in actions.iter().enumerate() {
                seq += 1;
                let t = i as f64 * 0.0002 + k as f64 * 0.00005;
                writeln!(
                    f,
                    "  8,0    0 {seq} {t:.9}  4162  {a}  RS {sector} + 16 [postgres]"
                )
                .unwrap();
            }
        }
        drop(f);
        let bin = assert_cmd::cargo::cargo_bin("oio");
        // 280 MiB of address space: about 100 MiB left once the binary is loaded, so the
        // budget (three quarters of it) holds fewer I/Os than the trace has.
        let o = std::process::Command::new("sh")
            .current_dir(d.path())
            .arg("-c")
            .arg(format!(
                "ulimit -v 286720; exec '{}' characterize {name} -o out.json",
                bin.display()
            ))
            .output()
            .unwrap();
        let err = stderr(&o);
        assert!(
            err.contains(&format!("{name}:"))
                && err.contains("split the trace")
                && err.contains("ulimit -v"),
            "{name}: {err}"
        );
        assert!(
            !d.path().join("out.json").exists(),
            "{name}: nothing written"
        );
    }
}
