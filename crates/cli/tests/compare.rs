//! `oio run --repeat`, `oio compare` (groups of files, the interleaved `--run` mode, TPC-C
//! results) and the comparison's JSON contract. Null engine and SQLite: the numbers are oio's
//! own overhead, but the plumbing, the verdicts and the contract are what is checked here;
//! verdicts on known numbers use copies of a real result with the compared values set.

use crate::common::{num, oio, run_json, scratch, tpcc_build_one_warehouse};
use serde_json::Value;
use std::path::Path;

fn validate(v: &Value, schema_text: &str, name: &str) {
    let schema: Value = serde_json::from_str(schema_text).unwrap();
    let validator = crate::schemas::validator_for(&schema).expect("the schema compiles");
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

    // `--label A,B` names two groups, as `--label A --label B` does.
    let c = run_json(dir.path(), &["compare", "a", "b", "--label", "A,B"]);
    validate(
        &c,
        include_str!("../../../schema/compare.schema.json"),
        "compare.schema.json",
    );
    assert_eq!(c["kind"], "run");
    for m in ["iops", "bytes_per_sec", "latency_mean", "latency_p99"] {
        let p = format!("/metrics/{m}");
        assert!(c.pointer(&format!("{p}/margin_pct")).unwrap().is_number());
        // The margin, the verdict's interval (the t-test's at 4 runs a side) and the bootstrap
        // interval are all of one ratio: both intervals hold the margin.
        let margin = num(&c, &format!("{p}/margin_pct"));
        assert!(num(&c, &format!("{p}/bootstrap_low_pct")) <= margin + 1e-9);
        assert!(num(&c, &format!("{p}/bootstrap_high_pct")) >= margin - 1e-9);
        assert!(
            num(&c, &format!("{p}/ci_low_pct")) <= margin + 1e-9,
            "{m}: {c}"
        );
        assert!(
            num(&c, &format!("{p}/ci_high_pct")) >= margin - 1e-9,
            "{m}: {c}"
        );
        assert_eq!(c["metrics"][m]["test"], "welch_log_ratio");
        assert!(num(&c, &format!("{p}/p_adjusted")) >= num(&c, &format!("{p}/p_value")));
        assert!(c.pointer(&format!("{p}/significant")).unwrap().is_boolean());
        assert_eq!(
            c.pointer(&format!("{p}/n")).unwrap(),
            &serde_json::json!([4, 4])
        );
    }
    assert_eq!(c["groups"][0]["label"], "A");
    assert_eq!(c["groups"][1]["label"], "B");
    assert_eq!(c["correction"]["method"], "hochberg");
    assert_eq!(c["correction"]["tests"], 4);
    assert_eq!(c["order"], Value::Null, "files: no run order");
    assert!(c["metrics"]["latency_p99"]["method"]
        .as_str()
        .unwrap()
        .contains("merged"));
}

/// Writes `values.len()` copies of `doc` into `dir`, each with `set(copy, value)` applied.
fn copies(dir: &Path, doc: &Value, values: &[f64], set: impl Fn(&mut Value, f64)) {
    std::fs::create_dir_all(dir).unwrap();
    for (i, v) in values.iter().enumerate() {
        let mut d = doc.clone();
        // Numbers set by hand: the noise of the host the original ran on is not theirs (on a
        // busy machine it would rightly keep every verdict undecided).
        d["host_noise"] = Value::Null;
        set(&mut d, *v);
        std::fs::write(dir.join(format!("r{i}.json")), d.to_string()).unwrap();
    }
}

fn set_iops(d: &mut Value, iops: f64) {
    d["summary"]["total"]["iops"] = iops.into();
    d["summary"]["total"]["bytes_per_sec"] = (iops * 4096.0).into();
}

/// The issue's case: O_DIRECT against buffered, +522 %, 3 runs a side, was called "no
/// detectable difference". Same numbers now: better, significant; latencies identical in every
/// run are never called different: the mean cannot be judged (no spread), the p99 is equal
/// within the histogram's resolution; the text is plain and says how it corrected.
#[test]
fn three_runs_a_side_can_be_significant_and_text_is_plain() {
    let dir = scratch();
    let one = repeat(dir.path(), "one", "2", "2");
    let run = &one[0];
    copies(
        &dir.path().join("direct"),
        run,
        &[41_200.0, 39_800.0, 40_900.0],
        set_iops,
    );
    copies(
        &dir.path().join("buffered"),
        run,
        &[236_000.0, 262_500.0, 259_718.0],
        set_iops,
    );
    let out = oio()
        .current_dir(dir.path())
        .args(["compare", "direct", "buffered"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    eprintln!("{text}");
    assert!(
        !text.contains('\x1b'),
        "NO_COLOR output has escapes: {text}"
    );
    let row = |name: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no {name} row: {text}"))
            .to_string()
    };
    assert!(row("IOPS").contains("+522.0 %"), "{text}");
    assert!(row("IOPS").contains("better, significant (p"), "{text}");
    assert!(row("MiB/s").contains("better, significant"), "{text}");
    assert!(
        row("mean response time").contains("cannot judge: no spread within a group"),
        "{text}"
    );
    assert!(
        row("p99 response time").contains("equal within resolution"),
        "{text}"
    );
    assert!(text.contains("buffered against direct"), "{text}");
    assert!(
        text.contains("significance: Hochberg's correction over 3 tests (4 metrics x 1 candidate, 1 with nothing to test"),
        "{text}"
    );
    assert!(
        text.contains("why undecided, and what would decide:"),
        "{text}"
    );

    let c = run_json(dir.path(), &["compare", "direct", "buffered"]);
    validate(
        &c,
        include_str!("../../../schema/compare.schema.json"),
        "compare.schema.json",
    );
    assert_eq!(c["metrics"]["iops"]["outcome"], "better");
    assert_eq!(c["metrics"]["iops"]["significant"], true);
    assert!(num(&c, "/metrics/iops/ci_low_pct") > 400.0);
    assert_eq!(
        c["metrics"]["latency_p99"]["outcome"],
        "equal within resolution"
    );
    assert_eq!(c["metrics"]["latency_p99"]["significant"], false);
    assert_eq!(c["metrics"]["latency_mean"]["outcome"], "undecided");
    assert_eq!(c["metrics"]["latency_mean"]["reason"], "no_spread");
}

/// Two groups that each hold three copies of one run (issue 21: "8 metrics significant, p = 0"):
/// nothing is significant, every metric says it cannot judge, in the table and in JSON.
#[test]
fn groups_of_copies_of_one_run_are_never_significant() {
    let dir = scratch();
    let runs = repeat(dir.path(), "src", "2", "2");
    for (g, run) in [("a", &runs[0]), ("b", &runs[1])] {
        copies(&dir.path().join(g), run, &[0.0; 3], |_, _| {});
    }
    let c = run_json(dir.path(), &["compare", "a", "b"]);
    validate(
        &c,
        include_str!("../../../schema/compare.schema.json"),
        "compare.schema.json",
    );
    assert_eq!(c["correction"]["tests"], 0);
    for m in ["iops", "bytes_per_sec", "latency_mean", "latency_p99"] {
        let x = &c["metrics"][m];
        assert_eq!(x["significant"], false, "{m}: {x}");
        assert_eq!(x["outcome"], "undecided", "{m}: {x}");
        assert_eq!(x["reason"], "no_spread", "{m}: {x}");
        assert_eq!(x["p_value"], Value::Null, "{m}: no p-value is made up");
    }
    assert_eq!(c["groups"][0]["identical"], true);
    let out = oio()
        .current_dir(dir.path())
        .args(["compare", "a", "b"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let rows = text
        .lines()
        .filter(|l| l.contains("cannot judge: the runs within a group are identical (no spread)"))
        .count();
    assert_eq!(rows, 4, "{text}");
    assert!(!text.contains("significant ("), "{text}");
}

#[test]
fn labels_must_match_the_groups() {
    let dir = scratch();
    repeat(dir.path(), "a", "1", "2");
    repeat(dir.path(), "b", "1", "2");
    for (labels, expect) in [
        ("x,y,z", "3 names (x, y, z) for 2 groups"),
        ("x,x", "'x' names two groups"),
    ] {
        let out = oio()
            .current_dir(dir.path())
            .args(["compare", "a", "b", "--label", labels])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expect), "{err}");
    }
    // `run --repeat` text: a t interval over runs (a bootstrap of 2 values would be too narrow).
    let out = oio()
        .current_dir(dir.path())
        .args([
            "run", "--engine", "null", "--rw", "randread", "--size", "1M", "--time", "1s",
            "--ramp", "0s", "--repeat", "2", "--out", "c",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("(95 % t interval over runs), run-to-run cv"),
        "{text}"
    );
    // One name: the second group keeps its path.
    let c = run_json(dir.path(), &["compare", "a", "b", "--label", "base"]);
    assert_eq!(c["groups"][0]["label"], "base");
    assert_eq!(c["groups"][1]["label"], "b");
}

/// TPC-C results from real `oio tpcc run`s on SQLite compare with NOPM, TPM and
/// per-transaction p90/p99; a known NOPM gain is called better; mixing with I/O runs is refused.
#[test]
fn tpcc_results_compare_and_do_not_mix_with_runs() {
    let dir = scratch();
    let db = format!("sqlite:{}", dir.path().join("t.db").display());
    tpcc_build_one_warehouse(dir.path(), &db);
    let mut last = Value::Null;
    for group in ["t1", "t2"] {
        for _ in 0..2 {
            last = run_json(
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
                    "2s",
                    "--out",
                    group,
                ],
            );
        }
    }
    let c = run_json(
        dir.path(),
        &["compare", "t1", "t2", "--label", "before,after"],
    );
    validate(
        &c,
        include_str!("../../../schema/compare.schema.json"),
        "compare.schema.json",
    );
    assert_eq!(c["kind"], "tpcc");
    assert_eq!(c["groups"][1]["label"], "after");
    assert_eq!(c["groups"][0]["n"], 2);
    assert_eq!(c["metric_order"][0], "nopm");
    assert_eq!(c["metric_order"][1], "tpm");
    assert_eq!(c["metrics"]["nopm"]["unit"], "1/min");
    assert_eq!(c["metrics"]["nopm"]["n"], serde_json::json!([2, 2]));
    for t in [
        "new_order",
        "payment",
        "order_status",
        "delivery",
        "stock_level",
    ] {
        for p in ["p90", "p99"] {
            let m = &c["metrics"][format!("{t}_{p}")];
            assert_eq!(m["unit"], "ns", "{t}_{p}: {c}");
            assert!(m["method"].as_str().unwrap().contains("merged"), "{m}");
        }
    }
    let g = num(&c, "/groups/0/values/new_order_p90");
    assert!(g > 0.0);

    // Known numbers: copies of a real result with NOPM set.
    let set_nopm = |d: &mut Value, v: f64| d["summary"]["nopm"] = v.into();
    copies(
        &dir.path().join("k1"),
        &last,
        &[1000.0, 1030.0, 985.0],
        set_nopm,
    );
    copies(
        &dir.path().join("k2"),
        &last,
        &[1490.0, 1525.0, 1470.0],
        set_nopm,
    );
    let c = run_json(dir.path(), &["compare", "k1", "k2"]);
    assert_eq!(
        c["metrics"]["nopm"]["outcome"], "better",
        "{}",
        c["metrics"]["nopm"]
    );
    // TPM is the same in every copy: not called different, and said why.
    assert_eq!(c["metrics"]["tpm"]["outcome"], "undecided");
    assert_eq!(c["metrics"]["tpm"]["reason"], "no_spread");

    // A run group and a TPC-C group: refused, naming both.
    repeat(dir.path(), "io", "1", "2");
    let out = oio()
        .current_dir(dir.path())
        .args(["compare", "io", "t1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot compare I/O run results")
            && err.contains("TPC-C results")
            && err.contains("'t1'"),
        "{err}"
    );
    // Both kinds in one group: refused too.
    std::fs::copy(
        dir.path().join("k1/r0.json"),
        dir.path().join("io/tpcc.json"),
    )
    .unwrap();
    let out = oio()
        .current_dir(dir.path())
        .args(["compare", "io", "t1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("'io' mixes"), "{err}");
}

#[test]
fn interleaved_runs_are_counterbalanced_and_compare() {
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
    // Counterbalanced by default, and the comparison records the plan and what ran.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("run order: A B B A"), "{err}");
    assert_eq!(c["order"]["plan"], "counterbalanced");
    assert_eq!(
        c["order"]["sequence"],
        serde_json::json!(["A", "B", "B", "A"])
    );
    validate(
        &c,
        include_str!("../../../schema/compare.schema.json"),
        "compare.schema.json",
    );
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
