//! `oio sweep` against a simulated device (the null engine given a service model), whose knee
//! is known in advance: every rule must name the depth the model implies (one grid step of
//! slack, as the generator's own delays and a loaded machine blur the points). Short points
//! (0.4 s), few depths.

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
    // 8 servers of 10 ms: 800 IOPS from depth 8 on; latency 10 ms up to 8, then depth / 800.
    // The p50 target lies just under the 20 ms of depth 16, far above the 10 ms below it, so
    // the generator's own delays on a loaded machine do not move it.
    let dir = scratch();
    let v = sim_sweep(
        dir.path(),
        "servers=8,service=10ms,dist=fixed",
        "1,2,4,8,16,32,64",
        "200ms",
        &["--latency-target", "p50=19ms"],
    );
    let summary = v["knee"]["summary"].as_str().unwrap().to_string();
    eprintln!("8 servers: {summary}");
    for p in v["points"].as_array().unwrap() {
        eprintln!(
            "  qd {:>3}: {:>6.0} IOPS, mean {:>9.0} ns, p90 {}",
            p["qd"], p["iops"], p["latency_ns"]["mean"], p["latency_ns"]["p90"]
        );
    }
    // The model itself: the plateau is k / S, and queueing past it shows in the latency.
    let deep = point(&v, 64);
    let iops = deep["iops"].as_f64().unwrap();
    assert!((iops / 800.0 - 1.0).abs() < 0.1, "plateau {iops} vs 800");
    let mean = deep["latency_ns"]["mean"].as_f64().unwrap();
    assert!(
        (mean / 80e6 - 1.0).abs() < 0.15,
        "mean at 64: {mean} ns vs 80 ms"
    );
    assert!(point(&v, 1)["latency_ns"]["p50"].as_f64().unwrap() >= 10e6);
    // Every rule names 8, give or take one grid step.
    for rule in ["power", "saturation", "pct_of_peak", "latency_target"] {
        let q = rule_qd(&v, rule);
        assert!((4..=16).contains(&q), "{rule} named {q}: {summary}");
    }
    assert!(
        (4..=16).contains(&(num(&v, "/knee/qd") as u64)),
        "{summary}"
    );
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
    assert!(deep["steady"]["drift_pct"].is_number());
}

#[test]
fn second_plateau_separates_the_cache_from_the_device() {
    // 4 fast servers of 5 ms (800 IOPS at depth 4), then 28 slow ones of 40 ms: 1,500 IOPS
    // from depth 32. Power = IOPS² / depth peaks at the cache's plateau (4); the device as a
    // whole saturates at 32, where it also reaches 90 % of its plateau.
    let dir = scratch();
    let v = sim_sweep(
        dir.path(),
        "servers=4,service=5ms+servers=28,service=40ms",
        "1,2,4,8,16,32,64",
        "100ms",
        &[],
    );
    let summary = v["knee"]["summary"].as_str().unwrap().to_string();
    eprintln!("second plateau: {summary}");
    for p in v["points"].as_array().unwrap() {
        eprintln!("  qd {:>3}: {:>6.0} IOPS", p["qd"], p["iops"]);
    }
    let plateau = point(&v, 64)["iops"].as_f64().unwrap();
    assert!((plateau / 1500.0 - 1.0).abs() < 0.1, "plateau {plateau}");
    // Without a queue to cover them, the generator's own delays between a completion and the
    // next submission lower the shallow points a little (more on a loaded machine).
    let cache = point(&v, 4)["iops"].as_f64().unwrap();
    assert!(
        cache > 0.7 * 800.0 && cache < 1.05 * 800.0,
        "cache plateau {cache}"
    );
    let power = rule_qd(&v, "power");
    assert!((2..=8).contains(&power), "power {power}: {summary}");
    for rule in ["saturation", "pct_of_peak"] {
        let q = rule_qd(&v, rule);
        assert!((16..=64).contains(&q), "{rule} named {q}: {summary}");
    }
    assert_eq!(num(&v, "/knee/qd") as u64, rule_qd(&v, "saturation"));
    assert_eq!(v["knee"]["headline"], "saturation");
}

#[test]
fn refine_measures_midpoints_and_finds_the_servers_between_grid_points() {
    // 8 servers of 20 ms on a coarse grid 1, 4, 16, 64: the rules name 4 or 16; --refine
    // measures the geometric midpoints around them (8, 32) and then names 8. (A long
    // service time keeps the generator's own delays small beside it.)
    let dir = scratch();
    let v = sim_sweep(
        dir.path(),
        "servers=8,service=20ms",
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
    // 8 on a quiet machine; a starved generator can lower the point at 8 enough for 16.
    assert!([8, 16].contains(&rule_qd(&v, "saturation")), "{summary}");
    assert_eq!(num(&v, "/knee/qd") as u64, rule_qd(&v, "saturation"));
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
