//! The JSON Schemas in `schema/` describe the documents the library really writes: a build,
//! a two-step run (two `oio.tpcc` results and their `oio.tpcc.series`) and a check on a real
//! SQLite database, and a document broken the ways a reader would trip over is refused.

use oio_core::{Cancel, StopReason};
use oio_tpcc::{build, check, run, BuildOptions, DbUrl, Quiet, RunOptions, Timeouts, TpccRunPlan};
use serde_json::{json, Value};

fn validator(name: &str) -> jsonschema::Validator {
    let path = format!("{}/../../schema/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
    jsonschema::validator_for(&schema).expect("the schema compiles")
}

fn assert_valid(v: &jsonschema::Validator, doc: &Value, what: &str) {
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{what}: {errors:#?}");
}

fn assert_invalid(v: &jsonschema::Validator, doc: &Value, what: &str) {
    assert!(!v.is_valid(doc), "{what} was accepted");
}

#[test]
fn real_documents_match_their_schemas_and_broken_ones_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let db_text = format!("sqlite:{}", dir.path().join("t.db").display());
    let db: DbUrl = db_text.parse().unwrap();
    let b = build(
        &db,
        &BuildOptions {
            warehouses: 1,
            workers: 2,
            force: false,
            seed: 3,
            timeouts: Timeouts::default(),
        },
        &|_| {},
        &Cancel::new(),
    )
    .unwrap();
    let mut plan = TpccRunPlan::new(
        &db_text,
        vec![1, 2],
        RunOptions {
            ramp_s: 0.0,
            time_s: 2.0,
            ..RunOptions::default()
        },
    );
    // Two runs of each count, in the order given, all labelled.
    plan.repeat = 2;
    plan.schedule = vec![0, 1, 1, 0];
    plan.order = Some("counterbalanced".into());
    plan.label = Some("schemas".into());
    let out = run(&plan, &mut Quiet, &Cancel::new()).unwrap();
    assert_eq!(out.stop_reason, StopReason::Completed);
    assert_eq!(out.results.len(), 4);
    let workers: Vec<u32> = out.results.iter().map(|r| r.options.workers).collect();
    assert_eq!(workers, [1, 2, 2, 1]);
    assert!(out
        .results
        .iter()
        .all(|r| r.label.as_deref() == Some("schemas")));
    let c = check(&db, &Timeouts::default()).unwrap();

    let build_v = validator("tpcc-build.schema.json");
    assert_valid(&build_v, &serde_json::to_value(&b).unwrap(), "build report");
    let check_v = validator("tpcc-check.schema.json");
    assert_valid(&check_v, &serde_json::to_value(&c).unwrap(), "check report");
    let run_v = validator("tpcc.schema.json");
    for r in &out.results {
        assert_valid(&run_v, &serde_json::to_value(r).unwrap(), "run result");
        // Each step's result embeds the plan of that step, which parses back.
        let p: TpccRunPlan =
            serde_json::from_value(r.envelope.plan.clone().expect("the plan is embedded")).unwrap();
        assert_eq!(p.workers, vec![r.options.workers]);
        assert_eq!(p.step.seed, plan.step.seed);
    }
    let series =
        serde_json::to_value(out.series.as_ref().expect("two steps make a series")).unwrap();
    let series_v = validator("tpcc-series.schema.json");
    assert_valid(&series_v, &series, "series");
    assert_eq!(series["plan"]["workers"], json!([1, 2]));
    assert_eq!(series["plan"]["schedule"], json!([0, 1, 1, 0]));
    assert_eq!(series["runs"].as_array().map(Vec::len), Some(4));
    assert_eq!(series["steps"][1]["runs"], 2);

    // Broken the ways an old or foreign reader or writer would break them.
    let good = serde_json::to_value(&out.results[0]).unwrap();
    let broken: [(&str, &str, Value); 5] = [
        ("an old version", "/schema_version", json!(1)),
        (
            "a stop reason that is not one of the three",
            "/stop_reason",
            json!("stopped"),
        ),
        (
            "a latency in fractional µs",
            "/transactions/new_order/latency_ns/p50",
            json!(812.5),
        ),
        ("a negative NOPM", "/summary/nopm", json!(-1.0)),
        ("a missing summary", "/summary", Value::Null),
    ];
    for (what, pointer, value) in broken {
        let mut doc = good.clone();
        *doc.pointer_mut(pointer).unwrap() = value;
        if pointer == "/summary" {
            doc.as_object_mut().unwrap().remove("summary");
        }
        assert_invalid(&run_v, &doc, what);
    }
    let mut doc = good.clone();
    let t = doc.pointer_mut("/transactions/new_order").unwrap();
    let lat = t.as_object_mut().unwrap().remove("latency_ns").unwrap();
    t["latency_us"] = lat;
    assert_invalid(&run_v, &doc, "latency_us instead of latency_ns");
    let mut s = series.clone();
    s["steps"][0]["latency_ns"]["new_order"] = json!(["fast", 1]);
    assert_invalid(&series_v, &s, "a series latency that is not ns");
    let mut bad = serde_json::to_value(&c).unwrap();
    bad["conditions"][0]["status"] = json!("ok");
    assert_invalid(
        &check_v,
        &bad,
        "a check status that is not pass/fail/not_applicable",
    );
    let mut bad = serde_json::to_value(&b).unwrap();
    bad.as_object_mut().unwrap().remove("timestamp");
    assert_invalid(
        &build_v,
        &bad,
        "a build report without its envelope's timestamp",
    );
}
