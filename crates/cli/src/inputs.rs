//! The loader of `oio report`, `oio compare` and `oio diagnose` (`oio_documents::load`), given
//! the telemetry crate's parsers for fio JSON and telemetry files.

use oio_analysis::diagnose::{self, samples_from_observation};
use oio_core::document::Kind;
use oio_core::observation::Observation;
use oio_core::result::RunResult;
use oio_documents::load::{self, Format, Input, InputError, ParseError, Parsers, ReportInputs};
use oio_documents::tpcc::{Series, TpccResult};
use oio_telemetry::ParseOptions;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// fio JSON and every telemetry format `oio_telemetry` reads.
#[derive(Clone, Copy, Debug, Default)]
pub struct Telemetry;

impl Parsers for Telemetry {
    fn fio_json(&self, file: &str, text: &str) -> Result<RunResult, ParseError> {
        Ok(oio_telemetry::fio::parse_json_result(file, text)?)
    }

    fn sniff(&self, path: &Path) -> Result<(Format, String), ParseError> {
        let (format, head) = oio_telemetry::sniff_file(path)?;
        let format = match format {
            None => Format::Unknown,
            Some(oio_telemetry::Format::FioJson) => Format::FioJson,
            Some(oio_telemetry::Format::Observation) => Format::Observation,
            Some(oio_telemetry::Format::IostatJson) => Format::IostatJson,
            Some(_) => Format::Telemetry,
        };
        Ok((format, head))
    }

    fn telemetry(&self, path: &Path) -> Result<Observation, ParseError> {
        Ok(oio_telemetry::parse_file(path, &ParseOptions::default())?)
    }
}

/// Documents under `paths` (see [`oio_documents::load::load_inputs`]).
pub fn load_inputs(paths: &[PathBuf]) -> Result<(Vec<Input>, Vec<String>), InputError> {
    load::load_inputs(paths, &Telemetry)
}

/// Documents and telemetry under `paths` (see [`oio_documents::load::load_all`]).
pub fn load_all(paths: &[PathBuf]) -> Result<ReportInputs, InputError> {
    load::load_all(paths, &Telemetry)
}

/// Reads what `oio diagnose` is given: a path that is a telemetry capture is parsed as one;
/// anything else (files, directories of `*.json`) is loaded as documents. Returns the
/// diagnosis inputs and a notice for each document diagnose does not read.
pub fn diagnose_inputs(paths: &[PathBuf]) -> Result<(diagnose::Inputs, Vec<String>), InputError> {
    let mut inputs = diagnose::Inputs::default();
    let mut notices = Vec::new();
    let mut tpcc: Vec<(String, TpccResult)> = Vec::new();
    let mut sql: Vec<oio_analysis::diagnose::DbFacts> = Vec::new();
    let mut series: Vec<(String, PathBuf, Series)> = Vec::new();
    let popts = ParseOptions::default();
    for p in paths {
        inputs.names.push(p.display().to_string());
        if load::is_capture(p, &Telemetry)? {
            let obs = oio_telemetry::parse_file(p, &popts)
                .map_err(|e| InputError::Telemetry(e.into()))?;
            inputs
                .series
                .extend(samples_from_observation(&p.display().to_string(), &obs));
            continue;
        }
        let (docs, passed_over) = load_inputs(std::slice::from_ref(p))?;
        notices.extend(passed_over);
        for input in docs {
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
                // A run's or replay's recording of its device, found in a directory beside
                // its result, belongs to that result (`oio compare CAPTURE RESULT` reads it):
                // not a capture of its own. Given by name, it is one.
                Some(Kind::Observation) if p.is_dir() && is_device_recording(&path) => {}
                Some(Kind::Observation) => {
                    let obs: Observation = Input::typed(value, &path)?;
                    inputs.series.extend(samples_from_observation(&name, &obs));
                }
                Some(Kind::Tpcc) => {
                    let t: TpccResult = Input::typed(value, &path)?;
                    tpcc.push((name, t));
                }
                Some(Kind::TpccSeries) => {
                    let s: Series = Input::typed(value, &path)?;
                    series.push((name, path, s));
                }
                Some(Kind::Sql) => {
                    let t: oio_documents::sql::SqlResult = Input::typed(value, &path)?;
                    sql.push(oio_report::diagnose::sql_db_facts(&name, &t));
                }
                Some(Kind::Fleet) => {
                    // Each host's devices as telemetry named after the host, so the device
                    // rules name the host whose device saturated.
                    let f: oio_documents::fleet::FleetResult = Input::typed(value, &path)?;
                    for h in f.hosts.iter().filter(|h| !h.devices.is_empty()) {
                        let mut obs = Observation::new(
                            oio_core::observation::SourceKind::Record,
                            Vec::new(),
                        );
                        for d in &h.devices {
                            obs.device_mut(&d.name).intervals = d.series.clone();
                        }
                        inputs.series.extend(samples_from_observation(
                            &format!("{name} host {}", h.host),
                            &obs,
                        ));
                    }
                    if let Some(v) = &f.devices {
                        notices.push(format!("{name}: {v}"));
                    }
                }
                other => notices.push(format!(
                    "{name}: a {} document; diagnose reads captures, observations, characterizations, runs, sweeps, TPC-C and SQL script results; skipped",
                    other.map_or("other", Kind::schema)
                )),
            }
        }
    }
    inputs.databases = oio_report::diagnose::tpcc_facts(&tpcc);
    inputs.databases.extend(sql);
    for (name, path, s) in &series {
        inputs
            .scaling
            .extend(series_scaling(path, s, &tpcc).map(|x| (name.clone(), x)));
    }
    Ok((inputs, notices))
}

/// A series' scaling verdict, its step results read from beside it (or among `loaded`).
fn series_scaling(
    path: &Path,
    s: &Series,
    loaded: &[(String, TpccResult)],
) -> Option<oio_analysis::scaling::Scaling> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut beside: Vec<(String, TpccResult)> = Vec::new();
    for r in &s.runs {
        if loaded.iter().any(|(n, _)| n.ends_with(&r.result_file)) {
            continue;
        }
        // The series names its runs' files; only a plain name beside it is read (a name
        // from a file is no licence to read elsewhere), and only a regular file.
        if Path::new(&r.result_file).file_name() != Some(std::ffi::OsStr::new(&r.result_file)) {
            continue;
        }
        let read = oio_core::input::read_bytes(
            &dir.join(&r.result_file),
            oio_core::document::MAX_DOCUMENT_BYTES,
            "a TPC-C result",
        )
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| TpccResult::from_value(v).ok());
        if let Some(t) = read {
            beside.push((r.result_file.clone(), t));
        }
    }
    oio_report::scaling::of_series(s, |file| {
        loaded
            .iter()
            .chain(&beside)
            .find(|(n, _)| n.ends_with(file))
            .map(|(_, t)| t)
    })
}

/// `X.device.json` with its result `X.json` beside it.
fn is_device_recording(path: &Path) -> bool {
    let name = path.to_string_lossy();
    name.strip_suffix(".device.json")
        .is_some_and(|stem| Path::new(&format!("{stem}.json")).is_file())
}

/// The TPC-C results in `dir` (none when it cannot be read).
pub fn tpcc_results(dir: &std::path::Path) -> Vec<TpccResult> {
    let Ok((inputs, _)) = load_inputs(&[dir.to_path_buf()]) else {
        return Vec::new();
    };
    inputs
        .into_iter()
        .filter_map(|i| match i {
            oio_documents::load::Input::Doc { schema, value, .. }
                if schema == oio_tpcc::result::TPCC_SCHEMA =>
            {
                TpccResult::from_value(value).ok()
            }
            _ => None,
        })
        .collect()
}
