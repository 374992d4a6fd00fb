//! Schema candidates of `oio tpcc study --schema LABEL=SETUP`: a schema variant (a table
//! hash-partitioned, an index more) is a database of its own, because the runs go in rounds
//! and a variant's DDL cannot be taken back between them. `{label}` in --db names each one.
//!
//! Phases, per candidate, before any run ([`schema_candidates`](super::candidates::schema_candidates)
//! parsed the flags and named the databases): [`prepare_all`] builds a database that holds no build yet, checks a built one is
//! complete, and runs the setup file once (through oio-sql's script language, so `\only`
//! works), recording its SHA-256 in the database: a later study on it neither runs the setup
//! again nor another candidate's over it.

use super::candidates::{Candidate, Schema};
use crate::output::style;
use anyhow::{bail, Context};
use oio_core::Cancel;
use oio_tpcc::{build_state, BuildOptions, DbUrl, SqliteSync, Timeouts, TpccError};
use sha2::{Digest, Sha256};

/// The application name of the study's own sessions.
const APP: &str = "oio-tpcc-study";

/// Every candidate's database built and set up; their warehouses, which must agree.
pub fn prepare_all(
    cands: &[Candidate],
    warehouses: u32,
    timeouts: &Timeouts,
    cancel: &Cancel,
) -> anyhow::Result<u32> {
    let mut seen: Option<(u32, &str)> = None;
    for c in cands {
        let w = prepare(c, warehouses, timeouts, cancel)?;
        match seen {
            Some((w0, l0)) if w0 != w => bail!(
                "candidate '{}' has {w} warehouse(s) and '{l0}' {w0}: a study compares schemas on the same data (rebuild one with oio tpcc build --warehouses {w0} --force)",
                c.label
            ),
            _ => seen = Some((w, &c.label)),
        }
    }
    Ok(seen.map_or(warehouses, |(w, _)| w))
}

/// One candidate's database built (when it holds no build) and set up (once); its warehouses.
fn prepare(
    c: &Candidate,
    warehouses: u32,
    timeouts: &Timeouts,
    cancel: &Cancel,
) -> anyhow::Result<u32> {
    let s = c.schema.as_ref().expect("schema candidate");
    let url: DbUrl =
        s.db.parse()
            .with_context(|| format!("--db for candidate '{}'", c.label))?;
    crate::server_settings::recover(&url, timeouts)?;
    let w = match built(&url, timeouts)? {
        Some(w) => w,
        None => build(c, &url, warehouses, timeouts, cancel)?,
    };
    set_up(c, s, &url, timeouts)?;
    Ok(w)
}

/// The warehouses of a complete build in `url`; None when it holds none (an incomplete build is
/// refused with what to do).
fn built(url: &DbUrl, timeouts: &Timeouts) -> anyhow::Result<Option<u32>> {
    if let DbUrl::Sqlite(p) = url {
        if p.symlink_metadata().is_err() {
            return Ok(None);
        }
    }
    let mut s = oio_tpcc::dialects::open(url).connect(APP, SqliteSync::Normal, timeouts)?;
    build_state::require_complete(url, &mut s)?;
    match oio_tpcc::schema::count_warehouses(&mut s) {
        Ok(w) => Ok(Some(w)),
        Err(TpccError::SchemaMissing(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn build(
    c: &Candidate,
    url: &DbUrl,
    warehouses: u32,
    timeouts: &Timeouts,
    cancel: &Cancel,
) -> anyhow::Result<u32> {
    style::print_notice(&format!(
        "study: building candidate '{}' in {url} ({warehouses} warehouse(s))",
        c.label
    ));
    let opts = BuildOptions {
        warehouses,
        workers: std::thread::available_parallelism().map_or(2, |n| n.get() as u32),
        force: false,
        seed: 1,
        timeouts: *timeouts,
    };
    oio_tpcc::build(url, &opts, &|_| {}, cancel)
        .with_context(|| format!("building candidate '{}' in {url}", c.label))?;
    Ok(warehouses)
}

/// Runs the candidate's setup once, or checks it ran: a build set up by another file (or by
/// one when this candidate is the schema as built) is refused, naming the rebuild.
fn set_up(c: &Candidate, s: &Schema, url: &DbUrl, timeouts: &Timeouts) -> anyhow::Result<()> {
    let mut session = oio_tpcc::dialects::open(url).connect(APP, SqliteSync::Normal, timeouts)?;
    let recorded = build_state::read_setup(&mut session)?;
    let rebuild = format!(
        "rebuild it with `oio tpcc build --db {url} --force` and the study sets it up again"
    );
    let Some(file) = &s.setup else {
        if let Some((label, _)) = recorded {
            bail!("candidate '{}' is the schema as built, but {url} was set up by candidate '{label}''s file: {rebuild}", c.label);
        }
        return Ok(());
    };
    let mut options = oio_sql::run::plan::default_options();
    options.timeouts = *timeouts;
    let plan = oio_sql::SqlRun::new(
        url.clone(),
        &[oio_sql::script::Source::file(file, None)],
        &[],
        options,
        Some(c.label.clone()),
    )
    .map_err(|e| anyhow::anyhow!("--schema {}={file}: {e}", c.label))?;
    let mut h = Sha256::new();
    for t in &plan.record.texts {
        h.update(t.text.as_bytes());
    }
    let sha = format!("{:x}", h.finalize());
    match recorded {
        Some((_, got)) if got == sha => {
            style::print_notice(&format!(
                "study: candidate '{}' in {url} was set up by {file} before: not run again",
                c.label
            ));
            return Ok(());
        }
        Some((label, _)) => bail!(
            "{url} was set up by candidate '{label}''s file, not by {file} as it is now: {rebuild}"
        ),
        None => {}
    }
    style::print_notice(&format!(
        "study: setting up candidate '{}' in {url} with {file}",
        c.label
    ));
    let n = oio_sql::run_once(&plan).map_err(|e| {
        anyhow::anyhow!(
            "--schema {}={file}: {e}; {url} may be half changed: {rebuild}",
            c.label
        )
    })?;
    build_state::record_setup(&mut session, &c.label, &sha)?;
    style::print_notice(&format!("study: {n} statement(s) of {file} ran"));
    Ok(())
}
