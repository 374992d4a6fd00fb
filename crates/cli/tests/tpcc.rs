//! `oio tpcc`: build, run and check through the binary, on SQLite and a throwaway PostgreSQL.

use crate::common::{missing, num, oio, run_json, scratch, tpcc_build_one_warehouse};
use oio_testkit::{pg_bin, TempPostgres};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn check_json(dir: &Path, db: &str) -> (bool, Value) {
    let out = oio()
        .current_dir(dir)
        .args(["tpcc", "check", "--db", db, "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    (out.status.success(), v)
}

fn status_of(v: &Value, n: u64) -> String {
    v["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["number"] == n)
        .map(|c| c["status"].as_str().unwrap().to_string())
        .unwrap()
}

#[test]
fn sqlite_build_run_check_and_a_broken_row_is_named() {
    let dir = scratch();
    let db = format!("sqlite:{}", dir.path().join("t.db").display());
    let b = run_json(
        dir.path(),
        &[
            "tpcc",
            "build",
            "--db",
            &db,
            "--warehouses",
            "1",
            "--workers",
            "2",
        ],
    );
    assert_eq!(b["schema"], "oio.tpcc.build");
    assert!(num(&b, "/load_rows_per_s") > 0.0);
    assert!(num(&b, "/rows/order_line") as u64 > 250_000);

    let (ok, c) = check_json(dir.path(), &db);
    assert!(ok, "{c}");
    for n in 1..=12 {
        assert_eq!(status_of(&c, n), "pass", "condition {n}: {c}");
    }

    let r = run_json(
        dir.path(),
        &[
            "tpcc",
            "run",
            "--db",
            &db,
            "--workers",
            "2",
            "--ramp",
            "0",
            "--time",
            "3s",
        ],
    );
    assert_eq!(r["schema"], "oio.tpcc");
    assert_eq!(r["schema_version"], 2);
    let nopm = num(&r, "/summary/nopm");
    assert!(nopm > 0.0);
    // Two workers on one warehouse share it, and the result says so.
    let warnings = r["warnings"].to_string();
    assert!(
        warnings.contains("share home warehouses")
            && warnings.contains("warehouse 1: workers 0, 1"),
        "{warnings}"
    );
    // Checkpoints copy a WAL page at most once: never more than the WAL received.
    let pages = num(&r, "/waits/sqlite/checkpoint_pages");
    assert!(
        pages > 0.0 && pages <= num(&r, "/waits/sqlite/wal_frames"),
        "{}",
        r["waits"]
    );
    assert!(num(&r, "/summary/tpm") > nopm);
    // NOPM is the schema's delta over the window.
    let delta = num(&r, "/summary/new_orders");
    assert!((nopm - delta * 60.0 / num(&r, "/duration_s")).abs() < 1e-6);
    assert_eq!(delta, num(&r, "/transactions/new_order/committed"));
    for t in [
        "new_order",
        "payment",
        "order_status",
        "delivery",
        "stock_level",
    ] {
        for p in ["p50", "p90", "p99"] {
            assert!(
                num(&r, &format!("/transactions/{t}/latency_ns/{p}")) > 0.0,
                "{t} {p}"
            );
        }
    }
    // The mix as it ran is within a loose band of the target (a few hundred transactions).
    let share = num(&r, "/transactions/new_order/share_pct");
    assert!((35.0..55.0).contains(&share), "{share}");
    let share = num(&r, "/transactions/payment/share_pct");
    assert!((33.0..53.0).contains(&share), "{share}");
    assert_eq!(r["waits"]["source"], "sqlite");
    assert!(!r["intervals"].as_array().unwrap().is_empty());
    // The host's CPU per interval of 1 s (a short tail has none); SQLite runs inside oio, so
    // the noise is judged: quiet (no reason) or noisy with its sentence.
    let with_cpu = r["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["host_cpu"]["others_cores"].is_number())
        .count();
    assert!(with_cpu >= 1, "{}", r["intervals"]);
    let noise = &r["host_noise"];
    assert_eq!(noise["intervals"], with_cpu, "{noise}");
    assert_eq!(noise["noisy"], !noise["reason"].is_null(), "{noise}");

    // One worker on one warehouse shares nothing: no warning.
    let r = run_json(
        dir.path(),
        &[
            "tpcc",
            "run",
            "--db",
            &db,
            "--workers",
            "1",
            "--ramp",
            "0",
            "--time",
            "1s",
        ],
    );
    assert!(
        !r["warnings"].to_string().contains("share"),
        "{}",
        r["warnings"]
    );

    let (ok, c) = check_json(dir.path(), &db);
    assert!(ok, "{c}");
    assert_eq!(status_of(&c, 11), "not_applicable");

    // Break one warehouse's year-to-date: conditions 1 and 8 must fail and name it.
    let url: oio_tpcc::DbUrl = db.parse().unwrap();
    let shared = Default::default();
    let mut s = oio_tpcc::db::Session::open(
        &url,
        "test",
        oio_tpcc::db::SqliteSync::Normal,
        &shared,
        &Default::default(),
    )
    .unwrap();
    s.batch("UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 1")
        .unwrap();
    drop(s);
    let out = oio()
        .current_dir(dir.path())
        .args(["tpcc", "check", "--db", &db])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1. FAIL (1 rows)"), "{text}");
    assert!(text.contains("w_id=1"), "{text}");
    assert!(text.contains(" 8. FAIL"), "{text}");
}

#[test]
fn bad_database_urls_say_what_is_expected() {
    let dir = scratch();
    let out = oio()
        .current_dir(dir.path())
        .args(["tpcc", "check", "--db", "oracle://x/y"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("sqlite:PATH") && err.contains("postgres://") && err.contains("mysql://"),
        "{err}"
    );

    let out = oio()
        .current_dir(dir.path())
        .args(["tpcc", "run", "--db", "sqlite:empty.db", "--time", "1s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("oio tpcc build"), "{err}");
}

#[test]
fn postgres_server_mode_through_the_binary() {
    if pg_bin().is_none() {
        missing("no PostgreSQL binaries (scripts/test installs them)");
        return;
    }
    let pg = TempPostgres::start("").unwrap();
    let db = pg.url();
    let dir = scratch();
    tpcc_build_one_warehouse(dir.path(), &db);
    let r = run_json(
        dir.path(),
        &[
            "tpcc",
            "run",
            "--db",
            &db,
            "--workers",
            "2",
            "--ramp",
            "1s",
            "--time",
            "3s",
            "--mode",
            "server",
        ],
    );
    assert_eq!(r["dialect"], "postgres");
    assert_eq!(r["summary"]["tpm_source"], "pg_stat_database");
    assert!(num(&r, "/summary/nopm") > 0.0);
    assert!(num(&r, "/waits/rounds") > 10.0);
    assert!(!r["waits"]["buckets"].as_array().unwrap().is_empty());
    // The server runs on this host: its CPU is among the others', so the noise is not judged.
    let noise = &r["host_noise"];
    assert_eq!(noise["noisy"], false, "{noise}");
    assert!(
        noise["reason"]
            .as_str()
            .unwrap()
            .starts_with("the database server runs on this host"),
        "{noise}"
    );
    let (ok, c) = check_json(dir.path(), &db);
    assert!(ok, "{c}");
}

#[test]
fn a_postgres_worker_sequence_writes_a_series_and_each_step() {
    if pg_bin().is_none() {
        missing("no PostgreSQL binaries (scripts/test installs them)");
        return;
    }
    let pg = TempPostgres::start("").unwrap();
    let db = pg.url();
    let dir = scratch();
    tpcc_build_one_warehouse(dir.path(), &db);
    let out = dir.path().join("res");
    let o = oio()
        .current_dir(dir.path())
        .args([
            "tpcc",
            "run",
            "--db",
            &db,
            "--workers",
            "1,2,4",
            "--ramp",
            "0",
        ])
        .args(["--time", "2s", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The scaling table: one row per step, the first at 100 % efficiency.
    assert!(text.contains("workers        NOPM"), "{text}");
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("workers        NOPM"))
        .skip(1)
        .take(3)
        .collect();
    assert!(
        rows[0].trim_start().starts_with("1 ") && rows[0].contains("100 %"),
        "{text}"
    );
    assert!(rows[2].trim_start().starts_with("4 "), "{text}");
    let series = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.file_name().to_string_lossy().contains("series"))
        .expect("the series is saved");
    let s: Value = serde_json::from_slice(&std::fs::read(series.path()).unwrap()).unwrap();
    assert_eq!(s["schema"], "oio.tpcc.series", "{s}");
    assert_eq!(s["dialect"], "postgres");
    assert_eq!(s["workers"], serde_json::json!([1, 2, 4]));
    assert_eq!(s["stop_reason"], "completed");
    let steps = s["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3, "{s}");
    let n0 = num(&steps[0], "/nopm");
    for (step, workers) in steps.iter().zip([1u64, 2, 4]) {
        assert_eq!(step["workers"], workers);
        let n = num(step, "/nopm");
        assert!(n > 0.0, "{step}");
        let eff = num(step, "/efficiency_pct");
        assert!(
            (eff - (n / workers as f64) / n0 * 100.0).abs() < 1e-6,
            "{step}"
        );
        // Each step's own result is saved beside the series, with its wait profile over time.
        let file = out.join(step["result_file"].as_str().unwrap());
        let r: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(r["schema"], "oio.tpcc");
        assert_eq!(r["options"]["workers"], workers);
        assert_eq!(r["summary"]["tpm_source"], "pg_stat_database");
        assert_eq!(num(&r, "/summary/nopm"), n);
        assert!(
            r["intervals"][0]["waits"]
                .as_array()
                .is_some_and(|w| !w.is_empty()),
            "{}",
            r["intervals"]
        );
    }
}

/// Accepts TCP connections and never sends a byte: a PostgreSQL that hangs.
fn silent_server() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in l.incoming() {
            held.push(c);
        }
    });
    port
}

#[test]
fn a_silent_postgres_fails_build_run_and_check_within_the_connect_timeout() {
    let port = silent_server();
    let dir = scratch();
    let db = format!("postgres://oio@127.0.0.1:{port}/oio");
    for cmd in [
        &["tpcc", "run", "--ramp", "0", "--time", "1s"][..],
        &["tpcc", "build"][..],
        &["tpcc", "check"][..],
    ] {
        let t = Instant::now();
        let out = oio()
            .current_dir(dir.path())
            .args(cmd)
            .args(["--db", &db, "--connect-timeout", "2s"])
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let took = t.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd:?}: {err}");
        assert!(took < Duration::from_secs(10), "{cmd:?} took {took:?}");
        assert!(
            err.contains(&format!(
                "127.0.0.1:{port} did not complete PostgreSQL's startup handshake within 2 s"
            )),
            "{cmd:?}: {err}"
        );
    }
}

fn oio_path() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("oio")
}

/// Starts `oio tpcc build` of two warehouses into `db_path` and returns once it is loading
/// rows (its WAL has grown past 8 MiB).
fn start_build(dir: &Path, db_path: &Path) -> Child {
    let mut child = Command::new(oio_path())
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .args([
            "tpcc",
            "build",
            "--warehouses",
            "2",
            "--workers",
            "2",
            "--db",
        ])
        .arg(format!("sqlite:{}", db_path.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut wal = db_path.as_os_str().to_owned();
    wal.push("-wal");
    let t = Instant::now();
    loop {
        if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 8 << 20) {
            return child;
        }
        if let Some(st) = child.try_wait().unwrap() {
            panic!("the build ended before loading: {st}");
        }
        if t.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the build did not start loading within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs `oio tpcc ARGS --db DB` and returns its exit code and stderr.
fn tpcc(dir: &Path, db: &str, args: &[&str]) -> (Option<i32>, String) {
    let out = oio()
        .current_dir(dir)
        .arg("tpcc")
        .args(args)
        .args(["--db", db])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Kills the child on drop, so a failed assertion leaves no build running.
struct Reaper(Child);

impl Drop for Reaper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_build_in_progress_or_killed_is_refused_by_run_and_check() {
    let dir = scratch();
    let path = dir.path().join("k.db");
    let db = format!("sqlite:{}", path.display());
    let mut child = Reaper(start_build(dir.path(), &path));

    // Still building in another process: refused, and said to be in progress.
    let (code, err) = tpcc(dir.path(), &db, &["run", "--ramp", "0", "--time", "1s"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!("tpcc build of {db} is still in progress")),
        "{err}"
    );

    child.0.kill().unwrap();
    child.0.wait().unwrap();
    for args in [&["run", "--ramp", "0", "--time", "1s"][..], &["check"][..]] {
        let (code, err) = tpcc(dir.path(), &db, args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("tpcc build of {db} did not finish"))
                && err.contains("loading phase")
                && err.contains("--force"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn ctrl_c_stops_a_build_promptly_with_exit_130_and_marks_it_incomplete() {
    let dir = scratch();
    let path = dir.path().join("i.db");
    let db = format!("sqlite:{}", path.display());
    let mut child = Reaper(start_build(dir.path(), &path));
    let t = Instant::now();
    let ok = Command::new("kill")
        .args(["-INT", &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let status = loop {
        if let Some(st) = child.0.try_wait().unwrap() {
            break st;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the build did not stop within 20 s of SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = t.elapsed();
    let mut err = String::new();
    std::io::Read::read_to_string(child.0.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(took < Duration::from_secs(5), "stopping took {took:?}");
    assert!(
        err.contains("interrupted") && err.contains("--force"),
        "{err}"
    );
    let (code, err) = tpcc(dir.path(), &db, &["check"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "tpcc build of {db} did not finish (interrupted in the loading phase"
        )),
        "{err}"
    );
}

#[test]
fn a_worker_sequence_writes_a_series_and_each_step() {
    let dir = scratch();
    let db = format!("sqlite:{}", dir.path().join("s.db").display());
    run_json(
        dir.path(),
        &["tpcc", "build", "--db", &db, "--warehouses", "1"],
    );
    let out = dir.path().join("res");
    let s = run_json(
        dir.path(),
        &[
            "tpcc",
            "run",
            "--db",
            &db,
            "--workers",
            "1,2",
            "--ramp",
            "0",
            "--time",
            "2s",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(s["schema"], "oio.tpcc.series", "{s}");
    assert_eq!(s["workers"], serde_json::json!([1, 2]));
    assert_eq!(s["stop_reason"], "completed");
    let steps = s["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{s}");
    assert_eq!(num(&steps[0], "/efficiency_pct"), 100.0);
    let (n0, n1) = (num(&steps[0], "/nopm"), num(&steps[1], "/nopm"));
    assert!(n0 > 0.0 && n1 > 0.0, "{s}");
    let eff = num(&steps[1], "/efficiency_pct");
    assert!((eff - (n1 / 2.0) / n0 * 100.0).abs() < 1e-6, "{s}");
    for (k, step) in steps.iter().enumerate() {
        assert_eq!(step["workers"], k as u64 + 1);
        let lat = &step["latency_ns"]["new_order"];
        assert!(
            lat[0].as_f64().unwrap() <= lat[1].as_f64().unwrap(),
            "{step}"
        );
        // Each step's own result is saved beside the series.
        let file = out.join(step["result_file"].as_str().unwrap());
        let r: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(r["schema"], "oio.tpcc");
        assert_eq!(r["options"]["workers"], k as u64 + 1);
        assert_eq!(num(&r, "/summary/nopm"), num(step, "/nopm"));
        // The per-type time profile: every interval has each type, percentiles in order.
        let intervals = r["intervals"].as_array().unwrap();
        assert!(!intervals.is_empty());
        let mut new_orders = 0;
        for i in intervals {
            let by = i["latency_by_type_ns"].as_object().unwrap();
            assert_eq!(by.len(), 5, "{i}");
            let no = &by["new_order"];
            new_orders += no["n"].as_u64().unwrap();
            if no["n"].as_u64().unwrap() > 0 {
                let (p50, p90, p99) = (num(no, "/p50"), num(no, "/p90"), num(no, "/p99"));
                assert!(0.0 < p50 && p50 <= p90 && p90 <= p99, "{no}");
            }
        }
        let no = &r["transactions"]["new_order"];
        let total = no["committed"].as_u64().unwrap() + no["rolled_back"].as_u64().unwrap();
        assert!(
            new_orders > 0 && new_orders <= total,
            "{new_orders} {total}"
        );
    }
    let series_files: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("series"))
        .collect();
    assert_eq!(series_files.len(), 1);
}

#[test]
fn repeats_of_a_sequence_run_counterbalanced_and_every_result_carries_the_label() {
    let dir = scratch();
    let db = format!("sqlite:{}", dir.path().join("rep.db").display());
    tpcc_build_one_warehouse(dir.path(), &db);
    let out = dir.path().join("res");
    let s = run_json(
        dir.path(),
        &[
            "tpcc",
            "run",
            "--db",
            &db,
            "--workers",
            "1,2",
            "--repeat",
            "2",
            "--ramp",
            "0",
            "--time",
            "1s",
            "--label",
            "base line",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(s["schema"], "oio.tpcc.series", "{s}");
    assert_eq!(s["stop_reason"], "completed");
    assert_eq!(s["label"], "base line");
    assert_eq!(
        (&s["repeat"], &s["order"]),
        (&json!(2), &json!("counterbalanced"))
    );
    // The order run: 1 2, then 2 1; recorded in the runs and in the plan a rerun replays.
    let runs = s["runs"].as_array().unwrap();
    let order: Vec<u64> = runs
        .iter()
        .map(|r| r["workers"].as_u64().unwrap())
        .collect();
    assert_eq!(order, [1, 2, 2, 1], "{s}");
    let repeat: Vec<u64> = runs.iter().map(|r| r["repeat"].as_u64().unwrap()).collect();
    assert_eq!(repeat, [1, 1, 2, 2], "{s}");
    assert_eq!(s["plan"]["schedule"], json!([0, 1, 1, 0]));
    assert_eq!(s["plan"]["label"], "base line");
    // Every run's result: its own file, the label, its workers, in the order recorded.
    let mut stamps = Vec::new();
    let mut files = std::collections::BTreeSet::new();
    for run in runs {
        let name = run["result_file"].as_str().unwrap();
        assert!(name.contains("base-line"), "{name}");
        files.insert(name.to_string());
        let r: Value = serde_json::from_slice(&std::fs::read(out.join(name)).unwrap()).unwrap();
        assert_eq!(r["label"], "base line", "{name}");
        assert_eq!(r["options"]["workers"], run["workers"]);
        assert_eq!(num(&r, "/summary/nopm"), num(run, "/nopm"));
        // A step's own result repeats one run of its count.
        assert_eq!(r["plan"]["workers"], json!([run["workers"]]));
        assert!(r["plan"].get("schedule").is_none(), "{}", r["plan"]);
        assert_eq!(
            num(&r, "/summary/new_orders"),
            num(&r, "/transactions/new_order/committed")
        );
        stamps.push(r["timestamp"].as_str().unwrap().to_string());
    }
    assert_eq!(files.len(), 4, "{files:?}");
    assert!(stamps.windows(2).all(|w| w[0] <= w[1]), "{stamps:?}");
    // One point per count over both its runs: NOPM the median (of two, their mean),
    // efficiency from the medians, latencies from the merged histograms.
    let steps = s["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{s}");
    let mut median = Vec::new();
    for (k, step) in steps.iter().enumerate() {
        let w = k as u64 + 1;
        assert_eq!(
            (step["workers"].as_u64(), step["runs"].as_u64()),
            (Some(w), Some(2))
        );
        let each: Vec<f64> = runs
            .iter()
            .filter(|r| r["workers"] == w)
            .map(|r| num(r, "/nopm"))
            .collect();
        assert_eq!(step["nopm_runs"], json!(each), "{step}");
        assert!(
            (num(step, "/nopm") - (each[0] + each[1]) / 2.0).abs() < 1e-9,
            "{step}"
        );
        median.push(num(step, "/nopm"));
        let p99s: Vec<f64> = runs
            .iter()
            .filter(|r| r["workers"] == w)
            .map(|r| {
                let f: Value = serde_json::from_slice(
                    &std::fs::read(out.join(r["result_file"].as_str().unwrap())).unwrap(),
                )
                .unwrap();
                num(&f, "/transactions/new_order/latency_ns/p99")
            })
            .collect();
        let merged = step["latency_ns"]["new_order"][1].as_f64().unwrap();
        // Between the runs' own p99s, to the histogram's resolution (a bucket is at most
        // 1/128 of the value wide: the merged p99 may name the other end of a shared bucket).
        let (lo, hi) = (p99s[0].min(p99s[1]), p99s[0].max(p99s[1]));
        let (lo, hi) = (lo * (1.0 - 1.0 / 128.0), hi * (1.0 + 1.0 / 128.0));
        assert!(lo <= merged && merged <= hi, "{merged} outside {p99s:?}");
    }
    assert_eq!(num(&steps[0], "/efficiency_pct"), 100.0);
    let eff = num(&steps[1], "/efficiency_pct");
    assert!(
        (eff - (median[1] / 2.0) / median[0] * 100.0).abs() < 1e-9,
        "{s}"
    );
    let series_file = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.contains("series"))
        .expect("the series is saved");
    assert!(series_file.contains("base-line"), "{series_file}");
}

#[test]
fn ctrl_c_stops_a_sequence_with_exit_130_and_keeps_the_finished_steps() {
    let dir = scratch();
    let db = format!("sqlite:{}", dir.path().join("q.db").display());
    run_json(
        dir.path(),
        &["tpcc", "build", "--db", &db, "--warehouses", "1"],
    );
    let out = dir.path().join("res");
    let child = Command::new(oio_path())
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .args([
            "tpcc",
            "run",
            "--workers",
            "1,2,4",
            "--ramp",
            "0",
            "--time",
            "3s",
            "--db",
            &db,
        ])
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Reaper(child);
    // Interrupt once the second step has started, as its notice on stderr says: waiting for
    // a file to appear caught the probe file oio writes into --out before it runs, and a
    // signal then fell into the first step (it failed that way on a busy machine).
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let stderr = child.0.stderr.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let t = Instant::now();
    let mut seen = Vec::new();
    loop {
        match rx.recv_timeout(Duration::from_secs(60).saturating_sub(t.elapsed())) {
            Ok(line) if line.starts_with("oio: run 2/3: ") => break,
            Ok(line) => seen.push(line),
            Err(e) => panic!("the second step did not start in 60 s ({e}): {seen:?}"),
        }
    }
    assert!(
        seen.iter().any(|l| l.starts_with("oio: result: ")),
        "the first step was saved before the second started: {seen:?}"
    );
    assert!(Command::new("kill")
        .args(["-INT", &child.0.id().to_string()])
        .status()
        .unwrap()
        .success());
    let status = loop {
        if let Some(st) = child.0.try_wait().unwrap() {
            break st;
        }
        assert!(
            t.elapsed() < Duration::from_secs(90),
            "did not stop after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130));
    let series = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.file_name().to_string_lossy().contains("series"))
        .expect("the series is saved");
    let s: Value = serde_json::from_slice(&std::fs::read(series.path()).unwrap()).unwrap();
    let steps = s["steps"].as_array().unwrap();
    assert_eq!(
        steps.len(),
        2,
        "the finished step and the interrupted one: {s}"
    );
    assert_eq!(steps[0]["workers"], 1);
    assert_eq!(steps[0]["partial"], false);
    assert_eq!(steps[1]["partial"], true, "{s}");
    assert_eq!(s["stop_reason"], "interrupted", "{s}");
}

#[test]
fn ctrl_c_stops_a_run_at_once_with_exit_130_and_saves_the_partial_result() {
    let dir = scratch();
    let db = format!("sqlite:{}", dir.path().join("i.db").display());
    run_json(
        dir.path(),
        &["tpcc", "build", "--db", &db, "--warehouses", "1"],
    );
    let out = dir.path().join("res");
    let child = Command::new(oio_path())
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .args([
            "tpcc",
            "run",
            "--workers",
            "2",
            "--ramp",
            "1s",
            "--time",
            "10m",
            "--json",
            "--db",
            &db,
        ])
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Reaper(child);
    // Drained as it comes: the result is larger than a pipe's buffer, and a reader that waits
    // for the exit first would block the writer.
    let mut pipe = child.0.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut pipe, &mut bytes).map(|_| bytes)
    });
    // Into the measured window: past the ramp, some intervals recorded.
    std::thread::sleep(Duration::from_secs(4));
    assert!(child.0.try_wait().unwrap().is_none(), "the run ended early");
    assert!(Command::new("kill")
        .args(["-INT", &child.0.id().to_string()])
        .status()
        .unwrap()
        .success());
    let t = Instant::now();
    let status = loop {
        if let Some(st) = child.0.try_wait().unwrap() {
            break st;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "still running 20 s after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let stopped_in = t.elapsed();
    assert_eq!(status.code(), Some(130));
    // "At once": well within the run's one-second interval plus its shutdown, not the 10 min.
    assert!(stopped_in < Duration::from_secs(5), "{stopped_in:?}");
    let stdout = reader.join().unwrap().unwrap();
    let printed: Value = serde_json::from_slice(&stdout).expect("the partial result on stdout");
    let files: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok())
        .collect();
    assert_eq!(files.len(), 1, "one result file");
    let r: Value = serde_json::from_slice(&std::fs::read(files[0].path()).unwrap()).unwrap();
    assert_eq!(r, printed);
    assert_eq!(r["partial"], true, "{}", r["summary"]);
    assert_eq!(r["stop_reason"], "interrupted");
    let d = num(&r, "/duration_s");
    assert!(d > 1.0 && d < 10.0, "window of {d} s");
    assert!(num(&r, "/summary/nopm") > 0.0);
    // Statements cancelled by the interruption are not failures of the database.
    assert_eq!(r["summary"]["failed"], 0, "{}", r["errors"]);
    assert_eq!(r["errors"]["count"], 0, "{}", r["errors"]);
    assert_eq!(r["plan"]["workers"], serde_json::json!([2]));
}

#[test]
fn a_tpcc_result_reruns_its_plan() {
    let dir = scratch();
    let db = format!("sqlite:{}", dir.path().join("r.db").display());
    run_json(
        dir.path(),
        &["tpcc", "build", "--db", &db, "--warehouses", "1"],
    );
    let args = [
        "tpcc",
        "run",
        "--db",
        &db,
        "--workers",
        "1",
        "--ramp",
        "0s",
        "--time",
        "2s",
        "--seed",
        "7",
        "--out",
        "first",
    ];
    let first = run_json(dir.path(), &args);
    let saved = std::fs::read_dir(dir.path().join("first"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("tpcc-")
        })
        .expect("the first result is saved");
    let again = run_json(
        dir.path(),
        &["rerun", saved.to_str().unwrap(), "--out", "again"],
    );
    assert_eq!(again["schema"], "oio.tpcc");
    // The same plan (database, workers, times, seed), run again: a new measurement.
    assert_eq!(again["plan"], first["plan"], "{again}");
    assert_eq!(again["plan"]["seed"], 7);
    assert!(num(&again, "/summary/committed") > 0.0);
    assert!(std::fs::read_dir(dir.path().join("again")).unwrap().count() >= 1);
    // --db is for TPC-C results only: a run result with it is refused, naming the kind.
    let run = run_json(
        dir.path(),
        &[
            "run", "--engine", "null", "--ios", "100", "--ramp", "0", "--size", "1M", "n.dat",
            "--out", "n",
        ],
    );
    assert_eq!(run["schema"], "oio.run");
    let run_file = std::fs::read_dir(dir.path().join("n"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .next()
        .unwrap();
    let out = oio()
        .current_dir(dir.path())
        .args(["rerun", run_file.to_str().unwrap(), "--db", "sqlite:x.db"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("--db goes with a TPC-C or SQL script result"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn terminal_mode_through_the_binary_reports_terminals_and_their_bound() {
    let dir = scratch();
    let db = format!("sqlite:{}", dir.path().join("t.db").display());
    run_json(
        dir.path(),
        &["tpcc", "build", "--db", &db, "--warehouses", "1"],
    );
    let out = dir.path().join("res");
    let args = [
        "tpcc",
        "run",
        "--db",
        &db,
        "--workers",
        "2",
        "--terminals",
        "10/warehouse",
        "--pace-scale",
        "0.01",
        "--sqlite-sync",
        "normal",
        "--ramp",
        "1s",
        "--time",
        "3s",
        "--out",
        out.to_str().unwrap(),
    ];
    let o = oio().current_dir(dir.path()).args(args).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        text.contains("terminals 10 (10.0 per warehouse) on 2 connection(s): at most 1286 NOPM"),
        "{text}"
    );
    assert!(
        text.contains("of 1286.00 NOPM per warehouse (12.86 ÷ --pace-scale 0.01)"),
        "{text}"
    );
    let r: Value = serde_json::from_slice(
        &std::fs::read(
            std::fs::read_dir(&out)
                .unwrap()
                .next()
                .unwrap()
                .unwrap()
                .path(),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(r["terminals"]["terminals"], 10);
    assert_eq!(r["terminals"]["connections"], 2);
    assert_eq!(r["plan"]["terminals"]["per_warehouse"], true);
    let eff = num(&r, "/terminals/efficiency_pct");
    assert!((50.0..=120.0).contains(&eff), "{eff}");

    // --warehouses all is --all-warehouses, which terminals (bound to a warehouse each)
    // refuse; a bad count names what is expected.
    let mut bad = args.to_vec();
    bad.extend(["--warehouses", "all"]);
    let o = oio().current_dir(dir.path()).args(&bad).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--all-warehouses"), "{err}");
    let o = oio()
        .current_dir(dir.path())
        .args(["tpcc", "run", "--db", &db, "--terminals", "ten"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--terminals") && err.contains("10/warehouse"),
        "{err}"
    );
}
