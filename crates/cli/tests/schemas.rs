//! Every document kind against its JSON Schema in `schema/`: each test makes a real document
//! with the binary, validates it, and checks that the same document without a required field
//! fails (so a schema that accepts anything cannot pass). Also: a newer schema_version is
//! refused by name, and documents written before the envelope still load.

use crate::common::{oio, run_json, scratch, uses_io_uring};
use serde_json::Value;
use std::path::Path;

/// The schema files, by the name a `$ref` uses (resolved against `https://oio.invalid/schema/`).
const SCHEMAS: [(&str, &str); 9] = [
    (
        "envelope.schema.json",
        include_str!("../../../schema/envelope.schema.json"),
    ),
    (
        "run.schema.json",
        include_str!("../../../schema/run.schema.json"),
    ),
    (
        "observation.schema.json",
        include_str!("../../../schema/observation.schema.json"),
    ),
    (
        "characterization.schema.json",
        include_str!("../../../schema/characterization.schema.json"),
    ),
    (
        "compare.schema.json",
        include_str!("../../../schema/compare.schema.json"),
    ),
    (
        "sweep.schema.json",
        include_str!("../../../schema/sweep.schema.json"),
    ),
    (
        "diagnose.schema.json",
        include_str!("../../../schema/diagnose.schema.json"),
    ),
    (
        "blend.schema.json",
        include_str!("../../../schema/blend.schema.json"),
    ),
    (
        "verify.schema.json",
        include_str!("../../../schema/verify.schema.json"),
    ),
];

const BASE: &str = "https://oio.invalid/schema/";

/// Resolves `$ref`s between oio's schemas from the files checked in, never the network.
struct Local;

impl jsonschema::Retrieve for Local {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let name = uri
            .as_str()
            .strip_prefix(BASE)
            .ok_or_else(|| format!("{uri} is not one of oio's schemas"))?;
        let text = SCHEMAS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| *t)
            .ok_or_else(|| format!("no schema/{name}"))?;
        Ok(serde_json::from_str(text)?)
    }
}

/// A validator for one of oio's schemas, with the envelope and the other schemas it refers to
/// (`jsonschema::validator_for` cannot resolve them).
pub(crate) fn validator_for(schema: &Value) -> Result<jsonschema::Validator, impl std::fmt::Debug> {
    jsonschema::options().with_retriever(Local).build(schema)
}

fn validator(name: &str) -> jsonschema::Validator {
    let text = SCHEMAS
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no schema/{name}"))
        .1;
    validator_for(&serde_json::from_str(text).unwrap()).expect("the schema compiles")
}

fn errors(v: &Value, name: &str) -> Vec<String> {
    validator(name)
        .iter_errors(v)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

/// `v` matches `schema/NAME`, and stops matching without each of `required` (top-level
/// fields the kind's schema or the envelope requires).
fn check(v: &Value, name: &str, required: &[&str]) {
    let e = errors(v, name);
    assert!(e.is_empty(), "does not match schema/{name}: {e:#?}\n{v}");
    assert!(!required.is_empty());
    for field in required {
        let mut broken = v.clone();
        assert!(
            broken.as_object_mut().unwrap().remove(*field).is_some(),
            "the document has no {field}"
        );
        assert!(
            !errors(&broken, name).is_empty(),
            "schema/{name} accepts a document without {field}"
        );
    }
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let out = oio().current_dir(dir).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "oio {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn null_run(dir: &Path, out: &str) -> Value {
    run_json(
        dir,
        &[
            "run",
            "--engine",
            "null",
            "--rw",
            "randrw",
            "--bs",
            "4k",
            "--qd",
            "4",
            "--time",
            "300ms",
            "--ramp",
            "0",
            "--interval",
            "100ms",
            "--size",
            "1M",
            "--out",
            out,
            "t.dat",
        ],
    )
}

#[test]
fn run_results_match_the_run_schema() {
    let d = scratch();
    let v = null_run(d.path(), "r");
    check(
        &v,
        "run.schema.json",
        &["schema", "timestamp", "stop_reason", "host", "summary"],
    );
    assert_eq!(v["schema"], "oio.run");
    // A result written before the envelope existed has the same layout: it still validates.
    let old: Value =
        serde_json::from_str(include_str!("../../analysis/tests/fixtures/run-null.json")).unwrap();
    check(&old, "run.schema.json", &["workload"]);
}

#[test]
fn observations_from_a_recording_match_the_observation_schema() {
    let d = scratch();
    let text = ok(
        d.path(),
        &[
            "record",
            "--interval",
            "200ms",
            "--duration",
            "600ms",
            "--json",
        ],
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["schema"], "oio.observation");
    check(
        &v,
        "observation.schema.json",
        &["source", "devices", "oio_version", "warnings"],
    );
}

#[test]
fn characterizations_match_the_characterization_schema() {
    let d = scratch();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../telemetry/tests/fixtures/iostat_12_6_iso_time_d_two_devices.txt");
    let text = ok(
        d.path(),
        &[
            "characterize",
            fixture.to_str().unwrap(),
            "--device",
            "vda",
            "--busy-queue",
            "0",
            "--json",
        ],
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["schema"], "oio.characterization");
    check(
        &v,
        "characterization.schema.json",
        &["workload", "read", "schema_version", "timestamp"],
    );
}

#[test]
fn comparisons_and_diagnoses_of_real_runs_match_their_schemas() {
    let d = scratch();
    for g in ["a", "a", "b", "b"] {
        null_run(d.path(), g);
    }
    let c = run_json(d.path(), &["compare", "a", "b"]);
    assert_eq!(c["schema"], "oio.compare");
    check(
        &c,
        "compare.schema.json",
        &["groups", "metrics", "oio_version", "partial"],
    );
    let g = run_json(d.path(), &["diagnose", "a", "b"]);
    assert_eq!(g["schema"], "oio.diagnosis");
    check(
        &g,
        "diagnose.schema.json",
        &["findings", "inputs", "schema", "command"],
    );
}

#[test]
fn sweeps_match_the_sweep_schema() {
    let d = scratch();
    let v = run_json(
        d.path(),
        &[
            "sweep",
            "randread",
            "--sim",
            "servers=4,service=1ms,dist=fixed",
            "--size",
            "1M",
            "--time",
            "300ms",
            "--ramp",
            "0",
            "--interval",
            "100ms",
            "--qd",
            "1,4",
            "--out",
            "s",
        ],
    );
    assert_eq!(v["schema"], "oio.sweep");
    check(
        &v,
        "sweep.schema.json",
        &["points", "knee", "timestamp", "warnings"],
    );
}

#[test]
fn blends_match_the_blend_schema() {
    let _uring = uses_io_uring();
    let d = scratch();
    let v = run_json(
        d.path(),
        &[
            "blend",
            "--streams",
            "2",
            "--bs",
            "64k",
            "--time",
            "300ms",
            "--ramp",
            "0",
            "--size",
            "8M",
            "--out",
            "b",
            "b.dat",
        ],
    );
    assert_eq!(v["schema"], "oio.blend");
    check(
        &v,
        "blend.schema.json",
        &["phases", "host", "schema_version", "stop_reason"],
    );
}

#[test]
fn verifications_match_the_verify_schema() {
    let _uring = uses_io_uring();
    let d = scratch();
    run_json(
        d.path(),
        &[
            "run",
            "--verify",
            "--rw",
            "randwrite",
            "--bs",
            "4k",
            "--qd",
            "4",
            "--time",
            "300ms",
            "--ramp",
            "0",
            "--size",
            "4M",
            "--buffered",
            "v.dat",
        ],
    );
    let v: Value = serde_json::from_str(&ok(d.path(), &["verify", "--json", "v.dat"])).unwrap();
    assert_eq!(v["schema"], "oio.verify");
    assert!(v["blocks_checked"].as_u64().unwrap() > 0, "{v}");
    check(
        &v,
        "verify.schema.json",
        &["blocks_checked", "findings", "host", "oio_version"],
    );
}

#[test]
fn a_document_from_a_newer_oio_is_refused_naming_file_kind_and_versions() {
    let d = scratch();
    let mut v = null_run(d.path(), "r");
    v["schema_version"] = 99.into();
    let f = d.path().join("future.json");
    std::fs::write(&f, v.to_string()).unwrap();
    for cmd in ["report", "diagnose", "compare", "import"] {
        // compare needs two groups; the first is refused before the second is read.
        let args: &[&str] = if cmd == "compare" {
            &[cmd, "future.json", "future.json"]
        } else {
            &[cmd, "future.json"]
        };
        let out = oio().current_dir(d.path()).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "oio {cmd} read it: {err}");
        assert!(
            err.contains("'future.json'")
                && err.contains("oio.run schema_version 99")
                && err.contains("up to version 1"),
            "oio {cmd}: {err}"
        );
    }
    // An unknown kind is named as such.
    std::fs::write(&f, r#"{"schema":"acme.result","schema_version":1}"#).unwrap();
    let out = oio()
        .current_dir(d.path())
        .args(["report", "future.json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown document kind \"acme.result\""),
        "{err}"
    );
}

#[test]
fn the_kind_table_agrees_with_every_writer() {
    use oio_core::document::Kind;
    let pairs = [
        (
            Kind::Run,
            oio_core::result::RUN_SCHEMA,
            oio_core::result::RUN_SCHEMA_VERSION,
        ),
        (
            Kind::Tpcc,
            oio_tpcc::result::TPCC_SCHEMA,
            oio_tpcc::result::TPCC_SCHEMA_VERSION,
        ),
        (
            Kind::TpccBuild,
            oio_tpcc::load::BUILD_SCHEMA,
            oio_tpcc::load::BUILD_SCHEMA_VERSION,
        ),
        (
            Kind::TpccSeries,
            oio_tpcc::result::SERIES_SCHEMA,
            oio_tpcc::result::SERIES_SCHEMA_VERSION,
        ),
    ];
    for (kind, schema, version) in pairs {
        assert_eq!((kind.schema(), kind.version()), (schema, version));
    }
    assert_eq!(Kind::TpccCheck.schema(), oio_tpcc::check::CHECK_SCHEMA);
    assert_eq!(
        (Kind::Fleet.schema(), Kind::Fleet.version()),
        (
            oio_fleet::merge::FLEET_SCHEMA,
            oio_fleet::merge::FLEET_SCHEMA_VERSION
        )
    );
    // Every kind this oio writes outside TPC-C has a schema file whose constants match.
    for (kind, file) in [
        (Kind::Run, "run.schema.json"),
        (Kind::Observation, "observation.schema.json"),
        (Kind::Characterization, "characterization.schema.json"),
        (Kind::Compare, "compare.schema.json"),
        (Kind::Sweep, "sweep.schema.json"),
        (Kind::Diagnosis, "diagnose.schema.json"),
        (Kind::Blend, "blend.schema.json"),
        (Kind::Verify, "verify.schema.json"),
    ] {
        let s: Value =
            serde_json::from_str(SCHEMAS.iter().find(|(n, _)| *n == file).unwrap().1).unwrap();
        assert_eq!(s["properties"]["schema"]["const"], kind.schema(), "{file}");
        assert_eq!(
            s["properties"]["schema_version"]["const"],
            kind.version(),
            "{file}"
        );
        assert_eq!(s["$ref"], "envelope.schema.json", "{file}");
    }
}
