//! Memory (issue 22, items 11-13): every plan's memory is estimated before it starts and a
//! plan above the limit (a share of the host's memory and of its cgroup's and address-space
//! limits, or `--memory-limit`) is refused with the estimate, the limit and what to change —
//! never an allocation that aborts the process halfway (exit 134, no result). Each case runs
//! the binary under an address-space cap (`prlimit --as`), as the issue ran them.

use crate::common::{missing, oio, scratch, tpcc_build_one_warehouse};
use std::path::Path;
use std::time::{Duration, Instant};

const GIB: u64 = 1 << 30;

/// Runs oio in `dir` under an address-space cap of `cap` bytes; returns (exit code, stderr,
/// how long it took). None when prlimit is missing (the test then says it was skipped).
fn capped(dir: &Path, cap: u64, args: &[&str]) -> Option<(i32, String, Duration)> {
    if std::process::Command::new("prlimit")
        .arg("--version")
        .output()
        .is_err()
    {
        missing("prlimit (util-linux)");
        return None;
    }
    let t = Instant::now();
    let out = std::process::Command::new("prlimit")
        .arg(format!("--as={cap}"))
        .arg("--")
        .arg(assert_cmd::cargo::cargo_bin("oio"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("prlimit runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    // A signal (an abort on a failed allocation) has no exit code.
    let code = out
        .status
        .code()
        .unwrap_or_else(|| panic!("oio {args:?} was killed by a signal: {out:?}"));
    assert_ne!(code, 101, "oio {args:?} panicked: {err}");
    Some((code, err, t.elapsed()))
}

/// A refusal: exit 2, before anything ran (within seconds, nothing created).
fn refused(dir: &Path, cap: u64, args: &[&str]) -> Option<String> {
    let (code, err, took) = capped(dir, cap, args)?;
    assert_eq!(code, 2, "oio {args:?}: {err}");
    assert!(
        err.contains("in memory, more than the limit of") && err.contains("so it was not started"),
        "the estimate and the limit are said: {err}"
    );
    assert!(
        err.contains("give a larger --memory-limit"),
        "the way around is said: {err}"
    );
    // The refusal comes before any allocation or I/O: a debug build answers in milliseconds;
    // 20 s leaves a busy machine room.
    assert!(took < Duration::from_secs(20), "took {took:?}: {err}");
    assert!(!dir.join("t.dat").exists(), "no target was created");
    Some(err)
}

#[test]
fn an_interval_below_the_shortest_is_refused_naming_the_value() {
    let d = scratch();
    // `--interval 0` used to become 1 ms silently.
    for (iv, said) in [("0", "--interval 0s"), ("500us", "--interval 500us")] {
        let out = oio()
            .current_dir(d.path())
            .args(["run", "--engine", "null", "--size", "1m", "--time", "1s"])
            .args(["--interval", iv, "t.dat"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("{said}: expected 1ms or longer")),
            "{err}"
        );
    }
    // TPC-C's drain used to make it 50 ms.
    let out = oio()
        .current_dir(d.path())
        .args(["tpcc", "run", "--db", "sqlite:none.db", "--interval", "0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--interval 0s: expected 50 ms or longer"),
        "{err}"
    );
    assert!(!d.path().join("t.dat").exists() && !d.path().join("none.db").exists());
}

/// Item 11: `--interval 1ms` kept a record per interval without bound; `--time 4m` aborted at
/// 2 min under a 4 GB cap and the old cap of 1,000,000 intervals allowed ~30 GB.
#[test]
fn a_series_too_long_for_memory_is_refused_with_an_interval_that_fits() {
    let d = scratch();
    let run = |time: &str| {
        [
            "run",
            "--engine",
            "null",
            "--size",
            "1m",
            "--ramp",
            "0",
            "--interval",
            "1ms",
            "--time",
            time,
            "t.dat",
        ]
        .map(String::from)
    };
    let args = run("2h");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let Some(err) = refused(d.path(), 4 * GIB, &args) else {
        return;
    };
    assert!(
        err.contains("the series: --interval 1ms for 2h keeps 7,200,001 intervals"),
        "{err}"
    );
    assert!(err.contains("75 % of the"), "the cap is the limit: {err}");
    assert!(err.contains("use --interval 100ms or longer"), "{err}");
    // The 4 minutes under a tighter cap, and under --memory-limit.
    let args = run("4m");
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    let err = refused(d.path(), GIB, &args).unwrap();
    assert!(err.contains("240,001 intervals"), "{err}");
    assert!(err.contains("use --interval 10ms or longer"), "{err}");
    args.extend(["--memory-limit", "64M"]);
    let err = refused(d.path(), 4 * GIB, &args).unwrap();
    assert!(
        err.contains("the limit of 64.0 MiB (--memory-limit)"),
        "{err}"
    );
    assert!(err.contains("use --interval 100ms or longer"), "{err}");
}

/// What fits runs to its end under the cap: 1 ms intervals on the virtual clock (a second's
/// worth of them waits for late workers, the rest are merged as they close).
#[test]
fn a_series_that_fits_runs_to_its_end_under_the_cap() {
    let d = scratch();
    let Some((code, err, _)) = capped(
        d.path(),
        GIB,
        &[
            "run",
            "--engine",
            "null",
            "--sim",
            "servers=2,service=1ms,clock=virtual",
            "--qd",
            "4",
            "--size",
            "1m",
            "--ramp",
            "0",
            "--interval",
            "1ms",
            "--time",
            "2s",
            "--json",
            "t.dat",
        ],
    ) else {
        return;
    };
    assert_eq!(code, 0, "{err}");
    let f = std::fs::read_dir(d.path().join("oio-results"))
        .unwrap()
        .flatten()
        .find(|e| e.path().extension().is_some_and(|x| x == "json"))
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(f.path()).unwrap()).unwrap();
    let intervals = v["intervals"].as_array().unwrap();
    assert_eq!(intervals.len(), 2000);
    // The model's 2,000 IOPS, one interval at a time: 2 I/Os each, but the first (the first
    // completions come at 1 ms, the start of the second).
    assert_eq!(intervals[0]["total"]["ios"], 0);
    assert!(
        intervals[1..].iter().all(|i| i["total"]["ios"] == 2),
        "{intervals:?}"
    );
    assert_eq!(v["summary"]["total"]["ios"], 3998);
}

/// Item 12: a workload file with `bs = "1g"` and `outstanding = 1024` failed with "memory
/// allocation of 1073741824 bytes failed" (abort). Buffers × depth are budgeted first; what
/// fits is allocated and runs.
#[test]
fn buffers_beyond_memory_are_refused_and_what_fits_runs() {
    let d = scratch();
    let w = d.path().join("big.toml");
    let workload = |bs: &str, qd: u32| {
        format!("name = \"big\"\n[[stream]]\nbs = \"{bs}\"\nstripe = \"{bs}\"\nread_pct = 100\noutstanding = {qd}\n")
    };
    std::fs::write(&w, workload("1g", 1024)).unwrap();
    let args = [
        "run", "-w", "big.toml", "--engine", "null", "--size", "2g", "--ramp", "0", "--time", "1s",
        "t.dat",
    ];
    let Some(err) = refused(d.path(), 4 * GIB, &args) else {
        return;
    };
    assert!(
        err.contains("I/O buffers of stream 'main': 1,024 outstanding × 1.00 GiB ≈ 1.00 TiB"),
        "{err}"
    );
    assert!(
        err.contains("lower outstanding or the largest I/O size (bs)"),
        "{err}"
    );
    // 512 MiB of buffers under a 1 GiB cap: allocated, run, saved.
    std::fs::write(&w, workload("64m", 8)).unwrap();
    let (code, err, _) = capped(
        d.path(),
        GIB,
        &[
            "run", "-w", "big.toml", "--engine", "null", "--size", "64m", "--ramp", "0", "--time",
            "1s", "-q", "t.dat",
        ],
    )
    .unwrap();
    assert_eq!(code, 0, "{err}");
}

/// A plan of many runs keeps their results until it ends: they are in its estimate.
#[test]
fn an_experiment_counts_the_results_it_keeps() {
    let d = scratch();
    let Some(err) = refused(
        d.path(),
        4 * GIB,
        &[
            "run",
            "--engine",
            "null",
            "--size",
            "1m",
            "--ramp",
            "0",
            "--interval",
            "1ms",
            "--time",
            "60s",
            "--repeat",
            "100",
            "--memory-limit",
            "1G",
            "t.dat",
        ],
    ) else {
        return;
    };
    assert!(
        err.contains("results kept until the experiment ends: 100 of them"),
        "{err}"
    );
    assert!(err.contains("fewer runs (--repeat, points)"), "{err}");
}

/// Item 13: `tpcc run -n 100000` aborted at 3.7 GB; `--terminals 100000000/warehouse` asked
/// for 12 GB at once. Both are refused once the database says how big it is, before any
/// worker or terminal exists.
#[test]
fn tpcc_workers_and_terminals_beyond_memory_are_refused() {
    let d = scratch();
    let db = format!("sqlite:{}", d.path().join("m.db").display());
    tpcc_build_one_warehouse(d.path(), &db);
    let run = |extra: &[&str]| {
        let mut a = vec!["tpcc", "run", "--db", &db, "--ramp", "0", "--time", "2s"];
        a.extend_from_slice(extra);
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let args = run(&["-n", "100000"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let Some(err) = refused(d.path(), 4 * GIB, &args) else {
        return;
    };
    assert!(err.contains("connections: 100,000 ×"), "{err}");
    assert!(err.contains("use fewer --workers"), "{err}");
    let args = run(&["-n", "2", "--terminals", "100000000/warehouse"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let err = refused(d.path(), 4 * GIB, &args).unwrap();
    assert!(err.contains("terminals: 100,000,000 ×"), "{err}");
    assert!(err.contains("use fewer --terminals"), "{err}");
    // The build's report is there; no run's result.
    let runs: Vec<String> = std::fs::read_dir(d.path().join("oio-results"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("tpcc-build-"))
        .collect();
    assert!(runs.is_empty(), "nothing ran: {runs:?}");
}
