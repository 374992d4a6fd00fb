//! Issue 23: tuning and scaling studies. Settings recorded in every TPC-C result and runs
//! named by what differs between them.

use crate::common::{missing, run_json, scratch, tpcc_build_one_warehouse};
use oio_testkit::{pg_bin, TempPostgres};
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
    if oio_testkit::mariadb_bin().is_none() {
        missing("no MariaDB binaries (scripts/test installs mariadb-server and mariadb-client)");
        return;
    }
    for ps in ["OFF", "ON"] {
        let server =
            oio_testkit::TempMariadb::start(&[&format!("--performance-schema={ps}")]).unwrap();
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
            // Only the row lock time and (the server runs here) its process's CPU time are
            // known; the rest is unknown, and the log and data-file waits are not shown as
            // zeros.
            let mut sorted = names.clone();
            sorted.sort();
            assert_eq!(sorted, ["cpu", "lock", "unknown"], "{}", r["waits"]);
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

/// `current_setting(name)` on the server, from a fresh session.
fn pg_setting(url: &str, name: &str) -> String {
    let mut c = oio_tpcc::db::connect_pg(url, "oio-test", &oio_tpcc::Timeouts::default()).unwrap();
    c.query_one(&format!("SELECT current_setting('{name}')"), &[])
        .unwrap()
        .get::<_, String>(0)
}

#[test]
fn a_postgres_study_applies_each_setting_runs_interleaved_and_restores_them() {
    if pg_bin().is_none() {
        missing("no PostgreSQL binaries (scripts/test installs them)");
        return;
    }
    let pg = TempPostgres::start("").unwrap();
    let db = pg.url();
    let dir = scratch();
    tpcc_build_one_warehouse(dir.path(), &db);
    assert_eq!(pg_setting(&db, "synchronous_commit"), "on");
    let out = crate::common::oio()
        .current_dir(dir.path())
        .args([
            "tpcc",
            "study",
            "--db",
            &db,
            "--set",
            "sync:synchronous_commit=on",
            "--set",
            "async:synchronous_commit=off",
            "--repeat",
            "2",
            "-n",
            "2",
            "--ramp",
            "0s",
            "--time",
            "2s",
            "--out",
            "st",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    // Counterbalanced: sync async, async sync.
    assert!(
        stderr.contains("sync async async sync (baseline sync)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("settings restored: synchronous_commit=on"),
        "{stderr}"
    );
    assert!(
        stdout
            .contains("async (synchronous_commit=off) against sync (synchronous_commit=on): NOPM "),
        "{stdout}"
    );
    assert!(stdout.contains("waits (pg_stat_activity)"), "{stdout}");
    // Each result was measured under its candidate's setting, and says so.
    for (label, want) in [("sync", "on"), ("async", "off")] {
        let files: Vec<_> = std::fs::read_dir(dir.path().join("st").join(label))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 2, "{files:?}");
        for f in files {
            let r: Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
            assert_eq!(r["label"], label);
            assert_eq!(r["settings"]["values"]["synchronous_commit"], want, "{f:?}");
        }
    }
    // Back as it was: the value, and nothing left in postgresql.auto.conf.
    assert_eq!(pg_setting(&db, "synchronous_commit"), "on");
    let auto = std::fs::read_to_string(pg.data_dir().join("postgresql.auto.conf")).unwrap();
    assert!(!auto.contains("synchronous_commit"), "{auto}");
}

#[test]
fn ctrl_c_in_a_postgres_study_restores_the_settings_and_exits_130() {
    if pg_bin().is_none() {
        missing("no PostgreSQL binaries (scripts/test installs them)");
        return;
    }
    let pg = TempPostgres::start("").unwrap();
    let db = pg.url();
    let dir = scratch();
    tpcc_build_one_warehouse(dir.path(), &db);
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("oio"))
        .env("NO_COLOR", "1")
        .current_dir(dir.path())
        .args([
            "tpcc",
            "study",
            "--db",
            &db,
            "--set",
            "async:synchronous_commit=off",
            "--set",
            "sync:synchronous_commit=on",
            "--repeat",
            "2",
            "-n",
            "1",
            "--ramp",
            "0s",
            "--time",
            "60s",
            "--out",
            "st",
        ])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait for the event: the first run announced.
    let stderr = child.stderr.take().unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stderr));
    let mut seen = String::new();
    for l in lines.by_ref() {
        let l = l.unwrap();
        seen.push_str(&l);
        seen.push('\n');
        if l.contains("study run 1/4: async") {
            break;
        }
    }
    // The setting is applied before the run starts: poll until the server shows it.
    let t = std::time::Instant::now();
    while pg_setting(&db, "synchronous_commit") != "off" {
        assert!(t.elapsed().as_secs() < 60, "never applied: {seen}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    for l in lines {
        seen.push_str(&l.unwrap());
        seen.push('\n');
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{seen}");
    assert!(
        seen.contains("settings restored: synchronous_commit=on"),
        "{seen}"
    );
    assert_eq!(pg_setting(&db, "synchronous_commit"), "on");
}

#[test]
fn a_worker_sequence_says_where_scaling_stops_in_the_terminal_and_in_diagnose() {
    let dir = scratch();
    let db = format!("sqlite:{}", dir.path().join("t.db").display());
    tpcc_build_one_warehouse(dir.path(), &db);
    let out = crate::common::oio()
        .current_dir(dir.path())
        .args([
            "tpcc", "run", "--db", &db, "-n", "1,2", "--ramp", "0s", "--time", "1s",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    // One run per count: whatever the efficiency, it is a reading, not a verdict.
    let line = stdout
        .lines()
        .find(|l| l.starts_with("scaling "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(line.contains("--repeat 3"), "{line}");
    // diagnose reads the series (it used to skip it) and says the same.
    let d = run_json(dir.path(), &["diagnose", "oio-results"]);
    let f = d["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "scaling_stops")
        .unwrap_or_else(|| panic!("{d}"));
    assert_eq!(f["status"], "undecided", "{f}");
    assert_eq!(f["claim"].as_str().unwrap(), line);
}

#[test]
fn a_study_refuses_a_setting_that_needs_a_restart_before_any_run() {
    if pg_bin().is_none() {
        missing("no PostgreSQL binaries (scripts/test installs them)");
        return;
    }
    let pg = TempPostgres::start("").unwrap();
    let db = pg.url();
    let dir = scratch();
    for (set, context, words) in [
        (
            "shared_buffers",
            "postmaster",
            "only when the server restarts",
        ),
        ("block_size", "internal", "not even by a restart"),
    ] {
        let out = crate::common::oio()
            .current_dir(dir.path())
            .args(["tpcc", "study", "--db", &db, "-n", "1", "--out", "st"])
            .args(["--set", &format!("a:{set}=128MB")])
            .args(["--set", &format!("b:{set}=256MB")])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!("'{set}'"))
                && stderr.contains(&format!("pg_settings.context = {context}"))
                && stderr.contains(words),
            "{stderr}"
        );
        assert!(!stderr.contains("study run"), "no run started: {stderr}");
    }
    assert!(
        holds_no_results(&dir.path().join("st")),
        "no result was written"
    );
    assert_eq!(pg_setting(&db, "shared_buffers"), "128MB");
}

/// True when `dir` holds no JSON file (or does not exist).
fn holds_no_results(dir: &Path) -> bool {
    walk(dir)
        .iter()
        .all(|p| p.extension().is_none_or(|e| e != "json"))
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.flat_map(|e| {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(&p)
        } else {
            vec![p]
        }
    })
    .collect()
}

/// Keeps a process stopped (SIGSTOP) until dropped (SIGCONT), also when the test panics.
struct Stopped(String);

impl Stopped {
    fn new(pid: &str) -> Stopped {
        signal("-STOP", pid);
        Stopped(pid.to_string())
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        signal("-CONT", &self.0);
    }
}

fn signal(sig: &str, pid: &str) {
    let sent = std::process::Command::new("kill")
        .args([sig, pid])
        .status()
        .unwrap();
    assert!(sent.success(), "kill {sig} {pid}");
}

/// Reads `lines` into `seen` up to and including the first that contains `what`.
fn read_until(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    seen: &mut String,
    what: &str,
) {
    for l in lines.by_ref() {
        let l = l.unwrap();
        seen.push_str(&l);
        seen.push('\n');
        if l.contains(what) {
            return;
        }
    }
    panic!("never printed '{what}': {seen}");
}

#[test]
fn a_second_ctrl_c_in_a_study_prints_the_settings_left_changed_and_the_sql_to_restore_them() {
    if pg_bin().is_none() {
        missing("no PostgreSQL binaries (scripts/test installs them)");
        return;
    }
    let pg = TempPostgres::start("").unwrap();
    let db = pg.url();
    let dir = scratch();
    tpcc_build_one_warehouse(dir.path(), &db);
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("oio"))
        .env("NO_COLOR", "1")
        .current_dir(dir.path())
        .args(["tpcc", "study", "--db", &db])
        .args(["--set", "async:synchronous_commit=off"])
        .args(["--set", "sync:synchronous_commit=on"])
        .args(["--repeat", "2", "-n", "1", "--ramp", "0s", "--time", "60s"])
        .args(["--out", "st"])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stderr.take().unwrap()));
    let mut seen = String::new();
    read_until(&mut lines, &mut seen, "study run 1/4: async");
    let t = std::time::Instant::now();
    while pg_setting(&db, "synchronous_commit") != "off" {
        assert!(t.elapsed().as_secs() < 60, "never applied: {seen}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // The postmaster stopped, the study cannot open the session that restores: the second
    // Ctrl-C lands while the setting is still changed, whatever the machine's load.
    let postmaster = std::fs::read_to_string(pg.data_dir().join("postmaster.pid")).unwrap();
    let stopped = Stopped::new(postmaster.lines().next().unwrap().trim());
    signal("-INT", &pid);
    read_until(&mut lines, &mut seen, "oio: stopping;");
    signal("-INT", &pid);
    for l in lines {
        seen.push_str(&l.unwrap());
        seen.push('\n');
    }
    let status = child.wait().unwrap();
    drop(stopped);
    assert_eq!(status.code(), Some(130), "{seen}");
    assert!(!seen.contains("settings restored"), "{seen}");
    assert!(
        seen.contains("SIGINT: leaving at once. The server keeps the settings the study changed: synchronous_commit=off (was on). To put them back, run as a superuser:\n  ALTER SYSTEM RESET synchronous_commit;\n  SELECT pg_reload_conf();\n"),
        "{seen}"
    );
    // Left as said, and the printed SQL puts it back.
    assert_eq!(pg_setting(&db, "synchronous_commit"), "off");
    let mut c = oio_tpcc::db::connect_pg(&db, "oio-test", &oio_tpcc::Timeouts::default()).unwrap();
    for sql in seen
        .lines()
        .filter_map(|l| l.strip_prefix("  ")?.strip_suffix(';'))
    {
        c.batch_execute(sql).unwrap();
    }
    let t = std::time::Instant::now();
    while pg_setting(&db, "synchronous_commit") != "on" {
        assert!(
            t.elapsed().as_secs() < 60,
            "the printed SQL did not restore it"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let auto = std::fs::read_to_string(pg.data_dir().join("postgresql.auto.conf")).unwrap();
    assert!(!auto.contains("synchronous_commit"), "{auto}");
}

#[test]
fn a_study_refuses_a_mariadb_variable_that_is_read_only_at_run_time_before_any_run() {
    if oio_testkit::mariadb_bin().is_none() {
        missing("no MariaDB binaries (scripts/test installs mariadb-server and mariadb-client)");
        return;
    }
    let db = oio_testkit::TempMariadb::start(&[]).unwrap();
    let dir = scratch();
    let out = crate::common::oio()
        .current_dir(dir.path())
        .args(["tpcc", "study", "--db", &db.url(), "-n", "1", "--out", "st"])
        .args(["--set", "a:innodb_page_size=16384"])
        .args(["--set", "b:innodb_page_size=8192"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("'innodb_page_size' is read-only while the server runs")
            && stderr.contains("READ_ONLY = YES")
            && stderr.contains("restart"),
        "{stderr}"
    );
    assert!(!stderr.contains("study run"), "no run started: {stderr}");
    assert!(holds_no_results(&dir.path().join("st")));
}
