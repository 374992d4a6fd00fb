//! `oio report`: one self-contained HTML page (and, on request, SVG/PNG charts and CSV series)
//! from any mix of result files: oio runs, fio JSON, sweeps, comparisons, recorded
//! observations, characterizations and other oio documents (TPC-C results).
//!
//! Loading is [`crate::inputs`] (`oio_documents::load`, the same for `compare` and `diagnose`);
//! the model is [`oio_report::inputs::build_report`]; this file parses
//! the arguments, writes the files and prints what it wrote.

use crate::inputs::load_all;
use crate::output::style;
use anyhow::{bail, Context};
use oio_report::inputs::build_report;
use oio_report::model::Report;
use oio_report::{csv::CsvRenderer, html::HtmlRenderer, png, Renderer, SvgRenderer};
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
    let inputs = load_all(&args.inputs)?;
    for n in &inputs.notices {
        style::print_notice(n);
    }
    let report = build_report(inputs, &args.title)?;
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
        // What the page holds, only the kinds present, each with its own plural.
        let kinds = [
            (report.runs.len(), "run", "runs"),
            (report.sweeps.len(), "sweep", "sweeps"),
            (report.comparisons.len(), "comparison", "comparisons"),
            (report.tpcc.len(), "TPC-C run", "TPC-C runs"),
            (report.tpcc_series.len(), "TPC-C series", "TPC-C series"),
            (report.sql.len(), "SQL run", "SQL runs"),
            (oio_report::study::find(&report).len(), "study", "studies"),
            (report.fleets.len(), "fleet run", "fleet runs"),
            (report.observations.len(), "observation", "observations"),
            (
                report.characterizations.len(),
                "characterization",
                "characterizations",
            ),
        ];
        let holds: Vec<String> = kinds
            .iter()
            .filter(|(n, _, _)| *n > 0)
            .map(|(n, one, many)| format!("{n} {}", if *n == 1 { one } else { many }))
            .collect();
        if style::quiet() {
            style::print_saved("report", &args.output, false);
        } else {
            style::print_notice(&format!(
                "report: {} ({}; {})",
                args.output.display(),
                oio_core::units::format_bytes(page.len() as f64),
                holds.join(", ")
            ));
        }
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
