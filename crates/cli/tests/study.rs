//! Issue 23: tuning and scaling studies. Settings recorded in every TPC-C result and runs
//! named by what differs between them.

use crate::common::{missing, run_json, scratch, tpcc_build_one_warehouse};
use oio_tpcc::testing::{pg_bin, TempPostgres};
use serde_json::Value;
use std::path::Path;

/// One short SQLite run into `out` with `--sqlite-sync sync`.
fn sqlite_run(dir: &Path, db: &str, out: &str, sync: &str) -> Value {
    run_json(
        dir,
        &[
            "tpcc",
            "run",
            "--db",
            db,
            "-n",
            "1",
            "--ramp",
            "0s",
            "--time",
            "1s",
            "--sqlite-sync",
            sync,
            "--out",
            out,
        ],
    )
}

#[test]
fn sqlite_results_record_their_pragmas_and_storage_and_compare_names_groups_by_them() {
    let dir = scratch();
    let db = format!("sqlite:{}", dir.path().join("t.db").display());
    tpcc_build_one_warehouse(dir.path(), &db);
    let full = sqlite_run(dir.path(), &db, "full", "full");
    let off = sqlite_run(dir.path(), &db, "off", "off");
    let s = &full["settings"];
    assert_eq!(s["engine"], "sqlite");
    assert!(!s["version"].as_str().unwrap().is_empty(), "{s}");
    assert_eq!(s["values"]["journal_mode"], "wal", "{s}");
    // PRAGMA synchronous answers a number: FULL is 2, OFF 0.
    assert_eq!(s["values"]["synchronous"], "2", "{s}");
    assert_eq!(off["settings"]["values"]["synchronous"], "0");
    assert_eq!(
        s["storage"]["data_dir"].as_str().unwrap(),
        dir.path().display().to_string()
    );
    // compare without --label names each group by the setting that differs.
    let c = run_json(dir.path(), &["compare", "full", "off"]);
    let text = c.to_string();
    assert!(text.contains("synchronous=2 (full)"), "{text}");
    assert!(text.contains("synchronous=0 (off)"), "{text}");
    // diagnose names each result's source the same way.
    let d = run_json(dir.path(), &["diagnose", "full", "off"]);
    let sources: Vec<&str> = d["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["source"].as_str())
        .collect();
    assert!(
        sources.iter().any(|s| s.ends_with("(synchronous=2)")),
        "{sources:?}"
    );
    assert!(
        sources.iter().any(|s| s.ends_with("(synchronous=0)")),
        "{sources:?}"
    );
    // tpcc check saves its report like every other command, named by --label.
    run_json(
        dir.path(),
        &["tpcc", "check", "--db", &db, "--label", "after"],
    );
    let saved: Vec<String> = std::fs::read_dir(dir.path().join("oio-results"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("tpcc-check-") && n.ends_with("-after-w1.json"))
        .collect();
    assert_eq!(saved.len(), 1, "{saved:?}");
}

#[test]
fn a_postgres_result_records_the_servers_non_default_settings_and_version() {
    if pg_bin().is_none() {
        missing("no PostgreSQL binaries (scripts/test installs them)");
        return;
    }
    let pg = TempPostgres::start("synchronous_commit = off\n").unwrap();
    let db = pg.url();
    let dir = scratch();
    tpcc_build_one_warehouse(dir.path(), &db);
    let r = run_json(
        dir.path(),
        &[
            "tpcc", "run", "--db", &db, "-n", "1", "--ramp", "0s", "--time", "1s",
        ],
    );
    let s = &r["settings"];
    assert_eq!(s["engine"], "postgres");
    assert!(s["version"].as_str().unwrap().starts_with("15"), "{s}");
    assert_eq!(s["values"]["synchronous_commit"], "off", "{s}");
    // oio's own session settings (source client/session) are not the server's.
    assert!(s["values"].get("application_name").is_none(), "{s}");
    assert!(s["values"].get("statement_timeout").is_none(), "{s}");
    assert_eq!(
        s["storage"]["data_dir"].as_str().unwrap(),
        pg.data_dir().display().to_string()
    );
}

/// Bucket names of a result's wait profile.
fn buckets(r: &Value) -> Vec<String> {
    r["waits"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn mariadb_waits_are_unknown_without_performance_schema_and_client_round_trips_are_not_io() {
    if oio_tpcc::testing::mariadb_bin().is_none() {
        missing("no MariaDB binaries (scripts/test installs mariadb-server and mariadb-client)");
        return;
    }
    for ps in ["OFF", "ON"] {
        let server =
            oio_tpcc::testing::TempMariadb::start(&[&format!("--performance-schema={ps}")])
                .unwrap();
        let db = server.url();
        let dir = scratch();
        tpcc_build_one_warehouse(dir.path(), &db);
        let r = run_json(
            dir.path(),
            &[
                "tpcc", "run", "--db", &db, "-n", "2", "--ramp", "0s", "--time", "2s",
            ],
        );
        let names = buckets(&r);
        let d = run_json(dir.path(), &["diagnose", "oio-results"]);
        let claims: Vec<&str> = d["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f["claim"].as_str())
            .collect();
        assert!(claims.iter().all(|c| !c.contains("SQLite")), "{claims:?}");
        assert_eq!(r["settings"]["engine"], "mysql");
        assert!(
            r["settings"]["values"]["performance_schema"]
                .as_str()
                .is_some_and(|v| v.eq_ignore_ascii_case(ps)),
            "{}",
            r["settings"]
        );
        if ps == "OFF" {
            // Only the row lock time is known; the rest is unknown, never CPU, and the log
            // and data-file waits are not shown as zeros.
            assert_eq!(names, ["unknown", "lock"], "{}", r["waits"]);
            let log = claims
                .iter()
                .find(|c| c.contains("redo log waits are unknown"))
                .unwrap_or_else(|| panic!("{claims:?}"));
            assert!(log.contains("performance_schema=ON"), "{log}");
        } else {
            assert!(
                names.contains(&"client_round_trips".to_string()),
                "{names:?}"
            );
            for e in r["waits"]["top_events"].as_array().unwrap() {
                let name = e["event"].as_str().unwrap();
                if name.starts_with("wait/io/socket/") {
                    assert_eq!(e["bucket"], "client_round_trips", "{e}");
                }
            }
        }
    }
}
