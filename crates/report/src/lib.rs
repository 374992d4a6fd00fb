//! Turning oio's models into things other people and tools read.
//!
//! The exporters in [`export`] write a workload as a fio job file, a diskspd command line and a
//! vdbench parameter file, so a workload characterized by oio can be run by the tools a team
//! already trusts, on any OS. The renderers draw results: [`html`] (one self-contained page
//! with inline SVG charts), [`svg`] charts one by one, [`png`] (the same charts rasterised by a
//! headless Chromium) and [`csv`] (the series behind the charts). They share one
//! [`Renderer`] trait and one input, [`model::Report`], and the chart list in [`charts`], so
//! every format shows the same charts under the same names.
//!
//! [`inputs`] builds the [`model::Report`] from what `oio_documents::load` read (files and
//! directories of oio documents, fio JSON, telemetry). The report depends on `oio-core`,
//! `oio-documents` and `oio-analysis` only: no database driver, engine or telemetry parser.
//!
//! [`study`] gives the page a section per study directory (`oio sql study`, `oio tpcc study`):
//! the verdict, the wait shift and the candidates' throughput overlaid; [`sql`] renders
//! `oio sql run` results and their worker sequences.
//!
//! [`diagnose`] gives the HTML page its Diagnosis section: `oio diagnose`'s findings for the
//! report's own documents, and any `oio.diagnosis` document it was given.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod chart;
pub mod charts;
pub mod csv;
pub mod diagnose;
pub mod experiments;
pub mod export;
pub mod fleet;
pub mod fleet_tpcc;
pub mod html;
pub mod inputs;
pub mod ladder;
pub mod model;
pub mod png;
pub mod scaling;
pub mod sql;
pub mod study;
pub mod svg;

/// One output file of a renderer.
#[derive(Clone, Debug)]
pub struct Artifact {
    /// File name (no directory).
    pub name: String,
    /// Its content.
    pub bytes: Vec<u8>,
}

/// Errors of the renderers.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file or process operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The browser did not produce what was asked.
    #[error("Chromium: {0}")]
    Browser(String),
}

/// A report format.
pub trait Renderer {
    /// Renders the report into one or more files.
    fn render(&self, report: &model::Report) -> Result<Vec<Artifact>, ReportError>;
}

/// Renders every chart as `<id>.svg`, a standalone SVG file.
#[derive(Clone, Copy, Debug, Default)]
pub struct SvgRenderer;

impl Renderer for SvgRenderer {
    fn render(&self, report: &model::Report) -> Result<Vec<Artifact>, ReportError> {
        Ok(charts::build(report)
            .into_iter()
            .map(|c| Artifact {
                name: format!("{}.svg", c.id),
                bytes: format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{}\n", c.svg)
                    .into_bytes(),
            })
            .collect())
    }
}
