//! Running `oio sql` steps with the terminal's progress, the device under the database
//! recorded beside them, and each result saved as it finishes: shared by `oio sql run|study`
//! and `oio rerun`.

use crate::interrupt::{stop_flag, EXIT_INTERRUPTED};
use crate::output::{sql as out, style};
use anyhow::Context;
use oio_core::Cancel;
use oio_sql::{SqlError, SqlResult, SqlRun};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// A worker ladder: the counts, runs of each, and what to do around them.
pub struct Ladder {
    /// Worker counts, in the order given.
    pub workers: Vec<u32>,
    /// Runs of each count, in rounds.
    pub repeat: u32,
    /// The rounds' order seed.
    pub seed: u64,
    /// Run the teardown after the last run.
    pub teardown: bool,
    /// Print JSON (one array for several runs).
    pub json: bool,
    /// Where results go.
    pub out: PathBuf,
}

/// What every run of a command shares: the device recorder and the saving sink, the
/// MariaDB/MySQL wait instruments (enabled, journaled, put back at the end), Ctrl-C.
pub struct Runner {
    pub sink: out::Sink,
    instruments: Option<crate::server_settings::InstrumentsHold>,
    timeouts: oio_tpcc::Timeouts,
    pub cancel: Cancel,
}

impl Runner {
    /// Ready to run `base`'s database, saving into `out` (`compact`: one line a run).
    pub fn start(
        base: &SqlRun,
        device: Option<&str>,
        json: bool,
        out: &std::path::Path,
        compact: bool,
    ) -> anyhow::Result<Runner> {
        crate::results::check_destination(out, "--out DIR")?;
        let t = base.options.timeouts;
        crate::server_settings::recover(&base.db, &t)?;
        let (device, pre_warnings) = oio_tpcc::device::locate(device, &base.db, &t)?;
        let interval = Duration::from_secs_f64(base.options.interval_s);
        let recorder = device.map(|d| oio_tpcc::device::Diskstats::new(d, interval));
        let sink = out::Sink::new(json, recorder, pre_warnings, compact);
        Ok(Runner {
            sink,
            instruments: crate::server_settings::enable_instruments(&base.db, &t),
            timeouts: t,
            cancel: Cancel::from_flag(stop_flag()),
        })
    }

    /// Runs one step and saves its result into `dir`.
    pub fn step(&mut self, step: &SqlRun, dir: &std::path::Path) -> anyhow::Result<SqlResult> {
        let r = match oio_sql::run(step, &mut self.sink, &self.cancel) {
            Ok(r) => r,
            Err(SqlError::Script(e)) => return Err(anyhow::anyhow!("{e}")),
            Err(e) => {
                return Err(e).context(format!("running the script on {}", step.db.redacted()))
            }
        };
        self.sink.finished(r.clone(), dir)?;
        Ok(r)
    }

    /// Puts the wait instruments back.
    pub fn finish(self) {
        if let Some(i) = self.instruments {
            if let Err(e) = i.restore(&self.timeouts) {
                style::print_error(&format!("{e:#}"));
            }
        }
    }
}

/// Runs each worker count in turn (`repeat` times, in rounds), saving each result as it ends.
pub fn ladder(a: &Ladder, base: &SqlRun, runner: &mut Runner) -> anyhow::Result<ExitCode> {
    let (counts, repeat) = (&a.workers, a.repeat);
    let order = oio_lab::order::rounds(
        oio_lab::Order::Counterbalanced,
        repeat,
        counts.len(),
        a.seed,
    )
    .concat();
    let total = order.len();
    if total > 1 && a.json {
        runner.sink.hold_json();
    }
    let mut results = Vec::new();
    for (k, &i) in order.iter().enumerate() {
        let mut step = base.with_workers(counts[i]);
        // Setup once, before the first run; teardown once, after the last.
        step.options.setup = base.options.setup && k == 0;
        step.options.teardown = a.teardown && k + 1 == total;
        if total > 1 {
            style::print_notice(&format!("run {}/{total}: {} worker(s)", k + 1, counts[i]));
        }
        let r = runner.step(&step, &a.out)?;
        let interrupted = r.envelope.partial;
        results.push(r);
        if interrupted || runner.cancel.is_cancelled() {
            return Ok(ExitCode::from(EXIT_INTERRUPTED));
        }
    }
    if total > 1 && a.json {
        crate::output::print_json(&results)?;
    } else if counts.len() > 1 && !style::quiet() {
        out::write_scaling(&mut crate::output::terminal::stdout(), &results)?;
    }
    let all_failed = results
        .iter()
        .any(|r| r.summary.committed == 0 && r.summary.failed > 0);
    Ok(if all_failed {
        ExitCode::from(crate::EXIT_CHECK_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}
