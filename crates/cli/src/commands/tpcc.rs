//! `oio tpcc build|run|check`: the TPC-C-like (TPROC-C-like) benchmark on embedded SQLite
//! (the default, no server needed) or PostgreSQL.
//!
//! Glue only: the schema, loader, driver, waits and checks live in `oio-tpcc`; this module
//! parses flags, draws progress on stderr, records the device under the database with
//! `oio-telemetry`'s diskstats recorder, prints the terminal summary and writes the result
//! file atomically.

use crate::interrupt::{stop_flag, EXIT_INTERRUPTED};
use crate::output::style;
use crate::results::{result_file_name, write_json_atomic};
use anyhow::Context;
use clap::{Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use oio_core::units::{format_bytes, format_count};
use oio_tpcc::check::Status;
use oio_tpcc::db::SqliteSync;
use oio_tpcc::{
    BuildOptions, DbUrl, DeviceObserver, Isolation, Mode, RunOptions, Timeouts, TpccError,
    TpccResult,
};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `oio tpcc`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub action: Action,
}

/// The three steps.
#[derive(Debug, Subcommand)]
pub enum Action {
    /// Create the nine tables and load W warehouses (parallel, COPY on PostgreSQL).
    Build(BuildArgs),
    /// Run the five transactions and report NOPM, TPM, latencies and waits.
    Run(RunArgs),
    /// Check the specification's twelve consistency conditions (clause 3.3.2).
    Check(CheckArgs),
}

/// Where the database is, and how long to wait for it.
#[derive(Debug, clap::Args)]
pub struct DbArg {
    /// Database: sqlite:PATH (embedded, the default), postgres://USER@HOST:PORT/DBNAME, or
    /// mysql://USER:PASSWORD@HOST:PORT/DBNAME (also mariadb://) for MariaDB or MySQL.
    #[arg(long, value_name = "URL", default_value = oio_tpcc::url::DEFAULT_URL)]
    pub db: String,
    /// PostgreSQL: give up on a connection (TCP connect, startup and authentication) after
    /// this long. A connect_timeout in the URL takes precedence.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::cli::duration_arg)]
    pub connect_timeout: Duration,
    /// PostgreSQL: cancel any statement running longer than this (statement_timeout; 0 for
    /// none) [default: 1m for run, 1h for build and check].
    #[arg(long, value_name = "DURATION", value_parser = crate::cli::duration_arg)]
    pub statement_timeout: Option<Duration>,
    /// PostgreSQL: end a session left idle inside a transaction this long, releasing its
    /// locks (idle_in_transaction_session_timeout; 0 for none).
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = crate::cli::duration_arg)]
    pub idle_in_transaction_timeout: Duration,
    /// SQLite: how long a statement waits for a lock held by another connection or process
    /// before failing as busy.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = crate::cli::duration_arg)]
    pub busy_timeout: Duration,
}

impl DbArg {
    /// The timeouts, with `statement` as the command's default statement timeout.
    fn timeouts(&self, statement: Duration) -> Timeouts {
        Timeouts {
            connect_s: self.connect_timeout.as_secs_f64(),
            statement_s: self.statement_timeout.unwrap_or(statement).as_secs_f64(),
            idle_in_transaction_s: self.idle_in_transaction_timeout.as_secs_f64(),
            sqlite_busy_s: self.busy_timeout.as_secs_f64(),
        }
    }
}

/// Default statement timeout of `run`: a TPC-C statement takes milliseconds.
const RUN_STATEMENT_TIMEOUT: Duration = Duration::from_secs(60);
/// Default statement timeout of `build` and `check`: index builds and the consistency
/// queries scan whole tables.
const BULK_STATEMENT_TIMEOUT: Duration = Duration::from_secs(3600);

/// Arguments of `oio tpcc build`.
#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    #[command(flatten)]
    pub db: DbArg,
    /// Warehouses to load (about 100 MB each on disk).
    #[arg(long, short = 'W', value_name = "W", default_value_t = 1)]
    pub warehouses: u32,
    /// Loader workers (default: the number of CPUs).
    #[arg(long, value_name = "N")]
    pub workers: Option<u32>,
    /// Drop existing TPC-C tables first.
    #[arg(long)]
    pub force: bool,
    /// Random-number seed of the data generator.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Directory for the build report.
    #[arg(long, value_name = "DIR", default_value = "oio-results")]
    pub out: PathBuf,
    /// Print the build report as JSON on stdout (and nothing else there).
    #[arg(long)]
    pub json: bool,
}

/// Client-side SQL or server-side functions.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ModeArg {
    /// Prepared statements from oio (go-tpc and BenchBase style).
    Client,
    /// One PL/pgSQL function call per transaction (HammerDB style; PostgreSQL only).
    Server,
}

/// Isolation levels.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum IsolationArg {
    /// PostgreSQL's default.
    ReadCommitted,
    /// Snapshot isolation.
    RepeatableRead,
    /// Serializable.
    Serializable,
}

/// SQLite sync levels.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum SyncArg {
    /// fsync the WAL at every commit (durable).
    Full,
    /// fsync at checkpoints only.
    Normal,
    /// Never fsync.
    Off,
}

/// Arguments of `oio tpcc run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub db: DbArg,
    /// Workers (connections), each like a HammerDB virtual user. A list (1,2,4) runs each
    /// count in turn, each with its ramp, and writes a series with the scaling curve.
    #[arg(long, short = 'n', value_name = "N[,N…]", default_value = "4", value_delimiter = ',', num_args = 1..)]
    pub workers: Vec<u32>,
    /// Warm-up before the measured window (e.g. 30s, 1m; 0 for none).
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = crate::cli::duration_arg)]
    pub ramp: Duration,
    /// Length of the measured window.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = crate::cli::duration_arg)]
    pub time: Duration,
    /// Where the transactions' SQL runs (server: PL/pgSQL functions on PostgreSQL, stored
    /// procedures on MariaDB/MySQL).
    #[arg(long, value_enum, default_value_t = ModeArg::Client)]
    pub mode: ModeArg,
    /// Use the specification's keying and think times (then efficiency vs 12.86 NOPM per
    /// warehouse is reported; run ~10 workers per warehouse).
    #[arg(long)]
    pub paced: bool,
    /// Spread each worker over its share of all warehouses (more data I/O) instead of one
    /// home warehouse.
    #[arg(long)]
    pub all_warehouses: bool,
    /// Transaction isolation (PostgreSQL).
    #[arg(long, value_enum, default_value_t = IsolationArg::ReadCommitted)]
    pub isolation: IsolationArg,
    /// Length of one interval of the per-interval series.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = crate::cli::duration_arg)]
    pub interval: Duration,
    /// How often pg_stat_activity is sampled for the wait profile (MariaDB/MySQL's counters
    /// are read once per --interval).
    #[arg(long, value_name = "DURATION", default_value = "100ms", value_parser = crate::cli::duration_arg)]
    pub wait_sample: Duration,
    /// SQLite's PRAGMA synchronous during the run.
    #[arg(long, value_enum, default_value_t = SyncArg::Full)]
    pub sqlite_sync: SyncArg,
    /// Block device to record from /proc/diskstats (default: the one holding the database;
    /// "none" to record nothing).
    #[arg(long, value_name = "NAME")]
    pub device: Option<String>,
    /// Retries of a transaction after serialization failures, deadlocks, lock-wait timeouts
    /// or SQLite busy.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub max_retries: u32,
    /// Random-number seed of the input generators.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Directory for the result file.
    #[arg(long, value_name = "DIR", default_value = "oio-results")]
    pub out: PathBuf,
    /// Print the result as JSON on stdout (and nothing else there).
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `oio tpcc check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub db: DbArg,
    /// Print the report as JSON on stdout (and nothing else there).
    #[arg(long)]
    pub json: bool,
}

fn parse_db(s: &str) -> anyhow::Result<DbUrl> {
    s.parse::<DbUrl>().context("--db")
}

/// Runs `oio tpcc …`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.action {
        Action::Build(a) => build(a),
        Action::Run(a) => run_bench(a),
        Action::Check(a) => check(a),
    }
}

fn bar() -> ProgressBar {
    ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr_with_hz(4))
}

fn build(a: BuildArgs) -> anyhow::Result<ExitCode> {
    let db = parse_db(&a.db.db)?;
    let workers = a.workers.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(2)
    });
    let pb = bar();
    pb.set_style(
        ProgressStyle::with_template("{msg} {wide_bar} {pos}/{len} rows ({per_sec}, eta {eta})")
            .expect("valid template"),
    );
    pb.set_message(format!("loading {} warehouse(s)", a.warehouses));
    let stop = stop_flag();
    let report = oio_tpcc::build(
        &db,
        &BuildOptions {
            warehouses: a.warehouses,
            workers,
            force: a.force,
            seed: a.seed,
            timeouts: a.db.timeouts(BULK_STATEMENT_TIMEOUT),
        },
        &|p| {
            pb.set_length(p.rows_total);
            pb.set_position(p.rows_done);
            if p.phase != "loading" {
                pb.set_message(p.phase);
            }
        },
        &stop,
    );
    pb.finish_and_clear();
    if let Err(TpccError::Cancelled(why)) = &report {
        style::print_error(why);
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    let report = report.with_context(|| format!("building the TPC-C schema in {db}"))?;
    let name = result_file_name(
        "tpcc-build",
        &report.timestamp,
        &format!("w{}", a.warehouses),
    );
    let saved = write_json_atomic(&a.out, &name, &report)?;
    if a.json {
        crate::output::print_json(&report)?;
    } else {
        let mut out = anstream::stdout().lock();
        writeln!(
            out,
            "{}built{} {} warehouse(s) in {} ({}) in {:.1} s with {} workers",
            style::HEAD,
            style::HEAD.render_reset(),
            a.warehouses,
            db,
            report.engine_version.split(" on ").next().unwrap_or(""),
            report.total_s,
            workers
        )?;
        writeln!(
            out,
            "  load      {:>8.1} s   {} rows/s, {}/s of row data ({} rows)",
            report.load_s,
            format_count(report.load_rows_per_s),
            format_bytes(report.load_bytes_per_s),
            format_count(report.rows_total as f64)
        )?;
        writeln!(out, "  indexes   {:>8.1} s", report.index_s)?;
        writeln!(out, "  analyze   {:>8.1} s", report.analyze_s)?;
        writeln!(
            out,
            "  on disk   {} ({} per warehouse)",
            format_bytes(report.size_on_disk_bytes as f64),
            format_bytes(report.bytes_per_warehouse as f64)
        )?;
        writeln!(out, "next: oio tpcc run --db {} --workers N", a.db.db)?;
    }
    style::print_notice(&format!("build report: {}", saved.display()));
    Ok(ExitCode::SUCCESS)
}

/// The device holding `path`, as a kernel block device name.
fn device_of(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).ok()?.dev();
    // Linux's encoding of dev_t (major in bits 8–19 and 32–63, minor in 0–7 and 20–31).
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    oio_engine::target::facts::block_name((major as u32, minor as u32))
}

struct Diskstats {
    device: String,
    interval: Duration,
    rec: Option<oio_telemetry::DiskstatsRecorder>,
}

impl DeviceObserver for Diskstats {
    fn start(&mut self) -> Result<(), String> {
        let r = oio_telemetry::DiskstatsRecorder::start(
            std::slice::from_ref(&self.device),
            self.interval,
        )
        .map_err(|e| e.to_string())?;
        self.rec = Some(r);
        Ok(())
    }
    fn stop(&mut self) -> Result<oio_core::observation::Observation, String> {
        self.rec
            .take()
            .ok_or("the recorder was not started")?
            .stop()
            .map_err(|e| e.to_string())
    }
}

fn run_bench(a: RunArgs) -> anyhow::Result<ExitCode> {
    let db = parse_db(&a.db.db)?;
    if a.workers.is_empty() || a.workers.contains(&0) {
        anyhow::bail!("--workers: every count must be at least 1 (for example 4, or 1,2,4)");
    }
    crate::results::check_destination(&a.out, "--out DIR")?;
    let stop = stop_flag();
    if a.workers.len() == 1 {
        let (result, _) = run_step(&a, &db, a.workers[0], &stop)?;
        return Ok(exit_code(&result));
    }
    // A sequence: each step saves its own result, and the series is rewritten after every
    // step, so a Ctrl-C or a failing step keeps what finished.
    let mut series: Option<oio_tpcc::result::Series> = None;
    let mut last_code = ExitCode::SUCCESS;
    for (i, &n) in a.workers.iter().enumerate() {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        style::print_notice(&format!(
            "step {}/{}: {n} worker(s)",
            i + 1,
            a.workers.len()
        ));
        let (result, saved) = match run_step(&a, &db, n, &stop) {
            Ok(r) => r,
            Err(e) => {
                // Keep the finished steps before reporting the failure.
                if let Some(s) = &mut series {
                    s.stop_reason = "errors".into();
                    let _ = save_series(&a.out, s);
                }
                return Err(e);
            }
        };
        let s =
            series.get_or_insert_with(|| oio_tpcc::result::Series::new(&result, a.workers.clone()));
        let file = saved
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let point = oio_tpcc::result::SeriesPoint::of(&result, s.steps.first(), file);
        s.steps.push(point);
        s.stop_reason = result.stop_reason.clone();
        last_code = exit_code(&result);
        if result.stop_reason != "completed" {
            break;
        }
    }
    let interrupted = stop.load(std::sync::atomic::Ordering::Relaxed);
    if let Some(s) = &mut series {
        // Ctrl-C may come between two steps, after the last finished one.
        if interrupted {
            s.stop_reason = "interrupted".into();
        }
    }
    if let Some(s) = &series {
        let saved = save_series(&a.out, s)?;
        let mut out = anstream::stdout().lock();
        if a.json {
            crate::output::print_json(s)?;
        } else {
            writeln!(out, "workers        NOPM         TPM  efficiency")?;
            for p in &s.steps {
                writeln!(
                    out,
                    "{:>7} {:>11} {:>11}  {}",
                    p.workers,
                    format_count(p.nopm),
                    format_count(p.tpm),
                    p.efficiency_pct
                        .map(|e| format!("{e:.0} %"))
                        .unwrap_or_else(|| "-".into())
                )?;
            }
        }
        drop(out);
        style::print_notice(&format!("series: {}", saved.display()));
    }
    if interrupted {
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    Ok(last_code)
}

fn save_series(dir: &std::path::Path, s: &oio_tpcc::result::Series) -> anyhow::Result<PathBuf> {
    let dialect = match s.dialect {
        oio_tpcc::url::Dialect::Sqlite => "sqlite",
        oio_tpcc::url::Dialect::Postgres => "postgres",
        oio_tpcc::url::Dialect::Mysql => "mysql",
    };
    let label = format!("{dialect}-w{}-series", s.warehouses);
    write_json_atomic(
        dir,
        &result_file_name("tpcc-series", &s.timestamp, &label),
        s,
    )
}

fn exit_code(result: &TpccResult) -> ExitCode {
    if result.stop_reason == "interrupted" {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if result.summary.failed > 0 || result.partial {
        ExitCode::from(crate::EXIT_CHECK_FAILED)
    } else {
        ExitCode::SUCCESS
    }
}

/// One run with `workers` workers: runs, saves the result, prints it.
fn run_step(
    a: &RunArgs,
    db: &DbUrl,
    workers: u32,
    stop: &std::sync::atomic::AtomicBool,
) -> anyhow::Result<(TpccResult, PathBuf)> {
    let db = db.clone();
    let opts = RunOptions {
        workers,
        ramp_s: a.ramp.as_secs_f64(),
        time_s: a.time.as_secs_f64(),
        mode: match a.mode {
            ModeArg::Client => Mode::Client,
            ModeArg::Server => Mode::Server,
        },
        paced: a.paced,
        all_warehouses: a.all_warehouses,
        isolation: match a.isolation {
            IsolationArg::ReadCommitted => Isolation::ReadCommitted,
            IsolationArg::RepeatableRead => Isolation::RepeatableRead,
            IsolationArg::Serializable => Isolation::Serializable,
        },
        interval_s: a.interval.as_secs_f64(),
        wait_sample_ms: a.wait_sample.as_secs_f64() * 1000.0,
        seed: a.seed,
        max_retries: a.max_retries,
        sqlite_sync: match a.sqlite_sync {
            SyncArg::Full => SqliteSync::Full,
            SyncArg::Normal => SqliteSync::Normal,
            SyncArg::Off => SqliteSync::Off,
        },
        timeouts: a.db.timeouts(RUN_STATEMENT_TIMEOUT),
    };
    let mut pre_warnings = Vec::new();
    let device = match a.device.as_deref() {
        Some("none") => None,
        Some(d) => Some(d.to_string()),
        None => match oio_tpcc::db::data_location(&db, &opts.timeouts) {
            Ok(Some(p)) => match device_of(&p) {
                Some(d) => Some(d),
                None => {
                    pre_warnings.push(format!("no block device found under '{}' (overlay or tmpfs?); pass --device NAME to record one", p.display()));
                    None
                }
            },
            Ok(None) => {
                pre_warnings.push(
                    "the database server is not on this machine, so its device is not recorded"
                        .into(),
                );
                None
            }
            // A server that does not answer will not answer the run either.
            Err(e @ TpccError::Timeout(_)) => {
                return Err(anyhow::Error::new(e))
                    .with_context(|| format!("running the TPC-C-like workload on {db}"));
            }
            Err(e) => {
                pre_warnings.push(format!("cannot locate the database's files ({e}); pass --device NAME to record a device"));
                None
            }
        },
    };
    let mut observer = device.map(|d| Diskstats {
        device: d,
        interval: a.interval,
        rec: None,
    });

    let pb = bar();
    pb.set_style(
        ProgressStyle::with_template("{msg} {wide_bar} {pos}/{len} s").expect("valid template"),
    );
    let result = oio_tpcc::run_observed(
        &db,
        &opts,
        &|p| {
            pb.set_length(p.phase_s.ceil() as u64);
            pb.set_position(p.elapsed_s as u64);
            pb.set_message(if p.phase == "ramp" {
                "ramp".to_string()
            } else {
                format!(
                    "measure  NOPM {:>9}  TPM {:>9}",
                    format_count(p.nopm),
                    format_count(p.tpm_client)
                )
            });
        },
        stop,
        observer.as_mut().map(|o| o as &mut dyn DeviceObserver),
    );
    pb.finish_and_clear();
    let mut result = result.with_context(|| format!("running the TPC-C-like workload on {db}"))?;
    result.command = std::env::args().collect();
    result.warnings.splice(0..0, pre_warnings);

    let label = format!(
        "{}-w{}-n{}",
        result.dialect_name(),
        result.warehouses,
        opts.workers
    );
    let name = result_file_name("tpcc", &result.timestamp, &label);
    let saved = write_json_atomic(&a.out, &name, &result)?;
    if a.json {
        // A sequence prints its series instead.
        if a.workers.len() == 1 {
            crate::output::print_json(&result)?;
        }
    } else {
        let mut out = anstream::stdout().lock();
        write_run_summary(&mut out, &result)?;
    }
    for w in &result.warnings {
        style::print_warning(w);
    }
    style::print_notice(&format!("result: {}", saved.display()));
    Ok((result, saved))
}

trait DialectName {
    fn dialect_name(&self) -> &'static str;
}

impl DialectName for TpccResult {
    fn dialect_name(&self) -> &'static str {
        match self.dialect {
            oio_tpcc::url::Dialect::Sqlite => "sqlite",
            oio_tpcc::url::Dialect::Postgres => "postgres",
            oio_tpcc::url::Dialect::Mysql => "mysql",
        }
    }
}

fn us(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(u) if u >= 10_000.0 => format!("{:.1} ms", u / 1000.0),
        Some(u) if u >= 1_000.0 => format!("{:.2} ms", u / 1000.0),
        Some(u) => format!("{u:.0} µs"),
    }
}

fn write_run_summary(out: &mut dyn Write, r: &TpccResult) -> std::io::Result<()> {
    let (h, hr) = (style::HEAD, style::HEAD.render_reset());
    let s = &r.summary;
    writeln!(
        out,
        "{h}TPROC-C-like{hr} on {} ({}), {} warehouse(s), {} workers, {} mode, {:.0} s measured after {:.0} s ramp{}",
        r.db,
        r.engine_version.split(" on ").next().unwrap_or(""),
        r.warehouses,
        r.options.workers,
        match r.options.mode {
            Mode::Client => "client",
            Mode::Server => "server",
        },
        r.duration_s,
        r.options.ramp_s,
        if r.partial { " (PARTIAL)" } else { "" }
    )?;
    writeln!(
        out,
        "  {h}NOPM {:.0}{hr}   TPM {:.0} ({})   NOPM/TPM {} (mix implies {:.3}{})",
        s.nopm,
        s.tpm,
        s.tpm_source,
        s.nopm_tpm_ratio.map_or("-".into(), |v| format!("{v:.3}")),
        s.expected_ratio,
        if s.ratio_ok { "" } else { ", DRIFTED" }
    )?;
    if let Some(e) = s.efficiency_pct {
        writeln!(out, "  efficiency {e:.1} % of 12.86 NOPM per warehouse")?;
    }
    writeln!(
        out,
        "\n  {:<13} {:>9} {:>7} {:>7} {:>6} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "transaction",
        "committed",
        "rolled",
        "retried",
        "failed",
        "mix%",
        "p50",
        "p90",
        "p95",
        "p99",
        "max"
    )?;
    for (name, t) in &r.transactions {
        writeln!(
            out,
            "  {:<13} {:>9} {:>7} {:>7} {:>6} {:>6.1} {:>9} {:>9} {:>9} {:>9} {:>9}{}",
            name,
            t.committed,
            t.rolled_back,
            t.retried,
            t.failed,
            t.share_pct,
            us(t.latency_us.p50),
            us(t.latency_us.p90),
            us(t.latency_us.p95),
            us(t.latency_us.p99),
            us(t.latency_us.max),
            if t.p90_within_limit == Some(false) {
                "  p90 over limit"
            } else {
                ""
            }
        )?;
    }
    let w = &r.waits;
    if !w.buckets.is_empty() {
        writeln!(
            out,
            "\n  waits ({}, {} rounds every {:.0} ms): average active sessions",
            w.source,
            w.rounds,
            w.sample_interval_ms.unwrap_or(0.0)
        )?;
        for b in &w.buckets {
            writeln!(
                out,
                "    {:<22} {:>6.2}  {:>5.1} %",
                b.name, b.aas, b.share_pct
            )?;
        }
        let top: Vec<String> = w
            .top_events
            .iter()
            .take(5)
            .map(|e| {
                if e.event.is_empty() {
                    format!("{} {:.0}%", e.class, e.share_pct)
                } else {
                    format!("{}:{} {:.0}%", e.class, e.event, e.share_pct)
                }
            })
            .collect();
        writeln!(out, "    top events: {}", top.join(", "))?;
    }
    if let Some(sq) = &w.sqlite {
        writeln!(
            out,
            "\n  SQLite waits (worker-seconds of {:.0}): writer queue {:.2} s, commit/fsync {:.2} s (mean {}), checkpoints {:.2} s ({} pages, {}, of {} pages written to the WAL)",
            sq.worker_s,
            sq.writer_wait_s,
            sq.commit_s,
            us(sq.commit_mean_us),
            sq.checkpoint_s,
            sq.checkpoint_pages,
            format_bytes(sq.checkpoint_bytes as f64),
            sq.wal_frames
        )?;
    }
    if let Some(o) = &r.device {
        for d in &o.devices {
            let mean = |f: &dyn Fn(&oio_core::observation::DeviceInterval) -> Option<f64>| {
                let v: Vec<f64> = d.intervals.iter().filter_map(f).collect();
                (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
            };
            let num = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.1}"));
            writeln!(
                out,
                "\n  device {} during the window (mean of {} intervals): {} reads/s, {} writes/s, {} written/s, queue {}, write latency {}",
                d.name,
                d.intervals.len(),
                num(mean(&|i| i.read.iops)),
                num(mean(&|i| i.write.iops)),
                mean(&|i| i.write.bytes_per_sec).map_or("-".into(), format_bytes),
                num(mean(&|i| i.queue_mean)),
                us(mean(&|i| i.write.latency_mean_ns).map(|ns| ns / 1000.0)),
            )?;
        }
    }
    writeln!(
        out,
        "\n  driver CPU {:.2} cores busy, {} per transaction{}",
        r.cpu.cores_busy,
        us(r.cpu.us_per_txn),
        if r.cpu.includes_database {
            " (includes the in-process SQLite engine)"
        } else {
            ""
        }
    )?;
    Ok(())
}

fn check(a: CheckArgs) -> anyhow::Result<ExitCode> {
    let db = parse_db(&a.db.db)?;
    let report = oio_tpcc::check(&db, &a.db.timeouts(BULK_STATEMENT_TIMEOUT))
        .with_context(|| format!("checking {db}"))?;
    if a.json {
        crate::output::print_json(&report)?;
    } else {
        let mut out = anstream::stdout().lock();
        writeln!(
            out,
            "consistency of {} ({} warehouse(s)), clause 3.3.2:",
            report.db, report.warehouses
        )?;
        for c in &report.conditions {
            let status = match c.status {
                Status::Pass => "pass".to_string(),
                Status::Fail => format!("FAIL ({} rows)", c.violations),
                Status::NotApplicable => "n/a".to_string(),
            };
            writeln!(out, "  {:>2}. {:<14} {}", c.number, status, c.title)?;
            for e in &c.examples {
                writeln!(out, "        {e}")?;
            }
            if let Some(n) = &c.note {
                writeln!(out, "        ({n})")?;
            }
        }
        writeln!(
            out,
            "{}",
            if report.passed {
                "all applicable conditions hold"
            } else {
                "some conditions FAIL"
            }
        )?;
    }
    Ok(if report.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::EXIT_CHECK_FAILED)
    })
}
