//! `oio tpcc build|run|check`: the TPC-C-like (TPROC-C-like) benchmark on embedded SQLite
//! (the default, no server needed), PostgreSQL or MariaDB/MySQL.
//!
//! Calls only: the arguments are in [`args`]; the benchmark lives in `oio-tpcc` (a run is a
//! [`oio_tpcc::TpccRunPlan`] given to [`oio_tpcc::run`]); progress, summaries and saving are
//! in [`crate::output::tpcc`]; the device under the database comes from `oio-telemetry`.

mod args;
mod candidates;
mod schema;
mod study;

pub use args::*;

use crate::interrupt::{stop_flag, EXIT_INTERRUPTED};
use crate::output::{style, tpcc as out};
use crate::results::{result_file_name, write_json_atomic};
use anyhow::Context;
use oio_core::Cancel;
use oio_tpcc::{BuildOptions, DbUrl, TpccError};
use std::process::ExitCode;

fn parse_db(s: &str) -> anyhow::Result<DbUrl> {
    s.parse::<DbUrl>().context("--db")
}

/// Runs `oio tpcc …`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.action {
        Action::Build(a) => build(a),
        Action::Run(a) => run_bench(a),
        Action::Check(a) => check(a),
        Action::Study(a) => study::run(a),
    }
}

fn build(a: BuildArgs) -> anyhow::Result<ExitCode> {
    let db = parse_db(&a.db.db)?;
    crate::server_settings::recover(&db, &a.db.timeouts(BULK_STATEMENT_TIMEOUT))?;
    let workers = a
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get() as u32));
    let pb = out::bar("{msg} {wide_bar} {pos}/{len} rows ({per_sec}, eta {eta})");
    pb.set_message(format!("loading {} warehouse(s)", a.warehouses));
    let opts = BuildOptions {
        warehouses: a.warehouses,
        workers,
        force: a.force,
        seed: a.seed,
        timeouts: a.db.timeouts(BULK_STATEMENT_TIMEOUT),
    };
    let progress = |p: &oio_tpcc::BuildProgress| {
        pb.set_length(p.rows_total);
        pb.set_position(p.rows_done);
        if p.phase != "loading" {
            pb.set_message(p.phase);
        }
    };
    let report = oio_tpcc::build(&db, &opts, &progress, &Cancel::from_flag(stop_flag()));
    pb.finish_and_clear();
    if let Err(TpccError::Cancelled(why)) = &report {
        style::print_error(why);
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    let mut report = report.with_context(|| format!("building the TPC-C schema in {db}"))?;
    report.envelope.command = std::env::args().collect();
    let label = match &a.label {
        Some(l) => format!("{l}-w{}", a.warehouses),
        None => format!("w{}", a.warehouses),
    };
    let name = result_file_name("tpcc-build", &report.envelope.timestamp, &label);
    let saved = write_json_atomic(&a.out, &name, &report)?;
    if a.json {
        crate::output::print_json(&report)?;
    } else if !style::quiet() {
        out::write_build_summary(
            &mut crate::output::terminal::stdout(),
            &report,
            // The URL as results show it: never the password.
            &db.to_string(),
            workers,
        )?;
    }
    style::print_saved("build report", &saved, a.json);
    Ok(ExitCode::SUCCESS)
}

fn run_bench(a: RunArgs) -> anyhow::Result<ExitCode> {
    let plan = a.plan();
    if let Ok(db) = plan.db.parse::<DbUrl>() {
        crate::server_settings::recover(&db, &plan.step.timeouts)?;
    }
    crate::tpcc_run::execute(&plan, &a.out, a.json, a.device.as_deref())
}

fn check(a: CheckArgs) -> anyhow::Result<ExitCode> {
    let db = parse_db(&a.db.db)?;
    crate::server_settings::recover(&db, &a.db.timeouts(BULK_STATEMENT_TIMEOUT))?;
    let mut report = oio_tpcc::check(&db, &a.db.timeouts(BULK_STATEMENT_TIMEOUT))
        .with_context(|| format!("checking {db}"))?;
    report.envelope.command = std::env::args().collect();
    let label = match &a.label {
        Some(l) => format!("{l}-w{}", report.warehouses),
        None => format!("w{}", report.warehouses),
    };
    let name = result_file_name("tpcc-check", &report.envelope.timestamp, &label);
    let saved = write_json_atomic(&a.out, &name, &report)?;
    if a.json {
        crate::output::print_json(&report)?;
    } else {
        out::write_check(&mut crate::output::terminal::stdout(), &report)?;
    }
    style::print_saved("check report", &saved, a.json);
    Ok(if report.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::EXIT_CHECK_FAILED)
    })
}
