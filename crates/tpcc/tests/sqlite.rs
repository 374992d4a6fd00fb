//! End-to-end on embedded SQLite: build, check, run, check again.

use oio_core::Cancel;
use oio_tpcc::check::Status;
use oio_tpcc::{build, check, run_step, BuildOptions, DbUrl, Quiet, RunOptions, Timeouts};

fn url(dir: &tempfile::TempDir) -> DbUrl {
    format!("sqlite:{}", dir.path().join("t.db").display())
        .parse()
        .unwrap()
}

#[test]
fn build_check_run_check() {
    let dir = tempfile::tempdir().unwrap();
    let db = url(&dir);
    let t = std::time::Instant::now();
    let b = build(
        &db,
        &BuildOptions {
            warehouses: 1,
            workers: 2,
            force: false,
            seed: 7,
            timeouts: Timeouts::default(),
        },
        &|_| {},
        &Cancel::new(),
    )
    .unwrap();
    eprintln!(
        "build: {:.1}s, {:.0} rows/s, {} bytes/warehouse",
        t.elapsed().as_secs_f64(),
        b.load_rows_per_s,
        b.bytes_per_warehouse
    );
    assert_eq!(b.rows["stock"], 100_000);
    assert_eq!(b.rows["item"], 100_000);
    assert_eq!(b.rows["customer"], 30_000);
    assert_eq!(b.rows["new_order"], 9_000);
    assert_eq!(b.rows["orders"], 30_000);

    // A second build refuses to clobber the first.
    let e = build(
        &db,
        &BuildOptions {
            warehouses: 1,
            workers: 1,
            force: false,
            seed: 7,
            timeouts: Timeouts::default(),
        },
        &|_| {},
        &Cancel::new(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("--force"), "{e}");

    let c = check(&db, &Timeouts::default()).unwrap();
    for cond in &c.conditions {
        assert_eq!(cond.status, Status::Pass, "{cond:?}");
    }
    assert_eq!(c.conditions.len(), 12);

    let stop = Cancel::new();
    let r = run_step(
        &db,
        &RunOptions {
            workers: 2,
            ramp_s: 0.0,
            time_s: 3.0,
            ..RunOptions::default()
        },
        &mut Quiet,
        &stop,
    )
    .unwrap();
    eprintln!("{}", serde_json::to_string_pretty(&r.summary).unwrap());
    eprintln!("{}", serde_json::to_string_pretty(&r.waits).unwrap());
    // The wait profile over time: SQLite's timed waits per interval, in the window's
    // classes, adding up to the window's (the same counters, read at each interval's end).
    let names: Vec<&str> = r.waits.classes.iter().map(|c| c.name.as_str()).collect();
    for c in ["commit", "cpu_other"] {
        assert!(names.contains(&c), "{names:?}");
    }
    oio_testkit::interval_waits_add_up(&r, 0.01).unwrap();
    // 2 workers on 1 warehouse share it, and say so.
    assert!(
        r.envelope.warnings
            .iter()
            .any(|w| w.contains("share home warehouses") && w.contains("warehouse 1: workers 0, 1")),
        "{:?}",
        r.envelope.warnings
    );
    // Checkpoints copy each WAL frame at most once: never more pages than the WAL received
    // (it was empty when the window started: the build truncates it).
    let sq = r.waits.sqlite.as_ref().unwrap();
    assert!(sq.checkpoint_pages > 0, "{sq:?}");
    assert!(sq.checkpoint_pages <= sq.wal_frames, "{sq:?}");
    assert_eq!(sq.checkpoint_bytes, sq.checkpoint_pages * sq.page_size);
    let no = &r.transactions["new_order"];
    // No ramp: the schema's delta is exactly the New-Orders the workers saw commit.
    assert_eq!(r.summary.new_orders, no.committed);
    assert!(r.summary.nopm > 0.0);
    assert_eq!(r.summary.failed, 0, "{:?}", r.errors);

    // One worker cannot share its warehouse with anyone.
    let r1 = run_step(
        &db,
        &RunOptions {
            workers: 1,
            ramp_s: 0.0,
            time_s: 1.0,
            ..RunOptions::default()
        },
        &mut Quiet,
        &stop,
    )
    .unwrap();
    assert!(
        !r1.envelope.warnings.iter().any(|w| w.contains("share")),
        "{:?}",
        r1.envelope.warnings
    );

    let c = check(&db, &Timeouts::default()).unwrap();
    assert!(
        c.build.as_ref().is_some_and(|b| b.is_complete()),
        "{:?}",
        c.build
    );
    for cond in &c.conditions {
        if cond.number == 11 {
            assert_eq!(cond.status, Status::NotApplicable);
        } else {
            assert_eq!(cond.status, Status::Pass, "{cond:?}");
        }
    }
}

#[test]
fn an_interrupted_build_is_refused_by_run_and_check() {
    let dir = tempfile::tempdir().unwrap();
    let db = url(&dir);
    let cancel = Cancel::new();
    let t = std::time::Instant::now();
    let e = build(
        &db,
        &BuildOptions {
            warehouses: 2,
            workers: 2,
            force: false,
            seed: 7,
            timeouts: Timeouts::default(),
        },
        &|p| {
            if p.rows_done > 150_000 {
                cancel.cancel();
            }
        },
        &cancel,
    )
    .unwrap_err();
    assert!(matches!(e, oio_tpcc::TpccError::Cancelled(_)), "{e}");
    assert!(t.elapsed().as_secs() < 60, "{:?}", t.elapsed());

    let why = check(&db, &Timeouts::default()).unwrap_err().to_string();
    assert!(
        why.contains(&format!("tpcc build of {db} did not finish"))
            && why.contains("interrupted in the loading phase")
            && why.contains("--force"),
        "{why}"
    );
    let stop = Cancel::new();
    let why = run_step(
        &db,
        &RunOptions {
            workers: 1,
            ramp_s: 0.0,
            time_s: 1.0,
            ..RunOptions::default()
        },
        &mut Quiet,
        &stop,
    )
    .unwrap_err()
    .to_string();
    assert!(why.contains("did not finish"), "{why}");

    // A new build without --force names the unfinished one.
    let e = build(
        &db,
        &BuildOptions {
            warehouses: 1,
            workers: 1,
            force: false,
            seed: 7,
            timeouts: Timeouts::default(),
        },
        &|_| {},
        &Cancel::new(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("did not finish") && e.contains("--force"), "{e}");

    // --force replaces it with a complete build that run and check accept.
    build(
        &db,
        &BuildOptions {
            warehouses: 1,
            workers: 2,
            force: true,
            seed: 7,
            timeouts: Timeouts::default(),
        },
        &|_| {},
        &Cancel::new(),
    )
    .unwrap();
    let c = check(&db, &Timeouts::default()).unwrap();
    assert!(c.passed, "{c:?}");
    assert_eq!(c.build.as_ref().map(|b| b.state.as_str()), Some("complete"));
    assert_eq!(c.build.as_ref().map(|b| b.warehouses), Some(1));
}

/// Σ `d_next_o_id` over all districts, read on a connection of the test's own.
fn sum_next_o_id(c: &rusqlite::Connection) -> i64 {
    c.query_row("SELECT SUM(d_next_o_id) FROM district", [], |r| r.get(0))
        .unwrap()
}

/// Holds SQLite's write lock from inside the measured window until the driver closes it, so
/// every write transaction in flight at the window's end commits after it (the tail). While
/// the lock is held nothing commits, so Σ `d_next_o_id` read under it, less the value before
/// the run, is exactly the New-Orders committed inside the window.
struct TailMaker {
    path: std::path::PathBuf,
    lock_at_s: f64,
    /// Σ `d_next_o_id` read under the lock.
    at_lock: Option<i64>,
    release: Option<std::sync::mpsc::Sender<()>>,
    holder: Option<std::thread::JoinHandle<()>>,
}

impl TailMaker {
    /// Takes the lock on a thread of its own and waits until it holds it.
    fn lock(&mut self) {
        let (got, sum) = std::sync::mpsc::channel();
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let path = self.path.clone();
        self.holder = Some(std::thread::spawn(move || {
            let c = rusqlite::Connection::open(&path).unwrap();
            c.busy_timeout(std::time::Duration::from_secs(60)).unwrap();
            c.execute_batch("BEGIN IMMEDIATE").unwrap();
            got.send(sum_next_o_id(&c)).unwrap();
            // Until the window has closed (or the test ends).
            let _ = wait.recv();
            c.execute_batch("ROLLBACK").unwrap();
        }));
        self.at_lock = Some(sum.recv().unwrap());
        self.release = Some(release);
    }
}

impl oio_tpcc::RunObserver for TailMaker {
    fn progress(&mut self, p: &oio_tpcc::RunProgress) {
        if p.phase == "measure" && p.elapsed_s >= self.lock_at_s && self.holder.is_none() {
            self.lock();
        }
    }
    fn device(&mut self) -> Option<&mut dyn oio_tpcc::DeviceObserver> {
        Some(self)
    }
    fn step_finished(
        &mut self,
        _r: &mut oio_tpcc::TpccResult,
    ) -> Result<String, oio_tpcc::error::ObserverError> {
        Ok(String::new())
    }
}

/// The device hooks mark the window's edges: stopping the recording is the window's end.
impl oio_tpcc::DeviceObserver for TailMaker {
    fn start(&mut self) -> Result<(), oio_tpcc::error::DeviceError> {
        Ok(())
    }
    fn stop(&mut self) -> Result<oio_core::observation::Observation, oio_tpcc::error::DeviceError> {
        if let Some(r) = self.release.take() {
            let _ = r.send(());
        }
        Err(oio_tpcc::error::DeviceError::Other(
            "no device in this test".into(),
        ))
    }
}

#[test]
fn nopm_counts_only_the_new_orders_committed_inside_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let db = url(&dir);
    build(
        &db,
        &BuildOptions {
            warehouses: 1,
            workers: 2,
            force: false,
            seed: 7,
            timeouts: Timeouts::default(),
        },
        &|_| {},
        &Cancel::new(),
    )
    .unwrap();
    let path = dir.path().join("t.db");
    let own = rusqlite::Connection::open(&path).unwrap();
    // Every worker is held on a write transaction at the end, but whether one of them is a
    // New-Order depends on the draw: run until a tail holds one (4 workers: 0.5^4 per run
    // that none does).
    for run in 1..=5 {
        let before = sum_next_o_id(&own);
        let mut tail = TailMaker {
            path: path.clone(),
            lock_at_s: 1.0,
            at_lock: None,
            release: None,
            holder: None,
        };
        let r = run_step(
            &db,
            &RunOptions {
                workers: 4,
                ramp_s: 0.0,
                time_s: 2.5,
                interval_s: 0.5,
                ..RunOptions::default()
            },
            &mut tail,
            &Cancel::new(),
        )
        .unwrap();
        if let Some(r) = tail.release.take() {
            let _ = r.send(());
        }
        tail.holder.take().unwrap().join().unwrap();
        let inside = (tail.at_lock.unwrap() - before) as u64;
        let after_tail = (sum_next_o_id(&own) - tail.at_lock.unwrap()) as u64;
        eprintln!(
            "run {run}: {inside} New-Orders inside the window, {after_tail} in its tail; result: new_orders {}, driver {}, NOPM {:.1} over {:.3} s",
            r.summary.new_orders, r.transactions["new_order"].committed, r.summary.nopm, r.duration_s
        );
        assert_eq!(r.summary.failed, 0, "{:?}", r.errors);
        assert!(inside > 0, "nothing committed before the lock");
        assert_eq!(r.summary.new_orders, inside, "the database's count");
        assert_eq!(
            r.transactions["new_order"].committed, inside,
            "the driver's count"
        );
        // The tail is in the database, counted apart.
        assert_eq!(r.summary.tail_new_orders, after_tail, "the tail");
        assert!(
            !r.envelope
                .warnings
                .iter()
                .any(|w| w.contains("the database counted")),
            "{:?}",
            r.envelope.warnings
        );
        let nopm = inside as f64 * 60.0 / r.duration_s;
        assert!(
            (r.summary.nopm - nopm).abs() < 1e-9 * nopm,
            "{} vs {nopm}",
            r.summary.nopm
        );
        if after_tail > 0 {
            return;
        }
    }
    panic!("no New-Order was in flight at the window's end in 5 runs: the tail was not exercised");
}
