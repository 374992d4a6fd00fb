//! End-to-end on a real, throwaway MariaDB server (the Debian package's binaries).

use oio_core::Cancel;
use oio_testkit::{mariadb_bin, missing, TempMariadb};
use oio_tpcc::check::Status;
use oio_tpcc::db::{Session, SqliteSync, WriterGate};
use oio_tpcc::Mode;
use oio_tpcc::{build, check, run_step, BuildOptions, DbUrl, Quiet, RunOptions, Timeouts};
use std::sync::Arc;
use std::time::Duration;

fn all_pass(db: &DbUrl, after_run: bool) {
    let c = check(db, &Timeouts::default()).unwrap();
    assert_eq!(c.conditions.len(), 12);
    for cond in &c.conditions {
        if after_run && cond.number == 11 {
            assert_eq!(cond.status, Status::NotApplicable);
        } else {
            assert_eq!(cond.status, Status::Pass, "{cond:?}");
        }
    }
}

fn build_one(db: &DbUrl) {
    let b = build(
        db,
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
        "build load {:.1}s index {:.1}s: {:.0} rows/s, {} bytes/warehouse, {}",
        b.load_s, b.index_s, b.load_rows_per_s, b.bytes_per_warehouse, b.engine_version
    );
    assert_eq!(b.rows["stock"], 100_000);
    assert_eq!(b.rows["customer"], 30_000);
    assert!(b.engine_version.contains("MariaDB"), "{}", b.engine_version);
}

#[test]
fn mariadb_build_run_check_in_both_modes() {
    if mariadb_bin().is_none() {
        missing("no MariaDB binaries (scripts/test installs mariadb-server and mariadb-client)");
        return;
    }
    let server = TempMariadb::start(&[]).unwrap();
    let db: DbUrl = server.url().parse().unwrap();
    build_one(&db);
    all_pass(&db, false);
    // The device to record is found from @@datadir.
    let dir = oio_tpcc::dialects::data_location(&db, &Timeouts::default())
        .unwrap()
        .unwrap();
    assert_eq!(
        dir.canonicalize().unwrap(),
        server.data_dir().canonicalize().unwrap()
    );
    // A second build without --force refuses to touch the tables.
    let e = build(
        &db,
        &BuildOptions {
            warehouses: 1,
            workers: 1,
            force: false,
            seed: 3,
            timeouts: Timeouts::default(),
        },
        &|_| {},
        &Cancel::new(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("warehouse"), "{e}");

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
        assert_eq!(r.summary.failed, 0, "{:?}", r.errors);
        assert!(r.summary.new_orders > 0);
        assert_eq!(r.summary.new_orders, r.transactions["new_order"].committed);
        eprintln!(
            "{mode:?} waits: {}",
            serde_json::to_string(&r.waits).unwrap()
        );
        assert_eq!(r.waits.source, "performance_schema", "{:?}", r.waits.notes);
        let names: Vec<&str> = r.waits.buckets.iter().map(|b| b.name.as_str()).collect();
        // The server runs here: its CPU time is measured, and the rest is unknown, not CPU.
        for b in ["io", "log", "lock", "client_round_trips", "cpu", "unknown"] {
            assert!(names.contains(&b), "{names:?}");
        }
        assert!(!names.contains(&"cpu_other"), "{names:?}");
        let cpu = r.waits.buckets.iter().find(|b| b.name == "cpu").unwrap();
        // CPU fills what the timed waits leave of workers × window; they count background
        // threads too, so on a loaded machine (slow I/O, few transactions) they can leave
        // nothing, and then cpu is 0 by the cap, not unmeasured.
        let timed: f64 = r
            .waits
            .buckets
            .iter()
            .filter(|b| ["io", "log", "lock", "client_round_trips"].contains(&b.name.as_str()))
            .map(|b| b.aas)
            .sum();
        assert!(cpu.aas > 0.0 || timed >= 2.0, "{:?}", r.waits.buckets);
        // The workers' sessions wait for the driver between statements: read from their
        // `idle` time, it is client time (not unknown, not I/O).
        let client = r
            .waits
            .buckets
            .iter()
            .find(|b| b.name == "client_round_trips")
            .unwrap();
        assert!(client.aas > 0.0, "{:?}", r.waits.buckets);
        assert!(!r.waits.top_events.is_empty());
        let m = r.waits.mysql.as_ref().unwrap();
        assert!(m.performance_schema);
        assert!(m.redo_bytes > 0, "{m:?}");
        assert!(m.buffer_pool_read_requests > 0, "{m:?}");
        assert!(m.intervals.len() >= 2, "{m:?}");
        // The wait profile over time: the performance_schema deltas spread over the
        // driver's intervals, in the four groups, adding up to the window's.
        eprintln!(
            "{mode:?} interval waits: {}",
            serde_json::to_string(&r.intervals.iter().map(|i| &i.waits).collect::<Vec<_>>())
                .unwrap()
        );
        oio_testkit::interval_waits_add_up(&r, 0.15).unwrap();
        for t in ["payment", "order_status", "delivery", "stock_level"] {
            assert!(
                r.transactions[t].committed > 0,
                "{t}: {:?}",
                r.transactions[t]
            );
        }
        all_pass(&db, true);
    }
}

#[test]
fn mariadb_deadlocks_and_lock_wait_timeouts_are_retried_and_counted() {
    if mariadb_bin().is_none() {
        missing("no MariaDB binaries (scripts/test installs mariadb-server and mariadb-client)");
        return;
    }
    let server = TempMariadb::start(&["--innodb-lock-wait-timeout=1"]).unwrap();
    let db: DbUrl = server.url().parse().unwrap();
    build_one(&db);
    let stop = Cancel::new();
    let done = Cancel::new();
    let r = std::thread::scope(|s| {
        // The injector locks warehouse 1's districts, waits until the worker blocks on one
        // (New-Order) or holds the warehouse row and waits for a district (Payment), then
        // asks for the warehouse row: with a Payment that is a deadlock, which InnoDB
        // resolves by rolling back the worker (it changed fewer rows). Every third round
        // holds the districts past the 1 s lock-wait timeout. The injector really changes
        // the rows (and rolls back): InnoDB picks the transaction that changed fewer rows as
        // the victim, and one that changed none would always lose.
        let injector = s.spawn(|| {
            let mut x = Session::open(
                &db,
                "oio-test-injector",
                SqliteSync::Full,
                &Arc::new(WriterGate::default()),
                &Timeouts::default(),
            )
            .unwrap();
            let mut round = 0u32;
            while !done.is_cancelled() {
                round += 1;
                x.begin(true).unwrap();
                x.batch("UPDATE district SET d_ytd = d_ytd + 1 WHERE d_w_id = 1")
                    .unwrap();
                std::thread::sleep(Duration::from_millis(300));
                let _ = x.batch("UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 1");
                if round.is_multiple_of(3) {
                    std::thread::sleep(Duration::from_millis(1500));
                }
                x.rollback().unwrap();
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let r = run_step(
            &db,
            &RunOptions {
                workers: 1,
                ramp_s: 0.0,
                time_s: 12.0,
                ..RunOptions::default()
            },
            &mut Quiet,
            &stop,
        );
        done.cancel();
        injector.join().unwrap();
        r
    })
    .unwrap();
    let reasons = |k: &str| -> u64 {
        r.transactions
            .values()
            .map(|t| t.retry_reasons.get(k).copied().unwrap_or(0))
            .sum()
    };
    eprintln!(
        "deadlock {} lock_wait_timeout {} failed {}",
        reasons("deadlock"),
        reasons("lock_wait_timeout"),
        r.summary.failed
    );
    assert!(reasons("deadlock") >= 1, "{:?}", r.transactions);
    assert!(reasons("lock_wait_timeout") >= 1, "{:?}", r.transactions);
    assert_eq!(r.summary.failed, 0, "{:?}", r.errors);
    // The intervals say when the retries happened, and add up to the run's.
    let retried: u64 = r.transactions.values().map(|t| t.retried).sum();
    assert_eq!(r.intervals.iter().map(|i| i.retried).sum::<u64>(), retried);
    assert!(r.intervals.iter().all(|i| i.failed == 0));
    all_pass(&db, true);
}

/// What the transactions wrote, without the timestamps (CURRENT_TIMESTAMP differs between
/// two runs): per table, the row count and a sum of CRC-32s of every changed column's
/// values per row (order-independent, and without GROUP_CONCAT's length limit).
fn written(db: &DbUrl) -> Vec<(String, String)> {
    let mut s = Session::open(
        db,
        "oio-test",
        SqliteSync::Full,
        &Arc::new(WriterGate::default()),
        &Timeouts::default(),
    )
    .unwrap();
    let digest = |table: &str, cols: &str| {
        format!("SELECT count(*), sum(crc32(concat_ws(',', {cols}))) FROM {table}")
    };
    let queries = [
        digest("warehouse", "w_id, w_ytd"),
        digest("district", "d_w_id, d_id, d_ytd, d_next_o_id"),
        digest(
            "customer",
            "c_w_id, c_d_id, c_id, c_balance, c_ytd_payment, c_payment_cnt, c_delivery_cnt, c_data",
        ),
        digest(
            "stock",
            "s_w_id, s_i_id, s_quantity, s_ytd, s_order_cnt, s_remote_cnt",
        ),
        digest(
            "orders",
            "o_w_id, o_d_id, o_id, o_c_id, coalesce(o_carrier_id, 0), o_ol_cnt, o_all_local",
        ),
        digest("new_order", "no_w_id, no_d_id, no_o_id"),
        digest(
            "order_line",
            "ol_w_id, ol_d_id, ol_o_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d IS NULL, ol_quantity, ol_amount, ol_dist_info",
        ),
        digest(
            "history",
            "h_c_w_id, h_c_d_id, h_c_id, h_w_id, h_d_id, h_amount, h_data",
        ),
    ];
    queries
        .iter()
        .map(|q| {
            let (_, rows) = s.query_sql(q).unwrap();
            (q.to_string(), format!("{} {}", rows[0][0], rows[0][1]))
        })
        .collect()
}

/// MariaDB/MySQL runs each transaction in few statements (`IN` lists, `UPDATE … CASE`,
/// multi-row `INSERT`) sent in few round trips, as anonymous blocks on MariaDB and as
/// `;`-separated statements on MySQL; the same inputs through the per-row statements must
/// leave every table the same both ways, rollbacks, remote lines, by-name customers,
/// bad-credit customers and deliveries included. Then `oio tpcc check` passes after a
/// client-mode run.
#[test]
fn mariadb_few_statement_transactions_write_what_the_per_row_ones_do() {
    use oio_tpcc::per_row;
    use oio_tpcc::random::{NuRandC, Rng};
    use oio_tpcc::txn::{CustomerBy, Input, Line, Outcome, TxnType};
    if mariadb_bin().is_none() {
        missing("no MariaDB binaries (scripts/test installs mariadb-server and mariadb-client)");
        return;
    }
    let server = TempMariadb::start(&[]).unwrap();
    let a: DbUrl = server.url().parse().unwrap();
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
    let open = |db: &DbUrl| {
        Session::open(
            db,
            "oio-test",
            SqliteSync::Full,
            &Arc::new(WriterGate::default()),
            &Timeouts::default(),
        )
        .unwrap()
    };
    // A copy of the built database, so both ways start from the same rows. The URL ends in
    // the database name.
    let url = server.url();
    let b: DbUrl = format!("{}_per_row", url).parse().unwrap();
    let plain: DbUrl = format!("{}_plain", url).parse().unwrap();
    {
        let mut s = open(&a);
        s.batch("CREATE DATABASE oio_per_row").unwrap();
        s.batch("CREATE DATABASE oio_plain").unwrap();
        for t in [
            "warehouse",
            "district",
            "customer",
            "history",
            "new_order",
            "orders",
            "order_line",
            "item",
            "stock",
        ] {
            for copy in ["oio_per_row", "oio_plain"] {
                s.batch(&format!(
                    "CREATE TABLE {copy}.{t} LIKE oio.{t}; INSERT INTO {copy}.{t} SELECT * FROM oio.{t}"
                ))
                .unwrap();
            }
        }
    }
    assert_eq!(written(&a), written(&b));
    let (mut sa, mut sb, mut sc) = (open(&a), open(&b), open(&plain));
    sc.as_any()
        .downcast_mut::<oio_tpcc::mysql::MySession>()
        .unwrap()
        .without_blocks();
    let mut rng = Rng::new(17);
    let c = NuRandC::for_run(&mut rng);
    let (mut rows_a, mut rows_b, mut rows_c) = (Vec::new(), Vec::new(), Vec::new());
    let mut seen = std::collections::BTreeMap::new();
    // New-Orders naming one stock row more than once (in key order, as drawn inputs are):
    // the stock row is changed by each line in turn, its quantity rule crossing the +91
    // refill on the way, and a remote line among them.
    let line = |i_id, supply_w_id, quantity| Line {
        i_id,
        supply_w_id,
        quantity,
    };
    let repeats = [
        vec![line(7, 1, 10), line(7, 1, 10), line(7, 1, 9), line(8, 1, 1)],
        vec![line(3, 1, 2), line(9, 2, 5), line(9, 2, 6)],
    ];
    let mut inputs: Vec<Input> = repeats
        .into_iter()
        .cycle()
        .take(12)
        .enumerate()
        .map(|(k, lines)| Input::NewOrder {
            w_id: 1,
            d_id: 1 + k as i64 % 10,
            c_id: 1 + k as i64,
            all_local: lines.iter().all(|l| l.supply_w_id == 1),
            lines,
        })
        .collect();
    for k in 0..1500 {
        let ty = TxnType::draw(&mut rng);
        inputs.push(Input::draw(ty, &mut rng, &c, 1 + k % 2, 2, 1 + k % 10));
    }
    for input in inputs {
        let ty = input.txn_type();
        let oa = per_row::execute(&mut *sa, &input, &mut rows_a);
        let ob = per_row::execute_per_row(&mut *sb, &input, &mut rows_b);
        let oc = per_row::execute(&mut *sc, &input, &mut rows_c);
        match (&oa, &ob, &oc) {
            (Ok(x), Ok(y), Ok(z)) => assert!(x == y && y == z, "{input:?}"),
            _ => panic!(
                "{input:?}: {:?} / {:?} / {:?}",
                oa.err(),
                ob.err(),
                oc.err()
            ),
        }
        let special = match &input {
            Input::NewOrder { all_local, .. } => !all_local,
            Input::Payment { by, .. } | Input::OrderStatus { by, .. } => {
                matches!(by, CustomerBy::Name(_))
            }
            _ => false,
        };
        *seen
            .entry((ty.name(), oa.unwrap() == Outcome::RolledBack, special))
            .or_insert(0u32) += 1;
    }
    eprintln!("{seen:?}");
    // The mix reached the cases the statements treat specially.
    assert!(seen.keys().any(|(t, rb, _)| *t == "new_order" && *rb));
    assert!(seen
        .keys()
        .any(|(t, _, remote)| *t == "new_order" && *remote));
    assert!(seen
        .keys()
        .any(|(t, _, by_name)| *t == "payment" && *by_name));
    assert!(seen
        .keys()
        .any(|(t, _, by_name)| *t == "order_status" && *by_name));
    assert!(seen.keys().any(|(t, _, _)| *t == "delivery"));
    drop((sa, sb, sc));
    let (wa, wb, wc) = (written(&a), written(&b), written(&plain));
    for ((x, y), z) in wa.iter().zip(&wb).zip(&wc) {
        assert_eq!(x, y, "anonymous blocks");
        assert_eq!(z, y, "statements separated by ;");
    }
    // Bad-credit customers paid (their C_DATA changed the same way in both).
    all_pass(&a, true);
    // A client-mode run through the few-statement path, then the consistency conditions.
    let r = run_step(
        &a,
        &RunOptions {
            workers: 2,
            ramp_s: 0.0,
            time_s: 3.0,
            mode: Mode::Client,
            ..RunOptions::default()
        },
        &mut Quiet,
        &Cancel::new(),
    )
    .unwrap();
    assert_eq!(r.summary.failed, 0, "{:?}", r.errors);
    assert!(r.summary.new_orders > 0);
    all_pass(&a, true);
}
