//! A "PostgreSQL" that accepts TCP connections and never answers must not hang build, run or
//! check: each fails within its connect timeout and says which address did not answer.

use oio_core::Cancel;
use oio_tpcc::{
    build, check, run_step, BuildOptions, DbUrl, Quiet, RunOptions, Timeouts, TpccError,
};
use std::net::TcpListener;
use std::time::{Duration, Instant};

/// Accepts connections and holds them open without a byte in reply.
fn silent_server() -> (u16, std::thread::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let h = std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in l.incoming().take(8) {
            held.push(c);
        }
        std::thread::sleep(Duration::from_secs(60));
    });
    (port, h)
}

fn assert_times_out(what: &str, t: Instant, r: Result<impl std::fmt::Debug, TpccError>, port: u16) {
    let took = t.elapsed();
    let e = r.expect_err(what);
    let msg = e.to_string();
    assert!(matches!(e, TpccError::Timeout(_)), "{what}: {msg}");
    assert!(took < Duration::from_secs(10), "{what} took {took:?}");
    assert!(took >= Duration::from_millis(900), "{what} took {took:?}");
    assert!(
        msg.contains(&format!("127.0.0.1:{port}")) && msg.contains("within 1 s"),
        "{what}: {msg}"
    );
    assert!(msg.contains("--connect-timeout"), "{what}: {msg}");
}

#[test]
fn a_silent_server_fails_each_command_within_the_connect_timeout() {
    let (port, _server) = silent_server();
    let db: DbUrl = format!("postgres://oio@127.0.0.1:{port}/oio")
        .parse()
        .unwrap();
    let timeouts = Timeouts {
        connect_s: 1.0,
        ..Timeouts::default()
    };
    let stop = Cancel::new();

    let t = Instant::now();
    let r = run_step(
        &db,
        &RunOptions {
            workers: 1,
            ramp_s: 0.0,
            time_s: 1.0,
            timeouts,
            ..RunOptions::default()
        },
        &mut Quiet,
        &stop,
    );
    assert_times_out("run", t, r, port);

    let t = Instant::now();
    let r = build(
        &db,
        &BuildOptions {
            warehouses: 1,
            workers: 1,
            force: false,
            seed: 1,
            timeouts,
        },
        &|_| {},
        &stop,
    );
    assert_times_out("build", t, r, port);

    let t = Instant::now();
    let r = check(&db, &timeouts);
    assert_times_out("check", t, r, port);
}

#[test]
fn a_locked_sqlite_file_fails_after_the_busy_timeout_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("locked.db");
    let holder = rusqlite::Connection::open(&path).unwrap();
    holder
        .execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE other(x); BEGIN IMMEDIATE; INSERT INTO other VALUES (1);")
        .unwrap();
    let db: DbUrl = format!("sqlite:{}", path.display()).parse().unwrap();
    let t = Instant::now();
    let e = build(
        &db,
        &BuildOptions {
            warehouses: 1,
            workers: 1,
            force: false,
            seed: 1,
            timeouts: Timeouts {
                sqlite_busy_s: 1.0,
                ..Timeouts::default()
            },
        },
        &|_| {},
        &Cancel::new(),
    )
    .unwrap_err()
    .to_string();
    let took = t.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(10),
        "{took:?}"
    );
    assert!(
        e.contains("locked") && e.contains("1 s busy timeout") && e.contains("another oio tpcc"),
        "{e}"
    );
    holder.execute_batch("ROLLBACK").unwrap();
}
