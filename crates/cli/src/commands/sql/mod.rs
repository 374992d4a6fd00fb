//! `oio sql run|study`: a workload of the user's own transactions (pgbench scripts, oio's
//! sections, built-in scenarios) on SQLite, PostgreSQL or MariaDB/MySQL.
//!
//! Calls only: the script language and the driver live in `oio-sql` (a step is an
//! [`oio_sql::SqlRun`] given to [`oio_sql::run`]); running steps with progress, saving and the
//! device beside them is [`crate::sql_run`], printing [`crate::output::sql`].

mod args;
mod study;

use crate::sql_run::{Ladder, Runner};
pub use args::*;
use std::process::ExitCode;

/// Runs `oio sql …`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.action {
        Action::Run(a) => run_script(a),
        Action::Study(a) => study::run(a),
    }
}

fn run_script(a: RunArgs) -> anyhow::Result<ExitCode> {
    let base = a.o.plan(&a.scripts)?;
    let o = &a.o;
    let mut runner = Runner::start(&base, o.device.as_deref(), o.json, &o.out, false)?;
    let ladder = Ladder {
        workers: o.workers.clone(),
        repeat: a.repeat,
        seed: o.seed,
        teardown: o.teardown,
        json: o.json,
        out: o.out.clone(),
    };
    let outcome = crate::sql_run::ladder(&ladder, &base, &mut runner);
    runner.finish();
    outcome
}
