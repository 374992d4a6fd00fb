//! The command line called in this process (`oio::run` with parsed arguments) on the
//! simulated device with a virtual clock: the exit code and the exact numbers of the result
//! files, with no child process and no sleeping.

use crate::common::scratch;
use clap::Parser;
use serde_json::Value;
use std::path::Path;
use std::process::ExitCode;

const MS: f64 = 1e6;

/// Runs `oio ARGS` in process.
fn oio(args: &[&str]) -> anyhow::Result<ExitCode> {
    let argv = std::iter::once("oio").chain(args.iter().copied());
    oio::run(oio::Cli::parse_from(argv))
}

/// The one JSON file named `PREFIX*.json` in `dir`.
fn only_json(dir: &Path, prefix: &str) -> Value {
    let files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with(prefix) && n.ends_with(".json")
        })
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap()
}

fn f(v: &Value, pointer: &str) -> f64 {
    v.pointer(pointer)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("no number at {pointer} in {v}"))
}

#[test]
fn run_on_the_virtual_clock_gives_the_models_numbers() {
    let d = scratch();
    let target = d.path().join("t.dat");
    let out = d.path().join("results");
    let code = oio(&[
        "run",
        "--engine",
        "null",
        "--sim",
        "servers=4,service=1ms,clock=virtual",
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--qd",
        "8",
        "--size",
        "1M",
        "--time",
        "2s",
        "--ramp",
        "100ms",
        "--seed",
        "7",
        "--out",
        out.to_str().unwrap(),
        target.to_str().unwrap(),
    ])
    .unwrap();
    assert_eq!(code, ExitCode::SUCCESS);
    let v = only_json(&out, "run");
    // 4 servers of 1 ms behind 8 outstanding: 4000 IOPS, each I/O queued behind one other.
    assert_eq!(f(&v, "/duration_s"), 2.0);
    assert_eq!(f(&v, "/summary/total/ios"), 8000.0);
    assert_eq!(f(&v, "/summary/total/iops"), 4000.0);
    assert_eq!(f(&v, "/summary/read/latency_ns/mean"), 2.0 * MS);
    assert_eq!(f(&v, "/summary/read/latency_ns/min"), 2.0 * MS);
    assert_eq!(f(&v, "/summary/total/outstanding_mean"), 8.0);
    // Percentiles come from the histogram: the bucket of 2 ms, never another.
    for p in ["p50", "p90", "p99", "p999", "max"] {
        let x = f(&v, &format!("/summary/read/latency_ns/{p}"));
        assert!((2.0 * MS..=2.0 * MS * 1.01).contains(&x), "{p} {x}");
    }
    assert_eq!(v["intervals"].as_array().unwrap().len(), 2);
    let features = v["engine"]["features"].to_string();
    assert!(features.contains("virtual_clock"), "{features}");
}

#[test]
fn sweep_over_the_simulated_device_finds_its_servers() {
    let d = scratch();
    let target = d.path().join("t.dat");
    let out = d.path().join("results");
    let code = oio(&[
        "sweep",
        "randread",
        target.to_str().unwrap(),
        "--sim",
        "servers=4,service=1ms,clock=virtual",
        "--size",
        "1M",
        "--time",
        "1s",
        "--ramp",
        "100ms",
        "--interval",
        "250ms",
        "--qd",
        "1,2,4,8,16",
        "--out",
        out.to_str().unwrap(),
    ])
    .unwrap();
    assert_eq!(code, ExitCode::SUCCESS);
    let v = only_json(&out, "sweep");
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 5);
    for p in points {
        let qd = f(p, "/qd");
        // Up to 4 servers, every I/O is served at once; beyond, it waits its turn.
        let (iops, mean) = if qd <= 4.0 {
            (qd * 1000.0, MS)
        } else {
            (4000.0, qd / 4.0 * MS)
        };
        assert_eq!(f(p, "/iops"), iops, "qd {qd}");
        assert_eq!(f(p, "/latency_ns/mean"), mean, "qd {qd}");
        assert_eq!(f(p, "/outstanding_mean"), qd, "qd {qd}");
    }
    // The knee is where the servers run out.
    assert_eq!(f(&v, "/knee/saturation_qd"), 4.0, "{}", v["knee"]);
}

#[test]
fn usage_errors_are_refused_before_anything_runs() {
    // A value clap cannot read: a parse error, nothing runs.
    let e = oio::Cli::try_parse_from(["oio", "run", "--qd", "many"]).unwrap_err();
    assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation);
    // A model the simulated device cannot read names what it expected.
    let e = oio::Cli::try_parse_from(["oio", "run", "--engine", "null", "--sim", "clock=fast"])
        .unwrap_err();
    assert!(e.to_string().contains("clock 'fast'"), "{e}");
    // Parsed, but refused by the command: exit code 2, no result, no target created.
    let d = scratch();
    let target = d.path().join("t.dat");
    let out = d.path().join("results");
    let err = oio(&[
        "run",
        "--sim",
        "servers=1,service=1ms,clock=virtual",
        "--size",
        "1M",
        "--out",
        out.to_str().unwrap(),
        target.to_str().unwrap(),
    ])
    .unwrap_err();
    let text = oio::error_text(&err);
    assert!(text.contains("--engine null"), "{text}");
    assert_eq!(oio::report_error(&err), ExitCode::from(oio::EXIT_ERROR));
    assert!(!target.exists() && !out.exists());
}
