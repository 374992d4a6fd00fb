//! What a report is made of: the documents oio reads, each with the label it is shown under.
//! The binary loads files into this; renderers only read it.

use oio_analysis::characterize::Characterization;
use oio_analysis::compare::Comparison;
use oio_analysis::sweep::Sweep;
use oio_core::observation::Observation;
use oio_core::result::RunResult;

/// A document and where it came from.
#[derive(Clone, Debug)]
pub struct Entry<T> {
    /// Short name shown in legends and tables.
    pub label: String,
    /// File it was read from.
    pub source: String,
    /// The document.
    pub doc: T,
}

/// Everything one report shows.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Title of the page.
    pub title: String,
    /// When the report was made, RFC 3339.
    pub generated: String,
    /// oio version that made it.
    pub oio_version: String,
    /// Run results (oio, or fio converted).
    pub runs: Vec<Entry<RunResult>>,
    /// Sweeps.
    pub sweeps: Vec<Entry<Sweep>>,
    /// Comparisons.
    pub comparisons: Vec<Entry<Comparison>>,
    /// Recorded telemetry.
    pub observations: Vec<Entry<Observation>>,
    /// Characterizations.
    pub characterizations: Vec<Entry<Characterization>>,
    /// TPC-C-like results.
    pub tpcc: Vec<Entry<oio_documents::tpcc::result::TpccResult>>,
    /// Results of users' own transactions (`oio sql run`, `oio.sql`).
    pub sql: Vec<Entry<oio_documents::sql::SqlResult>>,
    /// TPC-C worker-count sequences (`oio.tpcc.series`).
    pub tpcc_series: Vec<Entry<oio_documents::tpcc::result::Series>>,
    /// Merged results of `oio fleet run` (`oio.fleet`).
    pub fleets: Vec<Entry<oio_documents::fleet::FleetResult>>,
    /// Merged results of `oio fleet tpcc run` (`oio.fleet.tpcc`).
    pub fleet_tpcc: Vec<Entry<oio_documents::fleet::FleetTpccResult>>,
    /// Host ladders (`oio.fleet.scale`, `oio.fleet.tpcc.scale`).
    pub ladders: Vec<Entry<oio_documents::fleet::LadderDoc>>,
    /// TPC-C consistency checks (`oio.tpcc.check`).
    pub tpcc_checks: Vec<Entry<oio_documents::tpcc::check::CheckReport>>,
    /// Other oio documents (blends…), shown as key figures.
    pub others: Vec<Entry<serde_json::Value>>,
}

impl Report {
    /// True when there is nothing to show.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
            && self.sweeps.is_empty()
            && self.comparisons.is_empty()
            && self.observations.is_empty()
            && self.characterizations.is_empty()
            && self.tpcc.is_empty()
            && self.sql.is_empty()
            && self.tpcc_checks.is_empty()
            && self.tpcc_series.is_empty()
            && self.fleets.is_empty()
            && self.fleet_tpcc.is_empty()
            && self.ladders.is_empty()
            && self.others.is_empty()
    }
}
