//! `oio fleet sql run`: users' own SQL transactions (`oio sql run`'s scripts) on every host's
//! database (or one shared database from several client hosts), started together; committed
//! transactions summed per interval and in total, latency histograms merged exactly.

use super::HostArgs;
use crate::output::style;
use crate::results::{check_destination, write_json_atomic};
use anyhow::{bail, Context};
use oio_fleet::controller::{self, HostJob, Work};
use oio_fleet::protocol::WireSqlPlan;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `oio fleet sql`.
#[derive(Debug, clap::Args)]
pub struct SqlArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: SqlAction,
}

/// `oio fleet sql` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum SqlAction {
    /// Run the scripts on every host at once; per-host results and the merged one.
    Run(FleetSqlRunArgs),
}

/// Arguments of `oio fleet sql run`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  oio fleet sql run ledger.sql --hosts app1,app2 --db 'postgres://oio@{host}/oio' -n 8 --time 2m
  oio fleet sql run builtin:hot-rows --inventory lab.toml --ramp 0 --time 30s
  (inventory: [[host]] name = \"app1\", db = \"postgres://oio@10.0.0.1/oio\")

Every option of `oio sql run` but --repeat is taken here and means the same on each host:
--db is the database as each host's agent sees it ({host} is replaced by the host's name; an
inventory's per-host `db` takes precedence), and each host adds its index to --seed. The
scripts are read here and travel to the hosts as text. Each host runs the script's setup while
it prepares, before the common start; hosts given the same --db URL run it once (the first of
them), as they run --teardown. A host whose database refuses the script (its setup fails, or
every transaction fails in an interval before any commits) ends the run with the statement
named, the others stopped. A fleet run is one step: one worker count on each host.
--connect-timeout bounds the hosts' answer; the database's is --db-connect-timeout.")]
#[command(mut_arg("db_connect_timeout", |a| {
    let h = "PostgreSQL: each host gives up on its database connection (TCP connect, startup and authentication) after this long (`oio sql run --connect-timeout`). A connect_timeout in the URL takes precedence";
    a.long("db-connect-timeout").help(h).long_help(h)
}))]
#[command(mut_arg("workers", |a| {
    let h = "Workers on each host (one connection each): one count (a fleet run is one step)";
    a.help(h).long_help(h)
}))]
pub struct FleetSqlRunArgs {
    /// Scripts, as `oio sql run` takes them: FILE, FILE@WEIGHT or builtin:NAME.
    #[arg(required = true, value_name = "SCRIPT[@WEIGHT]")]
    pub scripts: Vec<String>,
    /// Hosts and how to reach them.
    #[command(flatten)]
    pub host: HostArgs,
    /// The run on each host: the flag group of `oio sql run`.
    #[command(flatten)]
    pub sql: crate::sql_args::SqlRunArgs,
    /// Serve the live figures (per host and merged transactions/s, latency histograms) in
    /// Prometheus' text format at http://ADDR/metrics while the run lasts.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// With --metrics: keep serving the final figures this long after the run ends.
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = crate::values::duration_arg, requires = "metrics")]
    pub metrics_linger: std::time::Duration,
}

/// Runs `oio fleet sql`.
pub fn run(a: SqlArgs) -> anyhow::Result<ExitCode> {
    match a.action {
        SqlAction::Run(a) => fleet_sql_run(a),
    }
}

/// One job per host, each with its database, its seed (the plan's plus the host's index) and
/// the setup and teardown only on the first host of each --db URL. Returns them with the
/// controller's plan of the first host (the script and options the merged result records).
fn sql_jobs(a: &FleetSqlRunArgs) -> anyhow::Result<(Vec<HostJob>, oio_sql::SqlRun)> {
    let o = &a.sql;
    if o.workers.len() != 1 {
        bail!(
            "--workers {}: a fleet run takes one worker count per host (a list makes a sequence; run the fleet once per count)",
            o.workers.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
        );
    }
    let mut jobs = Vec::new();
    let mut first = None;
    let mut seen: Vec<String> = Vec::new();
    for (i, (h, argv)) in a.host.hosts()?.into_iter().enumerate() {
        let db = match &h.db {
            Some(db) => db.clone(),
            None => o.db.db.replace("{host}", &h.name),
        };
        let plan = o
            .plan_on(&a.scripts, &db)
            .with_context(|| format!("host {}", h.name))?;
        let mut options = plan.options.clone();
        options.seed = o.seed.wrapping_add(i as u64);
        // Two hosts running one setup at once on one database would race (a DROP under a
        // CREATE); hosts reaching it by other URLs are said in the help.
        let once = !seen.contains(&db);
        seen.push(db.clone());
        options.setup = options.setup && once;
        options.teardown = o.teardown && once;
        jobs.push(HostJob {
            name: h.name.clone(),
            argv,
            plan: Work::Sql(WireSqlPlan {
                db,
                script: plan.record.clone(),
                options,
                label: plan.label.clone(),
                device: o.device.clone(),
            }),
            group: String::new(),
        });
        first.get_or_insert(plan);
    }
    let first = first.context("no hosts given")?;
    Ok((jobs, first))
}

fn fleet_sql_run(a: FleetSqlRunArgs) -> anyhow::Result<ExitCode> {
    let (jobs, plan) = sql_jobs(&a)?;
    check_destination(&a.sql.out, "--out DIR")?;
    let metrics = super::metrics(&a.metrics, a.metrics_linger)?;
    let cancel = oio_core::Cancel::from_flag(crate::interrupt::stop_flag());
    if !style::quiet() {
        let names: Vec<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
        let _ = writeln!(
            crate::output::terminal::stderr(),
            "oio fleet sql: {} worker(s) on each of {} hosts ({}), ramp {:.1} s, measured {:.1} s",
            plan.options.workers,
            jobs.len(),
            names.join(", "),
            plan.options.ramp_s,
            plan.options.time_s
        );
    }
    let live = crate::output::fleet::FleetLive::new();
    let run = controller::run_with_progress(&jobs, &a.host.options(), &cancel, &mut |p| {
        live.update(p);
        if let Some(m) = &metrics {
            m.update(p);
        }
    });
    live.finish();
    let run = run?;
    let (doc, merged) = save_sql(&a.sql.out, &run, &plan, a.sql.label.as_deref())?;
    if a.sql.json {
        crate::output::print_json(&doc)?;
    } else if !style::quiet() {
        crate::output::fleet::print_sql(&doc);
    }
    for l in &doc.envelope.warnings {
        style::print_warning(&oio_core::text::printable(l));
    }
    style::print_saved("result", &merged, a.sql.json);
    drop(metrics);
    let all_failed = doc.summary.committed == 0 && doc.summary.failed > 0;
    Ok(
        match (run.interrupted, doc.envelope.partial || all_failed) {
            (true, _) => ExitCode::from(crate::interrupt::EXIT_INTERRUPTED),
            (_, true) => ExitCode::from(crate::EXIT_CHECK_FAILED),
            _ => ExitCode::SUCCESS,
        },
    )
}

/// The file name `oio sql run` gives a result, with `kind` first.
fn file_name(kind: &str, r: &oio_sql::SqlResult) -> String {
    let label = format!(
        "{}{}-n{}",
        r.envelope
            .label
            .as_deref()
            .map_or(String::new(), |l| format!("{l}-")),
        r.dialect.name(),
        r.options.workers
    );
    crate::results::result_file_name(kind, &r.envelope.timestamp, &label)
}

/// Writes each host's own result into `out/HOST/` (named as `oio sql run` names its), then
/// the merged one into `out`, naming them.
fn save_sql(
    out: &Path,
    run: &controller::FleetRun,
    plan: &oio_sql::SqlRun,
    label: Option<&str>,
) -> anyhow::Result<(oio_sql::SqlResult, PathBuf)> {
    let mut files = Vec::with_capacity(run.hosts.len());
    let mut dbs = Vec::with_capacity(run.hosts.len());
    for h in &run.hosts {
        dbs.push(
            h.tpcc_ready
                .as_ref()
                .map(|r| r.0.clone())
                .unwrap_or_default(),
        );
        files.push(match &h.sql_result {
            Some(r) => {
                let mut r = r.clone();
                r.envelope.command = std::env::args().collect();
                r.envelope.label = label.map(str::to_string);
                let p = write_json_atomic(&out.join(&h.name), &file_name("sql", &r), &r)?;
                Some(p.display().to_string())
            }
            None => None,
        });
    }
    let mut doc = oio_fleet::sql::document(run, plan, &dbs, &files);
    doc.envelope.command = std::env::args().collect();
    doc.envelope.label = label.map(str::to_string);
    let merged = write_json_atomic(out, &file_name("fleet-sql", &doc), &doc)?;
    Ok((doc, merged))
}
