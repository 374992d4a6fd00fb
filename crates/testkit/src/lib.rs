//! Throwaway PostgreSQL and MariaDB servers for tests and benchmarks.
//!
//! [`TempPostgres::start`] runs `initdb` into a temporary directory, starts the server on a
//! free port of 127.0.0.1 with its unix socket in the same directory, creates a database, and
//! stops the server when dropped (also when a test panics). PostgreSQL refuses to run as
//! root, so when oio runs as root the server runs as the unprivileged `nobody` user through
//! `runuser`, and the directory is handed to that user.
//!
//! The binaries come from `$OIO_PG_BIN`, else `/usr/lib/postgresql/15/bin`, else the first
//! `initdb` on `PATH`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A running throwaway server.
pub struct TempPostgres {
    dir: PathBuf,
    bin: PathBuf,
    run_as: Option<String>,
    /// TCP port on 127.0.0.1.
    pub port: u16,
    /// The database oio should use.
    pub dbname: String,
    user: String,
}

/// A test whose real part (here: a database server) is missing calls this and returns. Under
/// `OIO_TEST_REQUIRE_ALL=1` (set by `.ci/run`) it fails instead.
pub fn missing(what: &str) {
    if std::env::var_os("OIO_TEST_REQUIRE_ALL").is_some_and(|v| v == "1") {
        panic!("OIO_TEST_REQUIRE_ALL=1 and this test cannot run: {what}");
    }
    eprintln!("SKIPPED (not run): {what}");
}

/// Where PostgreSQL's server binaries are, if anywhere.
pub fn pg_bin() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("OIO_PG_BIN") {
        return Some(PathBuf::from(p));
    }
    let debian = Path::new("/usr/lib/postgresql/15/bin");
    if debian.join("initdb").exists() {
        return Some(debian.to_path_buf());
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .find(|p| p.join("initdb").exists() && p.join("pg_ctl").exists())
    })
}

fn is_root() -> bool {
    rustix_uid() == 0
}

fn rustix_uid() -> u32 {
    // /proc/self/status "Uid:" line: real, effective, …
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(str::to_string))
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(u32::MAX)
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn check(out: std::io::Result<Output>, what: &str) -> Result<(), String> {
    match out {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!(
            "{what} failed ({}): {}{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )),
        Err(e) => Err(format!("{what}: {e}")),
    }
}

impl TempPostgres {
    /// Starts a server with `extra_conf` lines appended to postgresql.conf.
    pub fn start(extra_conf: &str) -> Result<TempPostgres, String> {
        let bin = pg_bin().ok_or("PostgreSQL server binaries not found (install the postgresql package or set OIO_PG_BIN)")?;
        let base = std::env::temp_dir();
        let dir = tempdir_in(&base)?;
        let run_as = is_root().then(|| "nobody".to_string());
        if run_as.is_some() {
            // nobody must own the data directory and be able to reach it.
            check(
                Command::new("chown")
                    .arg("-R")
                    .arg("nobody:")
                    .arg(&dir)
                    .output(),
                "chown",
            )?;
            check(Command::new("chmod").arg("755").arg(&dir).output(), "chmod")?;
        }
        let data = dir.join("data");
        let user = "oio".to_string();
        let mut pg = TempPostgres {
            dir,
            bin,
            run_as,
            port: 0,
            dbname: "oio".into(),
            user,
        };
        check(
            pg.cmd("initdb")
                .args([
                    "-A",
                    "trust",
                    "-U",
                    &pg.user,
                    "-E",
                    "UTF8",
                    "--no-sync",
                    "-D",
                ])
                .arg(&data)
                .output(),
            "initdb",
        )?;
        let conf = format!(
            "\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\nfsync = on\nshared_buffers = 128MB\nmax_connections = 100\n{extra_conf}\n",
            pg.dir.display()
        );
        std::fs::OpenOptions::new()
            .append(true)
            .open(data.join("postgresql.conf"))
            .and_then(|mut f| std::io::Write::write_all(&mut f, conf.as_bytes()))
            .map_err(|e| format!("writing postgresql.conf: {e}"))?;
        // A port can be taken between probing and binding; try a few.
        let mut last = String::new();
        for _ in 0..5 {
            pg.port = free_port().map_err(|e| format!("finding a free port: {e}"))?;
            let r = check(
                pg.cmd("pg_ctl")
                    .arg("-D")
                    .arg(&data)
                    .arg("-l")
                    .arg(pg.dir.join("log"))
                    .args(["-w", "-t", "60", "-o", &format!("-p {}", pg.port), "start"])
                    .output(),
                "pg_ctl start",
            );
            match r {
                Ok(()) => {
                    check(
                        pg.cmd("createdb")
                            .args([
                                "-h",
                                "127.0.0.1",
                                "-p",
                                &pg.port.to_string(),
                                "-U",
                                &pg.user,
                            ])
                            .arg(&pg.dbname)
                            .output(),
                        "createdb",
                    )?;
                    return Ok(pg);
                }
                Err(e) => {
                    let log = std::fs::read_to_string(pg.dir.join("log")).unwrap_or_default();
                    last = format!("{e}\n{log}");
                }
            }
        }
        Err(last)
    }

    fn cmd(&self, tool: &str) -> Command {
        let path = self.bin.join(tool);
        match &self.run_as {
            Some(u) => {
                let mut c = Command::new("runuser");
                c.args(["-u", u, "--"]).arg(path);
                c
            }
            None => Command::new(path),
        }
    }

    /// The database URL for oio.
    pub fn url(&self) -> String {
        format!(
            "postgres://{}@127.0.0.1:{}/{}",
            self.user, self.port, self.dbname
        )
    }

    /// The server's data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }
}

fn tempdir_in(base: &Path) -> Result<PathBuf, String> {
    for i in 0..100u32 {
        let p = base.join(format!(
            "oio-pg-{}-{}-{i}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0)
        ));
        if std::fs::create_dir(&p).is_ok() {
            return Ok(p);
        }
    }
    Err(format!("cannot create a directory in {}", base.display()))
}

impl Drop for TempPostgres {
    fn drop(&mut self) {
        let _ = self
            .cmd("pg_ctl")
            .arg("-D")
            .arg(self.data_dir())
            .args(["-m", "immediate", "-w", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A running throwaway MariaDB server (from the Debian `mariadb-server` package), with a
/// database `oio` and a user `oio` with a password; stopped when dropped (also when a test
/// panics).
///
/// `mariadb-install-db` writes a fresh data directory into a temporary directory; `mariadbd`
/// listens on a free port of 127.0.0.1 with its socket in the same directory. As root the
/// server runs as the `mysql` user (created by the package), else as the caller.
pub struct TempMariadb {
    dir: PathBuf,
    run_as: Option<String>,
    child: std::process::Child,
    /// TCP port on 127.0.0.1.
    pub port: u16,
}

/// The user and password [`TempMariadb`] creates.
pub const MARIADB_USER: (&str, &str) = ("oio", "oio-test-pw");

/// Where `mariadbd` and `mariadb-install-db` are, if anywhere.
pub fn mariadb_bin() -> Option<(PathBuf, PathBuf, PathBuf)> {
    let find = |name: &str| -> Option<PathBuf> {
        ["/usr/sbin", "/usr/bin"]
            .iter()
            .map(|d| Path::new(d).join(name))
            .find(|p| p.exists())
    };
    Some((
        find("mariadbd")?,
        find("mariadb-install-db")?,
        find("mariadb")?,
    ))
}

impl TempMariadb {
    /// Installs a data directory and starts the server with `extra_args` (server options such
    /// as `--innodb-lock-wait-timeout=5`).
    pub fn start(extra_args: &[&str]) -> Result<TempMariadb, String> {
        let (server, install, client) = mariadb_bin().ok_or(
            "MariaDB binaries not found (install the mariadb-server and mariadb-client packages)",
        )?;
        let dir = tempdir_in(&std::env::temp_dir())?;
        let run_as = is_root().then(|| "mysql".to_string());
        if run_as.is_some() {
            // mysql must be able to reach the directory.
            check(Command::new("chmod").arg("755").arg(&dir).output(), "chmod")?;
        }
        // The server runs as the user directly (set on spawn, no runuser in between), so the
        // child oio holds is mariadbd itself and killing it on drop stops the server.
        let ids = match &run_as {
            Some(u) => Some((user_id(u, "-u")?, user_id(u, "-g")?)),
            None => None,
        };
        let as_user = |program: &Path| {
            let mut c = Command::new(program);
            if let Some((uid, gid)) = ids {
                use std::os::unix::process::CommandExt;
                c.uid(uid).gid(gid);
            }
            c
        };
        if let Some(u) = &run_as {
            check(
                Command::new("chown")
                    .arg(format!("{u}:"))
                    .arg(&dir)
                    .output(),
                "chown",
            )?;
        }
        let data = dir.join("data");
        // Each server gets its own tmpdir: the bootstrap's temporary tables are files named
        // by pid and counter, and in a shared /tmp two servers starting at once have been
        // seen to trip over each other ("Could not remove temporary table").
        let tmp = dir.join("tmp");
        std::fs::create_dir(&tmp).map_err(|e| format!("creating {}: {e}", tmp.display()))?;
        if let Some(u) = &run_as {
            check(
                Command::new("chown")
                    .arg(format!("{u}:"))
                    .arg(&tmp)
                    .output(),
                "chown",
            )?;
        }
        let mut installed = Err(String::new());
        for _ in 0..2 {
            let _ = std::fs::remove_dir_all(&data);
            installed = check(
                as_user(&install)
                    .arg("--no-defaults")
                    .arg(format!("--datadir={}", data.display()))
                    .arg(format!("--tmpdir={}", tmp.display()))
                    .args(["--auth-root-authentication-method=normal", "--skip-test-db"])
                    .output(),
                "mariadb-install-db",
            );
            if installed.is_ok() {
                break;
            }
        }
        if let Err(e) = installed {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(e);
        }
        let socket = dir.join("sock");
        let mut last = String::new();
        for _ in 0..5 {
            let port = free_port().map_err(|e| format!("finding a free port: {e}"))?;
            let mut child = as_user(&server)
                .arg("--no-defaults")
                .arg(format!("--datadir={}", data.display()))
                .arg(format!("--socket={}", socket.display()))
                .arg(format!("--pid-file={}", dir.join("pid").display()))
                .arg(format!("--log-error={}", dir.join("log").display()))
                .arg(format!("--tmpdir={}", tmp.display()))
                .arg(format!("--port={port}"))
                .args([
                    "--bind-address=127.0.0.1",
                    "--innodb-buffer-pool-size=256M",
                    "--performance-schema=ON",
                ])
                .args(extra_args)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .map_err(|e| format!("starting mariadbd: {e}"))?;
            // Ready when root can run SQL through the socket (60 s at most).
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            let sql = format!(
                "CREATE USER '{u}'@'127.0.0.1' IDENTIFIED BY '{p}'; CREATE DATABASE oio; GRANT ALL ON *.* TO '{u}'@'127.0.0.1';",
                u = MARIADB_USER.0,
                p = MARIADB_USER.1
            );
            loop {
                if let Ok(Some(status)) = child.try_wait() {
                    last = format!(
                        "mariadbd exited ({status}): {}",
                        std::fs::read_to_string(dir.join("log")).unwrap_or_default()
                    );
                    break;
                }
                let ok = Command::new(&client)
                    .arg("--no-defaults")
                    .arg(format!("--socket={}", socket.display()))
                    .args(["-uroot", "-e", &sql])
                    .output()
                    .is_ok_and(|o| o.status.success());
                if ok {
                    return Ok(TempMariadb {
                        dir,
                        run_as,
                        child,
                        port,
                    });
                }
                if std::time::Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    last = format!(
                        "mariadbd did not accept connections within 60 s: {}",
                        std::fs::read_to_string(dir.join("log")).unwrap_or_default()
                    );
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        Err(last)
    }

    /// The database URL for oio.
    pub fn url(&self) -> String {
        format!(
            "mysql://{}:{}@127.0.0.1:{}/oio",
            MARIADB_USER.0, MARIADB_USER.1, self.port
        )
    }

    /// The server's data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// Whether the server runs as another user (root runs it as `mysql`).
    pub fn runs_as(&self) -> Option<&str> {
        self.run_as.as_deref()
    }
}

/// A user's uid (`flag` "-u") or gid ("-g"), from `id`.
fn user_id(user: &str, flag: &str) -> Result<u32, String> {
    let out = Command::new("id")
        .args([flag, user])
        .output()
        .map_err(|e| format!("id {flag} {user}: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|_| format!("no user '{user}' (the mariadb-server package creates it)"))
}

impl Drop for TempMariadb {
    fn drop(&mut self) {
        // The server is a test fixture: no clean shutdown is needed.
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Checks a result's per-interval wait profile against its window's: every interval of the
/// window lists the window's classes, and for each class the intervals' average active
/// sessions times their lengths add up to the window's within `tolerance` (relative
/// to the window's AAS, with 0.02 AAS of slack for classes that are nearly absent).
/// Returns what did not hold.
pub fn interval_waits_add_up(r: &oio_tpcc::TpccResult, tolerance: f64) -> Result<(), String> {
    let classes = &r.waits.classes;
    if classes.is_empty() {
        return Err(format!("no wait classes in the window: {:?}", r.waits));
    }
    let inside: Vec<&oio_tpcc::result::Interval> = r
        .intervals
        .iter()
        .filter(|iv| iv.t_s <= r.duration_s + 1e-6)
        .collect();
    if inside.is_empty() || inside.iter().any(|iv| iv.waits.is_empty()) {
        return Err(format!(
            "an interval of the window has no waits: {:?}",
            inside.iter().map(|iv| iv.waits.len()).collect::<Vec<_>>()
        ));
    }
    for c in classes {
        let mut sum = 0.0;
        for iv in &r.intervals {
            let names: Vec<&str> = iv.waits.iter().map(|w| w.name.as_str()).collect();
            if !iv.waits.is_empty() && !classes.iter().all(|k| names.contains(&k.name.as_str())) {
                return Err(format!("interval at {} s lists {names:?}", iv.t_s));
            }
            let share: f64 = iv.waits.iter().map(|w| w.share_pct).sum();
            if !iv.waits.is_empty() && share > 0.0 && (share - 100.0).abs() > 0.01 {
                return Err(format!("interval at {} s: shares add to {share}", iv.t_s));
            }
            sum += iv
                .waits
                .iter()
                .find(|w| w.name == c.name)
                .map_or(0.0, |w| w.aas * iv.duration_s);
        }
        // Session-seconds over the window's length: the window's own AAS.
        let mean = sum / r.duration_s.max(1e-9);
        if (mean - c.aas).abs() > tolerance * c.aas + 0.02 {
            return Err(format!(
                "{}: the intervals' mean AAS is {mean:.4}, the window's {:.4}",
                c.name, c.aas
            ));
        }
    }
    Ok(())
}
