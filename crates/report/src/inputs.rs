//! Reading what the analysis commands are given: files and directories of oio documents, fio
//! JSON and telemetry, into typed documents.
//!
//! Every JSON file goes through [`oio_core::document`] (kind and version checked, fio JSON and
//! `--repeat` arrays recognised); documents are told apart by their `schema` field, never by
//! file names. `oio report`, `oio compare` and `oio diagnose` all load through here.

use crate::model::{Entry, Report};
use oio_analysis::diagnose::{self, samples_from_observation};
use oio_core::document::{self, DocumentError, Kind, Loaded};
use oio_core::observation::Observation;
use oio_core::result::RunResult;
use oio_telemetry::{Format, ParseOptions, TelemetryError};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Why inputs could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// A file or directory could not be read or listed.
    #[error("{what} '{file}': {source}")]
    Io {
        /// "reading" or "listing".
        what: &'static str,
        /// The path.
        file: String,
        /// The cause.
        source: std::io::Error,
    },
    /// An oio or fio JSON document that could not be read.
    #[error(transparent)]
    Document(#[from] DocumentError),
    /// Telemetry that could not be parsed.
    #[error(transparent)]
    Telemetry(#[from] TelemetryError),
    /// A file named on the command line that oio does not read.
    #[error("'{0}' is neither an oio or fio JSON document nor telemetry oio reads (perfmon CSV, iostat -x or JSON, /proc/diskstats snapshots, blkparse text, fio bw/iops/lat logs)")]
    Unreadable(String),
}

/// One document read from disk.
pub enum Input {
    /// An oio run (or a fio result converted to one).
    Run {
        /// The result.
        result: Box<RunResult>,
        /// Its file.
        path: PathBuf,
    },
    /// Any other oio document, by schema (its kind and version already checked).
    Doc {
        /// Its `schema` value.
        schema: String,
        /// The parsed JSON.
        value: Value,
        /// Its file.
        path: PathBuf,
    },
}

impl Input {
    /// The file.
    pub fn path(&self) -> &Path {
        match self {
            Input::Run { path, .. } | Input::Doc { path, .. } => path,
        }
    }

    /// What kind of document (its `schema`).
    pub fn kind(&self) -> &str {
        match self {
            Input::Run { .. } => Kind::Run.schema(),
            Input::Doc { schema, .. } => schema,
        }
    }

    /// The document as the type of its kind.
    pub fn typed<T: serde::de::DeserializeOwned>(
        value: Value,
        path: &Path,
    ) -> Result<T, InputError> {
        let kind = value
            .get("schema")
            .and_then(Value::as_str)
            .and_then(Kind::from_schema)
            .unwrap_or(Kind::Run);
        let doc = document::Document {
            kind,
            schema_version: kind.version(),
            value,
        };
        Ok(doc.into_typed(&path.display().to_string())?)
    }
}

/// A telemetry file read as an observation.
pub type Telemetry = (PathBuf, Observation);

/// What [`load_report_inputs`] read.
#[derive(Default)]
pub struct ReportInputs {
    /// oio and fio JSON documents.
    pub docs: Vec<Input>,
    /// Telemetry files, as observations.
    pub telemetry: Vec<Telemetry>,
    /// Files in directories that were neither, skipped (a notice each).
    pub skipped: Vec<PathBuf>,
}

/// Files of a directory, recursively, sorted by name, hidden ones left out; `true` beside the
/// paths named directly.
fn all_files(path: &Path, out: &mut Vec<(PathBuf, bool)>) -> Result<(), InputError> {
    let io = |what, source| InputError::Io {
        what,
        file: path.display().to_string(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(|e| io("reading", e))?;
    if !meta.is_dir() {
        out.push((path.to_path_buf(), true));
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| io("listing", e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            !p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with('.'))
        })
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            all_files(&p, out)?;
        } else if p.is_file() {
            out.push((p, false));
        }
    }
    Ok(())
}

/// The JSON files under `paths`: files named directly, and `*.json` in directories.
pub fn collect_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, InputError> {
    let mut all = Vec::new();
    for p in paths {
        all_files(p, &mut all)?;
    }
    Ok(all
        .into_iter()
        .filter(|(p, named)| *named || p.extension().is_some_and(|e| e == "json"))
        .map(|(p, _)| p)
        .collect())
}

/// Reads one JSON file into documents (several for a `--repeat --json` array).
fn load_json(f: &Path, out: &mut Vec<Input>) -> Result<(), InputError> {
    let name = f.display().to_string();
    match document::load_file(f)? {
        Loaded::FioJson(text) => out.push(Input::Run {
            result: Box::new(oio_telemetry::fio::parse_json_result(&name, &text)?),
            path: f.to_path_buf(),
        }),
        Loaded::Documents(docs) => {
            for d in docs {
                if d.kind == Kind::Run {
                    out.push(Input::Run {
                        result: Box::new(d.into_typed(&name)?),
                        path: f.to_path_buf(),
                    });
                } else {
                    out.push(Input::Doc {
                        schema: d.kind.schema().to_string(),
                        value: d.value,
                        path: f.to_path_buf(),
                    });
                }
            }
        }
    }
    Ok(())
}

/// Reads files and directories (recursively, `*.json`, sorted by name) into documents.
pub fn load_inputs(paths: &[PathBuf]) -> Result<Vec<Input>, InputError> {
    let mut out = Vec::new();
    for f in collect_files(paths)? {
        load_json(&f, &mut out)?;
    }
    Ok(out)
}

/// True when the head of a file looks like JSON (after a byte-order mark).
fn looks_like_json(head: &str) -> bool {
    head.trim_start_matches('\u{feff}')
        .trim_start()
        .starts_with(['{', '['])
}

/// Reads what `oio report` is given: oio and fio JSON documents, and telemetry files of any
/// format the telemetry parsers read (perfmon CSV, iostat, diskstats, blkparse, fio logs),
/// which become observations. In a directory, files that are neither are skipped (and listed);
/// a file named on the command line that is neither is an error.
pub fn load_report_inputs(paths: &[PathBuf]) -> Result<ReportInputs, InputError> {
    let mut files = Vec::new();
    for p in paths {
        all_files(p, &mut files)?;
    }
    let mut out = ReportInputs::default();
    for (f, named) in files {
        let name = f.display().to_string();
        let (format, h) = match is_blg(&f) {
            // Named, the reader says how to convert it (relog); in a directory, skipped.
            true => (named.then_some(Format::Perfmon), String::new()),
            false => oio_telemetry::sniff_file(&f)?,
        };
        // JSON is an oio or fio document unless it is iostat's (the text heuristics of the
        // detector could take a one-line JSON document for something else).
        let iostat_json = format == Some(Format::IostatJson);
        match format {
            _ if looks_like_json(&h) && !iostat_json => load_json(&f, &mut out.docs)?,
            Some(fmt) if fmt != Format::FioJson => {
                let obs = oio_telemetry::parse_file(&f, &ParseOptions::default())?;
                out.telemetry.push((f, obs));
            }
            _ if named => return Err(InputError::Unreadable(name)),
            _ => out.skipped.push(f),
        }
    }
    Ok(out)
}

/// A short label: the file stem, prefixed by its directory when that helps.
pub fn label_of(path: &Path) -> String {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("?")
        .to_string();
    // run-20261121T143731Z-randread-4k -> randread-4k: what ran, not when (the time is in
    // the tables and the environment).
    let stem = ["tpcc-series-", "tpcc-build-", "tpcc-check-"]
        .iter()
        .find_map(|p| stem.strip_prefix(p))
        .map(str::to_string)
        .unwrap_or(stem);
    let stem = match stem.split_once('-') {
        Some((kind, rest))
            if ["run", "sweep", "tpcc", "compare", "record", "fleet"].contains(&kind) =>
        {
            rest.to_string()
        }
        _ => stem,
    };
    let stem = match stem.split_once('-') {
        // ASCII first: byte slicing a name with non-ASCII characters would split one.
        Some((ts, rest))
            if ts.is_ascii() && ts.len() == 16 && ts.as_bytes()[8] == b'T' && ts.ends_with('Z') =>
        {
            rest.to_string()
        }
        None if stem.is_ascii() && stem.len() == 16 && stem.as_bytes()[8] == b'T' => {
            "result".to_string()
        }
        _ => stem,
    };
    match path
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|s| s.to_str())
    {
        Some(d) if d != "oio-results" && !d.is_empty() => format!("{d}/{stem}"),
        _ => stem,
    }
}

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
        // A fleet run's directory says what ran (fleet-<time>-<workload>/merged.json).
        let label = match (kind, path.parent()) {
            (Some(Kind::Fleet), Some(dir)) if dir.file_name().is_some() => {
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
            Some(Kind::TpccCheck) => push!(tpcc_checks),
            Some(Kind::TpccSeries) => push!(tpcc_series),
            Some(Kind::Fleet) => push!(fleets),
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

/// True when `path` is a telemetry capture rather than a JSON document.
fn is_capture(path: &Path) -> Result<bool, InputError> {
    if path.is_dir() {
        return Ok(false);
    }
    if is_blg(path) {
        // The reader refuses it with the relog command that converts it.
        return Ok(true);
    }
    let (format, text) = oio_telemetry::sniff_file(path)?;
    Ok(match format {
        Some(Format::Observation) | Some(Format::FioJson) => false,
        Some(_) => true,
        // Other text: let the telemetry reader decide unless it looks like JSON.
        None => !looks_like_json(&text),
    })
}

/// A perfmon binary log, which the telemetry reader refuses with how to convert it.
fn is_blg(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("blg"))
}

/// Reads what `oio diagnose` is given: a path that is a telemetry capture is parsed as one;
/// anything else (files, directories of `*.json`) is loaded as documents. Returns the
/// diagnosis inputs and a notice for each document diagnose does not read.
pub fn diagnose_inputs(paths: &[PathBuf]) -> Result<(diagnose::Inputs, Vec<String>), InputError> {
    let mut inputs = diagnose::Inputs::default();
    let mut notices = Vec::new();
    let popts = ParseOptions::default();
    for p in paths {
        inputs.names.push(p.display().to_string());
        if is_capture(p)? {
            let obs = oio_telemetry::parse_file(p, &popts)?;
            inputs
                .series
                .extend(samples_from_observation(&p.display().to_string(), &obs));
            continue;
        }
        for input in load_inputs(std::slice::from_ref(p))? {
            let name = input.path().display().to_string();
            let (value, path) = match input {
                Input::Run { result, .. } => {
                    inputs.runs.push((name, *result));
                    continue;
                }
                Input::Doc { value, path, .. } => (value, path),
            };
            match value
                .get("schema")
                .and_then(Value::as_str)
                .and_then(Kind::from_schema)
            {
                Some(Kind::Sweep) => inputs.sweeps.push((name, Input::typed(value, &path)?)),
                Some(Kind::Characterization) => inputs
                    .characterizations
                    .push((name, Input::typed(value, &path)?)),
                Some(Kind::Observation) => {
                    let obs: Observation = Input::typed(value, &path)?;
                    inputs.series.extend(samples_from_observation(&name, &obs));
                }
                Some(Kind::Tpcc) => {
                    let t: oio_tpcc::TpccResult = Input::typed(value, &path)?;
                    inputs.databases.push(crate::diagnose::db_facts(&name, &t));
                }
                other => notices.push(format!(
                    "{name}: a {} document; diagnose reads captures, observations, characterizations, runs, sweeps and TPC-C results; skipped",
                    other.map_or("other", Kind::schema)
                )),
            }
        }
    }
    Ok((inputs, notices))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_name_what_ran_not_when() {
        assert_eq!(
            label_of(Path::new(
                "oio-results/run-20261121T143731Z-randread-4k.json"
            )),
            "randread-4k"
        );
        assert_eq!(
            label_of(Path::new("raid5/20261121T143731Z.json")),
            "raid5/result"
        );
        assert_eq!(label_of(Path::new("x/é-ü.json")), "x/é-ü");
        assert_eq!(
            label_of(Path::new(
                "oio-results/tpcc-series-20261123T214214Z-sqlite-w1-series.json"
            )),
            "sqlite-w1-series"
        );
        assert_eq!(
            label_of(Path::new("fleet/fleet-20261123T214159Z-randread-4k.json")),
            "fleet/randread-4k"
        );
    }

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
        let got = load_inputs(&[d.path().to_path_buf()]).unwrap();
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

    #[test]
    fn a_newer_document_in_a_directory_is_refused_with_its_name() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("s.json");
        std::fs::write(&f, r#"{"schema":"oio.sweep","schema_version":99}"#).unwrap();
        let e = load_inputs(&[d.path().to_path_buf()])
            .err()
            .expect("refused")
            .to_string();
        assert!(
            e.contains("s.json") && e.contains("schema_version 99"),
            "{e}"
        );
    }
}
