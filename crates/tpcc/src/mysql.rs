//! The MariaDB/MySQL dialect's database: schema, bulk load, wait sampling (InnoDB and
//! `performance_schema`), settings and the stored procedures of server mode. Sessions are
//! `mysql_session`, client mode's transactions `mysql_client`.

use crate::database::{
    one_text, setting_pairs, setting_text, val_text, Database, DialectSql, LoadJob, SamplerJob,
    WaitSampler,
};
use crate::db::Session;
use crate::error::{Result, TpccError};
use crate::mysql_session::*;
pub use crate::mysql_session::{connect, MySession};
use crate::plan::{RunOptions, SqliteSync, Timeouts};
use crate::result::Interval;
use crate::settings::StudySetting;
use crate::url::DbUrl;
use crate::waits::WaitProfile;
use oio_core::settings::ServerSettings;
use oio_core::Cancel;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

/// MariaDB: global variables whose value did not come from the compiled-in default (nor was
/// set automatically from the host, `AUTO`).
const MARIADB_SETTINGS_QUERY: &str = "SELECT VARIABLE_NAME, GLOBAL_VALUE FROM information_schema.SYSTEM_VARIABLES WHERE GLOBAL_VALUE_ORIGIN NOT IN ('COMPILE-TIME', 'AUTO') ORDER BY VARIABLE_NAME";
/// MySQL 8: the same from performance_schema.
const MYSQL_SETTINGS_QUERY: &str = "SELECT v.VARIABLE_NAME, g.VARIABLE_VALUE FROM performance_schema.variables_info v JOIN performance_schema.global_variables g ON g.VARIABLE_NAME = v.VARIABLE_NAME WHERE v.VARIABLE_SOURCE NOT IN ('COMPILED') ORDER BY v.VARIABLE_NAME";

/// The instruments the wait sampler reads.
const INSTRUMENTS_WHERE: &str = "(name LIKE 'wait/io/file/%' OR name LIKE 'wait/synch/%' OR name LIKE 'wait/lock/%' OR name = 'idle')";
/// The consumers it needs.
const CONSUMERS_WHERE: &str = "name IN ('global_instrumentation', 'thread_instrumentation')";
/// Enables them (server-wide: `setup_instruments` has no session scope).
pub(crate) const ENABLE_INSTRUMENTS: &str = "UPDATE performance_schema.setup_instruments SET enabled = 'YES', timed = 'YES' \
     WHERE (name LIKE 'wait/io/file/%' OR name LIKE 'wait/synch/%' OR name LIKE 'wait/lock/%' OR name = 'idle'); \
     UPDATE performance_schema.setup_consumers SET enabled = 'YES' \
     WHERE name IN ('global_instrumentation', 'thread_instrumentation')";

/// Samples MariaDB/MySQL's wait statistics: `performance_schema`'s
/// `events_waits_summary_global_by_event_name` and InnoDB's status counters, as deltas per
/// interval.
pub mod waits {
    use super::MySession;
    use crate::sql::{StmtError, Val};
    use crate::waits::{MysqlInterval, MysqlWaits, WaitEvent, WaitProfile, WaitShare};
    use std::collections::HashMap;
    use std::time::{Duration, Instant};

    /// The InnoDB status counters read at every sample.
    const STATUS: [&str; 10] = [
        "Innodb_buffer_pool_read_requests",
        "Innodb_buffer_pool_reads",
        "Innodb_buffer_pool_pages_total",
        "Innodb_buffer_pool_pages_dirty",
        "Innodb_os_log_written",
        "Innodb_log_waits",
        "Innodb_data_fsyncs",
        "Innodb_row_lock_waits",
        "Innodb_row_lock_time",
        "Innodb_data_written",
    ];

    /// The bucket of a wait event: `io`, `log`, `lock`, `client_round_trips` (a socket:
    /// waiting on the client or the network, not storage) or `unknown` (a timed wait of
    /// another kind).
    pub fn group(event: &str) -> &'static str {
        let e = event.to_ascii_lowercase();
        if e.starts_with("wait/io/socket/") {
            "client_round_trips"
        } else if e.contains("innodb_log") || e.contains("/log_") || e.contains("redo") {
            "log"
        } else if e.starts_with("wait/io/") {
            "io"
        } else if e.starts_with("wait/synch/") || e.starts_with("wait/lock/") {
            "lock"
        } else {
            "unknown"
        }
    }

    #[derive(Default, Clone)]
    struct Snap {
        /// Event → (count, picoseconds).
        events: HashMap<String, (u64, u64)>,
        status: HashMap<String, i64>,
        /// The server process's CPU time (all its threads), when it runs on this host.
        server_cpu: Option<Duration>,
        /// Picoseconds this process's worker sessions were idle (between statements).
        worker_idle_ps: u64,
        at: Option<Instant>,
    }

    /// A running sampler's state.
    pub struct Sampler {
        enabled: bool,
        enable_error: Option<String>,
        interval: Duration,
        workers: u32,
        /// The server's process id, when it runs on this host (its CPU time is read).
        server: Option<u32>,
        first: Snap,
        last: Snap,
        intervals: Vec<MysqlInterval>,
        rounds: u64,
    }

    /// One reading. `idle` keeps each worker session's idle time as last read (by thread id):
    /// a session that closed or reconnected keeps what it had, so the sum never goes back.
    fn snap(
        s: &mut MySession,
        enabled: bool,
        server: Option<u32>,
        idle: &mut HashMap<u64, u64>,
    ) -> Result<Snap, StmtError> {
        let mut out = Snap {
            at: Some(Instant::now()),
            server_cpu: server
                .and_then(oio_core::cpu::ProcessCpu::of_pid)
                .map(|c| c.total()),
            ..Snap::default()
        };
        if enabled {
            // Left out: `idle` (time between statements), `wait/io/table` (the handler's row
            // accesses: logical, not device I/O), and condition waits (mostly threads asleep
            // until signalled, such as the timer thread's COND_timer, which alone read as a
            // whole busy session; InnoDB's row lock waits are condition waits too, and come
            // from Innodb_row_lock_time instead).
            let (_, rows) = s.query_sql(
                "SELECT event_name, count_star, sum_timer_wait FROM performance_schema.events_waits_summary_global_by_event_name \
                 WHERE count_star > 0 AND event_name NOT LIKE 'idle%' AND event_name NOT LIKE 'wait/io/table/%' \
                 AND event_name NOT LIKE 'wait/synch/cond/%'",
            )?;
            for r in rows {
                let n = |v: &Val| v.int().max(0) as u64;
                out.events
                    .insert(r[0].text().to_string(), (n(&r[1]), n(&r[2])));
            }
            // The workers' sessions between statements: waiting for the driver's next one
            // (its own time and the network). Only this process's workers (`_pid`), so
            // other drivers on the same server do not count.
            let (_, rows) = s.query_sql(&format!(
                "SELECT w.thread_id, w.sum_timer_wait \
                 FROM performance_schema.events_waits_summary_by_thread_by_event_name w \
                 JOIN performance_schema.threads t ON t.thread_id = w.thread_id \
                 JOIN performance_schema.session_connect_attrs p ON p.processlist_id = t.processlist_id \
                 AND p.attr_name = '_pid' AND p.attr_value = '{}' \
                 JOIN performance_schema.session_connect_attrs a ON a.processlist_id = t.processlist_id \
                 AND a.attr_name = 'program_name' AND a.attr_value LIKE '{}%' \
                 WHERE w.event_name = 'idle'",
                std::process::id(),
                crate::WORKER_APPLICATION
            ))?;
            for r in rows {
                let v = idle.entry(r[0].int().max(0) as u64).or_default();
                *v = (*v).max(r[1].int().max(0) as u64);
            }
            out.worker_idle_ps = idle.values().sum();
        }
        let list = STATUS
            .iter()
            .map(|v| format!("'{v}'"))
            .collect::<Vec<_>>()
            .join(",");
        let (_, rows) = s.query_sql(&format!(
            "SHOW GLOBAL STATUS WHERE Variable_name IN ({list})"
        ))?;
        for r in rows {
            out.status.insert(r[0].text().to_string(), r[1].int());
        }
        Ok(out)
    }

    /// The server's process id when it runs on this host: connected through a socket or a
    /// loopback address, its pid file readable here, naming a live `mariadbd` or `mysqld`
    /// whose host name is the server's. `None` otherwise (a remote server's CPU is not
    /// seen from here).
    fn server_pid(s: &mut MySession) -> Option<u32> {
        let local = s.opts.get_socket().is_some()
            || matches!(
                s.opts.get_ip_or_hostname().as_ref(),
                "localhost" | "127.0.0.1" | "::1"
            )
            || s.opts
                .get_ip_or_hostname()
                .parse::<std::net::IpAddr>()
                .is_ok_and(|a| a.is_loopback());
        if !local {
            return None;
        }
        let (_, rows) = s
            .query_sql("SELECT @@pid_file, @@datadir, @@hostname")
            .ok()?;
        let r = rows.first()?;
        let here = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
        if r[2].text() != here.trim() {
            return None;
        }
        let file = std::path::Path::new(r[1].text()).join(r[0].text());
        let pid: u32 = std::fs::read_to_string(file).ok()?.trim().parse().ok()?;
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
        matches!(comm.trim(), "mariadbd" | "mysqld").then_some(pid)
    }

    /// Seconds of server CPU between two snapshots, when both have it.
    fn cpu_between(a: &Snap, b: &Snap) -> Option<f64> {
        Some(b.server_cpu?.saturating_sub(a.server_cpu?).as_secs_f64())
    }

    fn seconds_by_group(a: &Snap, b: &Snap) -> HashMap<&'static str, f64> {
        let mut m: HashMap<&'static str, f64> = HashMap::new();
        for (name, (_, ps)) in &b.events {
            let before = a.events.get(name).map_or(0, |x| x.1);
            *m.entry(group(name)).or_default() += ps.saturating_sub(before) as f64 / 1e12;
        }
        // InnoDB's row lock waits are not in MariaDB's performance_schema; its status
        // counter has them (milliseconds).
        let d =
            |k: &str| b.status.get(k).copied().unwrap_or(0) - a.status.get(k).copied().unwrap_or(0);
        *m.entry("lock").or_default() += d("Innodb_row_lock_time").max(0) as f64 / 1e3;
        *m.entry("client_round_trips").or_default() +=
            b.worker_idle_ps.saturating_sub(a.worker_idle_ps) as f64 / 1e12;
        m
    }

    /// The workers' time (`worker_s`) in buckets: the timed waits (`io`, `log`, `lock` and
    /// `client_round_trips` with performance_schema; only `lock`, from InnoDB's counter,
    /// without), `cpu` when the server's CPU time is known (at most what the waits leave),
    /// and `unknown` for the rest, never read as CPU.
    pub(crate) fn residual_split(
        g: &HashMap<&'static str, f64>,
        instrumented: bool,
        server_cpu: Option<f64>,
        worker_s: f64,
    ) -> Vec<(String, f64)> {
        // Without performance_schema only the row lock time is known: io/log are not shown
        // as zeros.
        let known: &[&str] = if instrumented {
            &["io", "log", "lock", "client_round_trips"]
        } else {
            &["lock"]
        };
        let mut buckets: Vec<(String, f64)> = known
            .iter()
            .map(|b| (b.to_string(), g.get(b).copied().unwrap_or(0.0)))
            .collect();
        // Timed waits of no known kind are unknown too.
        let other_waits = if instrumented {
            g.get("unknown").copied().unwrap_or(0.0)
        } else {
            0.0
        };
        let waited: f64 = buckets.iter().map(|b| b.1).sum::<f64>() + other_waits;
        let left = (worker_s - waited).max(0.0);
        let cpu = server_cpu.map(|c| c.min(left));
        if let Some(c) = cpu {
            buckets.push(("cpu".into(), c));
        }
        buckets.push(("unknown".into(), left - cpu.unwrap_or(0.0) + other_waits));
        buckets
    }

    impl Sampler {
        /// Enables the wait instruments (server-wide: `setup_instruments` has no session
        /// scope) and samples every `interval` until `stop`.
        pub fn run(
            s: &mut MySession,
            interval: Duration,
            stop: &oio_core::Cancel,
            workers: u32,
        ) -> Result<Sampler, StmtError> {
            let on = s
                .query_sql("SELECT @@performance_schema")
                .map(|(_, r)| r.first().is_some_and(|r| r[0].int() == 1))
                .unwrap_or(false);
            let mut enable_error = None;
            if on {
                if let Err(e) = s.batch(super::ENABLE_INSTRUMENTS) {
                    enable_error = Some(e.to_string());
                }
            } else {
                enable_error = Some("performance_schema is OFF (it can only be turned on at server start: performance_schema=ON in the server's configuration)".into());
            }
            let enabled = on;
            let server = server_pid(s);
            let mut idle = HashMap::new();
            let first = snap(s, enabled, server, &mut idle)?;
            let mut me = Sampler {
                enabled,
                enable_error,
                interval,
                workers,
                server,
                last: first.clone(),
                first,
                intervals: Vec::new(),
                rounds: 1,
            };
            let mut next = Instant::now();
            while !stop.is_cancelled() {
                next += interval;
                let mut left = next.saturating_duration_since(Instant::now());
                while left > Duration::ZERO && !stop.is_cancelled() {
                    let step = left.min(Duration::from_millis(50));
                    std::thread::sleep(step);
                    left = left.saturating_sub(step);
                }
                let now = snap(s, enabled, server, &mut idle)?;
                me.rounds += 1;
                let g = seconds_by_group(&me.last, &now);
                let (t0, t1) = (me.first.at, now.at);
                let (l0, l1) = (me.last.at, now.at);
                let dt = |a: Option<Instant>, b: Option<Instant>| match (a, b) {
                    (Some(a), Some(b)) => b.duration_since(a).as_secs_f64(),
                    _ => 0.0,
                };
                let d = |k: &str| {
                    now.status.get(k).copied().unwrap_or(0)
                        - me.last.status.get(k).copied().unwrap_or(0)
                };
                me.intervals.push(MysqlInterval {
                    end_s: dt(t0, t1),
                    duration_s: dt(l0, l1),
                    io_s: g.get("io").copied().unwrap_or(0.0),
                    log_s: g.get("log").copied().unwrap_or(0.0),
                    lock_s: g.get("lock").copied().unwrap_or(0.0),
                    client_s: g.get("client_round_trips").copied().unwrap_or(0.0),
                    unknown_waits_s: g.get("unknown").copied().unwrap_or(0.0),
                    cpu_s: cpu_between(&me.last, &now),
                    buffer_pool_reads: d("Innodb_buffer_pool_reads").max(0) as u64,
                    redo_bytes: d("Innodb_os_log_written").max(0) as u64,
                });
                me.last = now;
            }
            Ok(me)
        }

        /// Sampling rounds taken.
        pub fn rounds(&self) -> u64 {
            self.rounds
        }

        /// The wait profile over the sampled window.
        pub fn profile(&self) -> WaitProfile {
            let window = match (self.first.at, self.last.at) {
                (Some(a), Some(b)) => b.duration_since(a).as_secs_f64(),
                _ => 0.0,
            }
            .max(1e-9);
            let g = seconds_by_group(&self.first, &self.last);
            let instrumented = self.enabled && self.enable_error.is_none();
            let server_cpu = cpu_between(&self.first, &self.last);
            let buckets =
                residual_split(&g, instrumented, server_cpu, self.workers as f64 * window);
            let total: f64 = buckets.iter().map(|b| b.1).sum::<f64>().max(1e-12);
            let mut shares: Vec<WaitShare> = buckets
                .iter()
                .map(|(n, s)| WaitShare {
                    name: n.clone(),
                    aas: s / window,
                    share_pct: s * 100.0 / total,
                })
                .collect();
            shares.sort_by(|a, b| b.aas.total_cmp(&a.aas).then(a.name.cmp(&b.name)));
            let mut events: Vec<WaitEvent> = self
                .last
                .events
                .iter()
                .filter_map(|(name, (n, ps))| {
                    let (n0, ps0) = self.first.events.get(name).copied().unwrap_or((0, 0));
                    let s = ps.saturating_sub(ps0) as f64 / 1e12;
                    (s > 0.0).then(|| WaitEvent {
                        class: group(name).into(),
                        event: name.clone(),
                        bucket: group(name).into(),
                        samples: n.saturating_sub(n0),
                        aas: s / window,
                        share_pct: s * 100.0 / total,
                    })
                })
                .collect();
            events.sort_by(|a, b| b.aas.total_cmp(&a.aas).then(a.event.cmp(&b.event)));
            events.truncate(15);
            let d = |k: &str| {
                (self.last.status.get(k).copied().unwrap_or(0)
                    - self.first.status.get(k).copied().unwrap_or(0))
                .max(0) as u64
            };
            let requests = d("Innodb_buffer_pool_read_requests");
            let reads = d("Innodb_buffer_pool_reads");
            let mut notes = vec![
                "aas = seconds waited ÷ window seconds (performance_schema timer deltas, summed over every thread, background ones included); top_events' `samples` is the number of waits".into(),
                "lock includes InnoDB row lock waits from Innodb_row_lock_time (MariaDB's performance_schema has no row-lock instrument); condition waits (threads asleep until signalled) are left out".into(),
            ];
            if instrumented {
                notes.push("client_round_trips = this run's worker sessions idle between statements (performance_schema `idle`: waiting for the driver's next statement, its own CPU time and the network) plus socket waits (wait/io/socket/*); not storage".into());
            }
            if server_cpu.is_some() {
                notes.push(format!("cpu = the server process's CPU time (/proc/{}/stat, all its threads, background ones included, so at most an overestimate of the sessions'), capped at the time the waits leave", self.server.unwrap_or(0)));
            } else {
                notes.push("cpu is not measured: the server does not run on this host (or its process was not found), so its CPU time is part of unknown".into());
            }
            if instrumented {
                notes.push("unknown = workers × window − the timed waits − cpu (never below 0), not CPU: time sessions sat idle between statements while the client worked or the round trip crossed the network (performance_schema's `idle`, left out because it sums every connection, idle ones included), waits performance_schema does not time, such as MariaDB sessions waiting for a group commit's redo log flush (only the thread that writes the log times it), and timed waits of no known kind".into());
            } else {
                notes.push("unknown = workers × window − the row lock time − cpu (never below 0): with performance_schema off nothing says whether sessions waited for I/O, the log or the client (start the server with performance_schema=ON to tell them apart); not CPU".into());
            }
            if let Some(e) = &self.enable_error {
                notes.push(format!("wait instruments could not be enabled, so only the InnoDB counters are reported: {e}"));
            } else {
                notes.push("oio enabled performance_schema's wait/io/file, wait/synch and wait/lock instruments server-wide; they stay on until the server restarts".into());
            }
            WaitProfile {
                source: if self.enabled && self.enable_error.is_none() {
                    "performance_schema".into()
                } else {
                    "innodb_status".into()
                },
                sample_interval_ms: Some(self.interval.as_secs_f64() * 1000.0),
                rounds: self.rounds,
                session_samples: 0,
                classes: Vec::new(),
                buckets: shares,
                top_events: events,
                sqlite: None,
                mysql: Some(MysqlWaits {
                    performance_schema: self.enabled && self.enable_error.is_none(),
                    buffer_pool_read_requests: requests,
                    buffer_pool_reads: reads,
                    buffer_pool_hit_pct: (requests > 0)
                        .then(|| (1.0 - reads as f64 / requests as f64) * 100.0),
                    buffer_pool_pages_total: self
                        .last
                        .status
                        .get("Innodb_buffer_pool_pages_total")
                        .copied()
                        .unwrap_or(0)
                        .max(0) as u64,
                    buffer_pool_pages_dirty: self
                        .last
                        .status
                        .get("Innodb_buffer_pool_pages_dirty")
                        .copied()
                        .unwrap_or(0)
                        .max(0) as u64,
                    redo_bytes: d("Innodb_os_log_written"),
                    log_waits: d("Innodb_log_waits"),
                    data_fsyncs: d("Innodb_data_fsyncs"),
                    data_written_bytes: d("Innodb_data_written"),
                    row_lock_waits: d("Innodb_row_lock_waits"),
                    row_lock_time_s: d("Innodb_row_lock_time") as f64 / 1e3,
                    server_cpu_s: server_cpu,
                    intervals: self.intervals.clone(),
                }),
                notes,
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::group;

        #[test]
        fn events_fall_into_the_four_groups() {
            assert_eq!(group("wait/io/file/innodb/innodb_log_file"), "log");
            assert_eq!(group("wait/synch/mutex/innodb/log_sys_mutex"), "log");
            assert_eq!(group("wait/io/file/innodb/innodb_data_file"), "io");
            assert_eq!(group("wait/synch/rwlock/innodb/index_tree_rw_lock"), "lock");
            assert_eq!(group("wait/lock/table/sql/handler"), "lock");
            assert_eq!(group("stage/sql/statistics"), "unknown");
            // The client's round trip is not storage I/O.
            assert_eq!(
                group("wait/io/socket/sql/client_connection"),
                "client_round_trips"
            );
        }

        #[test]
        fn time_in_no_timed_wait_is_the_servers_cpu_then_unknown_never_more_than_the_workers() {
            use super::residual_split;
            let g: std::collections::HashMap<&'static str, f64> =
                [("log", 1.0), ("lock", 2.0), ("io", 0.5), ("unknown", 0.5)].into();
            let split = |instrumented, cpu| {
                let b = residual_split(&g, instrumented, cpu, 40.0);
                let sum: f64 = b.iter().map(|x| x.1).sum();
                let get = |n: &str| b.iter().find(|x| x.0 == n).map(|x| x.1);
                (sum, get("cpu"), get("unknown"), get("log"))
            };
            // 4 workers × 10 s: 3.5 s in known timed waits, 0.5 s timed of no known kind,
            // 12 s on the server's CPU, 24 s in no timed wait.
            assert_eq!(
                split(true, Some(12.0)),
                (40.0, Some(12.0), Some(24.5), Some(1.0))
            );
            // The server's CPU (background threads included) is capped at what is left.
            assert_eq!(
                split(true, Some(50.0)),
                (40.0, Some(36.0), Some(0.5), Some(1.0))
            );
            // A remote server: no cpu bucket, everything untimed is unknown.
            assert_eq!(split(true, None), (40.0, None, Some(36.5), Some(1.0)));
            // Without performance_schema only the row lock time is known (log not shown).
            assert_eq!(
                split(false, Some(12.0)),
                (40.0, Some(12.0), Some(26.0), None)
            );
        }
    }
}

/// The bulk load's MariaDB/MySQL side: multi-row INSERTs, one connection per loader.
mod loader {
    use super::*;
    use crate::build_state;
    use crate::db::{Canceller, Session};
    use crate::rows::{
        add_table_rows, cancelled, generate, tables_of, BuildOptions, Counters, Unit, F,
    };
    use oio_core::Cancel;
    use std::sync::atomic::Ordering;
    use std::sync::Mutex;

    /// Appends a row as a parenthesised VALUES tuple.
    fn values_tuple(buf: &mut String, row: &[F], now: &str) {
        use std::fmt::Write as _;
        buf.push('(');
        for (i, f) in row.iter().enumerate() {
            if i > 0 {
                buf.push(',');
            }
            let _ = match f {
                F::I(v) => write!(buf, "{v}"),
                F::M(v) => write!(buf, "{v:.2}"),
                F::R(v) => write!(buf, "{v:.4}"),
                // Generated text is alphanumeric; quotes and backslashes are escaped anyway.
                F::S(s) => {
                    buf.push('\'');
                    for c in s.chars() {
                        match c {
                            '\'' => buf.push_str("''"),
                            '\\' => buf.push_str("\\\\"),
                            c => buf.push(c),
                        }
                    }
                    buf.push('\'');
                    Ok(())
                }
                F::Null => write!(buf, "NULL"),
                F::Now => write!(buf, "'{now}'"),
            };
        }
        buf.push(')');
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn load_mysql_worker(
        url: &str,
        opts: &BuildOptions,
        now: &str,
        take: &(dyn Fn() -> Option<Unit> + Sync),
        counters: &Counters,
        report: &(dyn Fn(&'static str) + Sync),
        cancel: &Cancel,
        cancellers: &Mutex<Vec<Canceller>>,
    ) -> Result<()> {
        let seed = opts.seed;
        let mut s = Session::new(crate::mysql::connect(
            url,
            build_state::BUILD_APPLICATION,
            &opts.timeouts,
        )?);
        cancellers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(s.canceller());
        // One transaction per table of a unit; the generated keys are unique, so InnoDB need not
        // check them against the index (a failed build is rebuilt).
        s.batch("SET SESSION unique_checks = 0, foreign_key_checks = 0, autocommit = 0")?;
        let mut buf = String::with_capacity(MYSQL_STATEMENT_BYTES + 4096);
        while let Some(unit) = take() {
            if counters.failed.load(Ordering::Relaxed) {
                return Ok(());
            }
            for table in tables_of(unit) {
                let head = format!("INSERT INTO {table} VALUES ");
                let mut n = 0u64;
                let flush = |buf: &mut String, s: &mut Session| -> Result<()> {
                    if buf.len() > head.len() {
                        s.batch(buf)?;
                        counters
                            .bytes
                            .fetch_add(buf.len() as u64, Ordering::Relaxed);
                    }
                    buf.clear();
                    buf.push_str(&head);
                    Ok(())
                };
                buf.clear();
                flush(&mut buf, &mut s)?;
                generate(seed, unit, table, &mut |row| {
                    if buf.len() > head.len() {
                        buf.push(',');
                    }
                    values_tuple(&mut buf, row, now);
                    n += 1;
                    if buf.len() >= MYSQL_STATEMENT_BYTES {
                        flush(&mut buf, &mut s)?;
                    }
                    if n.is_multiple_of(10_000) {
                        counters.rows.fetch_add(10_000, Ordering::Relaxed);
                        report("loading");
                        cancelled(cancel)?;
                    }
                    Ok(())
                })?;
                flush(&mut buf, &mut s)?;
                s.commit()?;
                counters.rows.fetch_add(n % 10_000, Ordering::Relaxed);
                add_table_rows(counters, table, n);
            }
            if matches!(unit, Unit::Warehouse(_)) {
                counters.warehouses.fetch_add(1, Ordering::Relaxed);
            }
            report("loading");
        }
        Ok(())
    }
}

/// MariaDB/MySQL's DDL and catalog queries.
pub(crate) struct MysqlSql;

/// The MariaDB/MySQL dialect's SQL.
pub(crate) static SCHEMA: MysqlSql = MysqlSql;

impl DialectSql for MysqlSql {
    fn create_tables(&self) -> String {
        let mut sql = String::new();
        for t in crate::schema::tables() {
            let cols = t.columns().replace("TIMESTAMP", "DATETIME");
            let key = t
                .key
                .map(|k| format!(", PRIMARY KEY ({k})"))
                .unwrap_or_default();
            sql.push_str(&format!(
                "CREATE TABLE {} ({cols}{key}) ENGINE=InnoDB;\n",
                t.name
            ))
        }
        sql
    }

    fn create_indexes(&self) -> Vec<String> {
        crate::schema::secondary_indexes()
    }

    fn drop_server_side(&self) -> String {
        crate::mysql_server::drop_procedures()
    }

    fn existing_tables_sql(&self, list: &str) -> String {
        format!(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = database() AND table_name IN ({list}) ORDER BY 1"
        )
    }

    fn table_exists_sql(&self, table: &str) -> String {
        format!(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = database() AND table_name = '{table}'"
        )
    }

    fn other_builders_sql(&self, application: &str) -> Option<String> {
        // Build sessions name themselves in the `program_name` connection attribute.
        Some(format!(
            "SELECT count(*) FROM performance_schema.session_connect_attrs WHERE attr_name = 'program_name' AND attr_value = '{application}' AND processlist_id <> connection_id()"
        ))
    }
}

/// A MariaDB or MySQL database.
pub struct Mysql {
    url: DbUrl,
    /// The `mysql://` URL.
    raw: String,
}

impl Mysql {
    /// The database at `raw` (`url`'s text).
    pub fn new(url: &DbUrl, raw: &str) -> Mysql {
        Mysql {
            url: url.clone(),
            raw: raw.to_string(),
        }
    }
}

/// Multi-row INSERT statements are cut at this size (MariaDB's default
/// `max_allowed_packet` is 16 MiB; 1 MiB keeps each round trip short).
const MYSQL_STATEMENT_BYTES: usize = 1 << 20;

impl Database for Mysql {
    fn url(&self) -> &DbUrl {
        &self.url
    }

    fn study_privilege(&self) -> &'static str {
        "SUPER or SYSTEM_VARIABLES_ADMIN"
    }

    fn connect(
        &self,
        application_name: &str,
        _sync: SqliteSync,
        timeouts: &Timeouts,
    ) -> Result<Session> {
        Ok(Session::new(connect(
            &self.raw,
            application_name,
            timeouts,
        )?))
    }

    fn load(&self, _admin: &mut Session, job: &LoadJob) -> Result<()> {
        crate::rows::in_parallel(job.opts.workers, job.counters, || {
            loader::load_mysql_worker(
                &self.raw,
                job.opts,
                job.now,
                job.take,
                job.counters,
                job.report,
                job.cancel,
                job.cancellers,
            )
        })
    }

    fn analyze(&self, admin: &mut Session) -> Result<()> {
        // ANALYZE TABLE and CREATE PROCEDURE commit implicitly on MySQL, so they run before
        // the transaction that marks the build complete.
        admin.batch(&format!(
            "ANALYZE TABLE {}",
            crate::schema::TABLES.join(", ")
        ))?;
        Ok(())
    }

    fn ddl_commits(&self) -> bool {
        true
    }

    fn has_server_side(&self) -> bool {
        true
    }

    fn install_server_side(&self, s: &mut Session) -> Result<()> {
        crate::mysql_server::create_procedures(s)
    }

    fn size_on_disk(&self, s: &mut Session) -> Result<u64> {
        // InnoDB's own estimate of its pages in use (not the file sizes, which only grow).
        Ok(s
            .query_int("SELECT CAST(coalesce(sum(data_length + index_length), 0) AS SIGNED) FROM information_schema.tables WHERE table_schema = database()")
            .map_err(TpccError::from)? as u64)
    }

    fn wait_sampler(
        &self,
        opts: &RunOptions,
        stop: Cancel,
        _current: Arc<AtomicUsize>,
    ) -> Option<SamplerJob> {
        let (u, timeouts, workers) = (self.raw.clone(), opts.timeouts, opts.workers);
        // Counters, not samples: one read per interval gives the per-interval deltas.
        let every = Duration::from_secs_f64(opts.interval_s.max(0.05));
        Some(Box::new(move || -> Result<Box<dyn WaitSampler>> {
            let mut c = connect(&u, "oio-tpcc-waits", &timeouts)?;
            // Its intervals count from its first snapshot, taken just after this.
            let began = Instant::now();
            let sampler = waits::Sampler::run(&mut c, every, &stop, workers)?;
            Ok(Box::new(StartedSampler { sampler, began }))
        }))
    }

    fn client_tpm_note(&self) -> &'static str {
        "TPM is the transactions the driver counted (MariaDB/MySQL's Com_commit also counts oio's monitoring and is not used)"
    }

    fn data_location(&self, timeouts: &Timeouts) -> Result<Option<std::path::PathBuf>> {
        data_dir(&self.raw, timeouts)
    }

    fn server_on_this_machine(&self) -> bool {
        is_local(&self.raw)
    }

    fn read_settings(&self, s: &mut Session, out: &mut ServerSettings) {
        out.version = setting_text(s, "SELECT VERSION()");
        let lower = |v: std::collections::BTreeMap<String, String>| {
            v.into_iter().map(|(k, v)| (k.to_lowercase(), v)).collect()
        };
        match setting_pairs(s, MARIADB_SETTINGS_QUERY) {
            Ok(v) => {
                out.source = format!("MariaDB: {MARIADB_SETTINGS_QUERY}");
                out.values = lower(v);
            }
            Err(_) => match setting_pairs(s, MYSQL_SETTINGS_QUERY) {
                Ok(v) => {
                    out.source = format!("MySQL: {MYSQL_SETTINGS_QUERY}");
                    out.values = lower(v);
                }
                Err(e) => out.notes.push(format!(
                    "global variables not read (neither information_schema.SYSTEM_VARIABLES nor performance_schema.variables_info): {e}"
                )),
            },
        }
    }

    fn study_setting(&self, s: &mut Session, n: &str) -> Result<StudySetting> {
        let value = one_text(s, &format!("SELECT @@GLOBAL.{n}")).map_err(|e| {
            TpccError::Invalid(format!(
                "--set {n}=…: not a global variable of this server ({e})"
            ))
        })?;
        // MariaDB says which variables are read-only at run time; MySQL does not, so there
        // the variable is set to the value it has, which SET GLOBAL refuses for a read-only
        // one (and leaves a dynamic one as it was).
        let refuse = |why: String| {
            TpccError::Invalid(format!("--set {n}=…: '{n}' is read-only while the server runs ({why}): it takes a server restart with the new value in its configuration, and oio did not start this server and cannot restart it, so the study is refused before any run. Change it yourself, restart the server between two `oio tpcc run --label …` and compare them"))
        };
        let read_only = one_text(
            s,
            &format!(
                "SELECT READ_ONLY FROM information_schema.SYSTEM_VARIABLES WHERE VARIABLE_NAME = '{}'",
                n.to_uppercase()
            ),
        );
        match read_only {
            Ok(Some(ro)) if ro.eq_ignore_ascii_case("yes") => {
                return Err(refuse(
                    "information_schema.SYSTEM_VARIABLES.READ_ONLY = YES".into(),
                ))
            }
            Ok(_) => {}
            Err(_) => {
                if let Err(e) = s.batch(&format!("SET GLOBAL {n} = @@GLOBAL.{n}")) {
                    let e = e.to_string();
                    // ER_INCORRECT_GLOBAL_LOCAL_VAR: "Variable '…' is a read only variable".
                    return Err(if e.contains("read only") {
                        refuse(format!("setting it to its own value: {e}"))
                    } else {
                        TpccError::Invalid(format!("--set {n}=…: SET GLOBAL {n} to its own value was refused: {e} (a study needs SUPER or SYSTEM_VARIABLES_ADMIN)"))
                    });
                }
            }
        }
        let value = value.unwrap_or_default();
        Ok(StudySetting {
            before: Some(value.clone()),
            value,
            scope: crate::settings::Scope::Server,
        })
    }

    fn set_setting_sql(&self, name: &str, _scope: &crate::settings::Scope, value: &str) -> String {
        // Written so that no sql_mode reads it differently (NO_BACKSLASH_ESCAPES or not).
        format!(
            "SET GLOBAL {name} = {}",
            crate::settings::mysql_literal(value)
        )
    }

    fn setting_value_sql(&self, name: &str) -> String {
        format!("SELECT @@GLOBAL.{name}")
    }

    fn restore_instruments_sql(&self, rows: &[crate::settings::InstrumentRow]) -> Vec<String> {
        use crate::settings::mysql_text;
        // Grouped by the state to restore, names listed (a few hundred at most), in chunks
        // well under max_allowed_packet.
        let mut groups: BTreeMap<(String, String, Option<String>), Vec<String>> = BTreeMap::new();
        for r in rows {
            if r.table != "setup_instruments" && r.table != "setup_consumers" {
                continue;
            }
            groups
                .entry((r.table.clone(), r.enabled.clone(), r.timed.clone()))
                .or_default()
                .push(mysql_text(&r.name));
        }
        let mut out = Vec::new();
        for ((table, enabled, timed), names) in groups {
            for chunk in names.chunks(200) {
                let mut set = format!("enabled = {}", mysql_text(&enabled));
                if let Some(t) = &timed {
                    set.push_str(&format!(", timed = {}", mysql_text(t)));
                }
                out.push(format!(
                    "UPDATE performance_schema.{table} SET {set} WHERE name IN ({})",
                    chunk.join(", ")
                ));
            }
        }
        out
    }

    fn server_identity(&self, s: &mut Session) -> Result<String> {
        // MySQL has a server UUID; MariaDB does not: its host, port and data directory.
        if let Ok(Some(u)) = one_text(s, "SELECT @@server_uuid") {
            if !u.is_empty() {
                return Ok(format!("mysql-{u}"));
            }
        }
        let id = one_text(s, "SELECT CONCAT(@@hostname, '-', @@port, '-', @@datadir)").map_err(|e| {
            TpccError::Invalid(format!(
                "reading the server's identity (@@hostname, @@port, @@datadir) for its settings journal: {e}"
            ))
        })?;
        Ok(format!("mysql-{}", id.unwrap_or_default()))
    }

    fn try_lock(&self, s: &mut Session, kind: crate::settings::Kind) -> Result<Option<String>> {
        let name = kind.lock_name();
        // The lock lives as long as this session: it must not time out while idle.
        s.batch("SET SESSION wait_timeout = 31536000")
            .map_err(|e| {
                TpccError::Invalid(format!("setting the lock session's wait_timeout: {e}"))
            })?;
        let got = s
            .query_int(&format!("SELECT GET_LOCK('{name}', 0)"))
            .map_err(|e| TpccError::Invalid(format!("GET_LOCK('{name}', 0): {e}")))?;
        if got == 1 {
            return Ok(None);
        }
        let id = s
            .query_int(&format!("SELECT IS_USED_LOCK('{name}')"))
            .unwrap_or(0);
        // Its program name says which oio (see settings::holder_name), when
        // performance_schema is on; else the account and host.
        let program = one_text(
            s,
            &format!("SELECT attr_value FROM performance_schema.session_connect_attrs WHERE processlist_id = {id} AND attr_name = 'program_name'"),
        )
        .ok()
        .flatten();
        let who = one_text(
            s,
            &format!("SELECT CONCAT(USER, '@', HOST) FROM information_schema.PROCESSLIST WHERE ID = {id}"),
        )
        .ok()
        .flatten()
        .unwrap_or_default();
        Ok(Some(match program {
            Some(p) if !p.is_empty() => format!(
                "{} (connection {id}, {})",
                oio_core::text::printable(&p),
                oio_core::text::printable(&who)
            ),
            _ => format!("connection {id} ({})", oio_core::text::printable(&who)),
        }))
    }

    fn instruments_off(&self, s: &mut Session) -> Result<Vec<crate::settings::InstrumentRow>> {
        let on = s.query_int("SELECT @@performance_schema").unwrap_or(0) == 1;
        if !on {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        let (_, rows) = s
            .query_sql(&format!("SELECT name, enabled, timed FROM performance_schema.setup_instruments WHERE {INSTRUMENTS_WHERE} AND (enabled <> 'YES' OR timed <> 'YES')"))
            .map_err(|e| TpccError::Invalid(format!("reading performance_schema.setup_instruments: {e}")))?;
        for r in rows {
            out.push(crate::settings::InstrumentRow {
                table: "setup_instruments".into(),
                name: val_text(&r[0]),
                enabled: val_text(&r[1]),
                timed: Some(val_text(&r[2])),
            });
        }
        let (_, rows) = s
            .query_sql(&format!("SELECT name, enabled FROM performance_schema.setup_consumers WHERE {CONSUMERS_WHERE} AND enabled <> 'YES'"))
            .map_err(|e| TpccError::Invalid(format!("reading performance_schema.setup_consumers: {e}")))?;
        for r in rows {
            out.push(crate::settings::InstrumentRow {
                table: "setup_consumers".into(),
                name: val_text(&r[0]),
                enabled: val_text(&r[1]),
                timed: None,
            });
        }
        Ok(out)
    }

    fn enable_instruments_sql(&self) -> Option<&'static str> {
        Some(ENABLE_INSTRUMENTS)
    }
}

/// The `performance_schema` sampler and when it started (its intervals count from then).
struct StartedSampler {
    sampler: waits::Sampler,
    began: Instant,
}

impl WaitSampler for StartedSampler {
    fn rounds(&self) -> u64 {
        self.sampler.rounds()
    }

    fn profile(&self) -> WaitProfile {
        self.sampler.profile()
    }

    /// Its interval deltas spread over the driver's intervals by overlap, split as the
    /// profile is (cpu when the server's CPU time is known, the rest unknown).
    fn interval_waits(
        &self,
        intervals: &mut [Interval],
        waits: &mut WaitProfile,
        started: Instant,
        workers: u32,
    ) {
        let classes = waits.classes.clone();
        let profile = self.sampler.profile();
        let Some(my) = profile.mysql.as_ref() else {
            return;
        };
        let offset = self.began.saturating_duration_since(started).as_secs_f64();
        let measured_cpu = my.server_cpu_s.is_some();
        for iv in intervals.iter_mut() {
            let (lo, hi) = (iv.t_s - iv.duration_s, iv.t_s);
            let mut g: HashMap<&'static str, f64> = HashMap::new();
            let mut cpu = 0.0;
            for j in &my.intervals {
                let (jlo, jhi) = (offset + j.end_s - j.duration_s, offset + j.end_s);
                let overlap = (hi.min(jhi) - lo.max(jlo)).max(0.0);
                if overlap <= 0.0 || j.duration_s <= 0.0 {
                    continue;
                }
                let f = overlap / j.duration_s;
                for (name, secs) in [
                    ("lock", j.lock_s),
                    ("io", j.io_s),
                    ("log", j.log_s),
                    ("client_round_trips", j.client_s),
                    ("unknown", j.unknown_waits_s),
                ] {
                    *g.entry(name).or_default() += secs * f;
                }
                cpu += j.cpu_s.unwrap_or(0.0) * f;
            }
            // The same split as the profile's, over this interval.
            let amounts: HashMap<String, f64> = waits::residual_split(
                &g,
                my.performance_schema,
                measured_cpu.then_some(cpu),
                workers as f64 * iv.duration_s,
            )
            .into_iter()
            .collect();
            iv.waits = crate::waits::interval_shares(&classes, &amounts, iv.duration_s);
        }
    }
}
