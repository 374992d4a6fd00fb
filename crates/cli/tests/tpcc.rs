//! `oio tpcc`: build, run and check through the binary, on SQLite and a throwaway PostgreSQL.

use crate::common::{missing, num, oio, run_json, scratch};
use oio_tpcc::testing::{pg_bin, TempPostgres};
use serde_json::Value;
use std::path::Path;

fn check_json(dir: &Path, db: &str) -> (bool, Value) {
    let out = oio()
        .current_dir(dir)
        .args(["tpcc", "check", "--db", db, "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    (out.status.success(), v)
}

fn status_of(v: &Value, n: u64) -> String {
    v["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["number"] == n)
        .map(|c| c["status"].as_str().unwrap().to_string())
        .unwrap()
}

#[test]
fn sqlite_build_run_check_and_a_broken_row_is_named() {
    let dir = scratch();
    let db = format!("sqlite:{}", dir.path().join("t.db").display());
    let b = run_json(
        dir.path(),
        &[
            "tpcc",
            "build",
            "--db",
            &db,
            "--warehouses",
            "1",
            "--workers",
            "2",
        ],
    );
    assert_eq!(b["schema"], "oio.tpcc.build");
    assert!(num(&b, "/load_rows_per_s") > 0.0);
    assert!(num(&b, "/rows/order_line") as u64 > 250_000);

    let (ok, c) = check_json(dir.path(), &db);
    assert!(ok, "{c}");
    for n in 1..=12 {
        assert_eq!(status_of(&c, n), "pass", "condition {n}: {c}");
    }

    let r = run_json(
        dir.path(),
        &[
            "tpcc",
            "run",
            "--db",
            &db,
            "--workers",
            "2",
            "--ramp",
            "0",
            "--time",
            "3s",
        ],
    );
    assert_eq!(r["schema"], "oio.tpcc");
    assert_eq!(r["schema_version"], 1);
    let nopm = num(&r, "/summary/nopm");
    assert!(nopm > 0.0);
    assert!(num(&r, "/summary/tpm") > nopm);
    // NOPM is the schema's delta over the window.
    let delta = num(&r, "/summary/new_orders");
    assert!((nopm - delta * 60.0 / num(&r, "/duration_s")).abs() < 1e-6);
    assert_eq!(delta, num(&r, "/transactions/new_order/committed"));
    for t in [
        "new_order",
        "payment",
        "order_status",
        "delivery",
        "stock_level",
    ] {
        for p in ["p50", "p90", "p99"] {
            assert!(
                num(&r, &format!("/transactions/{t}/latency_us/{p}")) > 0.0,
                "{t} {p}"
            );
        }
    }
    // The mix as it ran is within a loose band of the target (a few hundred transactions).
    let share = num(&r, "/transactions/new_order/share_pct");
    assert!((35.0..55.0).contains(&share), "{share}");
    let share = num(&r, "/transactions/payment/share_pct");
    assert!((33.0..53.0).contains(&share), "{share}");
    assert_eq!(r["waits"]["source"], "sqlite");
    assert!(!r["intervals"].as_array().unwrap().is_empty());

    let (ok, c) = check_json(dir.path(), &db);
    assert!(ok, "{c}");
    assert_eq!(status_of(&c, 11), "not_applicable");

    // Break one warehouse's year-to-date: conditions 1 and 8 must fail and name it.
    let url: oio_tpcc::DbUrl = db.parse().unwrap();
    let shared = Default::default();
    let mut s =
        oio_tpcc::db::Session::open(&url, "test", oio_tpcc::db::SqliteSync::Normal, &shared)
            .unwrap();
    s.batch("UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 1")
        .unwrap();
    drop(s);
    let out = oio()
        .current_dir(dir.path())
        .args(["tpcc", "check", "--db", &db])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1. FAIL (1 rows)"), "{text}");
    assert!(text.contains("w_id=1"), "{text}");
    assert!(text.contains(" 8. FAIL"), "{text}");
}

#[test]
fn bad_database_urls_say_what_is_expected() {
    let dir = scratch();
    let out = oio()
        .current_dir(dir.path())
        .args(["tpcc", "check", "--db", "mysql://x/y"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("sqlite:PATH") && err.contains("postgres://"),
        "{err}"
    );

    let out = oio()
        .current_dir(dir.path())
        .args(["tpcc", "run", "--db", "sqlite:empty.db", "--time", "1s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("oio tpcc build"), "{err}");
}

#[test]
fn postgres_server_mode_through_the_binary() {
    if pg_bin().is_none() {
        missing("no PostgreSQL binaries (scripts/test installs them)");
        return;
    }
    let pg = TempPostgres::start("").unwrap();
    let db = pg.url();
    let dir = scratch();
    run_json(
        dir.path(),
        &[
            "tpcc",
            "build",
            "--db",
            &db,
            "--warehouses",
            "1",
            "--workers",
            "2",
        ],
    );
    let r = run_json(
        dir.path(),
        &[
            "tpcc",
            "run",
            "--db",
            &db,
            "--workers",
            "2",
            "--ramp",
            "1s",
            "--time",
            "3s",
            "--mode",
            "server",
        ],
    );
    assert_eq!(r["dialect"], "postgres");
    assert_eq!(r["summary"]["tpm_source"], "pg_stat_database");
    assert!(num(&r, "/summary/nopm") > 0.0);
    assert!(num(&r, "/waits/rounds") > 10.0);
    assert!(!r["waits"]["buckets"].as_array().unwrap().is_empty());
    let (ok, c) = check_json(dir.path(), &db);
    assert!(ok, "{c}");
}
