//! What the database waits on during the measured window.
//!
//! PostgreSQL: a separate connection samples `pg_stat_activity` (every 100 ms by default), the
//! way Oracle's ASH and HammerDB's pgsentinel-based viewer do, but with no extension. Client
//! sessions of the benchmark database count when active or idle inside a transaction (then
//! they wait on the client: a round trip); background processes count unless they idle in
//! their main loop (`Activity` waits). An active session with no wait event is on CPU
//! ("CPU" for clients, "BCPU" for background processes, as HammerDB labels them). Samples
//! become average active sessions (AAS = session samples ÷ sampling rounds) per wait class,
//! per event, and per bottleneck bucket.
//!
//! SQLite has no wait interface; the driver times what stands for one: queuing for the single
//! writer slot (busy waits), COMMIT of write transactions (WAL append and fsync), and WAL
//! checkpoints (run by a separate thread so their cost is visible instead of hidden inside
//! some unlucky commit).
//!
//! Sampling cannot see waits shorter than the interval in proportion to their count, only to
//! their total time: AAS is a time share, not an event count.

use crate::db::{classify_pg, SqliteSync, StmtError};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

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
    /// How to read these numbers.
    pub notes: Vec<String>,
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
    /// Mean COMMIT time of a write transaction, µs.
    pub commit_mean_us: Option<f64>,
    /// Seconds in WAL checkpoints (a separate thread; PASSIVE, so writers do not wait for it).
    pub checkpoint_s: f64,
    /// Checkpoints run.
    pub checkpoints: u64,
    /// Pages copied from the WAL into the database.
    pub checkpoint_pages: u64,
    /// Worker-seconds available in the window (workers × window), to put the sums in scale.
    pub worker_s: f64,
}

/// The bottleneck bucket of a PostgreSQL wait (see the reference notes' mapping).
pub fn bucket(class: &str, event: &str) -> &'static str {
    match class {
        "CPU" => "cpu",
        "BCPU" => "background_cpu",
        "IO" if event.starts_with("DataFile") => "data_io",
        "IO" if event.starts_with("WAL") => "wal_flush",
        "IO" => "other_io",
        "LWLock" if event.starts_with("WAL") => "wal_flush",
        "LWLock" if event.starts_with("Buffer") => "buffer_content_locks",
        "BufferPin" => "buffer_content_locks",
        "Lock" => "row_locks",
        "Client" => "client_round_trips",
        _ => "other",
    }
}

/// A running `pg_stat_activity` sampler.
pub struct PgSampler {
    counts: HashMap<(String, String), u64>,
    rounds: u64,
    interval: Duration,
}

const SAMPLE_SQL: &str = "SELECT coalesce(wait_event_type, ''), coalesce(wait_event, ''), \
    backend_type = 'client backend' \
    FROM pg_stat_activity \
    WHERE pid <> pg_backend_pid() AND ( \
      (backend_type = 'client backend' AND datname = current_database() \
         AND state IN ('active', 'idle in transaction', 'idle in transaction (aborted)')) \
      OR (backend_type <> 'client backend' AND coalesce(wait_event_type, '') <> 'Activity'))";

impl PgSampler {
    /// Samples on `client` every `interval` until `stop` is set. Returns the queries it ran
    /// (each is one transaction in `pg_stat_database`, subtracted from TPM).
    pub fn run(
        client: &mut postgres::Client,
        interval: Duration,
        stop: &AtomicBool,
    ) -> Result<PgSampler, StmtError> {
        let st = client.prepare(SAMPLE_SQL).map_err(classify_pg)?;
        let mut s = PgSampler {
            counts: HashMap::new(),
            rounds: 0,
            interval,
        };
        let mut next = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            for row in client.query(&st, &[]).map_err(classify_pg)? {
                let (class, event, client_backend): (String, String, bool) =
                    (row.get(0), row.get(1), row.get(2));
                let class = if class.is_empty() {
                    if client_backend { "CPU" } else { "BCPU" }.to_string()
                } else {
                    class
                };
                *s.counts.entry((class, event)).or_default() += 1;
            }
            s.rounds += 1;
            next += interval;
            let now = Instant::now();
            if next > now {
                // Sleep in slices so a stop is noticed quickly.
                let mut left = next - now;
                while left > Duration::ZERO && !stop.load(Ordering::Relaxed) {
                    let step = left.min(Duration::from_millis(50));
                    std::thread::sleep(step);
                    left = left.saturating_sub(step);
                }
            } else {
                next = now;
            }
        }
        Ok(s)
    }

    /// Rounds taken (= queries run).
    pub fn rounds(&self) -> u64 {
        self.rounds
    }

    /// The profile.
    pub fn profile(&self) -> WaitProfile {
        let total: u64 = self.counts.values().sum();
        let rounds = self.rounds.max(1) as f64;
        let share = |n: u64| {
            if total > 0 {
                n as f64 * 100.0 / total as f64
            } else {
                0.0
            }
        };
        let mut classes: HashMap<&str, u64> = HashMap::new();
        let mut buckets: HashMap<&str, u64> = HashMap::new();
        let mut events: Vec<WaitEvent> = Vec::new();
        for ((class, event), n) in &self.counts {
            *classes.entry(class).or_default() += n;
            *buckets.entry(bucket(class, event)).or_default() += n;
            events.push(WaitEvent {
                class: class.clone(),
                event: event.clone(),
                bucket: bucket(class, event).to_string(),
                samples: *n,
                aas: *n as f64 / rounds,
                share_pct: share(*n),
            });
        }
        let to_shares = |m: HashMap<&str, u64>| {
            let mut v: Vec<WaitShare> = m
                .into_iter()
                .map(|(k, n)| WaitShare {
                    name: k.to_string(),
                    aas: n as f64 / rounds,
                    share_pct: share(n),
                })
                .collect();
            v.sort_by(|a, b| b.aas.total_cmp(&a.aas).then(a.name.cmp(&b.name)));
            v
        };
        events.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.event.cmp(&b.event)));
        events.truncate(15);
        WaitProfile {
            source: "pg_stat_activity".into(),
            sample_interval_ms: Some(self.interval.as_secs_f64() * 1000.0),
            rounds: self.rounds,
            session_samples: total,
            classes: to_shares(classes),
            buckets: to_shares(buckets),
            top_events: events,
            sqlite: None,
            notes: vec![
                "AAS = sampled sessions ÷ sampling rounds: the average number of sessions in each state; a time share, not an event count".into(),
                "client sessions idle inside a transaction count as Client:ClientRead (waiting for the driver's next statement: a round trip)".into(),
                "row_locks holds every heavyweight lock wait (Lock:transactionid and Lock:tuple are the row-level ones)".into(),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_follow_the_mapping() {
        assert_eq!(bucket("IO", "DataFileRead"), "data_io");
        assert_eq!(bucket("IO", "WALSync"), "wal_flush");
        assert_eq!(bucket("LWLock", "WALWrite"), "wal_flush");
        assert_eq!(bucket("LWLock", "BufferContent"), "buffer_content_locks");
        assert_eq!(bucket("Lock", "transactionid"), "row_locks");
        assert_eq!(bucket("Client", "ClientRead"), "client_round_trips");
        assert_eq!(bucket("CPU", ""), "cpu");
        assert_eq!(bucket("IPC", "ProcArrayGroupUpdate"), "other");
    }

    #[test]
    fn profile_turns_counts_into_aas() {
        let mut s = PgSampler {
            counts: HashMap::new(),
            rounds: 10,
            interval: Duration::from_millis(100),
        };
        s.counts.insert(("CPU".into(), "".into()), 20);
        s.counts.insert(("IO".into(), "WALSync".into()), 10);
        let p = s.profile();
        assert_eq!(p.session_samples, 30);
        assert_eq!(p.classes[0].name, "CPU");
        assert!((p.classes[0].aas - 2.0).abs() < 1e-9);
        assert!((p.buckets[1].share_pct - 100.0 / 3.0).abs() < 1e-9);
        assert_eq!(p.top_events[0].bucket, "cpu");
    }
}
