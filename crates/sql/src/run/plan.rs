//! What one `oio sql run` step is: the database, the loaded script and the options, checked
//! once here before anything connects.

use crate::script::{Script, ScriptError, Source};
use oio_documents::sql::{ScriptRecord, ScriptText, ScriptTransaction, SqlOptions};
use oio_documents::tpcc::options::{Isolation, SqliteSync, Timeouts, MIN_INTERVAL_S};
use oio_tpcc::{DbUrl, RunOptions};
use std::sync::Arc;

/// Why a run cannot start or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    /// The script does not load or has nothing to run on the dialect.
    #[error("{0}")]
    Script(#[from] ScriptError),
    /// An option is out of range; the message names the flag.
    #[error("{0}")]
    Invalid(String),
    /// The database refused or failed.
    #[error("{0}")]
    Database(#[from] oio_tpcc::TpccError),
    /// The script's setup or teardown failed: where, the statement, the database's words.
    #[error("the script's {section} failed at {at}: {message}")]
    Section {
        /// "setup" or "teardown".
        section: &'static str,
        /// FILE:LINE:COL of the command.
        at: String,
        /// What failed.
        message: String,
    },
    /// Every worker failed before the window opened (the first reason).
    #[error("no worker could run the script: {0}")]
    Workers(String),
}

/// The options a run starts from before the command line's: one minute's window after ten
/// seconds of ramp, four workers, closed loop.
pub fn default_options() -> SqlOptions {
    SqlOptions {
        workers: 4,
        ramp_s: 10.0,
        time_s: 60.0,
        rate_tps: None,
        interval_s: 1.0,
        wait_sample_ms: 100.0,
        seed: 1,
        max_tries: 10,
        isolation: Isolation::ReadCommitted,
        sqlite_sync: SqliteSync::Full,
        timeouts: Timeouts {
            statement_s: 60.0,
            ..Timeouts::default()
        },
        setup: true,
        teardown: false,
        memory_limit: None,
    }
}

/// Refuses options that cannot run, naming the flag.
pub fn validate(o: &SqlOptions) -> Result<(), SqlError> {
    let bad = |m: &str| Err(SqlError::Invalid(m.to_string()));
    if o.workers == 0 || o.workers > 10_000 {
        return bad("--workers must be between 1 and 10000");
    }
    if !(o.time_s.is_finite() && o.time_s > 0.0) {
        return bad("--time must be longer than 0");
    }
    if !(o.ramp_s.is_finite() && o.ramp_s >= 0.0) {
        return bad("--ramp must be 0 or longer");
    }
    if !(o.interval_s.is_finite() && o.interval_s >= MIN_INTERVAL_S) {
        return Err(SqlError::Invalid(format!(
            "--interval must be at least {}",
            oio_documents::tpcc::options::seconds(MIN_INTERVAL_S)
        )));
    }
    if let Some(r) = o.rate_tps {
        if !(r.is_finite() && r > 0.0 && r <= 10_000_000.0) {
            return bad(
                "--rate must be more than 0 and at most 10,000,000 transactions per second",
            );
        }
    }
    if o.max_tries == 0 {
        return bad("--max-tries must be at least 1");
    }
    Ok(())
}

/// One step of `oio sql run`: a database, a script as it runs there, and how.
#[derive(Clone)]
pub struct SqlRun {
    /// The database.
    pub db: DbUrl,
    /// The script, for the database's dialect.
    pub script: Arc<Script>,
    /// The script as the result records it.
    pub record: ScriptRecord,
    /// How the step runs.
    pub options: SqlOptions,
    /// `--label`.
    pub label: Option<String>,
}

impl SqlRun {
    /// Loads `sources` for `db`'s dialect and checks `options`: every refusal happens here,
    /// before anything connects.
    pub fn new(
        db: DbUrl,
        sources: &[Source],
        defines: &[(String, String)],
        options: SqlOptions,
        label: Option<String>,
    ) -> Result<SqlRun, SqlError> {
        validate(&options)?;
        let script = Script::load(sources, defines)?.for_dialect(db.dialect().name())?;
        let record = ScriptRecord {
            sources: sources.iter().map(|s| s.to_string()).collect(),
            defines: defines.to_vec(),
            transactions: script
                .transactions()
                .into_iter()
                .map(|t| ScriptTransaction {
                    name: t.name,
                    weight: t.weight,
                    source: t.source,
                    statements: t.statements,
                })
                .collect(),
            texts: script
                .texts()
                .into_iter()
                // Line ends as LF: the reader of results escapes every other control
                // character, and the script means the same.
                .map(|(name, text)| ScriptText {
                    name,
                    text: text.replace("\r\n", "\n"),
                })
                .collect(),
        };
        Ok(SqlRun {
            db,
            script: Arc::new(script),
            record,
            options,
            label,
        })
    }

    /// The run a result (or a fleet's plan) records: its scripts' recorded texts (a built-in
    /// scenario as this oio has it), defines and options, on `db`. What `oio rerun` and a
    /// fleet's agent run: the text that ran, not what a file holds now or elsewhere.
    pub fn from_record(
        db: DbUrl,
        record: &ScriptRecord,
        options: SqlOptions,
        label: Option<String>,
    ) -> Result<SqlRun, SqlError> {
        let mut sources = Vec::with_capacity(record.sources.len());
        for written in &record.sources {
            let named: Source = written.parse()?;
            if named.is_builtin() {
                sources.push(named);
                continue;
            }
            let Some(t) = record.texts.iter().find(|t| t.name == named.name()) else {
                return Err(SqlError::Invalid(format!(
                    "the script '{}' is named but its text is not recorded",
                    oio_core::text::printable(&named.name())
                )));
            };
            sources.push(Source::text(
                &named.name(),
                written,
                t.text.clone(),
                named.weight(),
            ));
        }
        SqlRun::new(db, &sources, &record.defines, options, label)
    }

    /// The step a result ran, again, on `db` ([`SqlRun::from_record`] of its record, options
    /// and label), and what the caller should say: a built-in scenario whose text changed
    /// since the result ran (it runs as this oio has it).
    pub fn from_result(
        r: &oio_documents::sql::SqlResult,
        db: DbUrl,
    ) -> Result<(SqlRun, Vec<String>), SqlError> {
        let mut notes = Vec::new();
        for written in &r.script.sources {
            let named: Source = written.parse()?;
            let recorded = r.script.texts.iter().find(|t| t.name == named.name());
            let now = crate::script::builtin_text(&named.name());
            if let (true, Some(t), Some(now)) = (named.is_builtin(), recorded, now) {
                if t.text != now {
                    notes.push(format!(
                        "{}: this oio's scenario differs from the one the result ran; it runs as this oio has it",
                        named.name()
                    ));
                }
            }
        }
        let plan = SqlRun::from_record(db, &r.script, r.options.clone(), r.envelope.label.clone())?;
        Ok((plan, notes))
    }

    /// Refuses a step whose memory estimate is above what the host can give (each worker keeps
    /// a window's and an interval's latency histogram per transaction, and a thread stack),
    /// before any worker starts.
    pub fn check_memory(&self) -> Result<(), SqlError> {
        let workers = u64::from(self.options.workers);
        let txns = self.record.transactions.len() as u64;
        let hist = oio_core::histogram::LatencyHistogram::dense_bytes();
        let mut e = oio_core::memory::Estimate::new();
        e.add(
            format!("latency histograms ({workers} workers × {txns} transactions × 2)"),
            workers * txns * 2 * hist,
            Some("fewer --workers, or fewer \\transaction sections".into()),
        );
        e.add(
            format!("worker threads ({workers})"),
            workers * 2 * 1024 * 1024,
            Some("fewer --workers".into()),
        );
        e.check(oio_core::memory::Limit::resolve(self.options.memory_limit).as_ref())
            .map_err(|m| SqlError::Invalid(m.to_string()))
    }

    /// The same run with `workers` workers (a step of a sequence).
    pub fn with_workers(&self, workers: u32) -> SqlRun {
        let mut r = self.clone();
        r.options.workers = workers;
        r
    }
}

/// The options the dialect layer reads (session timeouts, isolation, wait sampling, SQLite's
/// sync): the TPC-C options with the script run's values, the rest at their defaults.
pub(crate) fn dialect_options(o: &SqlOptions) -> RunOptions {
    RunOptions {
        workers: o.workers,
        ramp_s: o.ramp_s,
        time_s: o.time_s,
        isolation: o.isolation,
        interval_s: o.interval_s,
        wait_sample_ms: o.wait_sample_ms,
        seed: o.seed,
        max_retries: o.max_tries.saturating_sub(1),
        sqlite_sync: o.sqlite_sync,
        timeouts: o.timeouts,
        ..RunOptions::default()
    }
}
