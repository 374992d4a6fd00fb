//! The report model from what the loader read (`oio_documents::load`): each document under
//! the label it is shown with.

use crate::model::{Entry, Report};
use oio_core::document::Kind;
pub use oio_documents::load::{label_of, Input, InputError, ReportInputs};
use serde_json::Value;

/// Builds the report model from documents and telemetry.
pub fn build_report(inputs: ReportInputs, title: &str) -> Result<Report, InputError> {
    let mut r = Report {
        title: title.into(),
        generated: oio_core::host::now_rfc3339(),
        oio_version: env!("CARGO_PKG_VERSION").into(),
        ..Default::default()
    };
    for input in inputs.docs {
        let (value, path) = match input {
            Input::Run { result, path } => {
                r.runs.push(Entry {
                    label: label_of(&path),
                    source: path.display().to_string(),
                    doc: *result,
                });
                continue;
            }
            Input::Doc { value, path, .. } => (value, path),
        };
        let source = path.display().to_string();
        let kind = value
            .get("schema")
            .and_then(Value::as_str)
            .and_then(Kind::from_schema);
        let ladder = matches!(kind, Some(Kind::FleetScale | Kind::FleetTpccScale));
        // A fleet run's directory says what ran (fleet-<time>-<workload>/merged.json), and a
        // ladder's (fleet-scale-<time>-<workload>/scale.json).
        let label = match (kind, path.parent()) {
            (Some(Kind::Fleet | Kind::FleetTpcc), Some(dir)) if dir.file_name().is_some() => {
                label_of(&dir.with_extension("json"))
            }
            (_, Some(dir)) if ladder && dir.file_name().is_some() => {
                label_of(&dir.with_extension("json"))
            }
            _ => label_of(&path),
        };
        macro_rules! push {
            ($list:ident) => {
                r.$list.push(Entry {
                    label,
                    source,
                    doc: Input::typed(value, &path)?,
                })
            };
        }
        match kind {
            Some(Kind::Sweep) => push!(sweeps),
            Some(Kind::Compare) => push!(comparisons),
            Some(Kind::Observation) => push!(observations),
            Some(Kind::Tpcc) => push!(tpcc),
            Some(Kind::Sql) => push!(sql),
            Some(Kind::TpccCheck) => push!(tpcc_checks),
            Some(Kind::TpccSeries) => push!(tpcc_series),
            Some(Kind::Fleet) => push!(fleets),
            Some(Kind::FleetTpcc) => push!(fleet_tpcc),
            Some(Kind::FleetScale | Kind::FleetTpccScale) => push!(ladders),
            Some(Kind::Characterization) => push!(characterizations),
            _ => r.others.push(Entry {
                label,
                source,
                doc: value,
            }),
        }
    }
    for (path, doc) in inputs.telemetry {
        r.observations.push(Entry {
            label: label_of(&path),
            source: path.display().to_string(),
            doc,
        });
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use oio_core::observation::Observation;
    use oio_documents::load::{load_inputs, DocumentsOnly};

    #[test]
    fn a_repeat_array_gives_one_run_per_item_and_other_kinds_stay_documents() {
        // A run written before the envelope existed: same layout, still loads.
        let run = include_str!("../../analysis/tests/fixtures/run-null.json");
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("repeat.json"), format!("[{run},{run}]")).unwrap();
        std::fs::write(
            d.path().join("notes.txt"),
            "not json, and not read: only *.json in a directory",
        )
        .unwrap();
        let mut obs = Observation::new(oio_core::observation::SourceKind::Record, vec![]);
        obs.envelope.warnings.push("w".into());
        std::fs::write(
            d.path().join("rec.json"),
            serde_json::to_string(&obs).unwrap(),
        )
        .unwrap();
        let (got, notices) = load_inputs(&[d.path().to_path_buf()], &DocumentsOnly).unwrap();
        assert!(notices.is_empty(), "{notices:?}");
        let kinds: Vec<&str> = got.iter().map(Input::kind).collect();
        assert_eq!(kinds, ["oio.observation", "oio.run", "oio.run"]);
        let Input::Run { result, .. } = &got[1] else {
            panic!("a run")
        };
        assert!(result.envelope.host.is_some());
        let report = build_report(
            ReportInputs {
                docs: got,
                ..Default::default()
            },
            "t",
        )
        .unwrap();
        assert_eq!((report.runs.len(), report.observations.len()), (2, 1));
        assert_eq!(report.observations[0].doc.envelope.warnings, ["w"]);
    }
}
