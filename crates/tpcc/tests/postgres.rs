//! End-to-end on a real, throwaway PostgreSQL server.

use oio_core::Cancel;
use oio_testkit::{pg_bin, TempPostgres};
use oio_tpcc::check::Status;
use oio_tpcc::{build, check, run_step, BuildOptions, DbUrl, Quiet, RunOptions, Timeouts};
use oio_tpcc::{Isolation, Mode};

fn all_pass(db: &DbUrl, after_run: bool) {
    let c = check(db, &Timeouts::default()).unwrap();
    for cond in &c.conditions {
        if after_run && cond.number == 11 {
            assert_eq!(cond.status, Status::NotApplicable);
        } else {
            assert_eq!(cond.status, Status::Pass, "{cond:?}");
        }
    }
}

#[test]
fn postgres_build_run_check_in_both_modes() {
    if pg_bin().is_none() {
        oio_testkit::missing("no PostgreSQL binaries (scripts/test installs them)");
        return;
    }
    let pg = TempPostgres::start("").unwrap();
    let db: DbUrl = pg.url().parse().unwrap();
    let t = std::time::Instant::now();
    let b = build(
        &db,
        &BuildOptions {
            warehouses: 1,
            workers: 2,
            force: false,
            seed: 3,
            timeouts: Timeouts::default(),
        },
        &|_| {},
        &Cancel::new(),
    )
    .unwrap();
    eprintln!(
        "build {:.1}s load {:.1}s index {:.1}s: {:.0} rows/s, {:.1} MB/s, {} bytes/warehouse",
        t.elapsed().as_secs_f64(),
        b.load_s,
        b.index_s,
        b.load_rows_per_s,
        b.load_bytes_per_s / 1e6,
        b.bytes_per_warehouse
    );
    assert_eq!(b.rows["stock"], 100_000);
    all_pass(&db, false);

    let stop = Cancel::new();
    for mode in [Mode::Client, Mode::Server] {
        let r = run_step(
            &db,
            &RunOptions {
                workers: 2,
                ramp_s: 0.0,
                time_s: 3.0,
                mode,
                ..RunOptions::default()
            },
            &mut Quiet,
            &stop,
        )
        .unwrap();
        eprintln!("{mode:?}: {}", serde_json::to_string(&r.summary).unwrap());
        eprintln!(
            "{mode:?} waits: {}",
            serde_json::to_string(&r.waits.buckets).unwrap()
        );
        assert_eq!(r.summary.failed, 0, "{:?}", r.errors);
        assert_eq!(r.summary.new_orders, r.transactions["new_order"].committed);
        assert_eq!(r.summary.tpm_source, "pg_stat_database");
        assert!(r.summary.tpm > 0.0);
        assert!(r.waits.rounds > 10, "{:?}", r.waits);
        // The wait profile over time: the sampling rounds of each interval, adding up to
        // the window's.
        eprintln!(
            "{mode:?} interval waits: {}",
            serde_json::to_string(&r.intervals.iter().map(|i| &i.waits).collect::<Vec<_>>())
                .unwrap()
        );
        oio_testkit::interval_waits_add_up(&r, 0.15).unwrap();
        all_pass(&db, true);
    }

    // Serializable isolation with all workers on one warehouse: conflicts must be retried
    // and counted, and the database stays consistent.
    let r = run_step(
        &db,
        &RunOptions {
            workers: 4,
            ramp_s: 0.0,
            time_s: 3.0,
            isolation: Isolation::Serializable,
            ..RunOptions::default()
        },
        &mut Quiet,
        &stop,
    )
    .unwrap();
    eprintln!(
        "serializable: {}",
        serde_json::to_string(&r.summary).unwrap()
    );
    assert!(r.summary.retries > 0);
    let reasons: u64 = r
        .transactions
        .values()
        .flat_map(|t| t.retry_reasons.values())
        .sum();
    assert_eq!(reasons, r.summary.retries);
    all_pass(&db, true);
}

#[test]
fn postgres_interrupted_build_is_refused_by_run_and_check() {
    if pg_bin().is_none() {
        oio_testkit::missing("no PostgreSQL binaries (scripts/test installs them)");
        return;
    }
    let pg = TempPostgres::start("").unwrap();
    let db: DbUrl = pg.url().parse().unwrap();
    let cancel = Cancel::new();
    let t = std::time::Instant::now();
    let e = build(
        &db,
        &BuildOptions {
            warehouses: 2,
            workers: 2,
            force: false,
            seed: 3,
            timeouts: Timeouts::default(),
        },
        &|p| {
            if p.rows_done > 100_000 {
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
        why.contains(&format!(
            "tpcc build of {db} did not finish (interrupted in the loading phase"
        )),
        "{why}"
    );
    let why = run_step(
        &db,
        &RunOptions {
            workers: 1,
            ramp_s: 0.0,
            time_s: 1.0,
            ..RunOptions::default()
        },
        &mut Quiet,
        &Cancel::new(),
    )
    .unwrap_err()
    .to_string();
    assert!(why.contains("did not finish"), "{why}");
}

/// The postmaster of the server in `data` and every process it started.
fn server_processes(data: &std::path::Path) -> Vec<String> {
    let pid_file = std::fs::read_to_string(data.join("postmaster.pid")).unwrap();
    let postmaster = pid_file.lines().next().unwrap().trim().to_string();
    let mut pids = vec![postmaster.clone()];
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // The parent pid is the second field after the command name.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1));
        if ppid == Some(postmaster.as_str()) {
            pids.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    pids
}

/// Sends `signal` to `pids` with kill(1).
fn signal(sig: &str, pids: &[String]) {
    let st = std::process::Command::new("kill")
        .arg(sig)
        .args(pids)
        .status()
        .unwrap();
    assert!(st.success());
}

/// Resumes the frozen server whatever happens, so it can be shut down.
struct Thaw(Vec<String>);

impl Drop for Thaw {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .arg("-CONT")
            .args(&self.0)
            .status();
    }
}

#[test]
fn a_server_that_stops_answering_mid_run_fails_the_run_within_its_timeouts() {
    if pg_bin().is_none() {
        oio_testkit::missing("no PostgreSQL binaries (scripts/test installs them)");
        return;
    }
    let pg = TempPostgres::start("").unwrap();
    let db: DbUrl = pg.url().parse().unwrap();
    build(
        &db,
        &BuildOptions {
            warehouses: 1,
            workers: 2,
            force: false,
            seed: 3,
            timeouts: Timeouts::default(),
        },
        &|_| {},
        &Cancel::new(),
    )
    .unwrap();
    let timeouts = Timeouts {
        connect_s: 2.0,
        statement_s: 2.0,
        ..Timeouts::default()
    };
    let bound = timeouts.call_bound();
    let data = pg.data_dir();
    let frozen = std::sync::Mutex::new(None);
    let t = std::time::Instant::now();
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            // Freeze every server process (SIGSTOP: connections stay open, nothing answers)
            // once the run is measuring.
            std::thread::sleep(std::time::Duration::from_secs(3));
            let pids = server_processes(&data);
            signal("-STOP", &pids);
            *frozen.lock().unwrap() = Some((Thaw(pids), std::time::Instant::now()));
        });
        run_step(
            &db,
            &RunOptions {
                workers: 2,
                ramp_s: 0.0,
                time_s: 600.0,
                timeouts,
                ..RunOptions::default()
            },
            &mut Quiet,
            &Cancel::new(),
        )
    });
    let (thaw, frozen_at) = frozen
        .lock()
        .unwrap()
        .take()
        .expect("the server was frozen");
    let waited = frozen_at.elapsed();
    drop(thaw);
    let e = r.expect_err("a frozen server cannot complete a 10-minute run");
    assert!(
        matches!(e, oio_tpcc::TpccError::Timeout(_)),
        "{e} after {:?}",
        t.elapsed()
    );
    assert!(e.to_string().contains("did not answer"), "{e}");
    // The monitor's wait, then the workers' (each at most the bound), and some slack.
    assert!(
        waited < bound * 2 + std::time::Duration::from_secs(10),
        "returned {waited:?} after the freeze (bound {bound:?})"
    );
}

/// What the transactions wrote, without the timestamps (CURRENT_TIMESTAMP differs between
/// two runs): row counts, sums and digests of every changed column.
fn written(db: &DbUrl) -> Vec<(String, String)> {
    let mut s = oio_tpcc::db::Session::open(
        db,
        "oio-test",
        oio_tpcc::SqliteSync::Full,
        &Default::default(),
        &Timeouts::default(),
    )
    .unwrap();
    let queries = [
        "SELECT sum(w_ytd) FROM warehouse",
        "SELECT md5(string_agg(d_w_id || ',' || d_id || ',' || d_ytd || ',' || d_next_o_id, ';' ORDER BY d_w_id, d_id)) FROM district",
        "SELECT md5(string_agg(c_w_id || ',' || c_d_id || ',' || c_id || ',' || c_balance || ',' || c_ytd_payment || ',' || c_payment_cnt || ',' || c_delivery_cnt || ',' || md5(c_data), ';' ORDER BY c_w_id, c_d_id, c_id)) FROM customer",
        "SELECT md5(string_agg(s_w_id || ',' || s_i_id || ',' || s_quantity || ',' || s_ytd || ',' || s_order_cnt || ',' || s_remote_cnt, ';' ORDER BY s_w_id, s_i_id)) FROM stock",
        "SELECT md5(string_agg(o_w_id || ',' || o_d_id || ',' || o_id || ',' || o_c_id || ',' || coalesce(o_carrier_id, 0) || ',' || o_ol_cnt || ',' || o_all_local, ';' ORDER BY o_w_id, o_d_id, o_id)) FROM orders",
        "SELECT md5(string_agg(no_w_id || ',' || no_d_id || ',' || no_o_id, ';' ORDER BY no_w_id, no_d_id, no_o_id)) FROM new_order",
        "SELECT md5(string_agg(ol_w_id || ',' || ol_d_id || ',' || ol_o_id || ',' || ol_number || ',' || ol_i_id || ',' || ol_supply_w_id || ',' || (ol_delivery_d IS NULL) || ',' || ol_quantity || ',' || ol_amount || ',' || ol_dist_info, ';' ORDER BY ol_w_id, ol_d_id, ol_o_id, ol_number)) FROM order_line",
        "SELECT md5(string_agg(h_c_w_id || ',' || h_c_d_id || ',' || h_c_id || ',' || h_w_id || ',' || h_d_id || ',' || h_amount || ',' || h_data, ';' ORDER BY h_c_w_id, h_c_d_id, h_c_id, h_w_id, h_d_id, h_amount, h_data)) FROM history",
    ];
    queries
        .iter()
        .map(|q| {
            let (_, rows) = s.query_sql(q).unwrap();
            (q.to_string(), rows[0][0].to_string())
        })
        .collect()
}

/// PostgreSQL runs each transaction as a few statements (arrays, data-modifying WITH); the
/// same inputs through the per-row statements must leave every table the same, rollbacks,
/// remote lines, bad-credit customers and deliveries included.
#[test]
fn postgres_few_statement_transactions_write_what_the_per_row_ones_do() {
    use oio_tpcc::per_row;
    use oio_tpcc::random::{NuRandC, Rng};
    use oio_tpcc::txn::{Input, Outcome, TxnType};
    if pg_bin().is_none() {
        oio_testkit::missing("no PostgreSQL binaries (scripts/test installs them)");
        return;
    }
    let pg = TempPostgres::start("").unwrap();
    let a: DbUrl = pg.url().parse().unwrap();
    build(
        &a,
        &BuildOptions {
            warehouses: 2,
            workers: 2,
            force: false,
            seed: 5,
            timeouts: Timeouts::default(),
        },
        &|_| {},
        &Cancel::new(),
    )
    .unwrap();
    // A copy of the built database, so both ways start from the same rows.
    // The URL ends in the database name.
    let url = pg.url();
    let server = &url[..url.len() - pg.dbname.len()];
    let maintenance: DbUrl = format!("{server}postgres").parse().unwrap();
    let b_name = format!("{}_per_row", pg.dbname);
    {
        let mut m = oio_tpcc::db::Session::open(
            &maintenance,
            "oio-test",
            oio_tpcc::SqliteSync::Full,
            &Default::default(),
            &Timeouts::default(),
        )
        .unwrap();
        m.batch(&format!("CREATE DATABASE {b_name} TEMPLATE {}", pg.dbname))
            .unwrap();
    }
    let b: DbUrl = format!("{server}{b_name}").parse().unwrap();
    let open = |db: &DbUrl| {
        oio_tpcc::db::Session::open(
            db,
            "oio-test",
            oio_tpcc::SqliteSync::Full,
            &Default::default(),
            &Timeouts::default(),
        )
        .unwrap()
    };
    let (mut sa, mut sb) = (open(&a), open(&b));
    let mut rng = Rng::new(17);
    let c = NuRandC::for_run(&mut rng);
    let (mut rows_a, mut rows_b) = (Vec::new(), Vec::new());
    let mut seen = std::collections::BTreeMap::new();
    for k in 0..1500 {
        let ty = TxnType::draw(&mut rng);
        let input = Input::draw(ty, &mut rng, &c, 1 + k % 2, 2, 1 + k % 10);
        let oa = per_row::execute(&mut *sa, &input, &mut rows_a);
        let ob = per_row::execute_per_row(&mut *sb, &input, &mut rows_b);
        match (&oa, &ob) {
            (Ok(x), Ok(y)) => assert_eq!(x, y, "{input:?}"),
            _ => panic!("{input:?}: {:?} / {:?}", oa.err(), ob.err()),
        }
        let remote = matches!(
            &input,
            Input::NewOrder {
                all_local: false,
                ..
            }
        );
        *seen
            .entry((ty.name(), oa.unwrap() == Outcome::RolledBack, remote))
            .or_insert(0u32) += 1;
    }
    eprintln!("{seen:?}");
    // The mix reached the cases the statements treat specially.
    assert!(
        seen.contains_key(&("new_order", true, false))
            || seen.contains_key(&("new_order", true, true))
    );
    assert!(seen
        .keys()
        .any(|(t, _, remote)| *t == "new_order" && *remote));
    assert!(seen.keys().any(|(t, _, _)| *t == "delivery"));
    drop((sa, sb));
    assert_eq!(written(&a), written(&b));
    all_pass(&a, true);
}
