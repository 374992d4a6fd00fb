//! `oio sweep` against a simulated device (the null engine given a service model), whose knee
//! is known in advance: every rule must name the depth the model implies — exactly on the
//! virtual clock (`clock=virtual`: the points are the model's, whatever the machine's load),
//! within a grid step on the real clock (the generator's own delays and a loaded machine blur
//! the points). Short points (0.4 s), few depths.

use crate::common::{num, oio, run_json, scratch};
use serde_json::Value;
use std::path::Path;

fn validate(v: &Value) {
    let schema: Value =
        serde_json::from_str(include_str!("../../../schema/sweep.schema.json")).unwrap();
    let validator = crate::schemas::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(v)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "does not match sweep.schema.json: {errors:#?}"
    );
}

fn sim_sweep(dir: &Path, model: &str, qd: &str, ramp: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        "sweep",
        "randread",
        "--sim",
        model,
        "--size",
        "1M",
        "--time",
        "400ms",
        "--ramp",
        ramp,
        "--interval",
        "100ms",
        "--qd",
        qd,
        "--out",
        "sw",
    ];
    args.extend_from_slice(extra);
    let v = run_json(dir, &args);
    validate(&v);
    v
}

/// The depth a rule named (0 when it named none).
fn rule_qd(v: &Value, rule: &str) -> u64 {
    v["knee"]["rules"][rule]["qd"].as_u64().unwrap_or(0)
}

fn point(v: &Value, qd: u64) -> &Value {
    v["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["qd"].as_u64() == Some(qd))
        .unwrap_or_else(|| panic!("no point at qd {qd}"))
}

#[test]
fn simulated_device_of_eight_servers_has_its_knee_at_eight() {
    // 8 servers of 10 ms on the virtual clock: exactly 800 IOPS from depth 8 on; latency
    // 10 ms up to 8, then depth / 800. The p50 target lies just under the 20 ms of depth 16.
    let dir = scratch();
    let v = sim_sweep(
        dir.path(),
        "servers=8,service=10ms,dist=fixed,clock=virtual",
        "1,2,4,8,16,32,64",
        "200ms",
        &["--latency-target", "p50=19ms"],
    );
    let summary = v["knee"]["summary"].as_str().unwrap().to_string();
    eprintln!("8 servers: {summary}");
    // The model itself: the plateau is k / S, and queueing past it shows in the latency.
    let deep = point(&v, 64);
    assert_eq!(deep["iops"].as_f64().unwrap(), 800.0);
    assert_eq!(deep["latency_ns"]["mean"].as_f64().unwrap(), 80e6);
    assert_eq!(point(&v, 1)["latency_ns"]["p50"].as_f64().unwrap(), 10e6);
    // Every rule names 8, the knee lies between 4 and 8; one run per depth caps the
    // confidence at medium.
    for rule in ["power", "saturation", "pct_of_peak", "latency_target"] {
        assert_eq!(rule_qd(&v, rule), 8, "{rule}: {summary}");
    }
    assert_eq!(num(&v, "/knee/qd"), 8.0, "{summary}");
    assert_eq!(v["knee"]["headline"], "saturation");
    assert_eq!(
        v["knee"]["range"],
        serde_json::json!({"above": 4, "up_to": 8, "steps": 1})
    );
    assert_eq!(v["knee"]["confidence"], "medium", "{summary}");
    assert!(summary.starts_with("knee between qd 4 and 8 (medium confidence)"));
    // Said to be simulated, in the sweep and in every point's run result.
    assert!(v["simulated"].as_str().unwrap().contains("8 servers"));
    assert!(v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("simulated device")));
    let src = deep["sources"][0].as_str().unwrap();
    let run: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(src)).unwrap()).unwrap();
    assert!(run["warnings"][0]
        .as_str()
        .unwrap()
        .starts_with("simulated device (8 servers"));
    assert_eq!(run["engine"]["features"][1], "simulated_device");
    // One run per depth, and 4 intervals per run: noise from the intervals, drift judged.
    assert!(v["knee"]["flags"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["kind"] == "single_runs"));
    assert_eq!(v["knee"]["noise"]["source"], "intervals");
    assert_eq!(deep["steady"]["drift_pct"].as_f64(), Some(0.0));
    assert_eq!(deep["interval_se_pct"].as_f64(), Some(0.0));
}

#[test]
fn repeats_run_in_rounds_across_the_depths_and_pin_the_knee_with_high_confidence() {
    // Three repeats of each depth, counterbalanced: 1 … 32, 32 … 1, 1 … 32.
    let dir = scratch();
    let v = sim_sweep(
        dir.path(),
        "servers=8,service=10ms,dist=fixed,clock=virtual",
        "1,2,4,8,16,32",
        "0s",
        &["--repeat", "3", "--production-qd", "6"],
    );
    let summary = v["knee"]["summary"].as_str().unwrap().to_string();
    assert_eq!(v["options"]["order"], "counterbalanced");
    let ran: Vec<(u64, u64)> = v["sequence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["qd"].as_u64().unwrap(), r["round"].as_u64().unwrap()))
        .collect();
    let mut expected: Vec<(u64, u64)> = Vec::new();
    for round in 1..=3u64 {
        let mut qds = vec![1u64, 2, 4, 8, 16, 32];
        if round == 2 {
            qds.reverse();
        }
        expected.extend(qds.into_iter().map(|q| (q, round)));
    }
    assert_eq!(ran, expected);
    // Identical repeats of an exact model: every resample names 8.
    assert_eq!(num(&v, "/knee/qd"), 8.0, "{summary}");
    assert_eq!(v["knee"]["confidence"], "high", "{summary}");
    assert_eq!(num(&v, "/knee/stability"), 1.0);
    assert_eq!(v["knee"]["noise"]["source"], "repeats");
    // Production at 6 lies inside the knee's range (4, 8]: on neither side for sure.
    assert_eq!(
        v["production"]["position"],
        "near the knee (undecided whether below or beyond)"
    );
    // A shuffled order is drawn from --seed and recorded.
    let dir = scratch();
    let v = sim_sweep(
        dir.path(),
        "servers=8,service=10ms,dist=fixed,clock=virtual",
        "1,8,64",
        "0s",
        &["--repeat", "2", "--order", "shuffled", "--seed", "11"],
    );
    assert_eq!(v["options"]["order"], "shuffled");
    assert_eq!(v["options"]["order_seed"], 11);
    assert_eq!(v["sequence"].as_array().unwrap().len(), 6);
}

#[test]
fn second_plateau_separates_the_cache_from_the_device() {
    // 4 fast servers of 5 ms (800 IOPS at depth 4), then 28 slow ones of 40 ms: 1,500 IOPS
    // from depth 32, exactly on the virtual clock. Power = IOPS² / depth peaks at the cache's
    // plateau (4); the device as a whole saturates at 32, where it also reaches 90 % of its
    // plateau. Rules 3 grid steps apart (and one depth beyond 32): undecided, and it says why.
    let dir = scratch();
    let v = sim_sweep(
        dir.path(),
        "servers=4,service=5ms,dist=fixed+servers=28,service=40ms,dist=fixed,clock=virtual",
        "1,2,4,8,16,32,64",
        "100ms",
        &[],
    );
    let summary = v["knee"]["summary"].as_str().unwrap().to_string();
    eprintln!("second plateau: {summary}");
    assert_eq!(point(&v, 64)["iops"].as_f64().unwrap(), 1500.0);
    assert_eq!(point(&v, 4)["iops"].as_f64().unwrap(), 800.0);
    assert_eq!(rule_qd(&v, "power"), 4, "{summary}");
    for rule in ["saturation", "pct_of_peak"] {
        assert_eq!(rule_qd(&v, rule), 32, "{rule}: {summary}");
    }
    assert_eq!(num(&v, "/knee/qd"), 32.0);
    assert_eq!(v["knee"]["headline"], "saturation");
    assert_eq!(v["knee"]["confidence"], "undecided");
    assert!(
        summary.contains("the rules disagree by 3 grid steps"),
        "{summary}"
    );
    assert!(summary.contains("--latency-target"), "{summary}");
}

#[test]
fn refine_measures_midpoints_and_finds_the_servers_between_grid_points() {
    // 8 servers of 20 ms on a coarse grid 1, 4, 16, 64: the rules name 16 (power ties 4
    // and 16); --refine measures the geometric midpoints around it (8, 32) and then names 8.
    let dir = scratch();
    let v = sim_sweep(
        dir.path(),
        "servers=8,service=20ms,dist=fixed,clock=virtual",
        "1,4,16,64",
        "100ms",
        &["--refine"],
    );
    let summary = v["knee"]["summary"].as_str().unwrap().to_string();
    let refined: Vec<u64> = v["options"]["refined_qd"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q.as_u64().unwrap())
        .collect();
    assert!(refined.contains(&8), "refined {refined:?}");
    assert_eq!(v["options"]["qd"], serde_json::json!([1, 4, 16, 64]));
    let qds: Vec<u64> = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["qd"].as_u64().unwrap())
        .collect();
    let mut sorted = qds.clone();
    sorted.sort_unstable();
    assert_eq!(qds, sorted, "refined points sit among the grid's");
    assert_eq!(qds.len(), 4 + refined.len());
    assert_eq!(point(&v, 8)["sources"].as_array().unwrap().len(), 1);
    for p in v["points"].as_array().unwrap() {
        eprintln!("  qd {:>3}: {:>6.0} IOPS", p["qd"], p["iops"]);
    }
    eprintln!("refined: {summary}");
    // The model's exact answer, now on the grid.
    assert_eq!(rule_qd(&v, "saturation"), 8, "{summary}");
    assert_eq!(num(&v, "/knee/qd"), 8.0);
    assert_eq!(
        v["knee"]["range"],
        serde_json::json!({"above": 4, "up_to": 8, "steps": 1})
    );
}

#[test]
fn steady_state_with_two_intervals_is_too_short_to_judge() {
    let dir = scratch();
    let out = oio()
        .current_dir(dir.path())
        .args([
            "sweep",
            "randread",
            "--engine",
            "null",
            "--size",
            "1M",
            "--time",
            "200ms",
            "--interval",
            "100ms",
            "--ramp",
            "0s",
            "--qd",
            "1,2",
            "--steady",
            "5",
            "--out",
            "sw",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("too short"), "{text}");
    assert!(text.contains("steady state too short to judge"), "{text}");
    // The table names the rules and flags; the JSON says null, not 0.
    assert!(text.contains("saturation"), "{text}");
    assert!(text.contains("flag: one run per depth"), "{text}");
    let saved = text
        .lines()
        .find_map(|l| l.strip_prefix("sweep: "))
        .expect("the sweep file is named");
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(saved)).unwrap()).unwrap();
    validate(&v);
    for p in v["points"].as_array().unwrap() {
        assert!(p["steady"]["drift_pct"].is_null(), "{p}");
        assert!(p["steady"]["reached"].is_null(), "{p}");
        assert!(p["interval_cv_pct"].is_null(), "{p}");
    }
    assert_eq!(v["knee"]["noise"]["source"], "unknown");
}

#[test]
fn sim_refuses_a_real_engine_and_bad_models() {
    let dir = scratch();
    for (args, expected) in [
        (
            vec![
                "sweep",
                "randread",
                "--engine",
                "sync",
                "--sim",
                "servers=8,service=1ms",
            ],
            "--engine null",
        ),
        (
            vec![
                "sweep",
                "randread",
                "--sim",
                "servers=8,service=1ms,dist=gamma",
            ],
            "unknown dist 'gamma'",
        ),
        (
            vec!["run", "--rw", "randread", "--sim", "servers=8,service=1ms"],
            "--engine null",
        ),
        (
            vec!["sweep", "randread", "--latency-target", "p95=2ms"],
            "p95=2ms",
        ),
    ] {
        let out = oio().current_dir(dir.path()).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
    }
    // Nothing was created by the refusals.
    assert!(!dir.path().join("oio-testfile").exists());
}

/// The finding of a rule in `oio diagnose --json` of one sweep.
fn saturation_of(dir: &Path) -> Value {
    let sweep = crate::common::json_files(&dir.join("sw"))
        .into_iter()
        .next()
        .expect("the sweep document");
    let d = run_json(dir, &["diagnose", "--all", sweep.to_str().unwrap()]);
    d["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "queue_saturation")
        .cloned()
        .expect("a queue_saturation finding")
}

#[test]
fn a_knee_inside_the_last_doubling_is_placed_there_never_deeper() {
    // 48 servers × 2 ms on the virtual clock, swept 1..64: every I/O is in service up to
    // qd 32, and at qd 64 only 48 are (Little's law: IOPS × 2 ms). The last doubling gains
    // +50 % against +100 % before it: the knee lies inside it, not "deeper", and diagnose
    // cannot call saturation found or not found from one point beyond it.
    let dir = scratch();
    let v = sim_sweep(
        dir.path(),
        "servers=48,service=2ms,dist=fixed,clock=virtual",
        "1,2,4,8,16,32,64",
        "0s",
        &[],
    );
    let k = &v["knee"];
    let summary = k["summary"].as_str().unwrap();
    let iops64 = point(&v, 64)["iops"].as_f64().unwrap();
    let iops32 = point(&v, 32)["iops"].as_f64().unwrap();
    // The model: k / S at 64, q / S at 32 (less the I/Os still in flight at the end).
    assert!((iops64 / iops32 - 1.5).abs() < 0.01, "{iops32} → {iops64}");
    assert_eq!(k["confidence"], "undecided", "{summary}");
    assert_eq!(
        k["range"],
        serde_json::json!({"above": 32, "up_to": 64, "steps": 1}),
        "{summary}"
    );
    let kinds: Vec<&str> = k["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"knee_in_last_doubling"), "{kinds:?}");
    assert!(!kinds.contains(&"still_rising"), "{kinds:?}");
    assert!(
        summary.contains("knee above qd 32, at most 64"),
        "{summary}"
    );
    assert!(!summary.contains("lies deeper"), "{summary}");
    // Little's law beside the knee: IOPS at 64 × the 2 ms unloaded latency of qd 1.
    let c = &k["concurrency"];
    assert_eq!(c["qd"], 64);
    assert_eq!(c["unloaded_qd"], 1);
    assert_eq!(c["unloaded_latency_ns"].as_f64(), Some(2e6));
    let n = c["in_service"].as_f64().unwrap();
    assert_eq!(n, iops64 * 2e-3);
    assert!((47.5..=48.0).contains(&n), "{n}");
    assert!(summary.contains("I/Os in service at qd 64"), "{summary}");
    let sat = saturation_of(dir.path());
    assert_eq!(sat["status"], "undecided", "{sat:#}");

    // 512 servers over the same depths: every doubling gains +100 % and latency stays at
    // 2 ms, so the top still rises and saturation is not found in the sweep.
    let dir = scratch();
    let v = sim_sweep(
        dir.path(),
        "servers=512,service=2ms,dist=fixed,clock=virtual",
        "1,2,4,8,16,32,64",
        "0s",
        &[],
    );
    let k = &v["knee"];
    assert_eq!(k["range"]["up_to"], Value::Null, "{}", k["summary"]);
    assert!(k["flags"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["kind"] == "still_rising"));
    assert_eq!(
        k["concurrency"]["in_service"].as_f64().unwrap(),
        point(&v, 64)["iops"].as_f64().unwrap() * 2e-3
    );
    assert!(k["summary"]
        .as_str()
        .unwrap()
        .contains("every I/O in service"));
    let sat = saturation_of(dir.path());
    assert_eq!(sat["status"], "not_found", "{sat:#}");
}
