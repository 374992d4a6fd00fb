//! The initial population (clause 4.3.3.1) and `build`: tables, parallel load, keys and
//! indexes, ANALYZE, server-side functions.
//!
//! Work is split by warehouse (plus one unit for ITEM) and handed out from a shared counter,
//! so fast workers take more units. On PostgreSQL every worker has its own connection and
//! streams each table of its warehouse with `COPY … FROM STDIN`. SQLite has one writer, so
//! workers only generate rows and one writer thread inserts them with prepared statements in
//! large transactions (journal off-line: `synchronous=OFF` during the load, which is safe
//! because a crashed build is rebuilt anyway).
//!
//! Generation is deterministic per warehouse and seed, so two builds with the same seed hold
//! the same data whatever the number of workers.

use crate::build_state;
use crate::database::{Database, LoadJob};
use crate::db::{Canceller, Session, SqliteSync};
use crate::error::{Result, TpccError};
use crate::rows::{cancelled, BuildOptions, Counters, Unit, ROWS_PER_WAREHOUSE};
use crate::schema;
use crate::url::{DbUrl, Dialect};
use crate::ITEMS;
use oio_core::Cancel;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Schema name of build reports.
pub const BUILD_SCHEMA: &str = "oio.tpcc.build";
/// Schema version of build reports.
/// Version 2: the common envelope (`oio_core::document::Envelope`).
pub const BUILD_SCHEMA_VERSION: u32 = oio_core::document::Kind::TpccBuild.version();

/// Where the build is.
#[derive(Clone, Debug)]
pub struct BuildProgress {
    /// "loading", "indexing", "analyzing" or "functions".
    pub phase: &'static str,
    /// Rows written so far.
    pub rows_done: u64,
    /// Rows the load will write (order lines estimated at their mean).
    pub rows_total: u64,
    /// Warehouses completely loaded.
    pub warehouses_done: u32,
}

/// What `build` did, as written to JSON (schema `oio.tpcc.build`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BuildReport {
    /// Schema ([`BUILD_SCHEMA`]), version, writer, the time the build started, command,
    /// host, stop reason and warnings.
    #[serde(flatten)]
    pub envelope: oio_core::document::Envelope,
    /// Database (password redacted).
    pub db: String,
    /// "sqlite" or "postgres".
    pub dialect: Dialect,
    /// Server version string (PostgreSQL) or SQLite library version.
    pub engine_version: String,
    /// The options as they took effect.
    pub options: BuildOptions,
    /// Rows per table.
    pub rows: BTreeMap<String, u64>,
    /// All rows.
    pub rows_total: u64,
    /// Bytes of row data generated (as CSV-like text; what COPY sends).
    pub data_bytes: u64,
    /// Seconds creating tables and loading rows.
    pub load_s: f64,
    /// Seconds building keys and secondary indexes.
    pub index_s: f64,
    /// Seconds in ANALYZE.
    pub analyze_s: f64,
    /// Seconds creating server-side functions (PostgreSQL).
    pub functions_s: f64,
    /// Wall time of the whole build, seconds.
    pub total_s: f64,
    /// Rows loaded per second of `load_s`.
    pub load_rows_per_s: f64,
    /// Row data generated per second of `load_s`, bytes.
    pub load_bytes_per_s: f64,
    /// Database size on disk after the build, bytes (SQLite: file + WAL; PostgreSQL:
    /// `pg_database_size`).
    pub size_on_disk_bytes: u64,
    /// `size_on_disk_bytes` ÷ warehouses (the ITEM table is shared, so small builds
    /// overstate this slightly).
    pub bytes_per_warehouse: u64,
}

/// Most warehouses `build` loads (about 10 TB, HammerDB's largest schemas' order).
pub const MAX_WAREHOUSES: u32 = 100_000;

/// What one warehouse takes on disk, bytes: about 100 MB with its indexes.
pub const BYTES_PER_WAREHOUSE: u64 = 100 << 20;

/// An embedded database is a file here: refuse a build its filesystem cannot hold before
/// writing anything. (A server's disk is the server's to know; its build is not checked.)
fn check_room(url: &DbUrl, warehouses: u32) -> Result<()> {
    let DbUrl::Sqlite(path) = url else {
        return Ok(());
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    let Ok(fs) = rustix::fs::statvfs(dir) else {
        return Ok(());
    };
    let free = fs.f_bavail.saturating_mul(fs.f_frsize);
    let need = u64::from(warehouses).saturating_mul(BYTES_PER_WAREHOUSE);
    if need > free {
        return Err(TpccError::Invalid(format!(
            "--warehouses {warehouses} needs about {} and {} has {} free: load fewer warehouses or put the database elsewhere",
            oio_core::units::format_size(need),
            dir.display(),
            oio_core::units::format_size(free)
        )));
    }
    Ok(())
}

/// Builds the schema and loads it. `progress` is called often (at least every 10,000 rows
/// per worker) from any thread. Cancelling `cancel` stops the build promptly (running
/// statements are interrupted) with [`TpccError::Cancelled`]; the database is then recorded
/// as interrupted (see [`crate::build_state`]) and `run` and `check` refuse it.
pub fn build(
    url: &DbUrl,
    opts: &BuildOptions,
    progress: &(dyn Fn(&BuildProgress) + Sync),
    cancel: &Cancel,
) -> Result<BuildReport> {
    if opts.warehouses == 0 || opts.warehouses > MAX_WAREHOUSES {
        return Err(TpccError::Invalid(format!(
            "--warehouses {}: expected 1 to {MAX_WAREHOUSES}",
            opts.warehouses
        )));
    }
    check_room(url, opts.warehouses)?;
    let started = Instant::now();
    let timestamp = oio_core::host::now_rfc3339();
    let db = crate::dialects::open(url);
    let mut admin = db.connect(
        build_state::BUILD_APPLICATION,
        SqliteSync::Off,
        &opts.timeouts,
    )?;
    prepare_schema(&*db, &mut admin, opts, &timestamp)?;

    let cancellers = Mutex::new(vec![admin.canceller()]);
    let done = AtomicBool::new(false);
    let body = std::thread::scope(|s| {
        // Interrupts running statements when `cancel` is set; loops check the flag too.
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                if cancel.is_cancelled() {
                    for c in cancellers.lock().unwrap_or_else(|e| e.into_inner()).iter() {
                        c.cancel();
                    }
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
        let r = build_body(
            &*db,
            opts,
            progress,
            cancel,
            &cancellers,
            &mut admin,
            &timestamp,
            started,
        );
        done.store(true, Ordering::Relaxed);
        r
    });
    match body {
        Ok(report) => Ok(report),
        Err(e) => {
            let (state, e) = if cancel.is_cancelled() {
                (
                    "interrupted",
                    TpccError::Cancelled(format!(
                        "tpcc build of {url} interrupted; the database is marked incomplete: rebuild with `oio tpcc build --db {url} --warehouses {} --force`",
                        opts.warehouses
                    )),
                )
            } else {
                ("failed", e)
            };
            // Best effort: a killed build stays `building`, which `run` and `check` refuse too.
            let _ = admin.rollback();
            let _ = admin.batch(&build_state::stopped_sql(state, &e.to_string()));
            Err(e)
        }
    }
}

/// Refuses a database that holds tables (or a build in progress) unless forced, drops what
/// is there when forced, and creates the tables with the build record.
fn prepare_schema(
    db: &dyn Database,
    admin: &mut Session,
    opts: &BuildOptions,
    timestamp: &str,
) -> Result<()> {
    let url = db.url();
    let dialect = db.dialect();
    let (_, existing) = admin.query_sql(&schema::existing_tables_sql(dialect))?;
    let record = build_state::read(admin)?;
    if let Some(rec) = &record {
        if rec.state == "building" && build_state::builder_alive(admin, rec) {
            return Err(TpccError::BuildIncomplete(format!(
                "tpcc build of {url} is already in progress ({} phase, started {} by process {} on {}): wait for it, or stop it first",
                rec.phase, rec.started_at, rec.pid, rec.host
            )));
        }
    }
    if !existing.is_empty() || record.is_some() {
        let mut names: Vec<String> = existing.iter().map(|r| r[0].text().to_string()).collect();
        if let Some(rec) = record.as_ref().filter(|r| !r.is_complete()) {
            names.push(format!("from a build that did not finish: {}", rec.state));
        }
        if !opts.force {
            return Err(TpccError::SchemaExists {
                found: names.join(", "),
            });
        }
        admin.batch(&schema::drop_all(dialect))?;
        db.after_drop(admin)?;
    }
    // The tables and the build record appear together, so tables without a record of how
    // far their build got cannot exist.
    admin.batch(&format!(
        "BEGIN;\n{}{}COMMIT;",
        schema::create_tables(dialect),
        build_state::create_sql(opts.warehouses, opts.seed, timestamp)
    ))?;
    Ok(())
}

/// Seconds each phase of a build took.
struct PhaseTimes {
    load_s: f64,
    index_s: f64,
    analyze_s: f64,
    functions_s: f64,
}

#[allow(clippy::too_many_arguments)]
fn build_body(
    db: &dyn Database,
    opts: &BuildOptions,
    progress: &(dyn Fn(&BuildProgress) + Sync),
    cancel: &Cancel,
    cancellers: &Mutex<Vec<Canceller>>,
    admin: &mut Session,
    timestamp: &str,
    started: Instant,
) -> Result<BuildReport> {
    let workers = opts.workers.max(1);
    // "2026-01-02T03:04:05Z" → "2026-01-02 03:04:05": a form every engine reads as a timestamp.
    let now = timestamp
        .replace('T', " ")
        .trim_end_matches('Z')
        .to_string();
    let counters = Counters {
        rows: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
        warehouses: AtomicU64::new(0),
        per_table: Mutex::new(BTreeMap::new()),
        failed: AtomicBool::new(false),
    };
    let rows_total = ITEMS as u64 + ROWS_PER_WAREHOUSE * opts.warehouses as u64;
    let report = |phase: &'static str| {
        progress(&BuildProgress {
            phase,
            rows_done: counters.rows.load(Ordering::Relaxed),
            rows_total,
            warehouses_done: counters.warehouses.load(Ordering::Relaxed) as u32,
        })
    };
    let units: Vec<Unit> = std::iter::once(Unit::Item)
        .chain((1..=opts.warehouses as i64).map(Unit::Warehouse))
        .collect();
    let next = AtomicU64::new(0);
    let take = || {
        if cancel.is_cancelled() {
            return None;
        }
        let i = next.fetch_add(1, Ordering::Relaxed) as usize;
        units.get(i).copied()
    };
    let opts = BuildOptions {
        workers,
        ..opts.clone()
    };
    let job = LoadJob {
        opts: &opts,
        now: &now,
        take: &take,
        counters: &counters,
        report: &report,
        cancel,
        cancellers,
    };
    let times = load_and_finish(db, admin, &job, started)?;
    let engine_version = engine_version(admin);
    let size_on_disk_bytes = db.size_on_disk(admin)?;
    let rows_done = counters.rows.load(Ordering::Relaxed);
    let data_bytes = counters.bytes.load(Ordering::Relaxed);
    let rows = counters
        .per_table
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    let mut envelope = oio_core::document::Envelope::new(BUILD_SCHEMA, BUILD_SCHEMA_VERSION);
    envelope.timestamp = timestamp.to_string();
    envelope.host = Some(oio_core::host::HostInfo::detect());
    Ok(BuildReport {
        envelope,
        db: db.url().redacted(),
        dialect: db.dialect(),
        engine_version,
        options: opts.clone(),
        rows,
        rows_total: rows_done,
        data_bytes,
        load_s: times.load_s,
        index_s: times.index_s,
        analyze_s: times.analyze_s,
        functions_s: times.functions_s,
        total_s: started.elapsed().as_secs_f64(),
        load_rows_per_s: rows_done as f64 / times.load_s.max(1e-9),
        load_bytes_per_s: data_bytes as f64 / times.load_s.max(1e-9),
        size_on_disk_bytes,
        bytes_per_warehouse: size_on_disk_bytes / opts.warehouses as u64,
    })
}

/// The phases after the tables exist: load, indexes, ANALYZE, server-side functions, and
/// the completion mark, which commits with the last of them.
fn load_and_finish(
    db: &dyn Database,
    admin: &mut Session,
    job: &LoadJob,
    started: Instant,
) -> Result<PhaseTimes> {
    let report = job.report;
    db.load(admin, job)?;
    cancelled(job.cancel)?;
    let load_s = started.elapsed().as_secs_f64();
    report("indexing");
    admin.batch(&build_state::phase_sql("indexing"))?;

    let t = Instant::now();
    db.build_indexes(admin, schema::create_indexes(db.dialect()), job)?;
    cancelled(job.cancel)?;
    let index_s = t.elapsed().as_secs_f64();

    // The last step and the completion mark commit together.
    report("analyzing");
    admin.batch(&build_state::phase_sql("analyzing"))?;
    let t = Instant::now();
    db.analyze(admin)?;
    let analyze_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    if db.has_server_side() {
        report("functions");
        db.install_server_side(admin)?;
    }
    if db.ddl_commits() {
        admin.batch("BEGIN")?;
    }
    let functions_s = t.elapsed().as_secs_f64();
    cancelled(job.cancel)?;
    admin.batch(&build_state::complete_sql())?;
    admin.batch("COMMIT")?;
    Ok(PhaseTimes {
        load_s,
        index_s,
        analyze_s,
        functions_s,
    })
}

fn engine_version(s: &mut Session) -> String {
    s.engine_version().unwrap_or_default()
}

/// Size of the database on disk, bytes.
pub fn size_on_disk(url: &DbUrl, s: &mut Session) -> Result<u64> {
    crate::dialects::open(url).size_on_disk(s)
}
