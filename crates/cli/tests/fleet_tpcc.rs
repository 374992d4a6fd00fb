//! `oio fleet tpcc run` against two real PostgreSQL servers, each in its own network namespace
//! on its own 198.18.0.0/15 address (assigned by this test to the namespace's loopback), each
//! agent started in its host's namespace by an `ip netns exec {host}` launcher. Servers,
//! processes and namespaces are removed when the lab is dropped, also on failure.

use crate::common::{is_root, missing};
use crate::fleet::{pids_in, sh, wait_bounded};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const PORT: &str = "5432";

struct PgLab {
    ns: Vec<String>,
    bin: PathBuf,
    dir: tempfile::TempDir,
}

impl Drop for PgLab {
    fn drop(&mut self) {
        for (i, ns) in self.ns.iter().enumerate() {
            let _ = self
                .pg(ns, "pg_ctl")
                .arg("-D")
                .arg(self.data(i))
                .args(["-m", "immediate", "-w", "-t", "20", "stop"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            // Whatever still runs in the namespace was started by this test.
            for pid in pids_in(ns) {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            }
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

impl PgLab {
    fn data(&self, i: usize) -> PathBuf {
        self.dir.path().join(format!("pg{i}"))
    }

    fn addr(i: usize) -> String {
        format!("198.18.20.{}", i + 1)
    }

    fn url(i: usize) -> String {
        format!("postgres://oio@{}:{PORT}/oio", Self::addr(i))
    }

    /// A PostgreSQL tool run as nobody (initdb refuses root) inside namespace `ns`.
    fn pg(&self, ns: &str, tool: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns, "runuser", "-u", "nobody", "--"])
            .arg(self.bin.join(tool));
        c
    }

    fn new(n: usize) -> Option<PgLab> {
        PgLab::with_servers(n, n)
    }

    /// `n` namespaces, the first `servers` of them each running a PostgreSQL server.
    fn with_servers(n: usize, servers: usize) -> Option<PgLab> {
        if !is_root() {
            missing("root (network namespaces)");
            return None;
        }
        let Some(bin) = oio_testkit::pg_bin() else {
            missing("PostgreSQL server binaries (postgresql)");
            return None;
        };
        let dir = tempfile::tempdir().expect("temp dir");
        let mut lab = PgLab {
            ns: Vec::new(),
            bin,
            dir,
        };
        for (tool, args) in [("chown", vec!["nobody:"]), ("chmod", vec!["755"])] {
            let mut a: Vec<&str> = vec![tool];
            a.extend(args);
            a.push(lab.dir.path().to_str().unwrap());
            sh(&a).unwrap();
        }
        // One process runs several labs at once: each its own names.
        static LABS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let lab_no = LABS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let id = format!("oiopg{}l{lab_no}", std::process::id());
        for i in 0..n {
            let ns = format!("{id}h{i}");
            if let Err(e) = sh(&["ip", "netns", "add", &ns]) {
                missing(&format!("network namespaces: {e}"));
                return None;
            }
            lab.ns.push(ns.clone());
            sh(&["ip", "-n", &ns, "link", "set", "lo", "up"]).unwrap();
            let a = format!("{}/32", Self::addr(i));
            sh(&["ip", "-n", &ns, "addr", "add", &a, "dev", "lo"]).unwrap();
            if i < servers {
                lab.start(i)
                    .unwrap_or_else(|e| panic!("PostgreSQL in {ns}: {e}"));
            }
        }
        Some(lab)
    }

    fn start(&self, i: usize) -> Result<(), String> {
        let ns = &self.ns[i];
        let data = self.data(i);
        let run = |c: &mut Command, what: &str| -> Result<(), String> {
            let o = c.output().map_err(|e| format!("{what}: {e}"))?;
            if o.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "{what}: {}{}",
                    String::from_utf8_lossy(&o.stdout),
                    String::from_utf8_lossy(&o.stderr)
                ))
            }
        };
        run(
            self.pg(ns, "initdb")
                .args(["-A", "trust", "-U", "oio", "-E", "UTF8", "--no-sync", "-D"])
                .arg(&data),
            "initdb",
        )?;
        // Small servers: two run at once on a shared machine; fsync off, nothing here is kept.
        let conf = format!(
            "\nlisten_addresses = '{}'\nport = {PORT}\nunix_socket_directories = '{}'\nfsync = off\n\
             shared_buffers = 32MB\nmax_connections = 40\n",
            Self::addr(i),
            data.display()
        );
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(data.join("postgresql.conf"))
            .map_err(|e| e.to_string())?;
        std::io::Write::write_all(&mut f, conf.as_bytes()).map_err(|e| e.to_string())?;
        // Only the address this test gave the namespace.
        let mut hba = std::fs::OpenOptions::new()
            .append(true)
            .open(data.join("pg_hba.conf"))
            .map_err(|e| e.to_string())?;
        let rule = format!("\nhost all all {}/32 trust\n", Self::addr(i));
        std::io::Write::write_all(&mut hba, rule.as_bytes()).map_err(|e| e.to_string())?;
        let log = self.dir.path().join(format!("pg{i}.log"));
        run(
            self.pg(ns, "pg_ctl")
                .arg("-D")
                .arg(&data)
                .arg("-l")
                .arg(&log)
                .args(["-w", "-t", "60", "start"]),
            "pg_ctl start",
        )
        .map_err(|e| format!("{e}\n{}", std::fs::read_to_string(&log).unwrap_or_default()))?;
        run(
            self.pg(ns, "createdb")
                .args(["-h", &Self::addr(i), "-p", PORT, "-U", "oio", "oio"]),
            "createdb",
        )
    }

    /// oio inside host `i`'s namespace.
    fn oio_in(&self, i: usize, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns[i], env!("CARGO_BIN_EXE_oio")])
            .args(args)
            .env("NO_COLOR", "1")
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }
}

fn ok(c: &mut Command, limit: Duration, what: &str) -> (String, String) {
    let out = wait_bounded(c.spawn().expect("spawn"), limit);
    let (o, e) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{what}: {}\n{o}\n{e}", out.status);
    (o, e)
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn tpcc_on_two_postgres_hosts_sums_nopm_and_reports_scaling() {
    let Some(lab) = PgLab::new(2) else { return };
    let build = Duration::from_secs(600);
    for i in 0..2 {
        ok(
            &mut lab.oio_in(
                i,
                &[
                    "tpcc",
                    "build",
                    "--db",
                    &PgLab::url(i),
                    "-W",
                    "1",
                    "--workers",
                    "2",
                ],
            ),
            build,
            "tpcc build",
        );
    }
    // The one-host result the fleet is compared with.
    let base_dir = lab.dir.path().join("base");
    let (base_json, _) = ok(
        lab.oio_in(
            0,
            &[
                "tpcc",
                "run",
                "--db",
                &PgLab::url(0),
                "-n",
                "2",
                "--ramp",
                "0",
                "--time",
                "3s",
                "--device",
                "none",
                "--json",
                "--out",
            ],
        )
        .arg(&base_dir),
        Duration::from_secs(120),
        "tpcc run (one host)",
    );
    let base: Value = serde_json::from_str(&base_json).unwrap();
    let base_nopm = base["summary"]["nopm"].as_f64().unwrap();
    let base_file = std::fs::read_dir(&base_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("the one-host result file");

    let inv = lab.dir.path().join("inventory.toml");
    let mut t = String::new();
    for i in 0..2 {
        t.push_str(&format!(
            "[[host]]\nname = \"{}\"\ndb = \"{}\"\n",
            lab.ns[i],
            PgLab::url(i)
        ));
    }
    std::fs::write(&inv, t).unwrap();
    let out_dir = lab.dir.path().join("res");
    let mut c = Command::new(env!("CARGO_BIN_EXE_oio"));
    c.env("NO_COLOR", "1")
        .current_dir(lab.dir.path())
        .args(["fleet", "tpcc", "run", "--inventory"])
        .arg(&inv)
        .arg("--launcher")
        .arg(format!(
            "ip netns exec {{host}} '{}' agent --stdio",
            env!("CARGO_BIN_EXE_oio")
        ))
        .args(["-n", "2", "--ramp", "0", "--time", "4s", "--baseline"])
        .arg(&base_file)
        .arg("--out")
        .arg(&out_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (stdout, stderr) = ok(&mut c, Duration::from_secs(180), "fleet tpcc run");
    eprintln!("{stdout}{stderr}");
    assert!(stdout.contains("scaling efficiency: "), "{stdout}");
    let merged = stderr
        .lines()
        .find_map(|l| l.split_once("result: ").map(|(_, p)| p.trim()))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("no result path: {stderr}"));
    let doc = read_json(&merged);
    assert_eq!(doc["schema"], "oio.fleet.tpcc");
    assert_eq!(doc["stop_reason"], "completed", "{doc:#}");

    // Schema.
    let schema: Value =
        serde_json::from_str(include_str!("../../../schema/fleet-tpcc.schema.json")).unwrap();
    let v = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = v
        .iter_errors(&doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "not valid: {errors:#?}");

    // Merged NOPM is the sum of the hosts' own results, in total and per interval.
    let hosts = doc["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 2);
    // Two servers: two identities, nothing shared, so the sum is exact.
    assert_ne!(hosts[0]["db_identity"], hosts[1]["db_identity"]);
    assert!(hosts[0]["db_identity"].is_string());
    assert!(doc.get("shared_databases").is_none(), "{doc:#}");
    let mut sum_nopm = 0.0;
    let mut sum_no = 0;
    let mut host_docs = Vec::new();
    for h in hosts {
        assert_eq!(h["status"], "completed");
        let r = read_json(Path::new(h["result_file"].as_str().unwrap()));
        assert_eq!(r["schema"], "oio.tpcc");
        let nopm = r["summary"]["nopm"].as_f64().unwrap();
        assert!(nopm > 0.0, "host {} made no new orders", h["host"]);
        assert!(close(h["nopm"].as_f64().unwrap(), nopm));
        // Each host records the device under its own database beside its waits.
        let dev = &r["device"];
        assert!(
            dev.is_object() && dev["devices"].as_array().is_some_and(|d| !d.is_empty()),
            "host {} recorded no device: {} (warnings {})",
            h["host"],
            dev,
            r["warnings"]
        );
        assert!(r["waits"]["classes"].is_array(), "{}", r["waits"]);
        sum_nopm += nopm;
        sum_no += r["summary"]["new_orders"].as_u64().unwrap();
        host_docs.push(r);
    }
    let merged_nopm = doc["summary"]["nopm"].as_f64().unwrap();
    assert!(close(merged_nopm, sum_nopm), "{merged_nopm} vs {sum_nopm}");
    assert_eq!(doc["summary"]["new_orders"].as_u64().unwrap(), sum_no);
    let ivs = doc["intervals"].as_array().unwrap();
    let longest = host_docs
        .iter()
        .map(|r| r["intervals"].as_array().unwrap().len())
        .max()
        .unwrap();
    assert_eq!(ivs.len(), longest);
    for (k, m) in ivs.iter().enumerate() {
        let per_host: f64 = host_docs
            .iter()
            .filter_map(|r| r["intervals"].get(k))
            .map(|i| i["nopm"].as_f64().unwrap())
            .sum();
        let got = m["nopm"].as_f64().unwrap();
        assert!(close(got, per_host), "interval {k}: {got} vs {per_host}");
    }

    // Efficiency against the one-host result, recorded.
    let sc = &doc["scaling"];
    assert_eq!(sc["hosts"], 2);
    assert!(close(sc["baseline_nopm"].as_f64().unwrap(), base_nopm));
    let eff = sc["efficiency"].as_f64().unwrap();
    assert!(close(eff, merged_nopm / (2.0 * base_nopm)), "{eff}");
    eprintln!(
        "fleet tpcc: merged {merged_nopm:.1} NOPM over 2 hosts, one host {base_nopm:.1} NOPM, efficiency {eff:.3}"
    );
}

impl PgLab {
    /// Σ `d_next_o_id` of server 0's database, as the server counts it (psql in its namespace).
    fn next_order_ids(&self) -> u64 {
        let o = self
            .pg(&self.ns[0], "psql")
            .args([
                "-h",
                &Self::addr(0),
                "-p",
                PORT,
                "-U",
                "oio",
                "-d",
                "oio",
                "-Atc",
            ])
            .arg("SELECT sum(d_next_o_id) FROM district")
            .output()
            .expect("psql");
        assert!(
            o.status.success(),
            "psql: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout)
            .trim()
            .parse()
            .expect("a count")
    }
}

/// Issue 39: three namespace hosts drive one PostgreSQL database, each through its own
/// address (host 0 over TCP, hosts 1 and 2 over the server's Unix socket, one of them through
/// a symlinked directory: three different URLs). The server's identity groups them, so the
/// merged new orders are the database's own count once, not three times: within ±10 % of
/// what the server's `d_next_o_id` advanced by over the run (the run's window is inside it,
/// less the transactions in flight as it opened and closed), and the drivers' committed sum
/// agrees with it.
#[test]
fn three_hosts_on_one_postgres_database_count_its_new_orders_once() {
    let Some(lab) = PgLab::with_servers(3, 1) else {
        return;
    };
    ok(
        &mut lab.oio_in(
            0,
            &[
                "tpcc",
                "build",
                "--db",
                &PgLab::url(0),
                "-W",
                "1",
                "--workers",
                "2",
            ],
        ),
        Duration::from_secs(600),
        "tpcc build",
    );
    // The server's socket directory is its data directory; another name for it.
    let link = lab.dir.path().join("sock");
    std::os::unix::fs::symlink(lab.data(0), &link).unwrap();
    let socket = |d: &Path| {
        format!(
            "postgres://oio@{}/oio",
            d.display().to_string().replace('/', "%2F")
        )
    };
    let urls = [PgLab::url(0), socket(&lab.data(0)), socket(&link)];
    let inv = lab.dir.path().join("inventory.toml");
    let mut t = String::new();
    for (ns, url) in lab.ns.iter().zip(&urls) {
        t.push_str(&format!("[[host]]\nname = \"{ns}\"\ndb = \"{url}\"\n"));
    }
    std::fs::write(&inv, t).unwrap();
    let before = lab.next_order_ids();
    let mut c = Command::new(env!("CARGO_BIN_EXE_oio"));
    c.env("NO_COLOR", "1")
        .current_dir(lab.dir.path())
        .args(["fleet", "tpcc", "run", "--inventory"])
        .arg(&inv)
        .arg("--launcher")
        .arg(format!(
            "ip netns exec {{host}} '{}' agent --stdio",
            env!("CARGO_BIN_EXE_oio")
        ))
        .args([
            "-n", "2", "--ramp", "0", "--time", "4s", "--device", "none", "--out",
        ])
        .arg(lab.dir.path().join("res"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (stdout, stderr) = ok(&mut c, Duration::from_secs(180), "fleet tpcc run");
    let db_count = lab.next_order_ids() - before;
    eprintln!("{stdout}{stderr}");
    let merged = stderr
        .lines()
        .find_map(|l| l.split_once("result: ").map(|(_, p)| p.trim()))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("no result path: {stderr}"));
    let doc = read_json(&merged);
    let hosts = doc["hosts"].as_array().unwrap();
    let ids: Vec<&str> = hosts
        .iter()
        .map(|h| {
            h["db_identity"]
                .as_str()
                .expect("each host read the identity")
        })
        .collect();
    assert!(
        ids.iter()
            .all(|i| *i == ids[0] && i.starts_with("postgres:")),
        "{ids:?}"
    );
    let shared = doc["shared_databases"]
        .as_array()
        .expect("one shared database");
    assert_eq!(shared.len(), 1, "{shared:?}");
    let d = &shared[0];
    assert_eq!(d["hosts"].as_array().unwrap().len(), 3);
    assert_eq!(d["agree"], true, "{d:#}");
    let merged_no = doc["summary"]["new_orders"].as_u64().unwrap();
    let client_no = d["client_new_orders"].as_u64().unwrap();
    // Each host's own reading is the whole database's: the merge takes one of them.
    let reading = hosts
        .iter()
        .find(|h| h["host"] == d["reading_host"])
        .unwrap();
    assert_eq!(merged_no, reading["new_orders"].as_u64().unwrap());
    let within = |got: u64| (got as f64 - db_count as f64).abs() <= 0.1 * db_count as f64;
    eprintln!(
        "shared database: merged {merged_no} new orders ({:.1} NOPM), the server's count {db_count}, the drivers' sum {client_no} ({:.1} NOPM)",
        doc["summary"]["nopm"].as_f64().unwrap(),
        d["client_nopm"].as_f64().unwrap()
    );
    assert!(db_count > 0);
    assert!(
        within(merged_no),
        "merged {merged_no} vs the server's {db_count}"
    );
    assert!(
        within(client_no),
        "drivers {client_no} vs the server's {db_count}"
    );
    // A sum over hosts would have counted it three times.
    let summed: u64 = hosts
        .iter()
        .map(|h| h["new_orders"].as_u64().unwrap())
        .sum();
    assert!(
        summed as f64 > 2.5 * db_count as f64,
        "{summed} vs {db_count}"
    );
    assert!(stdout.contains("shared database postgres:"), "{stdout}");
}
