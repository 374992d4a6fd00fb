//! End-to-end on embedded SQLite: build, check, run, check again.

use oio_tpcc::check::Status;
use oio_tpcc::{build, check, run, BuildOptions, DbUrl, RunOptions};
use std::sync::atomic::AtomicBool;

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
        },
        &|_| {},
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
        },
        &|_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("--force"), "{e}");

    let c = check(&db).unwrap();
    for cond in &c.conditions {
        assert_eq!(cond.status, Status::Pass, "{cond:?}");
    }
    assert_eq!(c.conditions.len(), 12);

    let stop = AtomicBool::new(false);
    let r = run(
        &db,
        &RunOptions {
            workers: 2,
            ramp_s: 0.0,
            time_s: 3.0,
            ..RunOptions::default()
        },
        &|_| {},
        &stop,
    )
    .unwrap();
    eprintln!("{}", serde_json::to_string_pretty(&r.summary).unwrap());
    eprintln!("{}", serde_json::to_string_pretty(&r.waits).unwrap());
    let no = &r.transactions["new_order"];
    // No ramp: the schema's delta is exactly the New-Orders the workers saw commit.
    assert_eq!(r.summary.new_orders, no.committed);
    assert!(r.summary.nopm > 0.0);
    assert_eq!(r.summary.failed, 0, "{:?}", r.errors);

    let c = check(&db).unwrap();
    for cond in &c.conditions {
        if cond.number == 11 {
            assert_eq!(cond.status, Status::NotApplicable);
        } else {
            assert_eq!(cond.status, Status::Pass, "{cond:?}");
        }
    }
}
