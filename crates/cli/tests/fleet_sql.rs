//! `oio fleet sql run`: users' own transactions on two hosts at once (local agents, no
//! network) against a real PostgreSQL server from the testkit: exact sums, exact histograms,
//! and a host whose database refuses the script.

use crate::common::{missing, num, scratch};
use crate::fleet::wait_bounded;
use oio_testkit::{pg_bin, TempPostgres};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// An insert-only script: one row per committed run. Its setup makes the table.
const LEDGER: &str = "\\setup
DROP TABLE IF EXISTS oio_fleet_sql_ledger;
CREATE TABLE oio_fleet_sql_ledger (id bigserial PRIMARY KEY, account INTEGER NOT NULL, amount INTEGER NOT NULL);
\\transaction insert
\\set account random(1, 1000)
\\set amount random(-500, 500)
INSERT INTO oio_fleet_sql_ledger (account, amount) VALUES (:account, :amount);
";

fn session(url: &str) -> oio_tpcc::db::Session {
    let url: oio_tpcc::DbUrl = url.parse().unwrap();
    oio_tpcc::dialects::open(&url)
        .connect(
            "oio-test",
            oio_tpcc::SqliteSync::Full,
            &oio_tpcc::Timeouts::default(),
        )
        .unwrap()
}

fn rows(url: &str) -> i64 {
    session(url)
        .query_int("SELECT count(*) FROM oio_fleet_sql_ledger")
        .unwrap()
}

/// `oio fleet sql run` in `dir` with local agents, hosts from `inventory`.
fn fleet_sql(dir: &Path, inventory: &str, args: &[&str]) -> Output {
    let c = Command::new(env!("CARGO_BIN_EXE_oio"))
        .env("NO_COLOR", "1")
        .current_dir(dir)
        .args([
            "fleet",
            "sql",
            "run",
            "ledger.sql",
            "--inventory",
            inventory,
        ])
        .arg("--launcher")
        .arg(format!("'{}' agent --stdio", env!("CARGO_BIN_EXE_oio")))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_bounded(c, Duration::from_secs(180))
}

fn read(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn buckets(h: &Value) -> BTreeMap<u64, u64> {
    let mut out = BTreeMap::new();
    for b in h["buckets"].as_array().into_iter().flatten() {
        *out.entry(b[0].as_u64().unwrap()).or_default() += b[1].as_u64().unwrap();
    }
    out
}

fn start_pg() -> Option<TempPostgres> {
    if pg_bin().is_none() {
        missing("PostgreSQL binaries (set OIO_PG_BIN)");
        return None;
    }
    Some(TempPostgres::start("").unwrap())
}

/// Two hosts on one database (the same --db URL: the setup runs once, on the first): the
/// merged committed is the sum of the hosts', and with the tails the table's rows exactly (no
/// ramp, so nothing committed before the window); the merged histogram is the hosts' summed
/// bucket by bucket; the merged document is an `oio.sql` result that compare, report and
/// diagnose read.
#[test]
fn two_hosts_on_one_postgres_database_sum_exactly_to_the_rows() {
    let Some(pg) = start_pg() else { return };
    let dir = scratch();
    let d = dir.path();
    std::fs::write(d.join("ledger.sql"), LEDGER).unwrap();
    std::fs::write(
        d.join("inv.toml"),
        "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n",
    )
    .unwrap();
    let out = fleet_sql(
        d,
        "inv.toml",
        &["--db", &pg.url(), "-n", "2", "--ramp", "0", "--time", "2s"],
    );
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}{stderr}");
    let merged = stderr
        .lines()
        .find_map(|l| l.split_once("result: ").map(|(_, p)| d.join(p.trim())))
        .unwrap_or_else(|| panic!("no result path: {stderr}"));
    let doc = read(&merged);
    let r = oio_documents::sql::SqlResult::from_value(doc.clone()).expect("a valid oio.sql");
    let fleet = r.fleet.as_ref().expect("the fleet section");
    assert_eq!(doc["stop_reason"], "completed", "{}", doc["warnings"]);
    assert_eq!(fleet.hosts.len(), 2);
    let (mut committed, mut tail, mut count) = (0, 0, 0);
    let mut hists = Vec::new();
    for h in &fleet.hosts {
        assert_eq!(h.status, "completed", "{}", h.host);
        // The workers connect before the common start, so the windows open at it: not before
        // it beyond the clock's stated uncertainty, and soon after.
        let skew = h.start_skew_ns.expect("the window's opening was heard");
        assert!(
            skew >= -(h.clock_rtt_ns / 2 + 1_000_000) && skew < 1_000_000_000,
            "{}: skew {skew} ns",
            h.host
        );
        let own = read(&d.join(h.result_file.as_ref().unwrap()));
        assert_eq!(own["schema"], "oio.sql");
        assert!(own["fleet"].is_null());
        let c = num(&own, "/summary/committed") as u64;
        assert!(c > 0, "host {} committed nothing", h.host);
        assert_eq!(h.committed, c);
        assert_eq!(num(&own, "/summary/ramp_committed"), 0.0);
        committed += c;
        tail += num(&own, "/summary/tail_committed") as u64;
        count += num(&own, "/transactions/insert/histogram_ns/count") as u64;
        hists.push(own["transactions"]["insert"]["histogram_ns"].clone());
    }
    let rows = rows(&pg.url()) as u64;
    eprintln!(
        "fleet sql: committed a {} + b {} = merged {} (+ tails {tail}); rows {rows}",
        fleet.hosts[0].committed, fleet.hosts[1].committed, r.summary.committed
    );
    assert_eq!(r.summary.committed, committed);
    assert_eq!(r.summary.tail_committed, tail);
    assert_eq!(r.summary.committed + r.summary.tail_committed, rows);
    assert_eq!(r.transactions["insert"].committed, committed);
    let hist = &doc["transactions"]["insert"]["histogram_ns"];
    assert_eq!(hist["count"].as_u64(), Some(count));
    let mut summed = BTreeMap::new();
    for h in &hists {
        for (v, n) in buckets(h) {
            *summed.entry(v).or_default() += n;
        }
    }
    assert_eq!(buckets(hist), summed);
    // Per interval: the merged committed are the hosts' streamed ones summed.
    let per_interval: u64 = r.intervals.iter().map(|i| i.committed["insert"]).sum();
    assert_eq!(per_interval, committed);
    // One server: said, and its waits are one host's samples of it, not a pool.
    assert_eq!(
        fleet.shared_databases.len(),
        1,
        "{:?}",
        fleet.shared_databases
    );
    assert_eq!(fleet.shared_databases[0].hosts, ["a", "b"]);
    assert!(fleet.waits_from.is_some());
    assert_eq!(r.waits.source, "pg_stat_activity");
    assert!(stdout.contains("shared database postgres:"), "{stdout}");
    assert!(stdout.contains("all distinct"), "{stdout}");
    // compare, report and diagnose read it as any oio.sql result.
    let host_file = fleet.hosts[0].result_file.clone().unwrap();
    for args in [
        vec!["compare", &host_file, merged.to_str().unwrap()],
        vec!["diagnose", merged.to_str().unwrap()],
        vec!["report", merged.to_str().unwrap(), "-o", "r.html"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_oio"))
            .current_dir(d)
            .args(&args)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "oio {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// Host b's database refuses the script (read-only: its setup's first statement fails): the
/// run ends before the start with an error naming the host and the statement, host a is
/// stopped with nothing run (its table is empty), and no result is written.
#[test]
fn a_host_whose_database_refuses_the_script_is_named_and_nothing_runs() {
    let Some(pg) = start_pg() else { return };
    let mut s = session(&pg.url());
    s.batch("CREATE DATABASE ro").unwrap();
    s.batch("ALTER DATABASE ro SET default_transaction_read_only = on")
        .unwrap();
    let ro = format!("{}ro", pg.url().trim_end_matches(&pg.dbname));
    let dir = scratch();
    let d = dir.path();
    std::fs::write(d.join("ledger.sql"), LEDGER).unwrap();
    std::fs::write(
        d.join("inv.toml"),
        format!(
            "[[host]]\nname = \"a\"\ndb = \"{}\"\n[[host]]\nname = \"b\"\ndb = \"{ro}\"\n",
            pg.url()
        ),
    )
    .unwrap();
    let out = fleet_sql(
        d,
        "inv.toml",
        &["-n", "2", "--ramp", "0", "--time", "30s", "--out", "res"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("host b: "), "{err}");
    assert!(err.contains("read-only transaction"), "{err}");
    // The setup's first statement, as the database refused it.
    assert!(
        err.contains("(in: DROP TABLE IF EXISTS oio_fleet_sql_ledger"),
        "{err}"
    );
    assert!(err.contains("nothing was started on any host"), "{err}");
    eprintln!("{err}");
    let written = crate::fleet::walk_json(&d.join("res"));
    assert!(written.is_empty(), "a refused run wrote {written:?}");
    // Host a was stopped before any transaction: its setup may or may not have made the
    // table by then, but no row is in it.
    match session(&pg.url()).query_int("SELECT count(*) FROM oio_fleet_sql_ledger") {
        Ok(n) => assert_eq!(n, 0),
        Err(e) => assert!(e.to_string().contains("does not exist"), "{e}"),
    }
}

/// Host b's database has no table for the script's INSERT (no setup here: the table is made
/// on a's database beforehand): b's first interval fails every transaction, so b ends with an
/// error naming the host, the position and the statement, a is stopped long before its 30 s
/// window ends, and the run exits with 1 with a partial merged result.
#[test]
fn a_host_whose_database_refuses_the_transactions_stops_the_fleet() {
    let Some(pg) = start_pg() else { return };
    let mut s = session(&pg.url());
    s.batch("CREATE DATABASE empty").unwrap();
    s.batch("CREATE TABLE oio_fleet_sql_ledger (id bigserial PRIMARY KEY, account INTEGER NOT NULL, amount INTEGER NOT NULL)")
        .unwrap();
    let empty = format!("{}empty", pg.url().trim_end_matches(&pg.dbname));
    let dir = scratch();
    let d = dir.path();
    let body = &LEDGER[LEDGER.find("\\transaction").unwrap()..];
    std::fs::write(d.join("ledger.sql"), body).unwrap();
    std::fs::write(
        d.join("inv.toml"),
        format!(
            "[[host]]\nname = \"a\"\ndb = \"{}\"\n[[host]]\nname = \"b\"\ndb = \"{empty}\"\n",
            pg.url()
        ),
    )
    .unwrap();
    let t = std::time::Instant::now();
    let out = fleet_sql(d, "inv.toml", &["-n", "2", "--ramp", "0", "--time", "30s"]);
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("{err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(t.elapsed() < Duration::from_secs(25), "{:?}", t.elapsed());
    assert!(err.contains("host b was lost"), "{err}");
    assert!(
        err.contains(
            "run: its database refuses the script: every transaction failed in interval 1"
        ),
        "{err}"
    );
    assert!(
        err.contains("the first: ledger.sql:4:1: PostgreSQL: relation"),
        "{err}"
    );
    assert!(
        err.contains("(in: INSERT INTO oio_fleet_sql_ledger (account, amount) VALUES ("),
        "{err}"
    );
    let merged = err
        .lines()
        .find_map(|l| l.split_once("result: ").map(|(_, p)| d.join(p.trim())))
        .unwrap_or_else(|| panic!("no result path: {err}"));
    let r = oio_documents::sql::SqlResult::from_value(read(&merged)).unwrap();
    assert!(r.envelope.partial);
    let f = r.fleet.unwrap();
    assert_eq!(f.hosts[0].status, "interrupted", "{:?}", f.hosts[0]);
    assert!(f.hosts[0].committed > 0);
    assert_eq!(f.hosts[1].status, "lost");
    assert_eq!(f.hosts[1].committed, 0);
    assert!(f.hosts[1].failed > 0);
    // Said once: the loss names the statement; no second, emptier warning.
    assert!(!err.contains("no message"), "{err}");
}
