//! Hostile and extreme input through the binary: every number bounded with a message naming
//! the flag or field and the range, no panic (exit 101), no hang, no allocation bomb, errors
//! printed once and located as an editor counts.

use crate::common::{oio, scratch};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Runs oio in `dir`; returns (exit code, stderr). A hang fails the test instead of CI.
fn fails(dir: &Path, args: &[&str]) -> (i32, String) {
    let out = oio()
        .current_dir(dir)
        .args(args)
        .timeout(Duration::from_secs(60))
        .output()
        .expect("oio runs");
    let code = out.status.code().unwrap_or(-1);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_ne!(code, 101, "oio {args:?} panicked: {err}");
    assert_ne!(code, 0, "oio {args:?} succeeded");
    (code, err)
}

fn telemetry_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../telemetry/tests/fixtures")
        .join(name)
}

#[test]
fn durations_beyond_a_year_are_refused_naming_the_flag() {
    let dir = scratch();
    // 1e20 panicked in Duration::from_secs_f64; 18446744074 s wrapped to a 0.4 s run.
    for t in ["1e20", "18446744074", "inf"] {
        let (code, err) = fails(
            dir.path(),
            &[
                "run", "--engine", "null", "--size", "1m", "--time", t, "t.dat",
            ],
        );
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains("'--time <DURATION>'") && err.contains("at most 1year"),
            "{err}"
        );
    }
    let (_, err) = fails(dir.path(), &["tpcc", "run", "--time", "1e20"]);
    assert!(
        err.contains("--time") && err.contains("at most 1year"),
        "{err}"
    );
    assert!(!dir.path().join("t.dat").exists(), "nothing is created");
}

#[test]
fn rates_that_would_stop_the_arrival_clock_are_refused() {
    let dir = scratch();
    // Both used to hang `oio run` with Ctrl-C ignored.
    for (rate, why) in [
        ("1.5e9", "too high"),
        ("1e-11", "too low"),
        ("NaN", "not a rate"),
    ] {
        let (code, err) = fails(
            dir.path(),
            &[
                "run", "--engine", "null", "--size", "1m", "--rate", rate, "t.dat",
            ],
        );
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains("'--rate <IOPS>'")
                && err.contains(why)
                && err.contains("0.001 to 100,000,000 I/Os per second"),
            "{err}"
        );
    }
    // A schedule segment of 1e308 s in a workload file.
    let w = dir.path().join("s.toml");
    std::fs::write(
        &w,
        "name = \"s\"\n[[stream]]\nbs = \"4k\"\nread_pct = 100\n[stream.rate]\niops = 0\nschedule = [{ for = 1e308, iops = 5 }]\n",
    )
    .unwrap();
    let (code, err) = fails(
        dir.path(),
        &[
            "run", "--engine", "null", "--size", "1m", "-w", "s.toml", "t.dat",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("s.toml:7:") && err.contains("at most 1year"),
        "{err}"
    );
    // Bursts beyond the range name the field.
    let (_, err) = fails(
        dir.path(),
        &[
            "run",
            "--engine",
            "null",
            "--size",
            "1m",
            "--rate",
            "100",
            "--burst",
            "1e12,1s,1s",
            "t.dat",
        ],
    );
    assert!(
        err.contains("burst_iops") && err.contains("too high"),
        "{err}"
    );
}

#[test]
fn size_zero_says_it_must_be_above_zero() {
    let dir = scratch();
    let (code, err) = fails(
        dir.path(),
        &["run", "--engine", "null", "--size", "0", "t.dat"],
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("'--size <SIZE>'")
            && err.contains("must be > 0")
            && !err.contains("give --size"),
        "{err}"
    );
    assert!(!dir.path().join("t.dat").exists(), "no empty file is left");
}

#[test]
fn a_missing_workload_file_is_named_without_a_position() {
    let dir = scratch();
    let (code, err) = fails(dir.path(), &["run", "-w", "nosuch.toml", "t.dat"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("nosuch.toml: No such file or directory") && !err.contains(":0:0"),
        "{err}"
    );
}

#[test]
fn os_errors_are_printed_once() {
    let dir = scratch();
    let (_, err) = fails(dir.path(), &["characterize", "nosuch.csv"]);
    assert_eq!(err.matches("os error 2").count(), 1, "{err}");
    assert!(
        err.contains("nosuch.csv: No such file or directory"),
        "{err}"
    );
    let (_, err) = fails(dir.path(), &["import", "nosuch.json"]);
    assert_eq!(err.matches("os error 2").count(), 1, "{err}");
}

#[test]
fn characterize_refuses_a_nanosecond_interval_and_a_device() {
    let dir = scratch();
    let trace = telemetry_fixture("blkparse_default_two_devices_summary.txt");
    let trace = trace.to_str().unwrap();
    // 1 ns intervals tried to allocate 64 GB.
    let (code, err) = fails(dir.path(), &["characterize", trace, "--interval", "1ns"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--interval") && err.contains("at least 1ms"),
        "{err}"
    );
    // /dev/zero ran out of memory: it is refused before anything is read.
    let (code, err) = fails(dir.path(), &["characterize", "/dev/zero"]);
    assert_eq!(code, 2);
    assert!(err.contains("'/dev/zero' is a character device"), "{err}");
    // Text without a line end is refused at 1 MiB: a perfmon header that never ends.
    let mut long = b"\"(PDH-CSV 4.0)\",".to_vec();
    long.resize(3 << 20, b'x');
    std::fs::write(dir.path().join("long.csv"), long).unwrap();
    let (code, err) = fails(dir.path(), &["characterize", "long.csv"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("long.csv:1:") && err.contains("1024 KiB"),
        "{err}"
    );
}

#[test]
fn far_timestamps_are_located_errors_not_panics_or_bombs() {
    let dir = scratch();
    let cases: [(&str, &str, &str); 4] = [
        (
            "perfmon.csv",
            "\"(PDH-CSV 4.0) (UTC)(0)\",\"\\\\H\\PhysicalDisk(0 C:)\\Disk Reads/sec\"\r\n\"01/01/10000 00:00:01.000\",\"5\"\r\n",
            "perfmon.csv:2:",
        ),
        (
            "diskstats.txt",
            "1e12\n   8       0 sda 1 0 8 1 1 0 8 1 0 1 2\n",
            "diskstats.txt:1:",
        ),
        (
            // An event at 999,999,999 s tried to allocate a billion intervals.
            "trace.txt",
            "  8,0    1        1     0.000000000   697  D   R 0 + 8 [dd]\n  8,0    1        2 999999999.000000000   697  D   R 8 + 8 [dd]\n",
            "trace.txt:2:",
        ),
        (
            // A fio log time of 10^12 ms, likewise.
            "job_lat.1.log",
            "1, 100, 0, 4096, 0, 0\n1000000000000, 100, 0, 4096, 4096, 0\n",
            "job_lat.1.log:2:",
        ),
    ];
    for (name, text, at) in cases {
        std::fs::write(dir.path().join(name), text).unwrap();
        let (code, err) = fails(dir.path(), &["characterize", name]);
        assert_eq!(code, 2, "{name}: {err}");
        assert!(err.contains(at), "{name}: {err}");
    }
}

#[test]
fn utf16_perfmon_is_read_and_the_encoding_is_stated() {
    let dir = scratch();
    let text = std::fs::read_to_string(telemetry_fixture(
        "perfmon_relog_bom_crlf_zone_parens_gaps.csv",
    ))
    .unwrap();
    let mut bytes = vec![0xFF, 0xFE];
    for u in text.trim_start_matches('\u{feff}').encode_utf16() {
        bytes.extend_from_slice(&u.to_le_bytes());
    }
    std::fs::write(dir.path().join("perf16.csv"), bytes).unwrap();
    let out = oio()
        .current_dir(dir.path())
        .args([
            "characterize",
            "perf16.csv",
            "--busy-queue",
            "0",
            "--device",
            "0 C:",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("(perfmon, UTF-16LE"), "{stdout}");
}

#[test]
fn import_of_fio_json_with_missing_fields_names_the_field() {
    let dir = scratch();
    std::fs::write(
        dir.path().join("fio.json"),
        r#"{"fio version": "fio-3.33", "jobs": [{"jobname": "j", "read": {"io_bytes": 0, "runtime": 1000}, "write": {}}]}"#,
    )
    .unwrap();
    let (code, err) = fails(dir.path(), &["import", "fio.json"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("fio.json") && err.contains("job 1 (\"j\")") && err.contains("read.total_ios"),
        "{err}"
    );
    assert!(!dir.path().join("fio.oio.json").exists());
}

#[test]
fn report_of_a_result_with_a_non_ascii_name_works() {
    let dir = scratch();
    let res = dir.path().join("res");
    std::fs::create_dir(&res).unwrap();
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../analysis/tests/fixtures/run-null.json");
    // Byte 12 of the stem is inside 'é': slicing by bytes panicked.
    std::fs::copy(&src, res.join("run-20261121T143é7Z-x.json")).unwrap();
    let out = oio()
        .current_dir(dir.path())
        .args(["report", "res", "-o", "r.html"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(dir.path().join("r.html")).unwrap();
    assert!(html.contains("143é7Z"), "the label keeps the name");
}

/// Runs oio in `dir` expecting success within a minute (a hang fails the test instead of CI);
/// returns the parsed JSON result and the wall time.
fn ends(dir: &Path, args: &[&str]) -> (serde_json::Value, Duration) {
    let t0 = std::time::Instant::now();
    let out = oio()
        .current_dir(dir)
        .args(args)
        .arg("--json")
        .timeout(Duration::from_secs(60))
        .output()
        .expect("oio runs");
    let wall = t0.elapsed();
    assert!(
        out.status.success(),
        "oio {args:?} did not end by itself within 60 s ({:?}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    (serde_json::from_slice(&out.stdout).unwrap(), wall)
}

#[test]
fn a_burst_that_holds_less_than_one_io_ends_on_time_at_its_mean_rate() {
    let dir = scratch();
    // Issue 22: bursts of 500/s for 1 ms hold half an I/O, the 1 ms at 100/s a tenth: the
    // arrival search never returned (100 % CPU, SIGTERM ignored). Each period now adds its
    // share: 0.6 I/O per 2 ms, 300/s, evenly spaced.
    let (v, _) = ends(
        dir.path(),
        &[
            "run",
            "--engine",
            "null",
            "--rw",
            "randread",
            "--rate",
            "100",
            "--burst",
            "500,1ms,1ms",
            "--time",
            "2s",
            "--ramp",
            "0",
            "--size",
            "1M",
            "t.dat",
        ],
    );
    assert_eq!(v["stop_reason"], "completed");
    let offered = crate::common::num(&v, "/summary/offered_iops");
    assert!((offered / 300.0 - 1.0).abs() < 0.01, "offered {offered}/s");
}

#[test]
fn an_extreme_trim_share_ends_with_the_run() {
    let dir = scratch();
    let args = |pct: &'static str| {
        [
            "run",
            "--engine",
            "null",
            "--rw",
            "randwrite",
            "--bs",
            "4k",
            "--time",
            "2s",
            "--ramp",
            "0",
            "--size",
            "1M",
            "--trim-pct",
            pct,
            "t.dat",
        ]
    };
    // What starting, running 2 s and saving costs on this machine now, without trims.
    let (_, plain) = ends(dir.path(), &args("0"));
    // Issue 22: 99.9999 % (a million trims per I/O) took 51 s for a 2 s run, 99.99999999 %
    // never ended: trims were issued without a look at the clock. Trims stop at the end of the
    // measured time (each trim on the null engine takes microseconds), so the run takes what
    // the plain one takes; a whole --time more is allowed for the load of a busy machine.
    for pct in ["99.9999", "99.99999999"] {
        let (v, wall) = ends(dir.path(), &args(pct));
        assert_eq!(v["stop_reason"], "completed");
        let d = crate::common::num(&v, "/duration_s");
        assert!(d <= 2.01, "{pct}: measured {d} s of a 2 s run");
        assert!(crate::common::num(&v, "/summary/trim/ios") > 0.0, "{pct}");
        assert!(
            wall < plain + Duration::from_secs(2),
            "{pct}: {wall:?}, against {plain:?} without trims"
        );
    }
}
