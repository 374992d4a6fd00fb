//! What the database waited on during a run's window (`waits` of an `oio.tpcc` result).
//!
//! The samplers that fill these live in `oio-tpcc`'s `waits` module, which re-exports them;
//! how each engine's waits are measured is described there.

use super::options::SqliteSync;
use serde::{Deserialize, Serialize};

/// The wait profile of a run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WaitProfile {
    /// "pg_stat_activity", "sqlite" or "none".
    pub source: String,
    /// Sampling interval, ms (PostgreSQL).
    pub sample_interval_ms: Option<f64>,
    /// Sampling rounds taken.
    pub rounds: u64,
    /// Session samples (one per active session per round).
    pub session_samples: u64,
    /// Average active sessions per wait class (`wait_event_type`, "CPU", "BCPU"), largest
    /// first.
    pub classes: Vec<WaitShare>,
    /// Average active sessions per bottleneck bucket, largest first.
    pub buckets: Vec<WaitShare>,
    /// The most sampled events, largest first (at most 15).
    pub top_events: Vec<WaitEvent>,
    /// SQLite's timed waits.
    pub sqlite: Option<SqliteWaits>,
    /// MariaDB/MySQL: InnoDB's buffer pool and redo log figures, and the waits per interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mysql: Option<MysqlWaits>,
    /// How to read these numbers.
    pub notes: Vec<String>,
}

impl WaitProfile {
    /// The profile's groups as (name, share %) pairs, what a study sets side by side: the
    /// bottleneck buckets, or the classes when there are none (SQLite has no buckets).
    pub fn shares(&self) -> Vec<(String, f64)> {
        let groups = if self.buckets.is_empty() {
            &self.classes
        } else {
            &self.buckets
        };
        groups
            .iter()
            .map(|g| (g.name.clone(), g.share_pct))
            .collect()
    }
}

/// Average active sessions of one class or bucket.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WaitShare {
    /// Class or bucket name.
    pub name: String,
    /// Average active sessions.
    pub aas: f64,
    /// Share of all session samples, percent.
    pub share_pct: f64,
}

/// One wait event.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WaitEvent {
    /// `wait_event_type`, or "CPU"/"BCPU".
    pub class: String,
    /// `wait_event` ("" for CPU).
    pub event: String,
    /// The bottleneck bucket.
    pub bucket: String,
    /// Session samples.
    pub samples: u64,
    /// Average active sessions.
    pub aas: f64,
    /// Share of all session samples, percent.
    pub share_pct: f64,
}

/// SQLite's timed waits over the window.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SqliteWaits {
    /// `PRAGMA synchronous` during the run.
    pub synchronous: Option<SqliteSync>,
    /// Seconds write transactions queued for the single writer slot (busy waits), summed
    /// over workers.
    pub writer_wait_s: f64,
    /// Write transactions that had to queue.
    pub writer_waits: u64,
    /// Seconds in COMMIT of write transactions (WAL append, plus fsync with
    /// synchronous=full), summed over workers.
    pub commit_s: f64,
    /// Write commits.
    pub commits: u64,
    /// Mean COMMIT time of a write transaction, ns.
    pub commit_mean_ns: Option<f64>,
    /// Seconds in WAL checkpoints (a separate thread; PASSIVE, so writers do not wait for it).
    pub checkpoint_s: f64,
    /// Checkpoints run.
    pub checkpoints: u64,
    /// Pages copied from the WAL into the database by the checkpoints in the window.
    pub checkpoint_pages: u64,
    /// `checkpoint_pages` × the page size, bytes.
    #[serde(default)]
    pub checkpoint_bytes: u64,
    /// Frames (pages) appended to the WAL in the window, as the checkpoints saw them.
    #[serde(default)]
    pub wal_frames: u64,
    /// The database's page size, bytes.
    #[serde(default)]
    pub page_size: u64,
    /// Worker-seconds available in the window (workers × window), to put the sums in scale.
    pub worker_s: f64,
}

/// MariaDB/MySQL's InnoDB figures over the window (deltas of `SHOW GLOBAL STATUS`, except the
/// page counts, which are at the end).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct MysqlWaits {
    /// The wait instruments were on and sampled (else only these counters are reported).
    pub performance_schema: bool,
    /// Logical page reads (`Innodb_buffer_pool_read_requests`).
    pub buffer_pool_read_requests: u64,
    /// Reads that missed the buffer pool and went to the device (`Innodb_buffer_pool_reads`).
    pub buffer_pool_reads: u64,
    /// 100 × (1 − reads ÷ read requests), percent.
    pub buffer_pool_hit_pct: Option<f64>,
    /// Pages in the buffer pool, at the end.
    pub buffer_pool_pages_total: u64,
    /// Dirty pages in the buffer pool, at the end.
    pub buffer_pool_pages_dirty: u64,
    /// Redo log bytes written (`Innodb_os_log_written`).
    pub redo_bytes: u64,
    /// Times a transaction waited for room in the log buffer (`Innodb_log_waits`).
    pub log_waits: u64,
    /// fsync calls by InnoDB (`Innodb_data_fsyncs`).
    pub data_fsyncs: u64,
    /// Bytes InnoDB wrote, all files (`Innodb_data_written`).
    pub data_written_bytes: u64,
    /// Row lock waits (`Innodb_row_lock_waits`).
    pub row_lock_waits: u64,
    /// Seconds spent waiting for row locks (`Innodb_row_lock_time`).
    pub row_lock_time_s: f64,
    /// CPU seconds the server process used over the window (all its threads), when it runs
    /// on the driver's host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_s: Option<f64>,
    /// The waits per sampling interval.
    pub intervals: Vec<MysqlInterval>,
}

/// Waits of one sampling interval, seconds summed over threads.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct MysqlInterval {
    /// Seconds from the first sample to the end of this interval.
    pub end_s: f64,
    /// Length of the interval, seconds.
    pub duration_s: f64,
    /// File I/O waits (data files, not the redo log), s.
    pub io_s: f64,
    /// Redo log file I/O and log mutex waits, s.
    pub log_s: f64,
    /// Mutex, rw-lock, table lock and InnoDB row lock waits, s.
    pub lock_s: f64,
    /// Socket waits (the client's round trips and the network), s (0 in results written
    /// before oio told them from file I/O).
    #[serde(default)]
    pub client_s: f64,
    /// Timed waits of no known kind, s.
    #[serde(default)]
    pub unknown_waits_s: f64,
    /// The server process's CPU seconds (all its threads), when it runs on the driver's host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_s: Option<f64>,
    /// Buffer pool misses read from the device.
    pub buffer_pool_reads: u64,
    /// Redo log bytes written.
    pub redo_bytes: u64,
}
