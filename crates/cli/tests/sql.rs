//! `oio sql run` and `oio sql study`: users' own transactions on SQLite, PostgreSQL and
//! MariaDB, through the binary.

use crate::common::{missing, num, oio, run_json, scratch};
use oio_testkit::{mariadb_bin, pg_bin, TempMariadb, TempPostgres};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Rows in `table` of the database at `url`, counted on a connection of oio's own dialects.
fn rows(url: &str, table: &str) -> i64 {
    let url: oio_tpcc::DbUrl = url.parse().unwrap();
    let db = oio_tpcc::dialects::open(&url);
    let mut s = db
        .connect(
            "oio-test",
            oio_tpcc::SqliteSync::Full,
            &oio_tpcc::Timeouts::default(),
        )
        .unwrap();
    s.query_int(&format!("SELECT count(*) FROM {table}"))
        .unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// A pgbench-style insert-only script: one transaction, one row per run.
const LEDGER: &str = "\\setup
DROP TABLE IF EXISTS oio_sql_test_ledger;
\\only sqlite
CREATE TABLE oio_sql_test_ledger (id INTEGER PRIMARY KEY, account INTEGER NOT NULL, amount INTEGER NOT NULL);
\\only postgres
CREATE TABLE oio_sql_test_ledger (id bigserial PRIMARY KEY, account INTEGER NOT NULL, amount INTEGER NOT NULL);
\\only mysql
CREATE TABLE oio_sql_test_ledger (id BIGINT AUTO_INCREMENT PRIMARY KEY, account INTEGER NOT NULL, amount INTEGER NOT NULL);
\\transaction insert
\\set account random(1, 1000)
\\set amount random(-500, 500)
INSERT INTO oio_sql_test_ledger (account, amount) VALUES (:account, :amount);
";

/// What the database committed is what the result counts: without a ramp no worker starts
/// before the window, so the rows equal the window's commits plus the tail's.
fn committed_equals_rows(url: &str, dir: &Path, workers: &str) -> Value {
    let script = write(dir, "ledger.sql", LEDGER);
    let r = run_json(
        dir,
        &[
            "sql", "run", &script, "--db", url, "-n", workers, "--ramp", "0", "--time", "2s",
        ],
    );
    assert_eq!(r["schema"], "oio.sql");
    let committed = num(&r, "/summary/committed") as i64;
    let tail = num(&r, "/summary/tail_committed") as i64;
    assert_eq!(num(&r, "/summary/ramp_committed"), 0.0, "{}", r["summary"]);
    assert!(committed > 0, "{}", r["summary"]);
    assert_eq!(
        rows(url, "oio_sql_test_ledger"),
        committed + tail,
        "{}",
        r["summary"]
    );
    assert_eq!(num(&r, "/transactions/insert/committed") as i64, committed);
    assert_eq!(num(&r, "/summary/failed"), 0.0, "{}", r["warnings"]);
    r
}

#[test]
fn sqlite_counts_exactly_what_the_database_committed() {
    let dir = scratch();
    let url = format!("sqlite:{}", dir.path().join("s.db").display());
    let r = committed_equals_rows(&url, dir.path(), "2");
    assert_eq!(r["dialect"], "sqlite");
    assert_eq!(r["script"]["transactions"][0]["name"], "insert");
    // The script is recorded whole, so the run can be repeated from its result.
    assert!(r["script"]["texts"][0]["text"]
        .as_str()
        .unwrap()
        .contains("INSERT INTO oio_sql_test_ledger"));
    let p50 = num(&r, "/transactions/insert/latency_ns/p50");
    assert!(p50 > 0.0);
    assert!(r["cpu"]["includes_database"].as_bool().unwrap());
}

#[test]
fn postgres_counts_exactly_what_the_database_committed_and_samples_its_waits() {
    if pg_bin().is_none() {
        return missing("PostgreSQL binaries (set OIO_PG_BIN)");
    }
    let pg = TempPostgres::start("").unwrap();
    let dir = scratch();
    let r = committed_equals_rows(&pg.url(), dir.path(), "4");
    assert_eq!(r["dialect"], "postgres");
    assert_eq!(r["waits"]["source"], "pg_stat_activity");
    assert!(num(&r, "/waits/rounds") > 0.0, "{}", r["waits"]);
}

#[test]
fn mariadb_counts_exactly_what_the_database_committed() {
    if mariadb_bin().is_none() {
        return missing("MariaDB server binaries");
    }
    let db = TempMariadb::start(&["--performance-schema=ON"]).unwrap();
    let dir = scratch();
    let r = committed_equals_rows(&db.url(), dir.path(), "4");
    assert_eq!(r["dialect"], "mysql");
}

#[test]
fn a_script_with_a_syntax_error_names_its_file_line_and_column() {
    let dir = scratch();
    let script = write(
        dir.path(),
        "bad.sql",
        "\\set a 1\n\\set b (:a + ) * 2\nSELECT :b;\n",
    );
    let out = oio()
        .current_dir(dir.path())
        .args(["sql", "run", &script, "--time", "1s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{script}:2:")), "{err}");
    // Nothing ran: no database file was made.
    assert!(!dir.path().join("oio-tpcc.db").exists());
}

#[test]
fn a_statement_mariadb_refuses_is_named_with_the_servers_words() {
    if mariadb_bin().is_none() {
        return missing("MariaDB server binaries");
    }
    let db = TempMariadb::start(&[]).unwrap();
    let dir = scratch();
    // PostgreSQL's cast syntax: fine there, a syntax error on MariaDB.
    let script = write(dir.path(), "pg_only.sql", "\\set a 1\nSELECT :a::int;\n");
    let out = oio()
        .current_dir(dir.path())
        .args(["sql", "run", &script, "--db", &db.url(), "-n", "1"])
        .args(["--ramp", "0", "--time", "1s", "--json"])
        .output()
        .unwrap();
    // Every transaction failed: the run says so in its exit code.
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(num(&r, "/summary/committed"), 0.0);
    let first = r["errors"]["first"].as_str().unwrap();
    assert!(first.starts_with(&format!("{script}:2:1")), "{first}");
    assert!(first.contains("SQL syntax"), "{first}");
}

#[test]
fn an_open_loop_offers_its_rate_and_counts_late_starts() {
    let dir = scratch();
    let url = format!("sqlite:{}", dir.path().join("o.db").display());
    let script = write(dir.path(), "ledger.sql", LEDGER);
    let r = run_json(
        dir.path(),
        &[
            "sql", "run", &script, "--db", &url, "-n", "2", "--ramp", "0", "--time", "3s",
            "--rate", "200",
        ],
    );
    // Poisson arrivals at 200/s for 3 s: 600 expected, sd √600 ≈ 24.5; five sd either way.
    let committed = num(&r, "/summary/committed") + num(&r, "/summary/late/not_started");
    assert!(
        (committed - 600.0).abs() < 5.0 * 600f64.sqrt(),
        "{}",
        r["summary"]
    );
    assert_eq!(r["options"]["rate_tps"], 200.0);
    assert!(r["notes"].to_string().contains("scheduled start"));
}

#[test]
fn postgres_study_of_a_table_and_its_hash_partitioned_twin() {
    if pg_bin().is_none() {
        return missing("PostgreSQL binaries (set OIO_PG_BIN)");
    }
    let pg = TempPostgres::start("").unwrap();
    let dir = scratch();
    let out = oio()
        .current_dir(dir.path())
        .args(["sql", "study", "--db", &pg.url()])
        .args(["--candidate", "plain=builtin:last-page-insert"])
        .args(["--candidate", "hash=builtin:last-page-insert-hash"])
        .args(["-n", "4", "--repeat", "2", "--ramp", "1s", "--time", "2s"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The verdict's headline names the metric, its interval or why there is none, and the
    // waits side by side.
    assert!(
        text.contains("hash (builtin:last-page-insert-hash) against plain (builtin:last-page-insert): transactions/s"),
        "{text}"
    );
    assert!(text.contains("waits (pg_stat_activity)"), "{text}");
    // Each candidate's two runs are in its own directory, and compare reads them.
    for d in ["plain", "hash"] {
        let n = std::fs::read_dir(dir.path().join("oio-results").join(d))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "json")
            })
            .count();
        assert_eq!(n, 2, "{d}");
    }
    let c = run_json(
        dir.path(),
        &["compare", "oio-results/plain", "oio-results/hash"],
    );
    assert_eq!(c["kind"], "sql");
    assert!(
        c["comparisons"][0]["metrics"]["tps"]["outcome"].is_string(),
        "{c}"
    );
    // Diagnose reads them as database runs of the user's own transactions (no warehouses).
    let d = run_json(dir.path(), &["diagnose", "oio-results/plain"]);
    let groups = d["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2, "{d}");
    assert!(groups.iter().all(|g| g["kind"] == "sql"), "{d}");
    assert!(!d.to_string().contains("warehouse"), "{d}");
}

#[test]
fn rerun_runs_the_recorded_script_on_the_database_named_on_its_command_line() {
    let dir = scratch();
    let url = format!("sqlite:{}", dir.path().join("first.db").display());
    let script = write(dir.path(), "ledger.sql", LEDGER);
    let out = oio()
        .current_dir(dir.path())
        .args([
            "sql",
            "run",
            &format!("{script}@2"),
            "--db",
            &url,
            "-n",
            "1",
        ])
        .args(["--ramp", "0", "--time", "1s", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    // The file changes after the run: the rerun runs what ran, from the result.
    std::fs::write(&script, "SELECT broken(;\n").unwrap();
    let result = crate::common::json_files(&dir.path().join("oio-results"))
        .pop()
        .unwrap();
    let result = result.display().to_string();
    // A result's SQL never picks its own database.
    let refused = oio()
        .current_dir(dir.path())
        .args(["rerun", &result])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--db URL"));
    let again = format!("sqlite:{}", dir.path().join("again.db").display());
    let r = run_json(
        dir.path(),
        &["rerun", &result, "--db", &again, "--out", "again"],
    );
    assert_eq!(r["schema"], "oio.sql");
    assert_eq!(r["script"]["sources"][0], format!("{script}@2"));
    let rows = rows(&again, "oio_sql_test_ledger");
    assert_eq!(
        rows,
        (num(&r, "/summary/committed") + num(&r, "/summary/tail_committed")) as i64
    );
}

#[test]
fn a_script_that_is_a_fifo_or_proc_kmsg_is_refused_without_blocking() {
    let dir = scratch();
    let fifo = dir.path().join("script.fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let kmsg = dir.path().join("k.sql");
    std::os::unix::fs::symlink("/proc/kmsg", &kmsg).unwrap();
    for script in [fifo, kmsg, Path::new("/dev/zero").to_path_buf()] {
        let out = oio()
            .current_dir(dir.path())
            .args(["sql", "run"])
            .arg(&script)
            .args(["--time", "1s"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", script.display());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(":1:1:"), "{err}");
    }
}
