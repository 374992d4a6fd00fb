//! `oio run --repeat`, `oio compare` (groups of files and the interleaved `--run` mode) and the
//! comparison's JSON contract. Null engine only: the numbers are oio's own overhead, but the
//! plumbing, the statistics and the contract are what is checked here.

use crate::common::{num, oio, run_json, scratch};
use serde_json::Value;
use std::path::Path;

fn validate(v: &Value, schema_text: &str, name: &str) {
    let schema: Value = serde_json::from_str(schema_text).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(v)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "does not match {name}: {errors:#?}");
}

fn repeat(dir: &Path, out: &str, qd: &str, n: &str) -> Value {
    run_json(
        dir,
        &[
            "run", "--engine", "null", "--rw", "randread", "--size", "1M", "--time", "1s",
            "--ramp", "0s", "--qd", qd, "--repeat", n, "--out", out,
        ],
    )
}

#[test]
fn repeat_writes_one_result_per_run_and_compare_reads_the_groups() {
    let dir = scratch();
    let a = repeat(dir.path(), "a", "1", "4");
    let arr = a
        .as_array()
        .expect("--repeat --json prints an array of runs");
    assert_eq!(arr.len(), 4);
    assert!(arr.iter().all(|r| r["schema"] == "oio.run"));
    // Each run has its own seed (reproducible, not identical offsets).
    let seeds: std::collections::BTreeSet<u64> = arr
        .iter()
        .map(|r| r["options"]["seed"].as_u64().unwrap())
        .collect();
    assert_eq!(seeds.len(), 4);
    assert_eq!(std::fs::read_dir(dir.path().join("a")).unwrap().count(), 4);
    repeat(dir.path(), "b", "1", "4");

    let c = run_json(
        dir.path(),
        &["compare", "a", "b", "--label", "A", "--label", "B"],
    );
    validate(
        &c,
        include_str!("../../../schema/compare.schema.json"),
        "compare.schema.json",
    );
    for m in ["iops", "bytes_per_sec", "latency_mean", "latency_p99"] {
        let p = format!("/metrics/{m}");
        assert!(c.pointer(&format!("{p}/margin_pct")).unwrap().is_number());
        assert!(num(&c, &format!("{p}/ci_low_pct")) <= num(&c, &format!("{p}/margin_pct")) + 1e-9);
        assert!(num(&c, &format!("{p}/ci_high_pct")) >= num(&c, &format!("{p}/margin_pct")) - 1e-9);
        assert!(c.pointer(&format!("{p}/significant")).unwrap().is_boolean());
        assert_eq!(
            c.pointer(&format!("{p}/n")).unwrap(),
            &serde_json::json!([4, 4])
        );
    }
    assert_eq!(c["groups"][0]["label"], "A");
    assert!(c["metrics"]["latency_p99"]["method"]
        .as_str()
        .unwrap()
        .contains("merged"));
}

#[test]
fn compare_of_three_runs_says_no_detectable_difference_and_text_is_plain() {
    let dir = scratch();
    repeat(dir.path(), "x", "2", "3");
    repeat(dir.path(), "y", "2", "3");
    let out = oio()
        .current_dir(dir.path())
        .args(["compare", "x", "y"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("no detectable difference in IOPS at n = 3"),
        "{text}"
    );
    assert!(text.contains("cannot go below p = 0.10"), "{text}");
}

#[test]
fn interleaved_runs_alternate_and_compare() {
    let dir = scratch();
    let base = "--engine null --rw randread --size 1M --time 1s --ramp 0s";
    let out = oio()
        .current_dir(dir.path())
        .args([
            "compare",
            "--run",
            &format!("{base} --qd 1"),
            "--run",
            &format!("{base} --qd 4"),
            "--repeat",
            "2",
            "--out",
            "ab",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c: Value = serde_json::from_slice(&out.stdout).expect("stdout is one JSON document");
    assert_eq!(c["groups"][0]["label"], "A");
    assert_eq!(c["groups"][1]["n"], 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("run order: A B A B"), "{err}");
    assert_eq!(
        std::fs::read_dir(dir.path().join("ab/A")).unwrap().count(),
        2
    );
    assert_eq!(
        std::fs::read_dir(dir.path().join("ab/B")).unwrap().count(),
        2
    );
}

#[test]
fn compare_errors_name_what_is_wrong() {
    let dir = scratch();
    std::fs::write(dir.path().join("junk.json"), "{\"x\": 1}").unwrap();
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let out = oio()
        .current_dir(dir.path())
        .args(["compare", "junk.json", "empty"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("junk.json") && err.contains("schema"), "{err}");
    let out = oio()
        .current_dir(dir.path())
        .args(["compare", "empty"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least two groups"));
}
