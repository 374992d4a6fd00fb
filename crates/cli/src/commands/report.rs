//! `oio report`: one self-contained HTML page (and, on request, SVG/PNG charts and CSV series)
//! from any mix of result files: oio runs, fio JSON, sweeps, comparisons, recorded
//! observations, characterizations and other oio documents (TPC-C results).
//!
//! Also the one place that reads result files for the analysis commands ([`load_inputs`]):
//! documents are recognised by their `schema` field (fio JSON by its `"fio version"`), not
//! by file names.

use crate::output::style;
use anyhow::{bail, Context};
use oio_report::model::{Entry, Report};
use oio_report::{csv::CsvRenderer, html::HtmlRenderer, png, Renderer, SvgRenderer};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `oio report`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  oio report oio-results/ -o report.html
  oio report sweep.json compare.json fio-run.json --svg charts/ --csv series/
  oio report oio-results/ --png charts/          (needs Chromium: apt-get install chromium)")]
pub struct Args {
    /// Result files or directories of them (oio run/sweep/compare/observation/characterization,
    /// fio JSON, TPC-C results).
    #[arg(value_name = "RESULT", required = true)]
    pub inputs: Vec<PathBuf>,

    /// The HTML file to write ("-" for stdout).
    #[arg(
        short = 'o',
        long,
        value_name = "FILE",
        default_value = "oio-report.html"
    )]
    pub output: PathBuf,

    /// Also write every chart as an SVG file into DIR.
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,

    /// Also write every chart as a PNG file into DIR (rendered by headless Chromium).
    #[arg(long, value_name = "DIR")]
    pub png: Option<PathBuf>,

    /// Also write the series behind the charts as CSV files into DIR.
    #[arg(long, value_name = "DIR")]
    pub csv: Option<PathBuf>,

    /// Title of the page.
    #[arg(long, value_name = "TEXT", default_value = "oio report")]
    pub title: String,
}

/// One document read from disk.
pub enum Input {
    /// An oio run (or a fio result converted to one).
    Run {
        /// The result.
        result: Box<oio_core::result::RunResult>,
        /// Its file.
        path: PathBuf,
    },
    /// Any other oio document, by schema.
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

    /// What kind of document.
    pub fn kind(&self) -> &str {
        match self {
            Input::Run { .. } => "oio.run",
            Input::Doc { schema, .. } => schema,
        }
    }
}

fn collect_files(path: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let mut all = Vec::new();
    all_files(path, &mut all)?;
    out.extend(
        all.into_iter()
            .filter(|(p, named)| *named || p.extension().is_some_and(|e| e == "json"))
            .map(|(p, _)| p),
    );
    Ok(())
}

/// Reads files and directories (recursively, `*.json`, sorted by name) into documents.
pub fn load_inputs(paths: &[PathBuf]) -> anyhow::Result<Vec<Input>> {
    let mut files = Vec::new();
    for p in paths {
        collect_files(p, &mut files)?;
    }
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        let text =
            std::fs::read_to_string(&f).with_context(|| format!("reading '{}'", f.display()))?;
        if text.contains("\"fio version\"") {
            let r = oio_telemetry::fio::parse_json_result(&f.display().to_string(), &text)?;
            out.push(Input::Run {
                result: Box::new(r),
                path: f,
            });
            continue;
        }
        let value: Value = serde_json::from_str(&text).with_context(|| {
            format!(
                "'{}' is not JSON (expected an oio result or fio JSON output)",
                f.display()
            )
        })?;
        let Some(schema) = value
            .get("schema")
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            if value.is_array() {
                // `oio run --repeat N --json` output: an array of runs.
                for (i, v) in value.as_array().into_iter().flatten().enumerate() {
                    let r: oio_core::result::RunResult = serde_json::from_value(v.clone())
                        .with_context(|| {
                            format!("'{}' item {i}: expected an oio run result", f.display())
                        })?;
                    out.push(Input::Run {
                        result: Box::new(r),
                        path: f.clone(),
                    });
                }
                continue;
            }
            bail!(
                "'{}' has no \"schema\" field: expected an oio document (oio.run, oio.sweep, oio.compare, …) or fio JSON",
                f.display()
            );
        };
        if schema == oio_core::result::RUN_SCHEMA {
            let r: oio_core::result::RunResult = serde_json::from_value(value)
                .with_context(|| format!("'{}': not a valid oio.run document", f.display()))?;
            out.push(Input::Run {
                result: Box::new(r),
                path: f,
            });
        } else {
            out.push(Input::Doc {
                schema,
                value,
                path: f,
            });
        }
    }
    Ok(out)
}

/// A short label: the file stem, prefixed by its directory when that helps.
fn label_of(path: &Path) -> String {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("?")
        .to_string();
    // run-20261121T143731Z-randread-4k -> randread-4k: what ran, not when (the time is in
    // the tables and the environment).
    let stem = match stem.split_once('-') {
        Some((kind, rest)) if ["run", "sweep", "tpcc", "compare", "record"].contains(&kind) => {
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

/// Files of a directory, recursively, sorted by name, hidden ones left out.
fn all_files(path: &Path, out: &mut Vec<(PathBuf, bool)>) -> anyhow::Result<()> {
    let meta = std::fs::metadata(path).with_context(|| format!("reading '{}'", path.display()))?;
    if !meta.is_dir() {
        out.push((path.to_path_buf(), true));
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .with_context(|| format!("listing '{}'", path.display()))?
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

/// The start of a file, enough to tell its format.
fn head(path: &Path) -> anyhow::Result<String> {
    use std::io::Read;
    let mut buf = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(64 << 10).read_to_end(&mut buf))
        .with_context(|| format!("reading '{}'", path.display()))?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// A telemetry file read as an observation.
pub type Telemetry = (PathBuf, oio_core::observation::Observation);

/// Reads what `oio report` is given: oio and fio JSON documents, and telemetry files of any
/// format the telemetry parsers read (perfmon CSV, iostat, diskstats, blkparse, fio logs),
/// which become observations. In a directory, files that are neither are skipped (and said);
/// a file named on the command line that is neither is an error.
pub fn load_report_inputs(paths: &[PathBuf]) -> anyhow::Result<(Vec<Input>, Vec<Telemetry>)> {
    let mut files = Vec::new();
    for p in paths {
        all_files(p, &mut files)?;
    }
    let mut docs = Vec::new();
    let mut obs = Vec::new();
    for (f, named) in files {
        let h = head(&f)?;
        let name = f.display().to_string();
        let format = oio_telemetry::detect_format(&name, &h);
        let t = h.trim_start_matches('\u{feff}').trim_start();
        let json = t.starts_with('{') || t.starts_with('[');
        // JSON is an oio or fio document unless it is iostat's (the text heuristics of the
        // detector could take a one-line JSON document for something else).
        let iostat_json = format == Some(oio_telemetry::Format::IostatJson);
        match format {
            _ if json && !iostat_json => docs.extend(load_inputs(std::slice::from_ref(&f))?),
            Some(fmt) if fmt != oio_telemetry::Format::FioJson => obs.push((
                f.clone(),
                oio_telemetry::parse_file(&f, &oio_telemetry::ParseOptions::default())?,
            )),
            _ if named => bail!(
                "'{name}' is neither an oio or fio JSON document nor telemetry oio reads (perfmon CSV, iostat -x or JSON, /proc/diskstats snapshots, blkparse text, fio bw/iops/lat logs)"
            ),
            _ => style::print_notice(&format!(
                "skipping '{name}': not a result or telemetry oio reads"
            )),
        }
    }
    Ok((docs, obs))
}

/// Builds the report model from documents.
pub fn build_report(inputs: Vec<Input>, title: &str) -> anyhow::Result<Report> {
    let mut r = Report {
        title: title.into(),
        generated: now_rfc3339(),
        oio_version: env!("CARGO_PKG_VERSION").into(),
        ..Default::default()
    };
    for input in inputs {
        match input {
            Input::Run { result, path } => r.runs.push(Entry {
                label: label_of(&path),
                source: path.display().to_string(),
                doc: *result,
            }),
            Input::Doc {
                schema,
                value,
                path,
            } => {
                let label = label_of(&path);
                let source = path.display().to_string();
                let bad = |what: &str| format!("'{}': not a valid {what} document", path.display());
                match schema.as_str() {
                    oio_analysis::sweep::SCHEMA => r.sweeps.push(Entry {
                        label,
                        source,
                        doc: serde_json::from_value(value).with_context(|| bad("oio.sweep"))?,
                    }),
                    oio_analysis::compare::SCHEMA => r.comparisons.push(Entry {
                        label,
                        source,
                        doc: serde_json::from_value(value).with_context(|| bad("oio.compare"))?,
                    }),
                    oio_core::observation::OBSERVATION_SCHEMA => r.observations.push(Entry {
                        label,
                        source,
                        doc: serde_json::from_value(value)
                            .with_context(|| bad("oio.observation"))?,
                    }),
                    oio_tpcc::result::TPCC_SCHEMA => r.tpcc.push(Entry {
                        label,
                        source,
                        doc: oio_tpcc::TpccResult::from_value(value)
                            .with_context(|| bad("oio.tpcc"))?,
                    }),
                    oio_tpcc::check::CHECK_SCHEMA => r.tpcc_checks.push(Entry {
                        label,
                        source,
                        doc: serde_json::from_value(value)
                            .with_context(|| bad("oio.tpcc.check"))?,
                    }),
                    oio_analysis::characterize::SCHEMA => r.characterizations.push(Entry {
                        label,
                        source,
                        doc: serde_json::from_value(value)
                            .with_context(|| bad("oio.characterization"))?,
                    }),
                    _ => r.others.push(Entry {
                        label,
                        source,
                        doc: value,
                    }),
                }
            }
        }
    }
    Ok(r)
}

/// The current time, RFC 3339 UTC (seconds).
pub(crate) fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm, public domain).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The current time as `20261121T140502Z`, for directory names.
pub(crate) fn now_compact() -> String {
    now_rfc3339()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect()
}

fn write_artifacts(dir: &Path, r: &dyn Renderer, report: &Report) -> anyhow::Result<usize> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating '{}'", dir.display()))?;
    let files = r.render(report)?;
    for a in &files {
        let p = dir.join(&a.name);
        crate::results::write_file_atomic(&p, &a.bytes)?;
    }
    Ok(files.len())
}

/// Runs `oio report`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (inputs, observations) = load_report_inputs(&args.inputs)?;
    let mut report = build_report(inputs, &args.title)?;
    for (path, doc) in observations {
        report.observations.push(Entry {
            label: label_of(&path),
            source: path.display().to_string(),
            doc,
        });
    }
    if report.is_empty() {
        bail!("no results in {:?}", args.inputs);
    }
    let page = HtmlRenderer.page(&report);
    if args.output.as_os_str() == "-" {
        std::io::stdout().lock().write_all(page.as_bytes())?;
    } else {
        if let Some(parent) = args.output.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating '{}'", parent.display()))?;
        }
        crate::results::write_file_atomic(&args.output, page.as_bytes())?;
        style::print_notice(&format!(
            "report: {} ({}; {} runs, {} sweeps, {} comparisons, {} TPC-C runs, {} observations, {} characterizations)",
            args.output.display(),
            oio_core::units::format_bytes(page.len() as f64),
            report.runs.len(),
            report.sweeps.len(),
            report.comparisons.len(),
            report.tpcc.len(),
            report.observations.len(),
            report.characterizations.len()
        ));
    }
    if let Some(d) = &args.svg {
        let n = write_artifacts(d, &SvgRenderer, &report)?;
        style::print_notice(&format!("{n} SVG chart(s) in {}", d.display()));
    }
    if let Some(d) = &args.csv {
        let n = write_artifacts(d, &CsvRenderer, &report)?;
        style::print_notice(&format!("{n} CSV file(s) in {}", d.display()));
    }
    if let Some(d) = &args.png {
        let Some(chromium) = png::find_chromium() else {
            bail!("--png needs Chromium (Debian: apt-get install chromium), or set OIO_CHROMIUM to its path");
        };
        let n = write_artifacts(d, &png::PngRenderer { chromium }, &report)?;
        style::print_notice(&format!("{n} PNG chart(s) in {}", d.display()));
    }
    Ok(ExitCode::SUCCESS)
}
