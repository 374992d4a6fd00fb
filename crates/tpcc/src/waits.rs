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
//! MariaDB/MySQL: [`crate::mysql::waits`] reads `performance_schema`'s per-event wait
//! totals and InnoDB's status counters once per interval and reports the deltas (time
//! waited, not samples), grouped into I/O, log, lock and CPU/other.
//!
//! Every engine's profile has `classes` (SQLite's are its timed waits, in seconds ÷ window
//! seconds; MariaDB/MySQL's its four groups), and each interval of the result has the same
//! classes for its own span (`intervals[].waits`), so the profile can be drawn over time.
//!
//! Sampling cannot see waits shorter than the interval in proportion to their count, only to
//! their total time: AAS is a time share, not an event count.

use crate::sql::{classify_pg, StmtError};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub use oio_documents::tpcc::waits::{
    MysqlInterval, MysqlWaits, SqliteWaits, WaitEvent, WaitProfile, WaitShare,
};

/// Turns the results of successive `PRAGMA wal_checkpoint` calls into pages checkpointed.
///
/// The pragma's third column is the number of WAL frames checkpointed *so far in the current
/// WAL*, not by this call: summing it per call (as oio once did) counts the same frames again
/// every second until the WAL restarts, which made 1.2 GiB of device writes read as 14 GiB.
/// Within one WAL generation the delta between calls is what a call copied; when the WAL
/// restarts from its beginning (after being fully checkpointed, the next writer rewinds it)
/// the count starts again from zero. A restart shows as a new checkpoint sequence number in
/// the WAL header (or, before the header is rewritten, as counts that went down).
#[derive(Clone, Debug, Default)]
pub struct CheckpointCounter {
    last: Option<(Option<u32>, u64, u64)>,
    /// Pages checkpointed so far.
    pub pages: u64,
    /// Frames appended to the WAL so far, as seen at the checkpoints.
    pub wal_frames: u64,
}

impl CheckpointCounter {
    /// Accounts for one call: the WAL header's checkpoint sequence number when the call ran
    /// (None when the WAL file could not be read), the frames in the WAL and the frames
    /// checkpointed, as the pragma returned them (-1, outside WAL mode, counts as 0).
    pub fn observe(&mut self, seq: Option<u32>, log: i64, checkpointed: i64) {
        let (log, ckpt) = (log.max(0) as u64, checkpointed.max(0) as u64);
        let same_generation = self
            .last
            .is_some_and(|(s, l, c)| s == seq && log >= l && ckpt >= c);
        let (dl, dc) = match self.last {
            Some((_, l, c)) if same_generation => (log - l, ckpt - c),
            _ => (log, ckpt),
        };
        self.wal_frames += dl;
        self.pages += dc;
        self.last = Some((seq, log, ckpt));
    }
}

/// The checkpoint sequence number in a WAL file's header (big-endian u32 at byte 12 after the
/// magic number), which SQLite increments each time the WAL restarts.
pub fn wal_checkpoint_seq(wal: &std::path::Path) -> Option<u32> {
    use std::io::Read;
    let mut h = [0u8; 16];
    std::fs::File::open(wal).ok()?.read_exact(&mut h).ok()?;
    let magic = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
    if magic & !1 != 0x377f_0682 {
        return None;
    }
    Some(u32::from_be_bytes([h[12], h[13], h[14], h[15]]))
}

/// One interval's wait shares, in the order of the window's `classes` (every class of the
/// window appears, with 0 when the interval had none of it, so a stacked chart keeps its
/// colours; a class only the interval has comes last). `amounts` are what the window's
/// shares were made of (session samples, or seconds waited summed over sessions) and `per`
/// turns an amount into average active sessions (the interval's rounds, or its seconds).
pub fn interval_shares(
    classes: &[WaitShare],
    amounts: &HashMap<String, f64>,
    per: f64,
) -> Vec<WaitShare> {
    let total: f64 = amounts.values().sum();
    let share = |name: &str| {
        let a = amounts.get(name).copied().unwrap_or(0.0);
        WaitShare {
            name: name.to_string(),
            aas: if per > 0.0 { a / per } else { 0.0 },
            share_pct: if total > 0.0 { a * 100.0 / total } else { 0.0 },
        }
    };
    let mut out: Vec<WaitShare> = classes.iter().map(|c| share(&c.name)).collect();
    let mut extra: Vec<&String> = amounts
        .keys()
        .filter(|k| !classes.iter().any(|c| &c.name == *k))
        .collect();
    extra.sort();
    out.extend(extra.into_iter().map(|k| share(k)));
    out
}

/// The bottleneck bucket of a PostgreSQL wait (see the reference notes' mapping).
pub fn bucket(class: &str, event: &str) -> &'static str {
    match class {
        "CPU" => "cpu",
        "BCPU" => "background_cpu",
        "Background" => "background",
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

/// The class and event a sampled PostgreSQL process counts under, or None when it is not
/// working at all. Client backends keep their `wait_event_type` ("CPU" when none). Background
/// processes (checkpointer, WAL writer, autovacuum…) are not sessions of the workload: their
/// waits go to the "Background" class with the type kept in the event ("IO:DataFileWrite"),
/// their CPU to "BCPU", and their `Timeout` waits (CheckpointWriteDelay, VacuumDelay: a
/// throttle asleep on purpose) are left out.
fn session_class(class: String, event: String, client: bool) -> Option<(String, String)> {
    match (client, class.as_str()) {
        (true, "") => Some(("CPU".into(), event)),
        (true, _) => Some((class, event)),
        (false, "") => Some(("BCPU".into(), event)),
        (false, "Timeout") => None,
        (false, _) => Some(("Background".into(), format!("{class}:{event}"))),
    }
}

/// A running `pg_stat_activity` sampler.
pub struct PgSampler {
    counts: HashMap<(String, String), u64>,
    rounds: u64,
    interval: Duration,
    /// Per driver interval (indexed by the driver's interval counter when the round ran):
    /// rounds taken and session samples per class.
    per_interval: Vec<(u64, HashMap<String, u64>)>,
}

/// Per-interval entries a sampler keeps at most: a run of a week at 1 s intervals; a
/// longer one folds its later rounds into the last entry rather than growing without bound.
const MAX_INTERVALS: usize = 7 * 24 * 3600;

const SAMPLE_SQL: &str = "SELECT coalesce(wait_event_type, ''), coalesce(wait_event, ''), \
    backend_type = 'client backend' \
    FROM pg_stat_activity \
    WHERE pid <> pg_backend_pid() AND ( \
      (backend_type = 'client backend' AND datname = current_database() \
         AND state IN ('active', 'idle in transaction', 'idle in transaction (aborted)')) \
      OR (backend_type <> 'client backend' AND coalesce(wait_event_type, '') <> 'Activity'))";

impl PgSampler {
    /// Samples on `client` every `interval` until `stop` is cancelled. Each round is also
    /// counted in the driver interval `current` names when the round ran (the driver moves
    /// it on as it closes an interval), so the per-interval view lines up with `intervals[]`.
    pub fn run(
        client: &mut postgres::Client,
        interval: Duration,
        stop: &oio_core::Cancel,
        current: &AtomicUsize,
    ) -> Result<PgSampler, StmtError> {
        let st = client.prepare(SAMPLE_SQL).map_err(classify_pg)?;
        PgSampler::run_with(interval, stop, current, || {
            let rows = client.query(&st, &[]).map_err(classify_pg)?;
            Ok(rows
                .into_iter()
                .map(|row| (row.get(0), row.get(1), row.get(2)))
                .collect())
        })
    }

    /// [`PgSampler::run`] with each round's query run by `sample`, which returns
    /// `pg_stat_activity`'s (wait_event_type, wait_event, is a client backend) rows as
    /// [`PgSampler::run`]'s query selects them: Babelfish's TDS sessions read PostgreSQL's
    /// activity over their own connection (see `crate::mssql`).
    pub fn run_with(
        interval: Duration,
        stop: &oio_core::Cancel,
        current: &AtomicUsize,
        mut sample: impl FnMut() -> Result<Vec<(String, String, bool)>, StmtError>,
    ) -> Result<PgSampler, StmtError> {
        let mut s = PgSampler {
            counts: HashMap::new(),
            rounds: 0,
            interval,
            per_interval: Vec::new(),
        };
        let mut next = Instant::now();
        while !stop.is_cancelled() {
            let rows = sample()?;
            let i = current.load(Ordering::Relaxed).min(MAX_INTERVALS - 1);
            if s.per_interval.len() <= i {
                s.per_interval.resize_with(i + 1, Default::default);
            }
            let slot = &mut s.per_interval[i];
            slot.0 += 1;
            for (class, event, client_backend) in rows {
                let Some((class, event)) = session_class(class, event, client_backend) else {
                    continue;
                };
                *slot.1.entry(class.clone()).or_default() += 1;
                *s.counts.entry((class, event)).or_default() += 1;
            }
            s.rounds += 1;
            next += interval;
            let now = Instant::now();
            if next > now {
                // Sleep in slices so a stop is noticed quickly.
                let mut left = next - now;
                while left > Duration::ZERO && !stop.is_cancelled() {
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

    /// Per driver interval: the interval's rounds and session samples per class (an
    /// interval with no round, shorter than the sampling interval, has 0 rounds).
    pub fn per_interval(&self) -> &[(u64, HashMap<String, u64>)] {
        &self.per_interval
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
            mysql: None,
            notes: vec![
                "AAS = sampled sessions ÷ sampling rounds: the average number of sessions in each state; a time share, not an event count".into(),
                "client sessions idle inside a transaction count as Client:ClientRead (waiting for the driver's next statement: a round trip)".into(),
                "row_locks holds every heavyweight lock wait (Lock:transactionid and Lock:tuple are the row-level ones)".into(),
                "background processes (checkpointer, WAL writer, autovacuum) are not workload sessions: their waits are the Background class (bucket background, the wait type kept in the event), their CPU BCPU; their Timeout waits (CheckpointWriteDelay, VacuumDelay: sleeping on purpose) are not counted".into(),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn background_processes_are_not_workload_sessions() {
        let c =
            |class: &str, event: &str, client| session_class(class.into(), event.into(), client);
        assert_eq!(c("", "", true), Some(("CPU".into(), "".into())));
        assert_eq!(
            c("IO", "WALSync", true),
            Some(("IO".into(), "WALSync".into()))
        );
        // The checkpointer throttling itself is not a wait of anyone's.
        assert_eq!(c("Timeout", "CheckpointWriteDelay", false), None);
        let (class, event) = c("IO", "WALWrite", false).unwrap();
        assert_eq!(
            (class.as_str(), event.as_str()),
            ("Background", "IO:WALWrite")
        );
        assert_eq!(bucket(&class, &event), "background");
        assert_eq!(c("", "", false), Some(("BCPU".into(), "".into())));
    }

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
            per_interval: Vec::new(),
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

    #[test]
    fn interval_shares_keep_the_window_classes_in_order() {
        let window = vec![
            WaitShare {
                name: "CPU".into(),
                aas: 2.0,
                share_pct: 60.0,
            },
            WaitShare {
                name: "IO".into(),
                aas: 1.0,
                share_pct: 40.0,
            },
        ];
        let amounts = HashMap::from([("IO".to_string(), 6.0), ("Lock".to_string(), 2.0)]);
        let v = interval_shares(&window, &amounts, 4.0);
        let names: Vec<&str> = v.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["CPU", "IO", "Lock"]);
        assert_eq!(v[0].aas, 0.0);
        assert!((v[1].aas - 1.5).abs() < 1e-12);
        assert!((v[1].share_pct - 75.0).abs() < 1e-12);
        assert!((v[2].share_pct - 25.0).abs() < 1e-12);
        // No rounds in the interval: no AAS rather than a division by zero.
        assert!(interval_shares(&window, &amounts, 0.0)
            .iter()
            .all(|w| w.aas == 0.0));
    }

    /// A real WAL: pages checkpointed equal the frames written, counted once each, across a
    /// reader-pinned WAL (many calls per generation) and a restart into a larger generation.
    #[test]
    fn checkpoint_pages_are_the_frames_written_once() {
        use rusqlite::Connection;
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("w.db");
        let wal = dir.path().join("w.db-wal");
        let w = Connection::open(&db).unwrap();
        w.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; CREATE TABLE t(x BLOB)",
        )
        .unwrap();
        let c = Connection::open(&db).unwrap();
        c.execute_batch("PRAGMA wal_autocheckpoint=0").unwrap();
        let reader = Connection::open(&db).unwrap();
        let page: u64 = w.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
        let mut counter = CheckpointCounter::default();
        let summed_per_call = std::cell::Cell::new(0u64);
        let checkpoint = |counter: &mut CheckpointCounter| -> (i64, i64) {
            let seq = wal_checkpoint_seq(&wal);
            let (log, ckpt): (i64, i64) = c
                .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                    Ok((r.get(1)?, r.get(2)?))
                })
                .unwrap();
            counter.observe(seq, log, ckpt);
            summed_per_call.set(summed_per_call.get() + ckpt as u64);
            (log, ckpt)
        };
        let insert = |n: usize| {
            for _ in 0..n {
                w.execute("INSERT INTO t VALUES (zeroblob(3000))", [])
                    .unwrap();
            }
        };

        // Generation 1: a reader pins an early snapshot, so the WAL grows and every call
        // checkpoints only up to the reader until it lets go.
        insert(20);
        reader.execute_batch("BEGIN").unwrap();
        let _: i64 = reader
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        for _ in 0..10 {
            insert(1);
            checkpoint(&mut counter);
        }
        reader.execute_batch("COMMIT").unwrap();
        let (first, ckpt) = checkpoint(&mut counter);
        assert_eq!(first, ckpt, "everything checkpointed");
        assert_eq!(counter.pages, first as u64);
        assert_eq!(counter.wal_frames, first as u64);
        // The WAL file holds exactly the frames of this first generation.
        let wal_len = std::fs::metadata(&wal).unwrap().len();
        assert_eq!((wal_len - 32) / (page + 24), counter.pages);
        let old_way = summed_per_call.get();
        assert!(
            old_way > 2 * counter.pages,
            "{old_way} vs {}",
            counter.pages
        );

        // Generation 2 restarts the WAL and grows past generation 1 before the next call, so
        // only the header's sequence number shows the restart.
        insert(40);
        let (second, ckpt) = checkpoint(&mut counter);
        assert_eq!(second, ckpt);
        assert!(second > first, "{second} {first}");
        assert_eq!(counter.pages, (first + second) as u64);
        assert_eq!(counter.wal_frames, (first + second) as u64);
        // A call with nothing new adds nothing.
        checkpoint(&mut counter);
        assert_eq!(counter.pages, (first + second) as u64);
    }
}

/// What the checkpointer did so far.
#[derive(Clone, Copy, Debug, Default)]
pub struct CkptTotals {
    /// Seconds inside checkpoints.
    pub secs: f64,
    /// Checkpoints run.
    pub runs: u64,
    /// Pages copied from the WAL into the database file (each once).
    pub pages: u64,
    /// Pages appended to the WAL.
    pub wal_frames: u64,
    /// The page size, bytes.
    pub page_size: u64,
}
