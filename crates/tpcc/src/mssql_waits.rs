//! What SQL Server waits on, as it reports it itself.
//!
//! On SQL Server: deltas of `sys.dm_os_wait_stats` over the measured window (benign
//! background waits filtered out as the field's standard wait-statistics queries do), per-file
//! latency from `sys.dm_io_virtual_file_stats` (data and log files), and
//! `sys.dm_os_latch_stats` where readable. Each wait type keeps its own name (`WRITELOG`) and
//! is mapped to one of oio's wait classes (`log`, `data read`, `page latch`, `lock`,
//! `CPU/scheduler`, `network/client`, `other`). These readers are unit-tested on rows shaped
//! exactly as Microsoft documents each view; no SQL Server could be run where oio is tested.
//!
//! On Babelfish for PostgreSQL (which has none of these views) the waits are its PostgreSQL
//! side's: `pg_stat_activity` sampled over the TDS connection, labelled as such.

use crate::sql::{StmtError, Val};
use crate::waits::{WaitEvent, WaitProfile, WaitShare};
use std::collections::HashMap;

/// The wait statistics, cumulative since the server started.
pub const WAIT_STATS_SQL: &str = "SELECT wait_type, waiting_tasks_count, wait_time_ms, max_wait_time_ms, signal_wait_time_ms FROM sys.dm_os_wait_stats";

/// Per-file I/O of the current database, with each file's type (ROWS: data, LOG: log).
pub const FILE_STATS_SQL: &str = "SELECT f.type_desc, f.name, v.num_of_reads, v.num_of_bytes_read, v.io_stall_read_ms, v.num_of_writes, v.num_of_bytes_written, v.io_stall_write_ms FROM sys.dm_io_virtual_file_stats(DB_ID(), NULL) AS v JOIN sys.database_files AS f ON f.file_id = v.file_id";

/// Non-buffer latch waits.
pub const LATCH_STATS_SQL: &str =
    "SELECT latch_class, waiting_requests_count, wait_time_ms FROM sys.dm_os_latch_stats";

/// Background waits that are not a workload's (sleeping queues, timers, idle listeners), the
/// list the field's standard wait-statistics queries exclude.
const BENIGN: &[&str] = &[
    "BROKER_EVENTHANDLER",
    "BROKER_RECEIVE_WAITFOR",
    "BROKER_TASK_STOP",
    "BROKER_TO_FLUSH",
    "BROKER_TRANSMITTER",
    "CHECKPOINT_QUEUE",
    "CHKPT",
    "CLR_AUTO_EVENT",
    "CLR_MANUAL_EVENT",
    "CLR_SEMAPHORE",
    "DBMIRROR_DBM_EVENT",
    "DBMIRROR_EVENTS_QUEUE",
    "DBMIRROR_WORKER_QUEUE",
    "DBMIRRORING_CMD",
    "DIRTY_PAGE_POLL",
    "DISPATCHER_QUEUE_SEMAPHORE",
    "EXECSYNC",
    "FSAGENT",
    "FT_IFTS_SCHEDULER_IDLE_WAIT",
    "FT_IFTSHC_MUTEX",
    "HADR_CLUSAPI_CALL",
    "HADR_FILESTREAM_IOMGR_IOCOMPLETION",
    "HADR_LOGCAPTURE_WAIT",
    "HADR_NOTIFICATION_DEQUEUE",
    "HADR_TIMER_TASK",
    "HADR_WORK_QUEUE",
    "KSOURCE_WAKEUP",
    "LAZYWRITER_SLEEP",
    "LOGMGR_QUEUE",
    "MEMORY_ALLOCATION_EXT",
    "ONDEMAND_TASK_QUEUE",
    "PARALLEL_REDO_DRAIN_WORKER",
    "PARALLEL_REDO_LOG_CACHE",
    "PARALLEL_REDO_TRAN_LIST",
    "PARALLEL_REDO_WORKER_SYNC",
    "PARALLEL_REDO_WORKER_WAIT_WORK",
    "PREEMPTIVE_XE_GETTARGETSTATE",
    "PWAIT_ALL_COMPONENTS_INITIALIZED",
    "PWAIT_DIRECTLOGCONSUMER_GETNEXT",
    "PWAIT_EXTENSIBILITY_CLEANUP_TASK",
    "QDS_ASYNC_QUEUE",
    "QDS_CLEANUP_STALE_QUERIES_TASK_MAIN_LOOP_SLEEP",
    "QDS_PERSIST_TASK_MAIN_LOOP_SLEEP",
    "QDS_SHUTDOWN_QUEUE",
    "REDO_THREAD_PENDING_WORK",
    "REQUEST_FOR_DEADLOCK_SEARCH",
    "RESOURCE_QUEUE",
    "SERVER_IDLE_CHECK",
    "SLEEP_BPOOL_FLUSH",
    "SLEEP_DBSTARTUP",
    "SLEEP_DCOMSTARTUP",
    "SLEEP_MASTERDBREADY",
    "SLEEP_MASTERMDREADY",
    "SLEEP_MASTERUPGRADED",
    "SLEEP_MSDBSTARTUP",
    "SLEEP_SYSTEMTASK",
    "SLEEP_TASK",
    "SLEEP_TEMPDBSTARTUP",
    "SNI_HTTP_ACCEPT",
    "SOS_WORK_DISPATCHER",
    "SP_SERVER_DIAGNOSTICS_SLEEP",
    "SQLTRACE_BUFFER_FLUSH",
    "SQLTRACE_INCREMENTAL_FLUSH_SLEEP",
    "SQLTRACE_WAIT_ENTRIES",
    "UCS_SESSION_REGISTRATION",
    "VDI_CLIENT_OTHER",
    "WAIT_FOR_RESULTS",
    "WAIT_XTP_CKPT_CLOSE",
    "WAIT_XTP_HOST_WAIT",
    "WAIT_XTP_OFFLINE_CKPT_NEW_LOG",
    "WAIT_XTP_RECOVERY",
    "WAITFOR",
    "WAITFOR_TASKSHUTDOWN",
    "XE_BUFFERMGR_ALLPROCESSED_EVENT",
    "XE_DISPATCHER_JOIN",
    "XE_DISPATCHER_WAIT",
    "XE_LIVE_TARGET_TVF",
    "XE_TIMER_EVENT",
];

/// Whether a wait type is a benign background wait (left out of the profile).
pub fn is_benign(wait_type: &str) -> bool {
    BENIGN.contains(&wait_type) || wait_type.starts_with("SLEEP_")
}

/// oio's wait class of a SQL Server wait type.
pub fn wait_class(wait_type: &str) -> &'static str {
    let t = wait_type;
    if t == "WRITELOG"
        || t == "LOGBUFFER"
        || t.starts_with("LOGMGR")
        || t.starts_with("HADR_SYNC_COMMIT")
    {
        "log"
    } else if t.starts_with("PAGEIOLATCH_") || t == "IO_COMPLETION" || t == "ASYNC_IO_COMPLETION" {
        "data read"
    } else if t.starts_with("PAGELATCH_") || t.starts_with("LATCH_") {
        "page latch"
    } else if t.starts_with("LCK_M_") {
        "lock"
    } else if t == "SOS_SCHEDULER_YIELD"
        || t == "THREADPOOL"
        || t.starts_with("CX")
        || t == "RESOURCE_SEMAPHORE"
    {
        "CPU/scheduler"
    } else if t == "ASYNC_NETWORK_IO" || t.starts_with("PREEMPTIVE_OS_NETWORK") {
        "network/client"
    } else {
        "other"
    }
}

/// The bucket (the names PostgreSQL's profile uses, so reports line engines up) of a class.
fn class_bucket(class: &str) -> &'static str {
    match class {
        "log" => "wal_flush",
        "data read" => "data_io",
        "page latch" => "buffer_content_locks",
        "lock" => "row_locks",
        "CPU/scheduler" => "cpu",
        "network/client" => "client_round_trips",
        _ => "other",
    }
}

/// One row of `sys.dm_os_wait_stats`.
#[derive(Clone, Debug, PartialEq)]
pub struct WaitStat {
    /// `wait_type`.
    pub wait_type: String,
    /// `waiting_tasks_count`.
    pub tasks: i64,
    /// `wait_time_ms` (includes the signal wait).
    pub wait_ms: i64,
    /// `signal_wait_time_ms`: runnable again but waiting for a CPU.
    pub signal_ms: i64,
}

/// One row of the file statistics query ([`FILE_STATS_SQL`]).
#[derive(Clone, Debug, PartialEq)]
pub struct FileStat {
    /// `ROWS` (data) or `LOG`.
    pub kind: String,
    /// Logical file name.
    pub name: String,
    /// Reads, bytes read, read stall ms, writes, bytes written, write stall ms.
    pub io: [i64; 6],
}

/// One row of `sys.dm_os_latch_stats`.
#[derive(Clone, Debug, PartialEq)]
pub struct LatchStat {
    /// `latch_class`.
    pub class: String,
    /// `waiting_requests_count`.
    pub requests: i64,
    /// `wait_time_ms`.
    pub wait_ms: i64,
}

/// The index of each of `want` in `names` (case-insensitive), or an error naming the
/// missing column.
fn columns(view: &str, names: &[String], want: &[&str]) -> Result<Vec<usize>, StmtError> {
    want.iter()
        .map(|w| {
            names
                .iter()
                .position(|n| n.eq_ignore_ascii_case(w))
                .ok_or_else(|| StmtError::Fatal(format!("{view} has no column {w}")))
        })
        .collect()
}

/// Reads `sys.dm_os_wait_stats` rows by their documented column names.
pub fn wait_stats(names: &[String], rows: &[Vec<Val>]) -> Result<Vec<WaitStat>, StmtError> {
    let c = columns(
        "sys.dm_os_wait_stats",
        names,
        &[
            "wait_type",
            "waiting_tasks_count",
            "wait_time_ms",
            "signal_wait_time_ms",
        ],
    )?;
    Ok(rows
        .iter()
        .map(|r| WaitStat {
            wait_type: crate::database::val_text(&r[c[0]]),
            tasks: r[c[1]].int(),
            wait_ms: r[c[2]].int(),
            signal_ms: r[c[3]].int(),
        })
        .collect())
}

/// Reads [`FILE_STATS_SQL`]'s rows.
pub fn file_stats(names: &[String], rows: &[Vec<Val>]) -> Result<Vec<FileStat>, StmtError> {
    let c = columns(
        "sys.dm_io_virtual_file_stats",
        names,
        &[
            "type_desc",
            "name",
            "num_of_reads",
            "num_of_bytes_read",
            "io_stall_read_ms",
            "num_of_writes",
            "num_of_bytes_written",
            "io_stall_write_ms",
        ],
    )?;
    Ok(rows
        .iter()
        .map(|r| FileStat {
            kind: crate::database::val_text(&r[c[0]]),
            name: crate::database::val_text(&r[c[1]]),
            io: [
                r[c[2]].int(),
                r[c[3]].int(),
                r[c[4]].int(),
                r[c[5]].int(),
                r[c[6]].int(),
                r[c[7]].int(),
            ],
        })
        .collect())
}

/// Reads `sys.dm_os_latch_stats` rows.
pub fn latch_stats(names: &[String], rows: &[Vec<Val>]) -> Result<Vec<LatchStat>, StmtError> {
    let c = columns(
        "sys.dm_os_latch_stats",
        names,
        &["latch_class", "waiting_requests_count", "wait_time_ms"],
    )?;
    Ok(rows
        .iter()
        .map(|r| LatchStat {
            class: crate::database::val_text(&r[c[0]]),
            requests: r[c[1]].int(),
            wait_ms: r[c[2]].int(),
        })
        .collect())
}

/// One snapshot of the three views (the latches and files None where unreadable).
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// `sys.dm_os_wait_stats`.
    pub waits: Vec<WaitStat>,
    /// The database's files.
    pub files: Option<Vec<FileStat>>,
    /// `sys.dm_os_latch_stats`.
    pub latches: Option<Vec<LatchStat>>,
}

fn delta<K: std::hash::Hash + Eq + Clone, V: Clone>(
    before: &[V],
    after: &[V],
    key: impl Fn(&V) -> K,
    sub: impl Fn(&V, Option<&V>) -> V,
) -> Vec<V> {
    let old: HashMap<K, &V> = before.iter().map(|v| (key(v), v)).collect();
    after
        .iter()
        .map(|v| sub(v, old.get(&key(v)).copied()))
        .collect()
}

/// The wait profile of a window from two snapshots `window_s` apart: every non-benign wait
/// type that waited, under its own name, in oio's classes by wait time (AAS = seconds waited
/// ÷ window seconds), with the files' latency and the top latch classes as notes.
pub fn profile(before: &Snapshot, after: &Snapshot, window_s: f64) -> WaitProfile {
    let waits = delta(
        &before.waits,
        &after.waits,
        |w| w.wait_type.clone(),
        |a, b| WaitStat {
            wait_type: a.wait_type.clone(),
            tasks: a.tasks - b.map_or(0, |b| b.tasks),
            wait_ms: a.wait_ms - b.map_or(0, |b| b.wait_ms),
            signal_ms: a.signal_ms - b.map_or(0, |b| b.signal_ms),
        },
    );
    let waits: Vec<WaitStat> = waits
        .into_iter()
        .filter(|w| w.wait_ms > 0 && !is_benign(&w.wait_type))
        .collect();
    let total_ms: i64 = waits.iter().map(|w| w.wait_ms).sum();
    let signal_ms: i64 = waits.iter().map(|w| w.signal_ms).sum();
    let per = window_s.max(1e-9) * 1000.0;
    let share = |ms: i64| {
        if total_ms > 0 {
            ms as f64 * 100.0 / total_ms as f64
        } else {
            0.0
        }
    };
    let mut classes: HashMap<&'static str, i64> = HashMap::new();
    let mut events: Vec<WaitEvent> = Vec::new();
    for w in &waits {
        let class = wait_class(&w.wait_type);
        *classes.entry(class).or_default() += w.wait_ms;
        events.push(WaitEvent {
            class: class.to_string(),
            event: w.wait_type.clone(),
            bucket: class_bucket(class).to_string(),
            samples: w.tasks.max(0) as u64,
            aas: w.wait_ms as f64 / per,
            share_pct: share(w.wait_ms),
        });
    }
    events.sort_by(|a, b| b.aas.total_cmp(&a.aas).then(a.event.cmp(&b.event)));
    events.truncate(15);
    let shares = |m: HashMap<&'static str, i64>| {
        let mut v: Vec<WaitShare> = m
            .into_iter()
            .map(|(k, ms)| WaitShare {
                name: k.to_string(),
                aas: ms as f64 / per,
                share_pct: share(ms),
            })
            .collect();
        v.sort_by(|a, b| b.aas.total_cmp(&a.aas).then(a.name.cmp(&b.name)));
        v
    };
    let buckets: HashMap<&'static str, i64> =
        classes.iter().fold(HashMap::new(), |mut m, (c, ms)| {
            *m.entry(class_bucket(c)).or_default() += ms;
            m
        });
    let mut notes = vec![
        "source: deltas of sys.dm_os_wait_stats over the measured window, benign background waits (sleeps, queues, timers) left out; AAS = seconds waited ÷ window seconds, summed over every task of the server".to_string(),
        format!(
            "signal wait (runnable, waiting for a CPU) is {:.1} % of the wait time",
            share(signal_ms)
        ),
    ];
    if let (Some(b), Some(a)) = (&before.files, &after.files) {
        notes.extend(file_notes(b, a));
    }
    if let (Some(b), Some(a)) = (&before.latches, &after.latches) {
        notes.extend(latch_note(b, a));
    }
    WaitProfile {
        source: "sys.dm_os_wait_stats".into(),
        sample_interval_ms: None,
        rounds: 2,
        session_samples: waits.iter().map(|w| w.tasks.max(0) as u64).sum(),
        classes: shares(classes),
        buckets: shares(buckets),
        top_events: events,
        sqlite: None,
        mysql: None,
        notes,
    }
}

/// Per data and log: reads and writes with their mean latency over the window.
fn file_notes(before: &[FileStat], after: &[FileStat]) -> Vec<String> {
    let d = delta(
        before,
        after,
        |f| f.name.clone(),
        |a, b| FileStat {
            kind: a.kind.clone(),
            name: a.name.clone(),
            io: std::array::from_fn(|i| a.io[i] - b.map_or(0, |b| b.io[i])),
        },
    );
    let mut out = Vec::new();
    for (kind, label) in [("ROWS", "data"), ("LOG", "log")] {
        let sum = |i: usize| -> i64 { d.iter().filter(|f| f.kind == kind).map(|f| f.io[i]).sum() };
        if !d.iter().any(|f| f.kind == kind) {
            continue;
        }
        let mean = |stall: i64, n: i64| {
            if n > 0 {
                format!("{:.2} ms", stall as f64 / n as f64)
            } else {
                "-".into()
            }
        };
        out.push(format!(
            "sys.dm_io_virtual_file_stats, {label} files: {} reads ({} bytes, mean {}), {} writes ({} bytes, mean {})",
            sum(0),
            sum(1),
            mean(sum(2), sum(0)),
            sum(3),
            sum(4),
            mean(sum(5), sum(3))
        ));
    }
    out
}

/// The latch classes that waited most.
fn latch_note(before: &[LatchStat], after: &[LatchStat]) -> Option<String> {
    let mut d = delta(
        before,
        after,
        |l| l.class.clone(),
        |a, b| LatchStat {
            class: a.class.clone(),
            requests: a.requests - b.map_or(0, |b| b.requests),
            wait_ms: a.wait_ms - b.map_or(0, |b| b.wait_ms),
        },
    );
    d.retain(|l| l.wait_ms > 0);
    d.sort_by_key(|l| std::cmp::Reverse(l.wait_ms));
    let top: Vec<String> = d
        .iter()
        .take(3)
        .map(|l| format!("{} {} ms ({} waits)", l.class, l.wait_ms, l.requests))
        .collect();
    (!top.is_empty()).then(|| {
        format!(
            "sys.dm_os_latch_stats, top latch classes: {}",
            top.join(", ")
        )
    })
}

/// Babelfish's PostgreSQL activity, read over TDS: the query [`crate::waits::PgSampler`]
/// runs, in T-SQL (CASE for the boolean; Babelfish's `@@SPID` is the backend's pid; every
/// Babelfish database lives in one PostgreSQL database, the sampler's own).
pub const BABELFISH_ACTIVITY_SQL: &str = "SELECT coalesce(wait_event_type, '') AS class, coalesce(wait_event, '') AS event, CASE WHEN backend_type = 'client backend' THEN 1 ELSE 0 END AS client \
    FROM pg_catalog.pg_stat_activity \
    WHERE pid <> @@SPID AND ( \
      (backend_type = 'client backend' AND datname = (SELECT datname FROM pg_catalog.pg_stat_activity WHERE pid = @@SPID) \
         AND state IN ('active', 'idle in transaction', 'idle in transaction (aborted)')) \
      OR (backend_type <> 'client backend' AND coalesce(wait_event_type, '') <> 'Activity'))";

/// [`BABELFISH_ACTIVITY_SQL`]'s rows as the PostgreSQL sampler takes them.
pub fn activity_rows(rows: Vec<Vec<Val>>) -> Vec<(String, String, bool)> {
    rows.into_iter()
        .map(|r| {
            let t = |i: usize| r.get(i).map(crate::database::val_text).unwrap_or_default();
            (t(0), t(1), r.get(2).map(Val::int) == Some(1))
        })
        .collect()
}

/// Relabels a PostgreSQL-side profile as Babelfish's.
pub fn babelfish_label(p: &mut WaitProfile) {
    p.source = "pg_stat_activity (Babelfish for PostgreSQL: its PostgreSQL side's waits, read over TDS; Babelfish has no sys.dm_os_wait_stats)".into();
    p.notes.insert(
        0,
        "these are PostgreSQL's wait events of the Babelfish server (its TDS sessions are PostgreSQL backends), not SQL Server wait types: on a real SQL Server oio reads sys.dm_os_wait_stats instead".into(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// Rows shaped as Microsoft documents sys.dm_os_wait_stats: wait_type nvarchar(60),
    /// waiting_tasks_count bigint, wait_time_ms bigint, max_wait_time_ms bigint,
    /// signal_wait_time_ms bigint.
    fn waits(rows: &[(&str, i64, i64, i64)]) -> Vec<WaitStat> {
        let cols = names(&[
            "wait_type",
            "waiting_tasks_count",
            "wait_time_ms",
            "max_wait_time_ms",
            "signal_wait_time_ms",
        ]);
        let rows: Vec<Vec<Val>> = rows
            .iter()
            .map(|(t, n, ms, sig)| {
                vec![
                    Val::Text(t.to_string()),
                    Val::Int(*n),
                    Val::Int(*ms),
                    Val::Int(*ms / 2),
                    Val::Int(*sig),
                ]
            })
            .collect();
        wait_stats(&cols, &rows).unwrap()
    }

    #[test]
    fn wait_stat_deltas_keep_sql_servers_names_beside_oios_classes() {
        let before = Snapshot {
            waits: waits(&[
                ("WRITELOG", 100, 1_000, 10),
                ("PAGEIOLATCH_SH", 10, 500, 0),
                ("LAZYWRITER_SLEEP", 5, 90_000, 0),
                ("LCK_M_X", 0, 0, 0),
            ]),
            ..Default::default()
        };
        let after = Snapshot {
            waits: waits(&[
                ("WRITELOG", 1_100, 7_200, 110),
                ("PAGEIOLATCH_SH", 60, 2_500, 0),
                ("LAZYWRITER_SLEEP", 15, 190_000, 0),
                ("LCK_M_X", 4, 800, 0),
                ("SOS_SCHEDULER_YIELD", 50, 1_000, 1_000),
            ]),
            ..Default::default()
        };
        let p = profile(&before, &after, 10.0);
        assert_eq!(p.source, "sys.dm_os_wait_stats");
        // 6200 + 2000 + 800 + 1000 ms waited; the lazy writer's sleep is benign.
        assert_eq!(p.top_events[0].event, "WRITELOG");
        assert_eq!(p.top_events[0].class, "log");
        assert!((p.top_events[0].share_pct - 62.0).abs() < 1e-9);
        assert!((p.top_events[0].aas - 0.62).abs() < 1e-9);
        assert_eq!(p.top_events[0].samples, 1_000);
        assert!(p.top_events.iter().all(|e| e.event != "LAZYWRITER_SLEEP"));
        let class = |n: &str| p.classes.iter().find(|c| c.name == n).unwrap().share_pct;
        assert!((class("data read") - 20.0).abs() < 1e-9);
        assert!((class("lock") - 8.0).abs() < 1e-9);
        assert!((class("CPU/scheduler") - 10.0).abs() < 1e-9);
        assert_eq!(p.buckets[0].name, "wal_flush");
        assert!(p.notes[1].contains("11.0 %"), "{:?}", p.notes);
    }

    #[test]
    fn classes_follow_the_wait_families() {
        for (t, c) in [
            ("WRITELOG", "log"),
            ("PAGEIOLATCH_EX", "data read"),
            ("PAGELATCH_EX", "page latch"),
            ("LCK_M_U", "lock"),
            ("SOS_SCHEDULER_YIELD", "CPU/scheduler"),
            ("CXPACKET", "CPU/scheduler"),
            ("ASYNC_NETWORK_IO", "network/client"),
            ("OLEDB", "other"),
        ] {
            assert_eq!(wait_class(t), c, "{t}");
        }
        assert!(is_benign("XE_TIMER_EVENT") && is_benign("SLEEP_TASK"));
        assert!(!is_benign("WRITELOG"));
    }

    /// sys.dm_io_virtual_file_stats (num_of_reads, num_of_bytes_read, io_stall_read_ms,
    /// num_of_writes, num_of_bytes_written, io_stall_write_ms) joined to
    /// sys.database_files (type_desc ROWS/LOG, name), and sys.dm_os_latch_stats
    /// (latch_class, waiting_requests_count, wait_time_ms, max_wait_time_ms).
    #[test]
    fn file_latency_and_latches_become_notes() {
        let cols = names(&[
            "type_desc",
            "name",
            "num_of_reads",
            "num_of_bytes_read",
            "io_stall_read_ms",
            "num_of_writes",
            "num_of_bytes_written",
            "io_stall_write_ms",
        ]);
        let row = |k: &str, n: &str, v: [i64; 6]| {
            let mut r = vec![Val::Text(k.into()), Val::Text(n.into())];
            r.extend(v.iter().map(|x| Val::Int(*x)));
            r
        };
        let b = file_stats(
            &cols,
            &[
                row("ROWS", "tpcc", [10, 81920, 20, 0, 0, 0]),
                row("LOG", "tpcc_log", [0, 0, 0, 100, 1000, 50]),
            ],
        )
        .unwrap();
        let a = file_stats(
            &cols,
            &[
                row("ROWS", "tpcc", [110, 901120, 420, 0, 0, 0]),
                row("LOG", "tpcc_log", [0, 0, 0, 1100, 9000, 550]),
            ],
        )
        .unwrap();
        let lc = names(&[
            "latch_class",
            "waiting_requests_count",
            "wait_time_ms",
            "max_wait_time_ms",
        ]);
        let l = |n: i64, ms: i64| {
            vec![vec![
                Val::Text("ACCESS_METHODS_HOBT_VIRTUAL_ROOT".into()),
                Val::Int(n),
                Val::Int(ms),
                Val::Int(1),
            ]]
        };
        let before = Snapshot {
            waits: vec![],
            files: Some(b),
            latches: Some(latch_stats(&lc, &l(1, 5)).unwrap()),
        };
        let after = Snapshot {
            waits: vec![],
            files: Some(a),
            latches: Some(latch_stats(&lc, &l(3, 25)).unwrap()),
        };
        let p = profile(&before, &after, 1.0);
        let notes = p.notes.join("\n");
        assert!(
            notes.contains("data files: 100 reads (819200 bytes, mean 4.00 ms)"),
            "{notes}"
        );
        assert!(
            notes.contains(
                "log files: 0 reads (0 bytes, mean -), 1000 writes (8000 bytes, mean 0.50 ms)"
            ),
            "{notes}"
        );
        assert!(
            notes.contains("ACCESS_METHODS_HOBT_VIRTUAL_ROOT 20 ms (2 waits)"),
            "{notes}"
        );
        let e = wait_stats(&names(&["wait_type"]), &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("waiting_tasks_count"), "{e}");
    }

    #[test]
    fn babelfish_activity_rows() {
        let r = activity_rows(vec![vec![
            Val::Text("IO".into()),
            Val::Text("WALSync".into()),
            Val::Int(1),
        ]]);
        assert_eq!(r, vec![("IO".to_string(), "WALSync".to_string(), true)]);
    }
}
