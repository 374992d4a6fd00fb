//! Running a TPC-C plan with the terminal's progress, the device under the database recorded
//! beside it, and each result saved as it finishes: shared by `oio tpcc run` and `oio rerun`.

use crate::interrupt::{stop_flag, EXIT_INTERRUPTED};
use crate::output::tpcc as out;
use anyhow::Context;
use oio_core::{Cancel, StopReason};
use oio_tpcc::{DbUrl, TpccRunPlan};
use std::path::Path;
use std::process::ExitCode;

/// Runs `plan`, saving into `dir`; `device` is `--device` (a name, `none`, or the one holding
/// the database when not given).
pub fn execute(
    plan: &TpccRunPlan,
    dir: &Path,
    json: bool,
    device: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let db = plan.db.parse::<DbUrl>().context("--db")?;
    plan.validate()?;
    crate::results::check_destination(dir, "--out DIR")?;
    let cancel = Cancel::from_flag(stop_flag());
    let (device, warnings) = oio_tpcc::device::locate(device, &db, &plan.step.timeouts)
        .with_context(|| format!("running the TPC-C-like workload on {db}"))?;
    let interval = std::time::Duration::from_secs_f64(plan.step.interval_s);
    let recorder = device.map(|d| oio_tpcc::device::Diskstats::new(d, interval));
    let mut sink = out::RunSink::new(dir, json, plan, recorder, warnings);
    // MariaDB/MySQL: the wait instruments enabled (said), journaled, and put back after.
    let instruments = crate::server_settings::enable_instruments(&db, &plan.step.timeouts);
    let outcome = oio_tpcc::run(plan, &mut sink, &cancel);
    if let Some(i) = instruments {
        if let Err(e) = i.restore(&plan.step.timeouts) {
            crate::output::style::print_error(&format!("{e:#}"));
        }
    }
    let outcome = outcome.with_context(|| format!("running the TPC-C-like workload on {db}"))?;
    sink.finish(outcome.series.as_ref())?;
    Ok(match (outcome.stop_reason, outcome.results.last()) {
        (StopReason::Interrupted, _) => ExitCode::from(EXIT_INTERRUPTED),
        (_, Some(r)) if r.summary.failed > 0 || r.envelope.partial => {
            ExitCode::from(crate::EXIT_CHECK_FAILED)
        }
        _ => ExitCode::SUCCESS,
    })
}
