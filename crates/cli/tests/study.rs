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
    let mut c =
        oio_tpcc::postgres::connect_pg(url, "oio-test", &oio_tpcc::Timeouts::default()).unwrap();
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
    let mut child = oio_in(dir.path(), &dir.path().join("state"))
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
    let mut child = oio_in(dir.path(), &dir.path().join("state"))
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
    assert!(
        seen.contains(
            "\nor run any oio tpcc command on this server: it puts them back from the journal "
        ),
        "{seen}"
    );
    // Left as said, and the printed SQL puts it back.
    assert_eq!(pg_setting(&db, "synchronous_commit"), "off");
    let mut c =
        oio_tpcc::postgres::connect_pg(&db, "oio-test", &oio_tpcc::Timeouts::default()).unwrap();
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

// --- issue 37: settings a study changes are journaled, locked and quoted right ---

#[test]
fn a_postgres_study_by_a_login_that_may_not_alter_system_is_refused_before_anything_is_journaled() {
    if pg_bin().is_none() {
        missing("no PostgreSQL binaries (scripts/test installs them)");
        return;
    }
    let pg = TempPostgres::start("").unwrap();
    let db = pg.url();
    let dir = scratch();
    let state = dir.path().join("state");
    let mut c =
        oio_tpcc::postgres::connect_pg(&db, "oio-test", &oio_tpcc::Timeouts::default()).unwrap();
    c.batch_execute("CREATE ROLE plain LOGIN").unwrap();
    c.batch_execute("CREATE DATABASE plain_tp OWNER plain")
        .unwrap();
    let (admin, rest) = db
        .strip_prefix("postgres://")
        .and_then(|r| r.split_once('@'))
        .unwrap();
    let server = rest.split_once('/').unwrap().0;
    let plain = format!("postgres://plain@{server}/plain_tp");
    let admin_in_tp = format!("postgres://{admin}@{server}/plain_tp");
    tpcc_build_one_warehouse(dir.path(), &plain);
    let study = |out: &str| {
        oio_in(dir.path(), &state)
            .args(["tpcc", "study", "--db", &plain, "-n", "1", "--out", out])
            .args(["--set", "a:synchronous_commit=off"])
            .args(["--set", "b:synchronous_commit=on"])
            .args(["--ramp", "0s", "--time", "1s", "--repeat", "1"])
            .output()
            .unwrap()
    };
    let out = study("st");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the login 'plain' may not change 'synchronous_commit' for the server")
            && stderr.contains("nothing was changed"),
        "{stderr}"
    );
    assert!(!stderr.contains("study run 1/"), "no run started: {stderr}");
    // Nothing journaled: the next command on the server has nothing to put back.
    assert!(journal_entries(&state).is_empty());
    let check = oio_in(dir.path(), &state)
        .args(["tpcc", "check", "--db", &plain])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert!(!stderr.contains("put back"), "{stderr}");
    // Granted both (PostgreSQL 15; a function's grant is the database's), the same login may
    // run the study.
    c.batch_execute("GRANT ALTER SYSTEM ON PARAMETER synchronous_commit TO plain")
        .unwrap();
    let mut in_tp =
        oio_tpcc::postgres::connect_pg(&admin_in_tp, "oio-test", &oio_tpcc::Timeouts::default())
            .unwrap();
    in_tp
        .batch_execute("GRANT EXECUTE ON FUNCTION pg_reload_conf() TO plain")
        .unwrap();
    let out = study("st2");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(journal_entries(&state).is_empty(), "put back and removed");
}

/// oio with its state directory (the settings journal) in `state`, not the machine's.
fn oio_in(dir: &Path, state: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("oio"));
    c.env("NO_COLOR", "1")
        .env("XDG_STATE_HOME", state)
        .current_dir(dir);
    c
}

/// The journal entries under a state directory.
fn journal_entries(state: &Path) -> Vec<std::path::PathBuf> {
    walk(&state.join("oio"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect()
}

/// Waits until a fresh session shows `name` = `want` (a reload is asynchronous).
fn wait_pg_setting(url: &str, name: &str, want: &str, seen: &str) {
    let t = std::time::Instant::now();
    while pg_setting(url, name) != want {
        assert!(
            t.elapsed().as_secs() < 60,
            "{name} never became {want}: {seen}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn a_killed_postgres_study_is_put_back_by_the_next_run_and_a_second_study_meanwhile_is_refused() {
    if pg_bin().is_none() {
        missing("no PostgreSQL binaries (scripts/test installs them)");
        return;
    }
    let pg = TempPostgres::start("").unwrap();
    let db = pg.url();
    let dir = scratch();
    let state = dir.path().join("state");
    tpcc_build_one_warehouse(dir.path(), &db);
    let mut child = oio_in(dir.path(), &state)
        .args(["tpcc", "study", "--db", &db])
        .args([
            "--set",
            "nosync:fsync=off",
            "--set",
            "nosync:synchronous_commit=off",
        ])
        .args([
            "--set",
            "safe:fsync=on",
            "--set",
            "safe:synchronous_commit=on",
        ])
        .args(["--repeat", "2", "-n", "1"])
        .args(["--ramp", "0s", "--time", "120s", "--out", "st"])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stderr.take().unwrap()));
    let mut seen = String::new();
    read_until(&mut lines, &mut seen, "study run 1/4: nosync");
    // Applied before its run starts: the server shows it.
    wait_pg_setting(&db, "fsync", "off", &seen);

    // A second study on the same server is refused before it changes anything, naming the
    // first (its lock session carries its pid).
    let second = oio_in(dir.path(), &state)
        .args(["tpcc", "study", "--db", &db])
        .args([
            "--set",
            "a:synchronous_commit=on",
            "--set",
            "b:synchronous_commit=off",
        ])
        .args(["-n", "1", "--ramp", "0s", "--time", "1s", "--out", "st2"])
        .output()
        .unwrap();
    let stderr2 = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{stderr2}");
    assert!(
        stderr2.contains("another study is changing this server's settings: oio-tpcc-study pid ")
            && stderr2.contains(&format!("pid {pid} on ")),
        "{stderr2}"
    );
    assert!(!stderr2.contains("study run"), "{stderr2}");
    assert!(holds_no_results(&dir.path().join("st2")));
    // The same from another database of the server: an advisory lock is per database, but
    // the settings are the server's, so the holder in the first database refuses it too.
    let other = db
        .rsplit_once('/')
        .map(|(base, _)| format!("{base}/other"))
        .unwrap();
    let mut admin =
        oio_tpcc::postgres::connect_pg(&db, "oio-test", &oio_tpcc::Timeouts::default()).unwrap();
    admin.batch_execute("CREATE DATABASE other").unwrap();
    drop(admin);
    tpcc_build_one_warehouse(dir.path(), &other);
    let third = oio_in(dir.path(), &state)
        .args(["tpcc", "study", "--db", &other])
        .args([
            "--set",
            "a:synchronous_commit=on",
            "--set",
            "b:synchronous_commit=off",
        ])
        .args(["-n", "1", "--ramp", "0s", "--time", "1s", "--out", "st3"])
        .output()
        .unwrap();
    let stderr3 = String::from_utf8_lossy(&third.stderr);
    assert_eq!(third.status.code(), Some(2), "{stderr3}");
    assert!(
        stderr3.contains("another study is changing this server's settings")
            && stderr3.contains(&format!("pid {pid} on ")),
        "{stderr3}"
    );
    assert!(holds_no_results(&dir.path().join("st3")));
    // The journal is written before anything changes, beside the results too.
    let entries = journal_entries(&state);
    assert_eq!(entries.len(), 1, "{entries:?}");
    let j: Value = serde_json::from_slice(&std::fs::read(&entries[0]).unwrap()).unwrap();
    assert_eq!(j["schema"], "oio.settings_journal");
    assert_eq!(j["pid"].as_u64().unwrap().to_string(), pid);
    let names: Vec<&str> = j["settings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["fsync", "synchronous_commit"], "{j}");
    assert!(dir.path().join("st/settings-journal.json").exists());
    // Killed mid-candidate, with no chance to clean up: the server keeps fsync=off in
    // postgresql.auto.conf.
    signal("-KILL", &pid);
    let _ = child.wait();
    // The server ends the dead client's sessions (and so its lock) when it sees the socket
    // close: wait for that event rather than a time.
    let mut c =
        oio_tpcc::postgres::connect_pg(&db, "oio-test", &oio_tpcc::Timeouts::default()).unwrap();
    let t = std::time::Instant::now();
    while c
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'oio-tpcc%'",
            &[],
        )
        .unwrap()
        .get::<_, i64>(0)
        > 0
    {
        assert!(
            t.elapsed().as_secs() < 60,
            "the killed study's sessions stayed"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let auto = std::fs::read_to_string(pg.data_dir().join("postgresql.auto.conf")).unwrap();
    assert!(auto.contains("fsync = 'off'"), "{auto}");
    // A user without the privilege to put them back is refused, with the SQL to run; the
    // journal stays for the next try.
    c.batch_execute("CREATE ROLE plain LOGIN").unwrap();
    let (user, rest) = db
        .strip_prefix("postgres://")
        .and_then(|r| r.split_once('@'))
        .unwrap();
    assert!(!user.is_empty());
    let plain = format!("postgres://plain@{rest}");
    let refused = oio_in(dir.path(), &state)
        .args(["tpcc", "check", "--db", &plain])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("a tuning study (pid {pid} on "))
            && stderr.contains("could not put back: ALTER SYSTEM RESET fsync: ")
            && stderr.contains("run as a superuser:\n  ALTER SYSTEM RESET fsync;\n  ALTER SYSTEM RESET synchronous_commit;\n  SELECT pg_reload_conf();\nthen remove "),
        "{stderr}"
    );
    assert_eq!(journal_entries(&state).len(), 1);
    assert_eq!(pg_setting(&db, "fsync"), "off");
    // The next oio tpcc command on the server, in any of its databases, finds the journal
    // and puts it back.
    let run = oio_in(dir.path(), &state)
        .args([
            "tpcc", "run", "--db", &other, "-n", "1", "--ramp", "0s", "--time", "1s",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "put back what a tuning study left changed on this server (pid {pid} on "
        )) && stderr.contains("fsync reset, synchronous_commit reset"),
        "{stderr}"
    );
    assert_eq!(pg_setting(&db, "fsync"), "on");
    assert_eq!(pg_setting(&db, "synchronous_commit"), "on");
    let auto = std::fs::read_to_string(pg.data_dir().join("postgresql.auto.conf")).unwrap();
    assert!(
        !auto.contains("fsync") && !auto.contains("synchronous_commit"),
        "{auto}"
    );
    assert!(journal_entries(&state).is_empty());
    // Nor an empty directory for the server.
    let servers = std::fs::read_dir(state.join("oio/settings-journal"))
        .unwrap()
        .count();
    assert_eq!(servers, 0);
    // The copy beside the results says it was put back.
    let copy: Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("st/settings-journal.json")).unwrap(),
    )
    .unwrap();
    assert!(copy["restored"].is_string(), "{copy}");
    // Once put back, the next command says nothing about it.
    let again = oio_in(dir.path(), &state)
        .args(["tpcc", "check", "--db", &db])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&again.stderr).contains("put back"));
}

#[test]
fn a_postgres_study_quotes_values_with_units_and_puts_each_back_at_its_own_scope() {
    if pg_bin().is_none() {
        missing("no PostgreSQL binaries (scripts/test installs them)");
        return;
    }
    let pg = TempPostgres::start("").unwrap();
    let db = pg.url();
    let dir = scratch();
    let state = dir.path().join("state");
    tpcc_build_one_warehouse(dir.path(), &db);
    // work_mem set for this database (it wins over ALTER SYSTEM), wal_writer_delay by ALTER
    // SYSTEM: both with units.
    let mut c =
        oio_tpcc::postgres::connect_pg(&db, "oio-test", &oio_tpcc::Timeouts::default()).unwrap();
    let database: String = c
        .query_one("SELECT current_database()", &[])
        .unwrap()
        .get(0);
    // One statement at a time: ALTER SYSTEM refuses to run in a multi-statement batch.
    for sql in [
        format!("ALTER DATABASE \"{database}\" SET work_mem = '6MB'"),
        "ALTER SYSTEM SET wal_writer_delay = '250ms'".into(),
        "SELECT pg_reload_conf()".into(),
    ] {
        c.batch_execute(&sql).unwrap();
    }
    wait_pg_setting(&db, "wal_writer_delay", "250ms", "");
    let out = oio_in(dir.path(), &state)
        .args(["tpcc", "study", "--db", &db])
        .args([
            "--set",
            "small:work_mem=8MB",
            "--set",
            "small:wal_writer_delay='300ms'",
        ])
        .args([
            "--set",
            "large:work_mem=16MB",
            "--set",
            "large:wal_writer_delay=400ms",
        ])
        .args([
            "--repeat", "1", "-n", "1", "--ramp", "0s", "--time", "1s", "--out", "st",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("a new session shows"), "{stderr}");
    // Each candidate measured under its values.
    for (label, mem, delay) in [("small", "8MB", "300ms"), ("large", "16MB", "400ms")] {
        let f = walk(&dir.path().join("st").join(label));
        assert_eq!(f.len(), 1, "{f:?}");
        let r: Value = serde_json::from_slice(&std::fs::read(&f[0]).unwrap()).unwrap();
        assert_eq!(r["settings"]["values"]["work_mem"], mem, "{label}");
        assert_eq!(
            r["settings"]["values"]["wal_writer_delay"], delay,
            "{label}"
        );
    }
    assert!(
        stderr.contains("settings restored: wal_writer_delay=250ms, work_mem=6MB"),
        "{stderr}"
    );
    // Back exactly, each at its scope: the database's work_mem, ALTER SYSTEM's delay, and
    // no server-wide work_mem.
    let per_db: Vec<String> = c
        .query_one(
            "SELECT setconfig::text FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase WHERE d.datname = current_database() AND s.setrole = 0",
            &[],
        )
        .map(|r| vec![r.get::<_, String>(0)])
        .unwrap();
    assert_eq!(per_db, ["{work_mem=6MB}"]);
    let auto = std::fs::read_to_string(pg.data_dir().join("postgresql.auto.conf")).unwrap();
    assert!(auto.contains("wal_writer_delay = '250ms'"), "{auto}");
    assert!(!auto.contains("work_mem"), "{auto}");
    assert_eq!(pg_setting(&db, "work_mem"), "6MB");
    assert_eq!(pg_setting(&db, "wal_writer_delay"), "250ms");
    assert!(journal_entries(&state).is_empty());
}

#[test]
fn a_study_refuses_labels_that_give_the_same_directory_naming_both() {
    let dir = scratch();
    let db = format!("sqlite:{}", dir.path().join("t.db").display());
    let out = crate::common::oio()
        .current_dir(dir.path())
        .args(["tpcc", "study", "--db", &db, "-n", "1", "--out", "st"])
        .args(["--set", "sync full:synchronous=full"])
        .args(["--set", "sync-full:synchronous=off"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("labels 'sync full' and 'sync-full' both give the results directory")
            && stderr.contains("sync-full'"),
        "{stderr}"
    );
    assert!(!stderr.contains("study run"), "{stderr}");
    assert!(holds_no_results(&dir.path().join("st")));
}

fn my_session(url: &str) -> oio_tpcc::db::Session {
    oio_tpcc::db::Session::new(
        oio_tpcc::mysql::connect(url, "oio-test", &oio_tpcc::Timeouts::default()).unwrap(),
    )
}

/// The first column of `sql`'s first row on a MariaDB server, as text.
fn my_text(url: &str, sql: &str) -> String {
    oio_tpcc::database::one_text(&mut my_session(url), sql)
        .unwrap()
        .unwrap_or_default()
}

#[test]
fn a_mariadb_study_stores_a_hostile_value_as_a_value_under_every_sql_mode_and_puts_back_performance_schema(
) {
    if oio_testkit::mariadb_bin().is_none() {
        missing("no MariaDB binaries (scripts/test installs mariadb-server and mariadb-client)");
        return;
    }
    let server = oio_testkit::TempMariadb::start(&["--performance-schema=ON"]).unwrap();
    let db = server.url();
    let dir = scratch();
    let state = dir.path().join("state");
    tpcc_build_one_warehouse(dir.path(), &db);
    let hostile = "x\\'; CREATE DATABASE pwned; -- ";
    let enabled_sql = "SELECT CONCAT(SUM(enabled = 'YES'), '/', SUM(timed = 'YES')) FROM performance_schema.setup_instruments WHERE name LIKE 'wait/synch/%'";
    let before = my_text(&db, enabled_sql);
    for mode in [
        "STRICT_TRANS_TABLES",
        "STRICT_TRANS_TABLES,NO_BACKSLASH_ESCAPES",
    ] {
        my_session(&db)
            .batch(&format!("SET GLOBAL sql_mode = '{mode}'"))
            .unwrap();
        let out_dir = format!("st-{}", mode.len());
        let out = oio_in(dir.path(), &state)
            .args(["tpcc", "study", "--db", &db])
            .args(["--set", "plain:init_connect="])
            .args(["--set", &format!("hostile:init_connect={hostile}")])
            .args(["--repeat", "1", "-n", "1", "--ramp", "0s", "--time", "1s"])
            .args(["--out", &out_dir])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{mode}: {stderr}");
        // Stored as the value it is, nothing executed.
        let f = walk(&dir.path().join(&out_dir).join("hostile"));
        let r: Value = serde_json::from_slice(&std::fs::read(&f[0]).unwrap()).unwrap();
        // --set trims the value's ends; the rest is stored as it is.
        assert_eq!(
            r["settings"]["values"]["init_connect"],
            hostile.trim_end(),
            "{mode}"
        );
        assert_eq!(
            my_text(
                &db,
                "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'pwned'"
            ),
            "0",
            "{mode}"
        );
        assert_eq!(my_text(&db, "SELECT @@GLOBAL.init_connect"), "", "{mode}");
        // The run's performance_schema setup announced, and put back.
        assert!(
            stderr.contains("performance_schema: oio enabled ")
                && stderr.contains("wait instruments/consumers oio enabled are put back"),
            "{mode}: {stderr}"
        );
        assert_eq!(my_text(&db, enabled_sql), before, "{mode}");
    }
    assert!(journal_entries(&state).is_empty());
}

/// `oio tpcc study --schema` in `dir` on SQLite databases `tpcc-{label}.db`; (success, stdout, stderr).
fn schema_study(dir: &Path, schemas: &[&str]) -> (bool, String, String) {
    let mut args: Vec<String> = [
        "tpcc",
        "study",
        "--db",
        "sqlite:tpcc-{label}.db",
        "--repeat",
        "2",
        "-n",
        "1",
        "--ramp",
        "0s",
        "--time",
        "1s",
        "--out",
        "st",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for s in schemas {
        args.push("--schema".into());
        args.push(s.to_string());
    }
    let out = crate::common::oio()
        .current_dir(dir)
        .args(&args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_schema_study_builds_each_candidate_once_sets_it_up_once_and_refuses_a_changed_setup() {
    let dir = scratch();
    std::fs::write(
        dir.path().join("idx.sql"),
        "CREATE INDEX ol_item ON order_line (ol_i_id);\n",
    )
    .unwrap();
    // Without {label} in --db the candidates would share one database: refused before anything.
    let out = crate::common::oio()
        .current_dir(dir.path())
        .args([
            "tpcc",
            "study",
            "--db",
            "sqlite:one.db",
            "--schema",
            "a=",
            "--schema",
            "b=idx.sql",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("put {label} in --db"));
    assert!(!dir.path().join("one.db").exists());

    let (ok, stdout, stderr) = schema_study(dir.path(), &["plain=", "idx=idx.sql"]);
    assert!(ok, "{stderr}");
    assert!(stderr.contains("building candidate 'plain'"), "{stderr}");
    assert!(stderr.contains("building candidate 'idx'"), "{stderr}");
    assert!(stderr.contains("setting up candidate 'idx'"), "{stderr}");
    assert!(
        stderr.contains("plain idx idx plain (baseline plain)"),
        "{stderr}"
    );
    assert!(
        stdout
            .contains("idx (schema set up by idx.sql) against plain (the schema as built): NOPM "),
        "{stdout}"
    );
    // The index is in idx's database only, and each result names its own database.
    let index_in = |db: &str| {
        let c = rusqlite::Connection::open(dir.path().join(db)).unwrap();
        c.query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'ol_item'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .unwrap()
    };
    assert_eq!((index_in("tpcc-plain.db"), index_in("tpcc-idx.db")), (0, 1));
    for label in ["plain", "idx"] {
        let files: Vec<_> = std::fs::read_dir(dir.path().join("st").join(label))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 2, "{files:?}");
        for f in files {
            let r: Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
            assert_eq!(r["label"], label);
            let db = r["plan"]["db"].as_str().unwrap_or_default().to_string();
            assert!(db.ends_with(&format!("tpcc-{label}.db")), "{db}");
        }
    }

    // Again: nothing rebuilt, the setup not run twice (it would fail: the index exists).
    std::fs::remove_dir_all(dir.path().join("st")).unwrap();
    let (ok, _, stderr) = schema_study(dir.path(), &["plain=", "idx=idx.sql"]);
    assert!(ok, "{stderr}");
    assert!(!stderr.contains("building candidate"), "{stderr}");
    assert!(
        stderr.contains("by idx.sql before: not run again"),
        "{stderr}"
    );

    // A changed setup file, or the set-up database as the plain schema: refused, naming the rebuild.
    std::fs::remove_dir_all(dir.path().join("st")).unwrap();
    std::fs::write(
        dir.path().join("idx.sql"),
        "CREATE INDEX ol_item2 ON order_line (ol_supply_w_id);\n",
    )
    .unwrap();
    let (ok, _, stderr) = schema_study(dir.path(), &["plain=", "idx=idx.sql"]);
    assert!(!ok);
    assert!(
        stderr.contains("was set up by candidate 'idx''s file, not by idx.sql as it is now")
            && stderr.contains("--force"),
        "{stderr}"
    );
    assert!(!dir.path().join("st").exists() || holds_no_results(&dir.path().join("st")));
}
