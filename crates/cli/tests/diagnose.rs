//! `oio diagnose` through the binary: a real sweep against the simulated device, a raw
//! iostat capture, and TPC-C runs on SQLite with and without fsync at commit.

use crate::common::{num, oio, run_json, scratch, tpcc_build_one_warehouse};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn diagnose_json(dir: &Path, inputs: &[&Path], extra: &[&str]) -> Value {
    let out = oio()
        .current_dir(dir)
        .arg("diagnose")
        .args(inputs)
        .args(extra)
        .arg("--json")
        .output()
        .expect("oio runs");
    assert!(
        out.status.success(),
        "oio diagnose failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(v["schema"], "oio.diagnosis");
    // Every output must match the published schema.
    let schema: Value =
        serde_json::from_str(include_str!("../../../schema/diagnose.schema.json")).unwrap();
    let validator = crate::schemas::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&v)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "does not match diagnose.schema.json: {errors:#?}"
    );
    v
}

/// The findings of `rule` with `status`.
fn findings<'a>(v: &'a Value, rule: &str, status: &str) -> Vec<&'a Value> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == rule && f["status"] == status)
        .collect()
}

fn evidence(f: &Value, what: &str) -> f64 {
    f["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["what"].as_str().unwrap().starts_with(what))
        .and_then(|e| e["value"].as_f64())
        .unwrap_or_else(|| panic!("no evidence {what:?} in {f}"))
}

fn files_named(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_named(&p, prefix));
        } else if p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(prefix) && n.ends_with(".json"))
        {
            out.push(p);
        }
    }
    out
}

#[test]
fn a_real_sweep_on_the_simulated_device_is_diagnosed_as_queue_saturation_at_its_knee() {
    let dir = scratch();
    let out = dir.path().join("sw");
    let sweep = run_json(
        dir.path(),
        &[
            "sweep",
            "randread",
            "--sim",
            // The virtual clock: a loaded machine cannot bend the curve (on the real clock
            // its delays can show IOPS still rising at the top, and no saturation at all).
            "servers=8,service=5ms,clock=virtual",
            "--size",
            "1M",
            "--time",
            "1s",
            "--ramp",
            "0s",
            "--interval",
            "250ms",
            "--qd",
            "1,2,4,8,16,32,64",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    // 8 servers; the exponential service times' own noise can move the answer a step.
    let knee = num(&sweep, "/knee/saturation_qd");
    assert!([8.0, 16.0, 32.0].contains(&knee), "{}", sweep["knee"]);
    let sweep_file = files_named(&out, "sweep-");
    assert_eq!(sweep_file.len(), 1, "{sweep_file:?}");
    let d = diagnose_json(dir.path(), &[&sweep_file[0]], &[]);
    let sat = findings(&d, "queue_saturation", "found");
    assert_eq!(sat.len(), 1, "{d:#}");
    assert_eq!(evidence(sat[0], "queue where saturation starts"), knee);
    assert!(!findings(&d, "simulated", "found").is_empty(), "{d:#}");
    assert_eq!(d["findings"][0]["status"], "found");
    // The sweep's own run results, as a set of runs, with the adapter limit stated: one per
    // depth and the drift check's second run of qd 1.
    let runs = files_named(&out, "run-");
    assert_eq!(runs.len(), 8, "{runs:?}");
    let refs: Vec<&Path> = runs.iter().map(PathBuf::as_path).collect();
    let d = diagnose_json(dir.path(), &refs, &["--queue-limit", "256"]);
    let sat = findings(&d, "queue_saturation", "found");
    assert_eq!(sat.len(), 1, "{d:#}");
    let q = evidence(sat[0], "queue where saturation starts");
    // Without the sweep's noise allowance: within one grid step of its depth (Little's law
    // puts a run's queue a fraction below the depth asked for).
    assert!(
        q > knee / 2.0 - 1.0 && q < knee * 2.0,
        "runs saturate at {q}, the sweep at {knee}"
    );
    assert!(sat[0]["claim"]
        .as_str()
        .unwrap()
        .contains("well below the queue limit (256"));
    assert_eq!(d["queue_limit"]["from"], "--queue-limit");
    // Text output: the claim first, exit 0.
    let text = oio()
        .current_dir(dir.path())
        .arg("diagnose")
        .arg(&sweep_file[0])
        .output()
        .unwrap();
    assert!(text.status.success());
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains(&format!("queue saturation above a queue of {knee}")),
        "{text}"
    );
}

/// `iostat -x -t` text of a device with 8 servers of 1 ms, driven at rising queue lengths.
fn iostat_capture() -> String {
    let mut s = String::from("Linux 6.1.0 (host) \t2026-11-21 \t_x86_64_\t(2 CPU)\n\n");
    let mut sec = 0;
    for q in [1.0f64, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0] {
        for k in 0..3 {
            sec += 1;
            let iops = q.min(8.0) * 1000.0 * (1.0 + 0.01 * k as f64);
            let await_ms = q / iops * 1000.0;
            s.push_str(&format!("\n2026-11-21T14:00:{sec:02}+0000\n"));
            s.push_str("Device            r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz     w/s     wkB/s   wrqm/s  %wrqm w_await wareq-sz     d/s     dkB/s   drqm/s  %drqm d_await dareq-sz     f/s f_await  aqu-sz  %util\n");
            s.push_str(&format!(
                "sdb {iops:.2} {:.2} 0.00 0.00 {await_ms:.3} 4.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 {q:.2} 100.00\n\n",
                iops * 4.0
            ));
        }
    }
    s
}

#[test]
fn a_raw_iostat_capture_is_read_and_a_quiet_device_is_undecided() {
    let dir = scratch();
    let cap = dir.path().join("iostat.txt");
    std::fs::write(&cap, iostat_capture()).unwrap();
    let d = diagnose_json(dir.path(), &[&cap], &["--queue-limit", "32"]);
    let sat = findings(&d, "queue_saturation", "found");
    assert_eq!(sat.len(), 1, "{d:#}");
    assert_eq!(evidence(sat[0], "queue where saturation starts"), 8.0);
    let claim = sat[0]["claim"].as_str().unwrap();
    assert!(claim.contains("above the limit of 32"), "{claim}");
    assert!(sat[0]["evidence"][0]["from"]
        .as_str()
        .unwrap()
        .contains("t="));
    // A capture of an idle device decides nothing and says why.
    let quiet = "Linux 6.1.0 (host) \t2026-11-21 \t_x86_64_\t(2 CPU)\n\n\n2026-11-21T14:00:01+0000\nDevice            r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz     w/s     wkB/s   wrqm/s  %wrqm w_await wareq-sz     d/s     dkB/s   drqm/s  %drqm d_await dareq-sz     f/s f_await  aqu-sz  %util\nsdb 10.00 40.00 0.00 0.00 0.50 4.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.01 0.50\n\n";
    let q = dir.path().join("quiet.txt");
    std::fs::write(&q, quiet).unwrap();
    let d = diagnose_json(dir.path(), &[&q], &[]);
    let u = findings(&d, "queue_saturation", "undecided");
    assert_eq!(u.len(), 1, "{d:#}");
    assert!(u[0]["claim"]
        .as_str()
        .unwrap()
        .contains("not enough busy intervals"));
    assert!(findings(&d, "queue_saturation", "found").is_empty());
    // Input that is neither: a clear error, exit 2.
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, "hello\n").unwrap();
    let out = oio().arg("diagnose").arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.txt") && err.contains("unrecognised"),
        "{err}"
    );
}

#[test]
fn sqlite_with_fsync_at_commit_is_log_bound_and_without_it_is_not() {
    let dir = scratch();
    let db = format!("sqlite:{}", dir.path().join("t.db").display());
    tpcc_build_one_warehouse(dir.path(), &db);
    let mut results = Vec::new();
    for sync in ["full", "off"] {
        let out = dir.path().join(sync);
        run_json(
            dir.path(),
            &[
                "tpcc",
                "run",
                "--db",
                &db,
                "--workers",
                "4",
                "--ramp",
                "1s",
                "--time",
                "5s",
                "--sqlite-sync",
                sync,
                "--out",
                out.to_str().unwrap(),
            ],
        );
        let f = files_named(&out, "tpcc-");
        assert_eq!(f.len(), 1, "{f:?}");
        results.push(f[0].clone());
    }
    let full = diagnose_json(dir.path(), &[&results[0]], &[]);
    let off = diagnose_json(dir.path(), &[&results[1]], &[]);
    let log = findings(&full, "log_flush_bound", "found");
    assert_eq!(log.len(), 1, "{full:#}");
    eprintln!("sqlite full: {}", log[0]["claim"]);
    eprintln!(
        "sqlite off: {}",
        findings(&off, "log_flush_bound", "not_found")[0]["claim"]
    );
    assert!(log[0]["claim"]
        .as_str()
        .unwrap()
        .contains("synchronous=full"));
    assert_eq!(full["findings"][0]["rule"], "log_flush_bound", "{full:#}");
    assert_eq!(
        findings(&off, "log_flush_bound", "not_found").len(),
        1,
        "{off:#}"
    );
    // Both together: one each.
    let both = diagnose_json(dir.path(), &[&results[0], &results[1]], &[]);
    let log = findings(&both, "log_flush_bound", "found");
    assert_eq!(log.len(), 1);
    assert!(log[0]["source"].as_str().unwrap().contains("full"));
}

#[test]
fn postgres_with_one_warehouse_and_eight_workers_is_lock_contention() {
    use crate::common::missing;
    use oio_testkit::{pg_bin, TempPostgres};
    if pg_bin().is_none() {
        missing("no PostgreSQL binaries (scripts/test installs them)");
        return;
    }
    let pg = TempPostgres::start("").unwrap();
    let db = pg.url();
    let dir = scratch();
    tpcc_build_one_warehouse(dir.path(), &db);
    let out = dir.path().join("pg");
    run_json(
        dir.path(),
        &[
            "tpcc",
            "run",
            "--db",
            &db,
            "--workers",
            "8",
            "--ramp",
            "1s",
            "--time",
            "6s",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let f = files_named(&out, "tpcc-");
    let d = diagnose_json(dir.path(), &[&f[0]], &[]);
    let lock = findings(&d, "lock_contention", "found");
    assert_eq!(lock.len(), 1, "{d:#}");
    let claim = lock[0]["claim"].as_str().unwrap();
    eprintln!("postgres w1 n8: {claim}");
    assert!(
        claim.contains("too few warehouses per worker (1 for 8 workers)"),
        "{claim}"
    );
}

const SIM: &str = "servers=8,service=1ms,clock=virtual";

/// `oio run` on the simulated device (virtual clock) into `out`, with `extra` options.
fn sim_run(dir: &Path, out: &str, extra: &[&str]) {
    let mut args = vec![
        "run",
        "--engine",
        "null",
        "--sim",
        SIM,
        "--time",
        "1s",
        "--ramp",
        "0s",
        "--interval",
        "250ms",
        "--size",
        "1M",
        "--out",
        out,
    ];
    args.extend_from_slice(extra);
    run_json(dir, &args);
}

fn diagnose_text(dir: &Path, inputs: &[&str], extra: &[&str]) -> String {
    let out = oio()
        .current_dir(dir)
        .arg("diagnose")
        .args(inputs)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn mixed_directories_are_named_apart_and_simulated_runs_feed_no_device_finding() {
    let dir = scratch();
    let d = dir.path();
    // A simulated sweep with its runs; simulated runs at three depths; open-loop runs at
    // three rates; another workload; real runs on a file.
    run_json(
        d,
        &[
            "sweep",
            "randread",
            "--sim",
            SIM,
            "--size",
            "1M",
            "--time",
            "1s",
            "--ramp",
            "0s",
            "--interval",
            "250ms",
            "--qd",
            "1,2,4,8,16,32",
            "--out",
            "sw",
        ],
    );
    for qd in ["1", "4", "16"] {
        sim_run(d, "depths", &["--rw", "randread", "--qd", qd]);
    }
    for rate in ["1000", "2000", "4000"] {
        sim_run(d, "rates", &["--rw", "randread", "--rate", rate]);
    }
    sim_run(d, "rates", &["--rw", "randwrite", "--qd", "4"]);
    for _ in 0..2 {
        run_json(
            d,
            &[
                "run",
                "--rw",
                "randread",
                "--qd",
                "2",
                "--time",
                "1s",
                "--ramp",
                "0s",
                "--interval",
                "250ms",
                "--size",
                "4M",
                "real.dat",
                "--out",
                "real",
            ],
        );
    }
    let v = diagnose_json(
        d,
        &[
            Path::new("sw"),
            Path::new("depths"),
            Path::new("rates"),
            Path::new("real"),
        ],
        &[],
    );
    let groups = v["groups"].as_array().unwrap();
    let kinds: Vec<(&str, usize)> = groups
        .iter()
        .map(|g| {
            (
                g["kind"].as_str().unwrap(),
                g["inputs"].as_array().unwrap().len(),
            )
        })
        .collect();
    // depths (3 runs), three rates, randwrite, real (2 runs), and the sweep (its 6 runs and
    // its drift check's are its own, not diagnosed again).
    assert_eq!(
        kinds,
        [
            ("runs", 3),
            ("runs", 1),
            ("runs", 1),
            ("runs", 1),
            ("runs", 1),
            ("runs", 2),
            ("sweep", 1)
        ],
        "{v:#}"
    );
    let real = &groups[5];
    assert!(real["simulated"].is_null(), "{real:#}");
    assert!(real["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i.as_str().unwrap().starts_with("real/")));
    // One "simulated" finding per simulated group, none for the real one.
    let sim_groups: Vec<&str> = groups
        .iter()
        .filter(|g| !g["simulated"].is_null())
        .map(|g| g["id"].as_str().unwrap())
        .collect();
    assert_eq!(sim_groups.len(), 6);
    let sim_found = findings(&v, "simulated", "found");
    let mut said: Vec<&str> = sim_found
        .iter()
        .map(|f| f["group"].as_str().unwrap())
        .collect();
    said.sort_unstable();
    let mut want = sim_groups.clone();
    want.sort_unstable();
    assert_eq!(said, want, "{v:#}");
    // Device findings of simulated groups say they are the model's; no open-loop run is
    // counted at "qd 0"; runs at three rates make no noise finding.
    for f in v["findings"].as_array().unwrap() {
        let rule = f["rule"].as_str().unwrap();
        let claim = f["claim"].as_str().unwrap();
        if sim_groups.contains(&f["group"].as_str().unwrap_or(""))
            && ["queue_saturation", "bound", "write_penalty"].contains(&rule)
        {
            assert!(claim.starts_with("simulated: "), "{claim}");
        }
        assert!(!claim.contains("qd 0"), "{claim}");
    }
    assert!(findings(&v, "run_to_run_noise", "found")
        .iter()
        .all(|f| f["group"] == real["id"]));
    // In the terminal: the groups named, then at most 8 findings, the rest counted.
    let text = diagnose_text(d, &["sw", "depths", "rates", "real"], &[]);
    assert!(
        text.contains("7 groups of inputs, diagnosed apart and never pooled"),
        "{text}"
    );
    for g in groups {
        let line = format!(
            "  {}  {}",
            g["id"].as_str().unwrap(),
            g["label"].as_str().unwrap()
        );
        assert!(text.contains(&line), "{line} in {text}");
    }
    let numbered = text
        .lines()
        .filter(|l| {
            l.split_once(". [")
                .is_some_and(|(n, _)| n.parse::<usize>().is_ok())
        })
        .count();
    let head = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["status"] == "found" || f["conflicting"].is_array())
        .count();
    assert_eq!(numbered, head.min(8), "{text}");
    if head > 8 {
        assert!(
            text.contains(&format!(
                "and {} more found or contradicting: --all",
                head - 8
            )),
            "{text}"
        );
    }
    let all = diagnose_text(d, &["sw", "depths", "rates", "real"], &["--all"]);
    let numbered_all = all
        .lines()
        .filter(|l| {
            l.split_once(". [")
                .is_some_and(|(n, _)| n.parse::<usize>().is_ok())
        })
        .count();
    assert_eq!(numbered_all, head);
}

/// A perfmon CSV of a disk that is 99.5 % idle: a few reads now and then, queue 0.004.
fn idle_perfmon() -> String {
    let c = |n: &str| format!("\"\\\\HOST\\PhysicalDisk(0 C:)\\{n}\"");
    let mut s = format!(
        "\"(PDH-CSV 4.0) (UTC)(0)\",{},{},{},{},{},{}\n",
        c("Disk Reads/sec"),
        c("Disk Writes/sec"),
        c("Avg. Disk sec/Read"),
        c("Avg. Disk sec/Write"),
        c("Avg. Disk Queue Length"),
        c("% Idle Time")
    );
    for i in 0..60 {
        let busy = i % 5 == 0;
        let (r, lat, q, idle) = if busy {
            ("2", "0.002", "0.004", "99.5")
        } else {
            ("0", "0", "0", "100")
        };
        s.push_str(&format!(
            "\"01/02/2024 10:{:02}:{:02}.000\",\"{r}\",\"0\",\"{lat}\",\"0\",\"{q}\",\"{idle}\"\n",
            i / 60,
            i % 60
        ));
    }
    s
}

#[test]
fn an_idle_windows_disk_is_idle_not_latency_bound() {
    let dir = scratch();
    let cap = dir.path().join("perfmon.csv");
    std::fs::write(&cap, idle_perfmon()).unwrap();
    let v = diagnose_json(dir.path(), &[&cap], &[]);
    let b = findings(&v, "bound", "found");
    assert_eq!(b.len(), 1, "{v:#}");
    let claim = b[0]["claim"].as_str().unwrap();
    assert!(claim.starts_with("idle:"), "{claim}");
    assert!(evidence(b[0], "busy share") < 1.0, "{claim}");
    let text = diagnose_text(dir.path(), &["perfmon.csv"], &["--all"]);
    assert!(
        !text.contains("latency-bound") && !text.contains("more I/O in parallel"),
        "{text}"
    );
}

#[test]
fn two_sweeps_of_one_file_that_disagree_are_undecided() {
    let dir = scratch();
    let d = dir.path();
    // Two sweeps of one workload on one file: the model stands in for a device whose answer
    // moved between them (4 servers, then 16); the documents are made to read as real.
    let mut files = Vec::new();
    for (servers, name) in [("4", "a.json"), ("16", "b.json")] {
        let sim = format!("servers={servers},service=1ms,clock=virtual");
        let mut s = run_json(
            d,
            &[
                "sweep",
                "randread",
                "--sim",
                &sim,
                "--size",
                "1M",
                "--time",
                "1s",
                "--ramp",
                "0s",
                "--interval",
                "250ms",
                "--qd",
                "1,2,4,8,16,32,64",
                "--out",
                "out",
            ],
        );
        s["simulated"] = Value::Null;
        s["engine"] = "io_uring".into();
        s["warnings"] = serde_json::json!([]);
        std::fs::write(d.join(name), serde_json::to_string(&s).unwrap()).unwrap();
        files.push(d.join(name));
    }
    let v = diagnose_json(d, &[&files[0], &files[1]], &[]);
    assert_eq!(
        v["groups"][0]["same_experiment_as"],
        serde_json::json!(["g2"])
    );
    let u = findings(&v, "queue_saturation", "undecided");
    assert_eq!(u.len(), 1, "{v:#}");
    assert!(
        findings(&v, "queue_saturation", "found").is_empty(),
        "{v:#}"
    );
    let claim = u[0]["claim"].as_str().unwrap();
    assert!(
        claim.starts_with("contradicting: ") && claim.contains("undecided"),
        "{claim}"
    );
    assert_eq!(u[0]["conflicting"].as_array().unwrap().len(), 2);
    assert_eq!(u[0]["confidence"], "low");
    // Shown in the terminal, not buried among the rules that found nothing.
    let text = diagnose_text(d, &["a.json", "b.json"], &[]);
    assert!(text.contains("[low confidence] contradicting: "), "{text}");
}

/// A perfmon CSV as relog writes it (quoted cells, CRLF, a first row without rates) of a
/// disk doing 12 reads of 4 KiB and 4 writes of 8 KiB a second, queue 0.0092, whose latency
/// columns have names oio does not know (German spellings it lacks).
fn perfmon_16_iops_unknown_latency_names() -> String {
    let cols = [
        "Disk Reads/sec",
        "Disk Writes/sec",
        "Disk Read Bytes/sec",
        "Disk Write Bytes/sec",
        "Mittl. Sek./Lesen",
        "Mittl. Sek./Schreiben",
        "Avg. Disk Queue Length",
    ];
    let mut s = String::from("\"(PDH-CSV 4.0) (Coordinated Universal Time)(0)\"");
    for c in cols {
        s.push_str(&format!(",\"\\\\HOST\\PhysicalDisk(0 C:)\\{c}\""));
    }
    s.push_str("\r\n\"11/21/2026 13:00:00.000\"");
    s.push_str(&",\" \"".repeat(cols.len()));
    s.push_str("\r\n");
    for i in 1..=60 {
        s.push_str(&format!(
            "\"11/21/2026 13:{:02}:{:02}.000\",\"12\",\"4\",\"49152\",\"32768\",\"0.0004\",\"0.0011\",\"0.0092\"\r\n",
            i / 60,
            i % 60
        ));
    }
    s
}

#[test]
fn issue_24_a_perfmon_disk_of_16_iops_without_known_latency_is_not_idle() {
    let dir = scratch();
    std::fs::write(
        dir.path().join("perfmon.csv"),
        perfmon_16_iops_unknown_latency_names(),
    )
    .unwrap();
    let text = diagnose_text(dir.path(), &["perfmon.csv"], &["--all"]);
    assert!(
        !text.contains("no I/O completed") && !text.contains("no intervals with I/O"),
        "{text}"
    );
    // The latency comes from the queue by Little's law (0.0092 / 16 = 0.575 ms), said so.
    assert!(
        text.contains(
            "the latency of 60 of its 60 intervals with I/O is the queue length over IOPS"
        ),
        "{text}"
    );
    assert!(text.contains("idle: the device was busy 0.9 %"), "{text}");
    assert!(text.contains("0 of 60 intervals without I/O"), "{text}");
    // characterize names the columns it could not read; the total has no latency to show.
    let out = oio()
        .current_dir(dir.path())
        .args(["characterize", "perfmon.csv", "--busy-queue", "0"])
        .output()
        .unwrap();
    let c = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        c.contains("column \"\\\\HOST\\PhysicalDisk(0 C:)\\Mittl. Sek./Lesen\": a disk counter oio does not recognise (in English), not read"),
        "{c}"
    );
    let total = c.lines().find(|l| l.starts_with("total")).unwrap();
    assert!(
        total.contains("16.0") && total.contains("5.00 KiB"),
        "{total}"
    );
}

/// Seed 003's capture (perfmon, LogicalDisk(_Total), 15 s intervals, as relog writes it):
/// 10 minutes of backup (165 KiB reads at queue ~9), then 10 minutes of small mixed I/O at
/// queue 64–800 behind an adapter queue of 256, where IOPS stop growing.
fn seed_003_capture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../telemetry/tests/fixtures/perfmon_seed003_backup_then_queue_limit.csv")
}

#[test]
fn issue_38_periods_of_different_shape_are_diagnosed_apart_and_the_queue_limit_is_named() {
    let dir = scratch();
    let cap = seed_003_capture();
    let v = diagnose_json(dir.path(), &[&cap], &["--queue-limit", "256"]);
    let all = v["findings"].as_array().unwrap();
    // Nothing pooled: every device rule's finding names its period, one per period and rule.
    for rule in ["queue_saturation", "bound", "write_penalty"] {
        let periods: Vec<&str> = all
            .iter()
            .filter(|f| f["rule"] == rule)
            .map(|f| f["period"].as_str().unwrap_or_else(|| panic!("{f}")))
            .collect();
        assert_eq!(periods.len(), 2, "{rule}: {v:#}");
        assert!(periods[0] != periods[1], "{periods:?}");
    }
    let small = "t=600–1200 s (48.0 KiB I/O, 40 % writes, queue ";
    let sat = findings(&v, "queue_saturation", "found");
    assert_eq!(sat.len(), 1, "{v:#}");
    let claim = sat[0]["claim"].as_str().unwrap();
    assert!(claim.starts_with(small), "{claim}");
    assert!(
        claim.contains("saturation sits at the queue limit (256, --queue-limit)"),
        "{claim}"
    );
    assert!(!claim.contains("the device itself saturates"), "{claim}");
    let next = sat[0]["next"][0].as_str().unwrap();
    assert!(next.starts_with("raise the limit"), "{next}");
    let q = evidence(sat[0], "queue where saturation starts");
    assert!((128.0..=512.0).contains(&q), "{q}");
    // The backup period's queue held at ~9: it cannot show saturation, and says so.
    let backup = findings(&v, "queue_saturation", "undecided");
    assert_eq!(backup.len(), 1, "{v:#}");
    assert!(backup[0]["period"]
        .as_str()
        .unwrap()
        .starts_with("t=0–600 s (164.8 KiB I/O, 0 % writes, queue 9.1)"));
    // One plateau, the small-I/O period's, at the limit; no high-confidence claim pooled.
    let plateau = findings(&v, "bound", "found");
    assert_eq!(plateau.len(), 1, "{v:#}");
    assert!(plateau[0]["claim"].as_str().unwrap().starts_with(small));
    assert!(plateau[0]["claim"]
        .as_str()
        .unwrap()
        .contains("where the queue limit binds"));
    // periods_differ describes the split over the whole capture.
    let split = findings(&v, "periods_differ", "found");
    assert_eq!(split.len(), 1);
    assert!(split[0].get("period").is_none());

    // The small-I/O period alone is one shape: diagnosed as before, whole, and it says the
    // same as its period did in the capture.
    let text = std::fs::read_to_string(&cap).unwrap();
    let lines: Vec<&str> = text.split("\r\n").collect();
    let alone = dir.path().join("second.csv");
    let mut second = vec![lines[0]];
    // Line 1 is the first sample (no rates); 2–41 the backup; 42– the small I/O.
    second.extend(&lines[42..]);
    std::fs::write(&alone, second.join("\r\n")).unwrap();
    let w = diagnose_json(dir.path(), &[&alone], &["--queue-limit", "256"]);
    assert!(w["findings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f.get("period").is_none()));
    let sat_alone = findings(&w, "queue_saturation", "found");
    assert_eq!(sat_alone.len(), 1, "{w:#}");
    assert_eq!(evidence(sat_alone[0], "queue where saturation starts"), q);
    let period = sat[0]["period"].as_str().unwrap();
    assert_eq!(
        claim.strip_prefix(&format!("{period}: ")).unwrap(),
        sat_alone[0]["claim"].as_str().unwrap()
    );
}
