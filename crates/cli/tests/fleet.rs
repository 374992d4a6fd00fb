//! `oio fleet` over real SSH: three "hosts" as network namespaces, each running its own sshd,
//! joined to a controller namespace by veth pairs (a star) with addresses from 198.18.0.0/15
//! only; the controller's ssh runs inside the controller namespace, so nothing is added to
//! the machine's own network. One host's link is slowed with delay and jitter (tc netem, or,
//! on a kernel without netem, a delaying TCP relay in this test process inside the controller
//! namespace). Namespaces (and with them the veths), sshd and every process started in them
//! are removed when the lab is dropped, also on failure.

use crate::common::{is_root, missing, scratch};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const HOSTS: usize = 3;
/// One-way delay and jitter of the slow host's link, ms.
const DELAY_MS: u64 = 10;
const JITTER_MS: u64 = 3;

pub(crate) fn sh(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

struct Lab {
    ctl: String,
    hosts: Vec<String>,
    sshd: Vec<Child>,
    dir: tempfile::TempDir,
    relay_stop: Arc<AtomicBool>,
    relay: Option<std::thread::JoinHandle<()>>,
    slow: &'static str,
    /// Hosts to build (the last one's link is slowed).
    n: usize,
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.relay_stop.store(true, Ordering::SeqCst);
        for c in &mut self.sshd {
            let _ = c.kill();
            let _ = c.wait();
        }
        // Whatever still runs in the hosts (sshd sessions, agents) was started by this test.
        for ns in &self.hosts {
            for pid in pids_in(ns) {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            }
        }
        for ns in self.hosts.iter().chain([&self.ctl]) {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        if let Some(r) = self.relay.take() {
            let _ = r.join();
        }
    }
}

pub(crate) fn pids_in(ns: &str) -> Vec<u32> {
    Command::new("ip")
        .args(["netns", "pids", ns])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// oio processes (agents) running in a namespace.
fn agents_in(ns: &str) -> Vec<u32> {
    pids_in(ns)
        .into_iter()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "oio")
        })
        .collect()
}

impl Lab {
    /// Builds the lab, or says what is missing and returns None.
    fn new(tag: &str) -> Option<Lab> {
        Self::with_hosts(tag, HOSTS)
    }

    /// [`Lab::new`] with `n` hosts.
    fn with_hosts(tag: &str, n: usize) -> Option<Lab> {
        if !is_root() {
            missing("root (network namespaces, sshd)");
            return None;
        }
        for (tool, pkg) in [
            ("/usr/sbin/sshd", "sshd (openssh-server)"),
            ("/usr/bin/ssh", "ssh (openssh-client)"),
            ("/usr/bin/ssh-keygen", "ssh-keygen (openssh-client)"),
        ] {
            if !Path::new(tool).exists() {
                missing(pkg);
                return None;
            }
        }
        if Command::new("ip").arg("-V").output().is_err() {
            missing("ip (iproute2)");
            return None;
        }
        // Unique within this process too: two tests of one tag run at once (a shared name made
        // the second's `ip netns add` fail with "File exists").
        static LABS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n_lab = LABS.fetch_add(1, Ordering::Relaxed);
        let id = format!("oio{tag}{}n{n_lab}", std::process::id());
        let mut lab = Lab {
            ctl: String::new(),
            hosts: Vec::new(),
            sshd: Vec::new(),
            dir: scratch(),
            relay_stop: Arc::new(AtomicBool::new(false)),
            relay: None,
            slow: "",
            n,
        };
        if let Err(e) = lab.build(&id) {
            if e.starts_with("ip netns add") {
                missing(&format!("network namespaces: {e}"));
                return None;
            }
            panic!("building the lab: {e}");
        }
        Some(lab)
    }

    fn build(&mut self, id: &str) -> Result<(), String> {
        let ctl = format!("{id}c");
        sh(&["ip", "netns", "add", &ctl])?;
        self.ctl = ctl.clone();
        sh(&["ip", "-n", &ctl, "link", "set", "lo", "up"])?;
        let d = self.dir.path().to_path_buf();
        let key = |name: &str| -> Result<String, String> {
            let p = d.join(name);
            sh(&[
                "ssh-keygen",
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-f",
                p.to_str().unwrap(),
            ])?;
            std::fs::read_to_string(p.with_extension("pub")).map_err(|e| e.to_string())
        };
        let user_pub = key("id")?;
        std::fs::write(d.join("authorized_keys"), &user_pub).map_err(|e| e.to_string())?;
        let host_pub = key("host_key")?;
        // sshd checks for its privilege separation directory even when it never uses it.
        let _ = std::fs::create_dir_all("/run/sshd");
        let mut ssh_config = String::new();
        let mut known = String::new();
        for i in 0..self.n {
            let ns = format!("{id}h{i}");
            sh(&["ip", "netns", "add", &ns])?;
            self.hosts.push(ns.clone());
            sh(&["ip", "-n", &ns, "link", "set", "lo", "up"])?;
            let c = format!("c{i}");
            sh(&[
                "ip", "-n", &ctl, "link", "add", &c, "type", "veth", "peer", "name", "eth0",
                "netns", &ns,
            ])?;
            sh(&[
                "ip",
                "-n",
                &ctl,
                "addr",
                "add",
                &format!("198.18.{i}.1/24"),
                "dev",
                &c,
            ])?;
            sh(&["ip", "-n", &ctl, "link", "set", &c, "up"])?;
            sh(&[
                "ip",
                "-n",
                &ns,
                "addr",
                "add",
                &format!("198.18.{i}.2/24"),
                "dev",
                "eth0",
            ])?;
            sh(&["ip", "-n", &ns, "link", "set", "eth0", "up"])?;
            let cfg = d.join(format!("sshd{i}.conf"));
            std::fs::write(
                &cfg,
                format!(
                    "ListenAddress 198.18.{i}.2:22\nHostKey {hk}\nPidFile {pid}\nAuthorizedKeysFile {ak}\n\
                     StrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                     PubkeyAuthentication yes\nPermitRootLogin prohibit-password\nLogLevel ERROR\nMaxStartups 50\n",
                    hk = d.join("host_key").display(),
                    pid = d.join(format!("sshd{i}.pid")).display(),
                    ak = d.join("authorized_keys").display(),
                ),
            )
            .map_err(|e| e.to_string())?;
            let log =
                std::fs::File::create(d.join(format!("sshd{i}.log"))).map_err(|e| e.to_string())?;
            let child = Command::new("ip")
                .args(["netns", "exec", &ns, "/usr/sbin/sshd", "-D", "-e", "-f"])
                .arg(&cfg)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .map_err(|e| format!("starting sshd: {e}"))?;
            self.sshd.push(child);
            let slow = i == self.n - 1;
            let (addr, port) = if slow {
                (format!("198.18.{i}.1"), 2222)
            } else {
                (format!("198.18.{i}.2"), 22)
            };
            ssh_config.push_str(&format!(
                "Host h{i}\n  HostName {addr}\n  Port {port}\n  HostKeyAlias h{i}\n"
            ));
            known.push_str(&format!("h{i} {host_pub}"));
        }
        ssh_config.push_str(&format!(
            "Host *\n  User root\n  IdentityFile {}\n  IdentitiesOnly yes\n  UserKnownHostsFile {}\n  \
             GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  BatchMode yes\n  \
             ConnectTimeout 10\n  LogLevel ERROR\n  ControlMaster no\n",
            d.join("id").display(),
            d.join("known_hosts").display()
        ));
        std::fs::write(d.join("ssh_config"), ssh_config).map_err(|e| e.to_string())?;
        std::fs::write(d.join("known_hosts"), known).map_err(|e| e.to_string())?;
        self.slow_down(self.n - 1)?;
        for i in 0..self.n {
            self.wait_for_ssh(i)?;
        }
        Ok(())
    }

    /// Delay and jitter on host `i`'s link, both ways; its ssh goes through 198.18.i.1:2222.
    fn slow_down(&mut self, i: usize) -> Result<(), String> {
        let netem = format!("{DELAY_MS}ms");
        let jitter = format!("{JITTER_MS}ms");
        let c = format!("c{i}");
        let tc = sh(&[
            "tc", "-n", &self.ctl, "qdisc", "add", "dev", &c, "root", "netem", "delay", &netem,
            &jitter,
        ])
        .and_then(|()| {
            sh(&[
                "tc",
                "-n",
                &self.hosts[i],
                "qdisc",
                "add",
                "dev",
                "eth0",
                "root",
                "netem",
                "delay",
                &netem,
                &jitter,
            ])
        });
        let target = format!("198.18.{i}.2:22");
        let listen = format!("198.18.{i}.1:2222");
        let ctl = self.ctl.clone();
        let stop = Arc::clone(&self.relay_stop);
        let (delay, jit) = match tc {
            // netem delays the packets; the relay only forwards.
            Ok(()) => {
                self.slow = "tc netem";
                (0, 0)
            }
            Err(e) => {
                eprintln!("tc netem is not available ({e}): delaying host h{i} with a relay in this test instead");
                self.slow = "a delaying TCP relay (this kernel has no netem)";
                (DELAY_MS * 1000, JITTER_MS * 1000)
            }
        };
        let (tx, rx) = std::sync::mpsc::channel();
        self.relay = Some(std::thread::spawn(move || {
            relay(&ctl, &listen, &target, delay, jit, &stop, tx)
        }));
        rx.recv_timeout(Duration::from_secs(10))
            .map_err(|_| "the relay did not start".to_string())?
    }

    fn wait_for_ssh(&self, i: usize) -> Result<(), String> {
        let mut last = String::new();
        for _ in 0..100 {
            let out = self
                .ssh_cmd(&format!("h{i}"), &["true"])
                .output()
                .map_err(|e| e.to_string())?;
            if out.status.success() {
                return Ok(());
            }
            last = String::from_utf8_lossy(&out.stderr).into_owned();
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(format!("ssh to h{i} never worked: {last}"))
    }

    fn ssh_cmd(&self, host: &str, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ctl, "ssh", "-F"])
            .arg(self.dir.path().join("ssh_config"))
            .arg(host)
            .args(args);
        c
    }

    fn launcher(&self) -> String {
        format!(
            "ip netns exec {} ssh -F '{}' {{host}} '{}' agent --stdio",
            self.ctl,
            self.dir.path().join("ssh_config").display(),
            env!("CARGO_BIN_EXE_oio")
        )
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// An inventory giving each host its own target file in the lab's directory.
    fn inventory(&self) -> PathBuf {
        let mut t = String::new();
        for i in 0..self.hosts.len() {
            t.push_str(&format!(
                "[[host]]\nname = \"h{i}\"\ntargets = [\"{}\"]\n",
                self.path(&format!("t{i}.dat")).display()
            ));
        }
        let p = self.path("inventory.toml");
        std::fs::write(&p, t).unwrap();
        p
    }

    fn fleet(&self, args: &[&str]) -> Command {
        self.fleet_with(&self.inventory(), args)
    }

    /// `oio fleet run` with this inventory.
    fn fleet_with(&self, inventory: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_oio"));
        c.env("NO_COLOR", "1")
            .current_dir(self.dir.path())
            .args(["fleet", "run", "--inventory"])
            .arg(inventory)
            .arg("--launcher")
            .arg(self.launcher())
            .args(["--out"])
            .arg(self.path("res"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }
}

/// Accepts connections on `listen` inside namespace `ns` and forwards each to `target`,
/// holding every chunk back by `delay_us` plus up to `jitter_us` (in order, as a link would).
fn relay(
    ns: &str,
    listen: &str,
    target: &str,
    delay_us: u64,
    jitter_us: u64,
    stop: &AtomicBool,
    ready: std::sync::mpsc::Sender<Result<(), String>>,
) {
    let enter = || -> Result<TcpListener, String> {
        let f = std::fs::File::open(format!("/run/netns/{ns}")).map_err(|e| e.to_string())?;
        rustix::thread::move_into_link_name_space(
            std::os::fd::AsFd::as_fd(&f),
            Some(rustix::thread::LinkNameSpaceType::Network),
        )
        .map_err(|e| format!("setns: {e}"))?;
        let l = TcpListener::bind(listen).map_err(|e| format!("bind {listen}: {e}"))?;
        l.set_nonblocking(true).map_err(|e| e.to_string())?;
        Ok(l)
    };
    let l = match enter() {
        Ok(l) => {
            let _ = ready.send(Ok(()));
            l
        }
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    while !stop.load(Ordering::SeqCst) {
        match l.accept() {
            Ok((client, _)) => {
                // This thread is in the namespace, so the outgoing socket is too.
                let Ok(server) = TcpStream::connect(target) else {
                    continue;
                };
                let _ = client.set_nonblocking(false);
                for (from, to) in [
                    (client.try_clone(), server.try_clone()),
                    (server.try_clone(), client.try_clone()),
                ] {
                    let (Ok(from), Ok(to)) = (from, to) else {
                        continue;
                    };
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                    let s = seed;
                    std::thread::spawn(move || pump(from, to, delay_us, jitter_us, s));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(_) => return,
        }
    }
}

/// Copies one direction, releasing each chunk at its due time.
fn pump(mut from: TcpStream, mut to: TcpStream, delay_us: u64, jitter_us: u64, mut seed: u64) {
    let (tx, rx) = std::sync::mpsc::channel::<(Instant, Vec<u8>)>();
    let writer = std::thread::spawn(move || {
        for (due, data) in rx {
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            if to.write_all(&data).is_err() {
                break;
            }
        }
        let _ = to.shutdown(std::net::Shutdown::Write);
    });
    let mut last = Instant::now();
    let mut buf = [0u8; 16384];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 {
            break;
        }
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let jitter = if jitter_us > 0 {
            seed % (2 * jitter_us)
        } else {
            0
        };
        let due = (Instant::now() + Duration::from_micros(delay_us + jitter))
            .checked_sub(Duration::from_micros(jitter_us.min(delay_us)))
            .unwrap_or_else(Instant::now)
            .max(last);
        last = due;
        if tx.send((due, buf[..n].to_vec())).is_err() {
            break;
        }
    }
    drop(tx);
    let _ = writer.join();
}

/// Waits for a child with a bound, killing it past the bound; its output is read meanwhile
/// (a full pipe would otherwise stop it).
/// `oio fleet SUB` in `dir` on hosts `a` and `b`, each a local agent (no network).
fn local_agents(dir: &Path, sub: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_oio"));
    c.env("NO_COLOR", "1")
        .current_dir(dir)
        .args(["fleet", sub, "--hosts", "a,b", "--launcher"])
        .arg(format!(
            "env OIO_HOST={{host}} '{}' agent --stdio",
            env!("CARGO_BIN_EXE_oio")
        ));
    c
}

pub(crate) fn wait_bounded(mut c: Child, limit: Duration) -> Output {
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut v);
            }
            v
        })
    };
    let out = drain(c.stdout.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let err = drain(c.stderr.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let deadline = Instant::now() + limit;
    let status = loop {
        match c.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            _ => {
                let _ = c.kill();
                break c.wait().expect("wait");
            }
        }
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

fn assert_fleet_schema(doc: &Value) {
    let schema: Value =
        serde_json::from_str(include_str!("../../../schema/fleet.schema.json")).unwrap();
    let v = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "not valid against schema/fleet.schema.json: {errors:#?}"
    );
}

fn buckets(h: &Value) -> BTreeMap<u64, u64> {
    h["buckets"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|b| (b[0].as_u64().unwrap(), b[1].as_u64().unwrap()))
                .collect()
        })
        .unwrap_or_default()
}

fn sum_buckets<'a>(hs: impl Iterator<Item = &'a Value>) -> BTreeMap<u64, u64> {
    let mut out = BTreeMap::new();
    for h in hs {
        for (v, n) in buckets(h) {
            *out.entry(v).or_default() += n;
        }
    }
    out
}

fn read_json(p: &str) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn no_agents_left(lab: &Lab) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left: Vec<(String, Vec<u32>)> = lab
            .hosts
            .iter()
            .map(|h| (h.clone(), agents_in(h)))
            .filter(|(_, p)| !p.is_empty())
            .collect();
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "agents still running: {left:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn three_hosts_over_ssh_start_together_and_merge_exactly() {
    let Some(lab) = Lab::new("a") else { return };
    let probe = crate::common::WakeProbe::start();
    let c = lab
        .fleet(&[
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--qd",
            "4",
            "--engine",
            "sync",
            "--size",
            "4M",
            "--time",
            "3s",
            "--ramp",
            "0s",
            "--interval",
            "1s",
            "--json",
        ])
        .spawn()
        .unwrap();
    let out = wait_bounded(c, Duration::from_secs(120));
    // A start is as punctual as the machine wakes threads: 5 ms, plus twice the worst
    // wake-up delay seen while the fleet ran (a busy machine delays the agents alike).
    let late = probe.stop();
    let skew_bound = 5_000_000 + 2 * late.as_nanos() as i64;
    println!("worst wake-up delay during the run: {late:?}; skew bound {skew_bound} ns");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "oio fleet run failed: {stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document on stdout");
    assert_eq!(doc["schema"], "oio.fleet");
    assert_eq!(doc["partial"], false);
    assert_fleet_schema(&doc);
    let hosts = doc["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), HOSTS);
    println!("slow link on h{}: {}", HOSTS - 1, lab.slow);
    let mut per_host = Vec::new();
    for h in hosts {
        let skew = h["start_skew_ns"].as_i64().expect("a measured skew");
        let offset = h["clock_offset_ns"].as_i64().unwrap();
        let rtt = h["clock_rtt_ns"].as_i64().unwrap();
        println!(
            "{}: start skew {:.3} ms, clock offset {:.3} ms ± {:.3} ms, {:.0} IOPS",
            h["host"],
            skew as f64 / 1e6,
            offset as f64 / 1e6,
            rtt as f64 / 2e6,
            h["iops"].as_f64().unwrap()
        );
        assert!(
            skew.abs() < skew_bound,
            "start skew of {}: {skew} ns (bound {skew_bound} ns)",
            h["host"]
        );
        // Every namespace shares this kernel's clock: the true offset is 0, so the estimate
        // must be within the uncertainty it states, and the true skew is skew + offset.
        assert!(offset.abs() <= rtt / 2 + 1_000_000, "{h}");
        assert!(
            (skew + offset).abs() < skew_bound,
            "true skew of {}",
            h["host"]
        );
        let own = read_json(h["result_file"].as_str().unwrap());
        crate::run::assert_valid(&own);
        per_host.push(own);
    }
    let slow_rtt = hosts[HOSTS - 1]["clock_rtt_ns"].as_i64().unwrap();
    assert!(
        slow_rtt >= 2 * (DELAY_MS as i64 - JITTER_MS as i64) * 1_000_000,
        "the slow host's round trip {slow_rtt} ns shows no delay"
    );
    // Merged histogram == sum of the three hosts' histograms, bucket by bucket, in total and
    // per interval; total IOPS == sum of the hosts'.
    let merged_total = buckets(&doc["summary"]["total"]["histogram"]);
    assert!(!merged_total.is_empty());
    assert_eq!(
        merged_total,
        sum_buckets(per_host.iter().map(|r| &r["summary"]["total"]["histogram"]))
    );
    let sum_iops: f64 = per_host
        .iter()
        .map(|r| r["summary"]["total"]["iops"].as_f64().unwrap())
        .sum();
    let iops = doc["summary"]["total"]["iops"].as_f64().unwrap();
    assert!(
        (iops - sum_iops).abs() <= 1e-9 * sum_iops,
        "{iops} vs {sum_iops}"
    );
    let ios: u64 = per_host
        .iter()
        .map(|r| r["summary"]["total"]["ios"].as_u64().unwrap())
        .sum();
    assert_eq!(doc["summary"]["total"]["ios"].as_u64().unwrap(), ios);
    let intervals = doc["intervals"].as_array().unwrap();
    assert!(intervals.len() >= 3, "{} intervals", intervals.len());
    for (i, iv) in intervals.iter().enumerate() {
        let want = sum_buckets(
            per_host
                .iter()
                .filter_map(|r| r["intervals"].get(i))
                .map(|x| &x["total"]["histogram"]),
        );
        assert_eq!(buckets(&iv["total"]["histogram"]), want, "interval {i}");
    }
    no_agents_left(&lab);
}

#[test]
fn a_refusal_on_one_host_starts_nothing_anywhere() {
    let Some(lab) = Lab::new("b") else { return };
    // A file oio did not create, where h1's workload would write.
    let foreign: Vec<u8> = (0..(4u32 << 20)).map(|i| (i % 251) as u8).collect();
    std::fs::write(lab.path("t1.dat"), &foreign).unwrap();
    let c = lab
        .fleet(&[
            "--rw",
            "randwrite",
            "--bs",
            "4k",
            "--qd",
            "2",
            "--engine",
            "sync",
            "--size",
            "4M",
            "--time",
            "2s",
            "--ramp",
            "0s",
        ])
        .spawn()
        .unwrap();
    let out = wait_bounded(c, Duration::from_secs(120));
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stderr}");
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("host h1"), "{stderr}");
    assert!(stderr.contains("refusing to write"), "{stderr}");
    assert!(
        stderr.contains("nothing was started on any host"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(lab.path("t1.dat")).unwrap(), foreign);
    // `oio fleet check` says the same without creating anything. (h0's prepare may have
    // made its file before h1 refused, or been stopped while filling it.)
    let _ = std::fs::remove_file(lab.path("t0.dat"));
    let out = Command::new(env!("CARGO_BIN_EXE_oio"))
        .env("NO_COLOR", "1")
        .args(["fleet", "check", "--inventory"])
        .arg(lab.inventory())
        .arg("--launcher")
        .arg(lab.launcher())
        .args(["--rw", "randwrite", "--size", "4M"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    println!("{text}");
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("h0: oio "), "{text}");
    assert!(text.contains("  create "), "{text}");
    assert!(
        text.contains("  refused ") && text.contains("t1.dat"),
        "{text}"
    );
    assert!(!lab.path("t0.dat").exists(), "check created a file");
    let results: Vec<_> = walk_json(&lab.path("res"));
    assert!(results.is_empty(), "results were written: {results:?}");
    no_agents_left(&lab);
}

pub(crate) fn walk_json(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk_json(&p));
        } else if p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
    out
}

#[test]
fn losing_one_agent_mid_run_makes_a_partial_result_and_stops_the_others() {
    let Some(lab) = Lab::new("k") else { return };
    let t0 = Instant::now();
    let c = lab
        .fleet(&[
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--qd",
            "2",
            "--engine",
            "sync",
            "--size",
            "4M",
            "--time",
            "60s",
            "--ramp",
            "0s",
            "--interval",
            "500ms",
            "--json",
        ])
        .spawn()
        .unwrap();
    // Wait for h1's agent to be measuring (bounded), then kill it.
    let deadline = Instant::now() + Duration::from_secs(60);
    let victim = loop {
        let a = agents_in(&lab.hosts[1]);
        if let Some(&p) = a.first() {
            break p;
        }
        assert!(Instant::now() < deadline, "h1's agent never started");
        std::thread::sleep(Duration::from_millis(50));
    };
    // The agent exists from the handshake on; give it time to prepare and measure a while.
    std::thread::sleep(Duration::from_millis(4000));
    let killed_at = t0.elapsed();
    sh(&["kill", "-9", &victim.to_string()]).unwrap();
    let out = wait_bounded(c, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        t0.elapsed() < killed_at + Duration::from_secs(25),
        "the others did not stop: {:?} after the kill",
        t0.elapsed() - killed_at
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document on stdout");
    assert_fleet_schema(&doc);
    assert_eq!(doc["partial"], true);
    assert_eq!(doc["stop_reason"], "errors");
    let lost = doc["lost"].as_array().unwrap();
    assert_eq!(lost.len(), 1, "{lost:?}");
    assert!(
        lost[0].as_str().unwrap().starts_with("host h1 was lost"),
        "{lost:?}"
    );
    let h1 = &doc["hosts"][1];
    assert_eq!(h1["status"], "lost");
    assert!(h1["lost"]["at_s"].as_f64().unwrap() > 0.0, "{h1}");
    assert!(
        h1["intervals"].as_u64().unwrap() >= 1,
        "h1's streamed intervals are kept: {h1}"
    );
    for i in [0, 2] {
        assert_eq!(
            doc["hosts"][i]["status"], "interrupted",
            "{}",
            doc["hosts"][i]
        );
    }
    no_agents_left(&lab);
}

/// Issue 22 item 17: Ctrl-C at a terminal during `oio fleet run` reaches the controller's
/// process group only (each ssh runs in its own): the controller stops every agent through the
/// protocol, keeps their partial results and per-host files, and exits 130; no host is "lost".
#[test]
fn ctrl_c_at_a_terminal_stops_every_host_and_keeps_their_results() {
    use std::os::unix::process::CommandExt as _;
    let Some(lab) = Lab::new("s") else { return };
    let mut cmd = lab.fleet(&[
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--qd",
        "2",
        "--engine",
        "sync",
        "--size",
        "4M",
        "--time",
        "120s",
        "--ramp",
        "0s",
        "--interval",
        "500ms",
        "--json",
    ]);
    // A job of its own, as a shell makes it: the terminal's SIGINT goes to the whole group.
    cmd.process_group(0);
    let c = cmd.spawn().unwrap();
    let pgid = c.id();
    // Measuring on every host once each agent runs the engine's workers.
    let deadline = Instant::now() + Duration::from_secs(60);
    for (i, ns) in lab.hosts.iter().enumerate() {
        loop {
            if agents_in(ns)
                .into_iter()
                .any(crate::fleet_hardening::measuring)
            {
                break;
            }
            assert!(Instant::now() < deadline, "h{i} never started measuring");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    // To the group, as a terminal sends it (not through kill(1): procps' `kill -INT -PGID`
    // does not take -PGID as a group).
    rustix::process::kill_process_group(
        rustix::process::Pid::from_raw(pgid as i32).expect("a pid"),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let t = Instant::now();
    let out = wait_bounded(c, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stderr}\nended {:?} after Ctrl-C", t.elapsed());
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("the merged result");
    assert_fleet_schema(&doc);
    assert_eq!(doc["partial"], true);
    assert!(doc["lost"].as_array().unwrap().is_empty(), "{doc:#}");
    for h in doc["hosts"].as_array().unwrap() {
        assert_eq!(h["status"], "interrupted", "{h}");
        let own = read_json(h["result_file"].as_str().expect("a per-host file"));
        crate::run::assert_valid(&own);
        assert_eq!(own["stop_reason"], "interrupted", "{own}");
    }
    no_agents_left(&lab);
}

/// A 120 s read plan of one 1 MiB file made by oio, sync engine, 200 ms intervals.
fn pipe_plan(target: &Path, lat_log: Option<PathBuf>) -> oio_engine::RunPlan {
    oio_engine::RunPlan {
        workload: oio_core::profiles::profile("oltp-data").unwrap(),
        bindings: vec![oio_engine::TargetBinding {
            role: String::new(),
            paths: vec![target.to_path_buf()],
        }],
        target_options: oio_engine::TargetOptions {
            write: false,
            direct: false,
            size: Some(1 << 20),
            allow_overwrite: false,
            destroy_data: false,
            fill_seed: 0,
            wait: false,
        },
        engine: oio_engine::EngineKind::Sync,
        submit: oio_engine::SubmitMode::PerIo,
        time: Duration::from_secs(120),
        ramp: Duration::ZERO,
        interval: Duration::from_millis(200),
        seed: 1,
        latency_tracking: true,
        io_limit: None,
        verify: false,
        track_order: false,
        sim: None,
        lat_log,
        hdr_log: None,
        memory_limit: None,
    }
}

type Next = Box<
    dyn FnMut() -> Result<Option<oio_fleet::protocol::Message>, oio_fleet::protocol::ReadError>,
>;

/// `oio agent --stdio` on pipes, past its hello and given `plan`: the agent, its stdin, and
/// its next message that is not progress (the fill's, the keepalive's, which may come
/// between any two).
fn pipe_agent(plan: oio_engine::RunPlan) -> (Child, std::process::ChildStdin, Next) {
    use oio_fleet::protocol::{send, Hello, Message, Reader};
    let mut agent = Command::new(env!("CARGO_BIN_EXE_oio"))
        .args(["agent", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut w = agent.stdin.take().unwrap();
    let mut r = Reader::new(std::io::BufReader::new(agent.stdout.take().unwrap()));
    let version = String::from_utf8(
        Command::new(env!("CARGO_BIN_EXE_oio"))
            .arg("--version")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let version = version.trim().trim_start_matches("oio ").to_string();
    send(&mut w, &Message::Hello(Hello::current(&version))).unwrap();
    assert!(matches!(r.next_message(), Ok(Some(Message::Hello(_)))));
    send(
        &mut w,
        &Message::Prepare {
            plan: Box::new(plan),
        },
    )
    .unwrap();
    let next = move || loop {
        match r.next_message() {
            Ok(Some(Message::Progress { .. })) => continue,
            other => return other,
        }
    };
    (agent, w, Box::new(next))
}

/// An agent opens its targets for the run only on `arm`, after every host was accepted, and
/// says `armed` from the engine's start gate, its targets open and its logs made: the lead
/// before the start instant carries only `go`, however long opening takes on a busy host (a
/// CI run beside two busy loops started a host 260 ms late, opening after `go`). A stop at
/// the gate ends the session: no start, no result.
#[test]
fn an_agent_arms_before_go_and_a_stop_at_the_gate_runs_nothing() {
    use oio_fleet::protocol::{send, Message};
    let dir = scratch();
    let target = dir.path().join("t.dat");
    let prefix = dir.path().join("gate");
    let (agent, mut w, mut next) = pipe_agent(pipe_plan(&target, Some(prefix.clone())));
    match next() {
        Ok(Some(Message::Ready { targets, .. })) => assert!(targets[0].created_by_oio),
        other => panic!("expected ready, got {other:?}"),
    }
    let log = PathBuf::from(format!("{}_lat.1.log", prefix.display()));
    assert!(!log.exists(), "{} made before arm", log.display());
    send(&mut w, &Message::Arm).unwrap();
    match next() {
        Ok(Some(Message::Armed)) => {}
        other => panic!("expected armed, got {other:?}"),
    }
    assert!(
        log.exists(),
        "armed before the engine made {}",
        log.display()
    );
    send(
        &mut w,
        &Message::Stop {
            reason: "another host failed".into(),
        },
    )
    .unwrap();
    let mut after = Vec::new();
    while let Ok(Some(m)) = next() {
        after.push(m.name().to_string());
    }
    let status = wait_bounded(agent, Duration::from_secs(30)).status;
    assert!(status.success(), "{status}");
    assert!(
        after.iter().all(|m| m != "started" && m != "result"),
        "a stop at the gate ran: {after:?}"
    );
}

/// The agent alone on pipes: after `go`, closing its stdin (the controller gone) stops its I/O
/// at once and it exits; the file it made is sealed as oio's (a later run may write it).
#[test]
fn an_agent_stops_at_once_when_its_controller_goes() {
    use oio_fleet::protocol::{send, Message};
    let dir = scratch();
    let target = dir.path().join("t.dat");
    let (agent, mut w, mut next) = pipe_agent(pipe_plan(&target, None));
    match next() {
        Ok(Some(Message::Ready { targets, .. })) => assert!(targets[0].created_by_oio),
        other => panic!("expected ready, got {other:?}"),
    }
    send(&mut w, &Message::Arm).unwrap();
    assert!(matches!(next(), Ok(Some(Message::Armed))));
    send(
        &mut w,
        &Message::Go {
            start_agent_ns: oio_fleet::protocol::now_ns(),
        },
    )
    .unwrap();
    assert!(matches!(next(), Ok(Some(Message::Started { .. }))));
    // Measuring: at least one interval arrives.
    assert!(matches!(next(), Ok(Some(Message::Interval(_)))));
    let t = Instant::now();
    drop(w);
    let status = wait_bounded(agent, Duration::from_secs(30)).status;
    println!(
        "agent exited {:?} after its stdin closed ({status})",
        t.elapsed()
    );
    // No watchdog is armed (this controller never beats), so only the end of its stdin can
    // stop the agent before the plan's 120 s: anything well short of that is "at once", also
    // on a loaded machine where exiting takes seconds.
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    // It stopped cleanly: the file is sealed as oio's, so a writing run may use it.
    let out = Command::new(env!("CARGO_BIN_EXE_oio"))
        .args([
            "run",
            "--rw",
            "randwrite",
            "--bs",
            "4k",
            "--engine",
            "null",
            "--time",
            "100ms",
            "--ramp",
            "0s",
            "--buffered",
            "--out",
        ])
        .arg(dir.path().join("res"))
        .arg(&target)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An agent refuses a controller of another oio version with a message saying what to do.
#[test]
fn an_agent_refuses_another_version() {
    use oio_fleet::protocol::{send, Hello, Message, Reader};
    let mut agent = Command::new(env!("CARGO_BIN_EXE_oio"))
        .args(["agent", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut w = agent.stdin.take().unwrap();
    let mut r = Reader::new(std::io::BufReader::new(agent.stdout.take().unwrap()));
    send(
        &mut w,
        &Message::Hello(Hello::current("0.0.1 (commit 0000000)")),
    )
    .unwrap();
    match r.next_message() {
        Ok(Some(Message::Error { phase, message })) => {
            assert_eq!(phase, "hello");
            // Worded from the user's side (the controller), though the agent refused.
            assert!(
                message.starts_with("it runs oio ")
                    && message.contains(", this controller runs oio 0.0.1 (commit 0000000): "),
                "{message}"
            );
            assert!(
                message.contains("install the same oio on every host"),
                "{message}"
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let out = wait_bounded(agent, Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(2));
}

/// A launcher of local agents (no network) in `dir`: host `cut` behaves as a host whose link
/// is cut after its second interval: nothing more reaches the controller while its agent runs
/// on (its output is read and dropped) to the end of the run, when the pipe closes.
fn cut_launcher(dir: &Path) -> String {
    let script = dir.join("launch.sh");
    std::fs::write(
        &script,
        format!(
            r#"OIO='{oio}'
if [ "$1" = cut ]; then
  "$OIO" agent --stdio | {{
    n=0
    while [ "$n" -lt 2 ] && IFS= read -r l; do
      case $l in *'"msg":"interval"'*) n=$((n+1)) ;; esac
      printf '%s\n' "$l"
    done
    exec cat >/dev/null
  }}
  exit 0
fi
exec "$OIO" agent --stdio
"#,
            oio = env!("CARGO_BIN_EXE_oio")
        ),
    )
    .unwrap();
    format!("sh '{}' {{host}}", script.display())
}

/// Issue 21: a host lost part-way adds its I/Os up to its last message, over the window the
/// merged rates state; its loss is dated from that message, not from when it was noticed.
#[test]
fn a_host_cut_mid_run_counts_up_to_its_last_message_over_the_stated_window() {
    let dir = scratch();
    let mut inv = String::new();
    for h in ["a", "b", "cut"] {
        inv.push_str(&format!(
            "[[host]]\nname = \"{h}\"\ntargets = [\"{}\"]\n",
            dir.path().join(format!("{h}.dat")).display()
        ));
    }
    std::fs::write(dir.path().join("inv.toml"), inv).unwrap();
    let c = Command::new(env!("CARGO_BIN_EXE_oio"))
        .env("NO_COLOR", "1")
        .current_dir(dir.path())
        .args(["fleet", "run", "--inventory", "inv.toml", "--launcher"])
        .arg(cut_launcher(dir.path()))
        .args([
            "--engine",
            "null",
            "--sim",
            "servers=4,service=1ms",
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--qd",
            "4",
            "--size",
            "1M",
            "--time",
            "4s",
            "--ramp",
            "0",
            "--interval",
            "1s",
            "--out",
            "res",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_bounded(c, Duration::from_secs(120));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    println!("{stdout}{stderr}");
    assert_eq!(out.status.code(), Some(1), "a partial run: {stderr}");
    let merged = stderr
        .lines()
        .find_map(|l| l.split_once("result: ").map(|(_, p)| p.trim()))
        .unwrap_or_else(|| panic!("no result path: {stderr}"));
    let doc = read_json(dir.path().join(merged).to_str().unwrap());
    assert_fleet_schema(&doc);
    let hosts = doc["hosts"].as_array().unwrap();
    let cut = &hosts[2];
    assert_eq!(cut["status"], "lost");
    assert_eq!(cut["intervals"], 2);

    // The window is the longest host window; merged IOPS = Σ I/Os ÷ that window, where the
    // cut host's I/Os are those of the two intervals it delivered.
    let mut ios = 0;
    let mut own: Vec<Value> = Vec::new();
    for h in &hosts[..2] {
        assert_eq!(h["status"], "completed", "{h}");
        let r = read_json(
            dir.path()
                .join(h["result_file"].as_str().unwrap())
                .to_str()
                .unwrap(),
        );
        ios += r["summary"]["total"]["ios"].as_u64().unwrap();
        own.push(r);
    }
    let window = doc["window"]["duration_s"].as_f64().unwrap();
    let longest = own
        .iter()
        .map(|r| r["duration_s"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert_eq!(window, longest);
    let first_two: u64 = (0..2)
        .map(|i| doc["intervals"][i]["total"]["ios"].as_u64().unwrap())
        .sum();
    let others_first_two: u64 = own
        .iter()
        .flat_map(|r| r["intervals"].as_array().unwrap()[..2].iter())
        .map(|i| i["total"]["ios"].as_u64().unwrap())
        .sum();
    let cut_ios = cut["ios"].as_u64().unwrap();
    assert!(cut_ios > 0);
    assert_eq!(cut_ios, first_two - others_first_two);
    ios += cut_ios;
    let t = &doc["summary"]["total"];
    assert_eq!(t["ios"].as_u64().unwrap(), ios);
    let iops = t["iops"].as_f64().unwrap();
    // The hosts that ran through add their own rates, the cut host its I/Os ÷ the window.
    let through: f64 = own
        .iter()
        .map(|r| r["summary"]["total"]["iops"].as_f64().unwrap())
        .sum();
    let want = through + cut_ios as f64 / window;
    assert!(
        (iops - want).abs() <= 1e-9 * iops,
        "merged {iops} IOPS vs {through} + {cut_ios} I/Os ÷ {window} s"
    );
    // Those ran the whole window here (a simulated device ends a window on time), so the
    // merged rate is also every I/O over the window.
    assert!(
        own.iter().all(|r| r["duration_s"].as_f64() == Some(window)),
        "{window}"
    );
    assert!((iops - ios as f64 / window).abs() <= 1e-9 * iops);
    // The sum of the hosts' own rates is what it must not be: the cut host ran a part.
    let sum_rates: f64 = hosts.iter().map(|h| h["iops"].as_f64().unwrap()).sum();
    assert!(sum_rates > iops * 1.1, "{sum_rates} vs {iops}");
    let hpi: Vec<u64> = doc["hosts_per_interval"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(&hpi[..2], &[3, 3]);
    assert!(hpi[2..].iter().all(|&n| n == 2), "{hpi:?}");
    let span = doc["window"]["all_hosts_s"].as_f64().unwrap();
    let rate = doc["window"]["all_hosts_rate"].as_f64().unwrap();
    assert!((rate - first_two as f64 / span).abs() <= 1e-9 * rate);

    // Dated from its last message: after the end of its second interval (the message cannot
    // come sooner) and within the next interval; noticed only when its pipe closed, after the
    // others' windows.
    let lost = &cut["lost"];
    let at = lost["at_s"].as_f64().unwrap();
    let last_end = cut["window_s"].as_f64().unwrap();
    assert!(
        (2.0..2.5).contains(&last_end),
        "its second interval ended at {last_end} s"
    );
    assert!(at >= last_end && at < last_end + 1.0, "{lost}");
    assert!(
        lost["last_message"]
            .as_str()
            .unwrap()
            .starts_with("interval 2, t = "),
        "{lost}"
    );
    assert!(lost["noticed_s"].as_f64().unwrap() >= longest, "{lost}");

    // Said on the terminal: the window, what the cut host counts for, when it was last heard.
    assert!(
        stdout.contains(&format!(
            "merged: {iops:.1} IOPS over the fleet window of {window:.3} s ({ios} I/Os; each host that ran through adds its own rate, a host cut short its counts ÷ the whole window)"
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "host cut was lost part-way: its {cut_ios} I/Os up to the end of its last interval ({last_end:.3} s into its window) count over the whole window, nothing after"
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "while all 3 hosts delivered (the first {span:.3} s)"
        )),
        "{stdout}"
    );
    assert!(
        stderr.contains(&format!(
            "host cut was lost: its last message (interval 2, t = {last_end:.3} s) came {at:.3} s after the start"
        )),
        "{stderr}"
    );
}

/// `oio fleet tpcc run` with local agents on SQLite: a `--baseline` of other workers or
/// warehouses is refused before anything runs (naming both values); a matching one gives an
/// efficiency over every host started, flagged above 1; the start skew is taken when each
/// host's measured window opens, after its ramp.
#[test]
fn fleet_tpcc_checks_its_baseline_flags_superlinear_and_times_the_window() {
    let dir = scratch();
    let d = dir.path();
    let ok = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_oio"))
            .env("NO_COLOR", "1")
            .current_dir(d)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "oio {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    ok(&[
        "tpcc",
        "build",
        "--db",
        "sqlite:a.db",
        "-W",
        "1",
        "--workers",
        "2",
    ]);
    // The same database for host b (one build is slow enough).
    std::fs::copy(d.join("a.db"), d.join("b.db")).unwrap();
    let base = ok(&[
        "tpcc",
        "run",
        "--db",
        "sqlite:a.db",
        "-n",
        "1",
        "--ramp",
        "0",
        "--time",
        "1s",
        "--device",
        "none",
        "--json",
        "--out",
        "base",
    ]);
    let base: Value = serde_json::from_slice(&base.stdout).unwrap();
    let baseline = |name: &str, edit: &dyn Fn(&mut Value)| {
        let mut b = base.clone();
        edit(&mut b);
        std::fs::write(d.join(name), serde_json::to_vec(&b).unwrap()).unwrap();
        name.to_string()
    };
    let fleet = |workers: &str, ramp: &str, baseline: &str| {
        let c = Command::new(env!("CARGO_BIN_EXE_oio"))
            .env("NO_COLOR", "1")
            .current_dir(d)
            .args(["fleet", "tpcc", "run", "--hosts", "a,b", "--launcher"])
            .arg(format!("'{}' agent --stdio", env!("CARGO_BIN_EXE_oio")))
            .args(["--db", "sqlite:{host}.db", "-n", workers, "--ramp", ramp])
            .args([
                "--time",
                "2s",
                "--interval",
                "500ms",
                "--baseline",
                baseline,
            ])
            .args(["--out", "res"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = wait_bounded(c, Duration::from_secs(180));
        let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.code(), s(&out.stdout), s(&out.stderr))
    };

    // Another worker count: refused before any host is started.
    let same = baseline("same.json", &|_| {});
    let (code, _, err) = fleet("2", "0", &same);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--baseline same.json: it ran 1 worker(s), host a runs 2"),
        "{err}"
    );
    // Other warehouses: refused once the hosts' databases are known, before the start.
    let wide = baseline("wide.json", &|b| b["warehouses"] = 3.into());
    let (code, _, err) = fleet("1", "0", &wide);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("its database has 3 warehouse(s), host a's has 1")
            && err.contains("nothing was started on any host"),
        "{err}"
    );
    let written = walk_json(&d.join("res"));
    assert!(written.is_empty(), "a refused run wrote {written:?}");

    // A baseline far below what one host does: superlinear, flagged.
    let low = baseline("low.json", &|b| b["summary"]["nopm"] = 1.0.into());
    let (code, out, err) = fleet("1", "1s", &low);
    println!("{out}{err}");
    assert_eq!(code, Some(0), "{err}");
    let merged = err
        .lines()
        .find_map(|l| l.split_once("result: ").map(|(_, p)| p.trim()))
        .unwrap_or_else(|| panic!("no result path: {err}"));
    let doc = read_json(d.join(merged).to_str().unwrap());
    // Nobody cut short: the merged NOPM is the sum of the hosts', each over its own window,
    // and the window is the longest of those.
    let hosts = doc["hosts"].as_array().unwrap();
    let nopm = doc["summary"]["nopm"].as_f64().unwrap();
    let sum: f64 = hosts.iter().map(|h| h["nopm"].as_f64().unwrap()).sum();
    assert!((nopm - sum).abs() <= 1e-9 * nopm, "{nopm} vs {sum}");
    let longest = hosts
        .iter()
        .map(|h| h["window_s"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert_eq!(doc["window"]["duration_s"].as_f64(), Some(longest));
    let sc = &doc["scaling"];
    assert_eq!(
        (sc["hosts"].as_u64(), sc["hosts_lost"].as_u64()),
        (Some(2), Some(0))
    );
    let eff = sc["efficiency"].as_f64().unwrap();
    assert!((eff - nopm / 2.0).abs() <= 1e-9 * eff, "{sc}");
    let flag = sc["flag"].as_str().unwrap();
    assert!(flag.starts_with("superlinear: "), "{flag}");
    assert!(err.contains(&format!("warning: {flag}")), "{err}");
    // The window opened after connecting and the 1 s ramp: the skew against start + ramp is
    // not negative (beyond the clock's stated uncertainty), and small.
    for h in hosts {
        let skew = h["start_skew_ns"].as_i64().unwrap();
        let rtt = h["clock_rtt_ns"].as_i64().unwrap();
        assert!(
            skew >= -(rtt / 2 + 1_000_000) && skew < 1_000_000_000,
            "{}: skew {skew} ns",
            h["host"]
        );
        assert_eq!(h["workers"], 1);
    }
}

/// `oio fleet install` over the lab's sshd: copied where missing, "up to date" where the same
/// file is (by its SHA-256, nothing run), another build replaced without being run, a file that
/// is not oio never overwritten, a directory anyone may write refused (issue 22 item 4).
#[test]
fn install_copies_oio_over_ssh_and_never_runs_or_overwrites_what_it_finds() {
    let Some(lab) = Lab::new("i") else { return };
    let install = |dest: &Path| {
        let c = Command::new(env!("CARGO_BIN_EXE_oio"))
            .env("NO_COLOR", "1")
            .current_dir(lab.dir.path())
            .args(["fleet", "install", "--hosts", "h0,h1", "--launcher"])
            .arg(lab.launcher())
            .arg("--dest")
            .arg(dest)
            .arg("--json")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = wait_bounded(c, Duration::from_secs(120));
        // A copy cut at the bound prints nothing: the status says so (killed by a signal).
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{e} ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (
            out.status.success(),
            v,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let me = std::fs::read(env!("CARGO_BIN_EXE_oio")).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    let mode = |p: &Path, m: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    };

    // Missing on h0 and h1, which share this machine's file system and are installed at once:
    // each copies (or finds the other's copy already there).
    let fresh = lab.path("fresh");
    let (ok, v, err) = install(&fresh);
    assert!(ok, "{v:#}\n{err}");
    for h in 0..2 {
        assert!(
            v[h]["action"] == "installed" || v[h]["action"] == "up to date",
            "{v:#}"
        );
    }
    assert!(v[0]["action"] == "installed" || v[1]["action"] == "installed");
    assert_eq!(v[0]["version"], v[1]["version"]);
    assert!(std::fs::read(fresh.join("oio")).unwrap() == me);
    // Again: the same file on both, known by its digest; nothing copied.
    let before = std::fs::metadata(fresh.join("oio"))
        .unwrap()
        .modified()
        .unwrap();
    let (ok, v, err) = install(&fresh);
    assert!(ok, "{v:#}\n{err}");
    assert_eq!(v[0]["action"], "up to date", "{v:#}");
    assert_eq!(v[1]["action"], "up to date", "{v:#}");
    assert_eq!(
        std::fs::metadata(fresh.join("oio"))
            .unwrap()
            .modified()
            .unwrap(),
        before
    );

    // Another build (oio's bytes and one more): replaced, never run. A planted executable that
    // carries oio's mark and would answer with this very version: replaced, never run.
    let old = lab.path("old");
    std::fs::create_dir_all(&old).unwrap();
    let mut other_build = me.clone();
    other_build.push(0);
    std::fs::write(old.join("oio"), &other_build).unwrap();
    mode(&old.join("oio"), 0o755);
    let (ok, v, err) = install(&old);
    assert!(ok, "{v:#}\n{err}");
    assert!(
        v[0]["action"] == "replaced" || v[1]["action"] == "replaced",
        "{v:#}"
    );
    assert!(std::fs::read(old.join("oio")).unwrap() == me);
    let version = v[0]["version"].as_str().unwrap().to_string();
    let trace = lab.path("planted-ran");
    std::fs::write(
        old.join("oio"),
        format!(
            "#!/bin/sh\n# {}\ntouch '{}'\necho 'oio {version}'\nexec '{}' \"$@\"\n",
            oio_fleet::install::BINARY_MARK,
            trace.display(),
            env!("CARGO_BIN_EXE_oio")
        ),
    )
    .unwrap();
    mode(&old.join("oio"), 0o755);
    let (ok, v, err) = install(&old);
    assert!(ok, "{v:#}\n{err}");
    assert!(std::fs::read(old.join("oio")).unwrap() == me);
    assert!(!trace.exists(), "the planted file was run");

    // A file named oio that is not oio stays as it was, and the command fails naming it.
    let other = lab.path("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("oio"), "precious").unwrap();
    let (ok, v, err) = install(&other);
    assert!(!ok, "{v:#}");
    assert_eq!(v[0]["action"], "failed");
    assert!(
        v[0]["error"]
            .as_str()
            .unwrap()
            .contains("is not oio (it does not carry oio's mark): not replaced"),
        "{v:#}\n{err}"
    );
    assert_eq!(
        std::fs::read_to_string(other.join("oio")).unwrap(),
        "precious"
    );
    let stray: Vec<_> = std::fs::read_dir(&other)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "oio")
        .collect();
    assert!(stray.is_empty(), "{stray:?}");

    // A directory anyone may write (no sticky bit): refused, nothing put there.
    let shared = lab.path("shared");
    std::fs::create_dir_all(&shared).unwrap();
    mode(&shared, 0o777);
    let (ok, v, err) = install(&shared);
    assert!(!ok, "{v:#}");
    assert!(
        v[0]["error"]
            .as_str()
            .unwrap()
            .contains("is writable by everyone (mode 777) without the sticky bit"),
        "{v:#}\n{err}"
    );
    assert!(!shared.join("oio").exists());
}

/// `oio fleet sweep` with local agents (a launcher that only starts `oio agent --stdio`, no
/// network): one fleet run per depth, each point the merged result, the knee analysed.
#[test]
fn sweep_runs_every_depth_on_every_host_and_keeps_the_merged_points() {
    let dir = crate::common::scratch();
    let c = local_agents(dir.path(), "sweep")
        .args([
            "--engine",
            "null",
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--time",
            "2s",
            "--ramp",
            "0",
            "--size",
            "1M",
            "--sweep-qd",
            "1,8,32",
            "--json",
            "./t.dat",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_bounded(c, Duration::from_secs(120));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let typed: oio_analysis::sweep::Sweep = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(typed.envelope.schema, "oio.sweep");
    assert!(!typed.envelope.partial);
    let qds: Vec<u32> = typed.points.iter().map(|p| p.qd).collect();
    assert_eq!(qds, vec![1, 8, 32]);
    assert!(typed.knee.is_some(), "{v:#}");
    for p in &typed.points {
        let merged: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join(&p.sources[0])).unwrap())
                .unwrap();
        assert_eq!(merged["schema"], "oio.fleet");
        assert_eq!(merged["summary"]["total"]["iops"].as_f64().unwrap(), p.iops);
        let per_host: f64 = merged["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["iops"].as_f64().unwrap())
            .sum();
        assert!((per_host - p.iops).abs() <= 1e-6 * p.iops, "qd {}", p.qd);
        assert_eq!(merged["hosts"].as_array().unwrap().len(), 2);
        assert!(p.iops > 0.0);
    }
}

/// `oio fleet sweep` is `oio sweep`'s loop with the runs on the fleet: `--repeat` runs every
/// depth that many times in counterbalanced rounds (each run its own directory and seed),
/// `--knee-pct` sets the X %-of-peak rule, depths are swept ascending. On a simulated device
/// on the virtual clock every point is the model's: 2 servers of 1 ms serve 1,000 IOPS at
/// depth 1 and 2,000 from depth 2 on, per host.
#[test]
fn sweep_repeats_each_depth_and_takes_the_knee_fraction_as_oio_sweep_does() {
    let dir = crate::common::scratch();
    let c = local_agents(dir.path(), "sweep")
        .args([
            "--engine",
            "null",
            "--sim",
            "servers=2,service=1ms,clock=virtual",
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--time",
            "2s",
            "--ramp",
            "0",
            "--size",
            "1M",
            "--sweep-qd",
            "8,1",
            "--repeat",
            "2",
            "--knee-pct",
            "80",
            "--seed",
            "5",
            "--json",
            "./t.dat",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_bounded(c, Duration::from_secs(120));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["options"]["repeat"], 2, "{v:#}");
    assert_eq!(v["options"]["knee_fraction"], 0.8);
    assert_eq!(v["options"]["order"], "counterbalanced");
    assert!(
        v["plan"].is_null(),
        "a fleet sweep is not rerun on one host"
    );
    let points = v["points"].as_array().unwrap();
    let qds: Vec<u64> = points.iter().map(|p| p["qd"].as_u64().unwrap()).collect();
    assert_eq!(qds, vec![1, 8]);
    for (p, iops) in points.iter().zip([2000.0, 4000.0]) {
        assert_eq!(p["runs"], 2, "{p:#}");
        // The model's, within the edges of a 2 s run (a fixed service time: no noise).
        let runs: Vec<f64> = p["iops_runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(runs[0], runs[1], "{p:#}");
        assert!((runs[0] - iops).abs() <= 0.01 * iops, "{p:#}");
        let sources: Vec<&str> = p["sources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        let qd = p["qd"].as_u64().unwrap();
        assert!(
            sources[0].ends_with(&format!("/qd{qd}/merged.json")),
            "{sources:?}"
        );
        assert!(
            sources[1].ends_with(&format!("/qd{qd}-2/merged.json")),
            "{sources:?}"
        );
    }
    // Rounds across the depths, the second reversed; each repeat its own seed.
    let order: Vec<(u64, u64)> = v["sequence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["qd"].as_u64().unwrap(), r["round"].as_u64().unwrap()))
        .collect();
    assert_eq!(order, vec![(1, 1), (8, 1), (8, 2), (1, 2)]);
    assert_ne!(v["sequence"][0]["seed"], v["sequence"][3]["seed"]);
    assert!(
        !v["warnings"].to_string().contains("one run per point"),
        "{}",
        v["warnings"]
    );
}

/// Two `fio --server`s this test started.
struct FioServers(Vec<Child>);

impl Drop for FioServers {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `oio fleet fio` against two `fio --server` on 127.0.0.1 ports: fio's merged "All clients"
/// record and each client's become oio results, and the merged I/O count is the clients' sum.
#[test]
fn fio_client_server_results_become_oio_results() {
    if Command::new("fio").arg("--version").output().is_err() {
        missing("fio");
        return;
    }
    let dir = crate::common::scratch();
    let mut ports = Vec::new();
    let mut servers = FioServers(Vec::new());
    for _ in 0..2 {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        ports.push(port);
        servers.0.push(
            Command::new("fio")
                .arg(format!("--server=ip:127.0.0.1,{port}"))
                .current_dir(dir.path())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
    }
    // Bounded wait for both servers to listen.
    for p in &ports {
        let ok = (0..100).any(|_| {
            TcpStream::connect(("127.0.0.1", *p)).is_ok() || {
                std::thread::sleep(Duration::from_millis(50));
                false
            }
        });
        assert!(ok, "fio --server on port {p} never listened");
    }
    let job = dir.path().join("j.fio");
    std::fs::write(
        &job,
        "[j]\nioengine=null\nrw=randread\nbs=4k\nsize=64m\ntime_based=1\nruntime=1\n",
    )
    .unwrap();
    let hosts = format!("127.0.0.1:{},127.0.0.1:{}", ports[0], ports[1]);
    let c = Command::new(env!("CARGO_BIN_EXE_oio"))
        .current_dir(dir.path())
        .args([
            "fleet",
            "fio",
            "--hosts",
            &hosts,
            "--timeout",
            "60s",
            "--label",
            "two-servers",
            "--json",
        ])
        .arg(&job)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_bounded(c, Duration::from_secs(90));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    let merged: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(merged["schema"], "oio.run");
    let path = err
        .lines()
        .find_map(|l| {
            l.split_once("result: ")
                .map(|(_, p)| dir.path().join(p.trim()))
        })
        .unwrap();
    let clients: Vec<Value> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("client")
        })
        .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
        .collect();
    assert_eq!(clients.len(), 2);
    // The label names every result and their directory.
    assert_eq!(merged["label"], "two-servers");
    assert!(clients.iter().all(|c| c["label"] == "two-servers"));
    assert!(path
        .parent()
        .unwrap()
        .to_string_lossy()
        .contains("two-servers"));
    let sum: u64 = clients
        .iter()
        .map(|c| c["summary"]["total"]["ios"].as_u64().unwrap())
        .sum();
    let total = merged["summary"]["total"]["ios"].as_u64().unwrap();
    assert!(total > 0);
    assert_eq!(total, sum, "fio's All clients vs the clients' sum");
}

/// The issue's case over real sshd: a log-writer host, two random-read hosts and one host on
/// the command line's workload, started together; each host's own result shows its own read
/// share, `{host}` names each target, and the merged result keeps one section per group whose
/// histograms are the sums of its hosts' (and the groups add up to the total).
#[test]
fn workload_groups_run_their_own_workloads_and_merge_per_group() {
    let Some(lab) = Lab::with_hosts("g", 4) else {
        return;
    };
    let wl = crate::common::oio()
        .args(["profiles", "log-writer"])
        .output()
        .unwrap();
    assert!(wl.status.success());
    std::fs::write(lab.path("log.toml"), &wl.stdout).unwrap();
    let inv = lab.path("groups.toml");
    std::fs::write(
        &inv,
        format!(
            "[group.log]\nworkload = \"log.toml\"\n\
             [group.readers]\nrw = \"randread\"\nbs = \"8k\"\nqd = 2\n\
             [[host]]\nname = \"h0\"\ngroup = \"log\"\ntargets = [\"{d}/{{host}}.dat\"]\n\
             [[host]]\nname = \"h1\"\ngroup = \"readers\"\ntargets = [\"{d}/{{host}}.dat\"]\n\
             [[host]]\nname = \"h2\"\ngroup = \"readers\"\ntargets = [\"{d}/{{host}}.dat\"]\n\
             [[host]]\nname = \"h3\"\ntargets = [\"{d}/{{host}}.dat\"]\n",
            d = lab.dir.path().display()
        ),
    )
    .unwrap();
    let c = lab
        .fleet_with(
            &inv,
            &[
                "--rw",
                "randrw",
                "--read-pct",
                "50",
                "--bs",
                "4k",
                "--qd",
                "2",
                "--engine",
                "sync",
                "--size",
                "4M",
                "--time",
                "3s",
                "--ramp",
                "0s",
                "--interval",
                "1s",
                "--json",
            ],
        )
        .spawn()
        .unwrap();
    let out = wait_bounded(c, Duration::from_secs(180));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "oio fleet run failed: {stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document on stdout");
    assert_fleet_schema(&doc);
    // Issue 39: reported as mixed, not as the command line's workload.
    assert!(
        stderr.contains("oio fleet: mixed (log: log-writer, readers: randread-8k, (command line): randrw-4k) on 4 hosts"),
        "{stderr}"
    );
    assert!(
        doc["warnings"].as_array().unwrap().iter().any(|w| w
            .as_str()
            .unwrap()
            .starts_with("mixed workloads: hosts ran 3 workload groups (")),
        "{:#}",
        doc["warnings"]
    );
    let hosts = doc["hosts"].as_array().unwrap();
    let want = [
        ("h0", "log", "log-writer"),
        ("h1", "readers", "randread-8k"),
        ("h2", "readers", "randread-8k"),
        ("h3", "(command line)", "randrw-4k"),
    ];
    let mut own = BTreeMap::new();
    for (h, (name, group, workload)) in hosts.iter().zip(want) {
        assert_eq!(h["host"], name);
        assert_eq!(h["group"], group, "{h}");
        assert_eq!(h["workload"], workload, "{h}");
        // {host} in the inventory's target path is the host's name, as used.
        let path = lab.path(&format!("{name}.dat")).display().to_string();
        assert_eq!(h["bindings"][0]["paths"][0], path.as_str(), "{h}");
        let r = read_json(h["result_file"].as_str().unwrap());
        crate::run::assert_valid(&r);
        assert_eq!(r["targets"][0]["path"], path.as_str());
        let (reads, ios) = (
            r["summary"]["read"]["ios"].as_u64().unwrap(),
            r["summary"]["total"]["ios"].as_u64().unwrap(),
        );
        assert!(ios > 0, "{name} did no I/O");
        let share = 100.0 * reads as f64 / ios as f64;
        println!("{name} ({group}, {workload}): {ios} I/Os, {share:.1} % reads");
        assert_eq!(h["read_share_pct"].as_f64().unwrap(), share);
        match group {
            "log" => assert_eq!(reads, 0, "the log writer only writes"),
            "readers" => assert_eq!(reads, ios, "a random reader only reads"),
            _ => {
                // 50 % reads drawn per I/O: within 5 standard deviations of a binomial.
                let sd = (ios as f64 * 0.25).sqrt() / ios as f64 * 100.0;
                assert!((share - 50.0).abs() <= 5.0 * sd, "{share} % ± {sd}");
            }
        }
        // Its target's device, recorded through the measured window (3 intervals of 1 s).
        let dev = r["targets"][0]["device"]["name"].as_str();
        match dev {
            Some(dev) => {
                let d = &h["devices"][0];
                assert_eq!(d["name"], dev, "{h}");
                assert!(d["intervals"].as_u64().unwrap() >= 2, "{d}");
                let busy = d["read_iops"].as_f64().unwrap() + d["write_iops"].as_f64().unwrap();
                println!(
                    "  its device {dev}: {busy:.1} I/Os per second, util {}",
                    d["util_pct"]
                );
                assert!(busy > 0.0, "{d}");
                assert_eq!(
                    d["series"].as_array().unwrap().len() as u64,
                    d["intervals"].as_u64().unwrap()
                );
            }
            None => println!("  {name}'s target has no block device here: no device telemetry"),
        }
        own.insert(name, r);
    }
    if hosts.iter().any(|h| h.get("devices").is_some()) {
        let v = doc["devices"].as_str().expect("the devices' verdict");
        println!("devices: {v}");
        // Every namespace shares this machine's disk, on one kernel: named once with the
        // hosts that share it (issue 39), not taken as four devices.
        assert!(
            v.contains(", which hosts h0, h1, h2, h3 share (one kernel"),
            "{v}"
        );
    }
    // The plan recorded is the command-line host's, with its bindings as used (in the form
    // every document records a run plan: `targets`).
    assert_eq!(
        doc["plan"]["targets"][0]["paths"][0],
        lab.path("h3.dat").display().to_string().as_str()
    );
    let groups = doc["groups"].as_array().expect("one section per group");
    let names: Vec<&str> = groups.iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["log", "readers", "(command line)"]);
    let mut ios = 0;
    for g in groups {
        let members: Vec<&str> = g["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h.as_str().unwrap())
            .collect();
        for dir in ["read", "write", "total"] {
            assert_eq!(
                buckets(&g["summary"][dir]["histogram"]),
                sum_buckets(members.iter().map(|m| &own[m]["summary"][dir]["histogram"])),
                "group {} {dir}",
                g["name"]
            );
        }
        ios += g["summary"]["total"]["ios"].as_u64().unwrap();
    }
    assert_eq!(ios, doc["summary"]["total"]["ios"].as_u64().unwrap());
    // The table and the report show the groups.
    let c = lab
        .fleet_with(
            &inv,
            &[
                "--rw",
                "randrw",
                "--bs",
                "4k",
                "--qd",
                "1",
                "--engine",
                "sync",
                "--size",
                "4M",
                "--time",
                "1s",
                "--ramp",
                "0s",
                "--interval",
                "1s",
            ],
        )
        .spawn()
        .unwrap();
    let out = wait_bounded(c, Duration::from_secs(180));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("group readers (randread-8k; h1, h2):"),
        "{text}"
    );
    let r = crate::common::oio()
        .current_dir(lab.path(""))
        .args(["report", "res", "-o", "r.html"])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let html = std::fs::read_to_string(lab.path("r.html")).unwrap();
    assert!(html.contains("Workload groups") && html.contains("readers"));
    // diagnose takes each host's devices as that host's telemetry, named after it, and says
    // the fleet's device verdict.
    if hosts.iter().any(|h| h.get("devices").is_some()) {
        let merged = std::fs::read_dir(lab.path("res"))
            .unwrap()
            .flatten()
            .map(|e| e.path().join("merged.json"))
            .find(|p| p.exists())
            .unwrap();
        let d = crate::common::oio()
            .arg("diagnose")
            .arg(&merged)
            .output()
            .unwrap();
        let (out, err) = (
            String::from_utf8_lossy(&d.stdout),
            String::from_utf8_lossy(&d.stderr),
        );
        assert!(d.status.success(), "{err}");
        for h in ["h0", "h1", "h2", "h3"] {
            assert!(out.contains(&format!("merged.json host {h}: ")), "{out}");
        }
        assert!(
            err.contains("which hosts h0, h1, h2, h3 share (one kernel"),
            "{err}"
        );
    }
    no_agents_left(&lab);
}

/// Issue 26 item 2 over real sshd: a 1 → 2 → 4 host ladder of random reads on files, each
/// step a fleet run with its merged result, the efficiency table printed. On this machine the
/// four "hosts" share two cores and one disk, so the figures say that, not how hosts scale.
#[test]
fn a_host_ladder_over_ssh_prints_its_efficiency_table() {
    let Some(lab) = Lab::with_hosts("s", 4) else {
        return;
    };
    let c = lab.fleet(&[
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--qd",
        "4",
        "--engine",
        "sync",
        "--size",
        "4M",
        "--time",
        "3s",
        "--ramp",
        "0s",
        "--interval",
        "1s",
        "--steps",
        "1,2,4",
    ]);
    // `fleet` builds a `fleet run`; the same flags go to `fleet scale`.
    let args: Vec<std::ffi::OsString> = c.get_args().map(|a| a.to_owned()).collect();
    let mut s = Command::new(env!("CARGO_BIN_EXE_oio"));
    s.env("NO_COLOR", "1")
        .current_dir(lab.dir.path())
        .arg("fleet")
        .arg("scale")
        .args(&args[2..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = wait_bounded(s.spawn().unwrap(), Duration::from_secs(300));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].contains("efficiency"), "{text}");
    for (l, k) in lines[1..4].iter().zip(["1", "2", "4"]) {
        assert_eq!(l.split_whitespace().next(), Some(k), "{text}");
    }
    assert!(lines[1].contains("1.000 (base)"), "{text}");
    let verdict = lines[4];
    assert!(
        verdict.starts_with("scaling efficiency") || verdict.starts_with("undecided"),
        "{text}"
    );
    let res = lab.path("res");
    let scale_dir = std::fs::read_dir(&res)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("fleet-scale-"))
        .unwrap()
        .path();
    for k in [1, 2, 4] {
        let m = read_json(
            scale_dir
                .join(format!("hosts{k}/merged.json"))
                .to_str()
                .unwrap(),
        );
        assert_eq!(m["hosts"].as_array().unwrap().len(), k);
        assert_fleet_schema(&m);
    }
    no_agents_left(&lab);
}

/// `oio fleet sweep` takes the sweep's rules as `oio sweep` does (one flag group): the
/// order, a latency target, refinement between the grid's depths, where production sits, and
/// further workload flags with `--with`, each recorded in the sweep and applied on the hosts.
#[test]
fn sweep_takes_every_rule_of_oio_sweep() {
    let dir = crate::common::scratch();
    let c = local_agents(dir.path(), "sweep")
        .args([
            "--engine",
            "null",
            "--sim",
            "servers=2,service=1ms,clock=virtual",
        ])
        .args([
            "--rw", "randread", "--bs", "4k", "--time", "2s", "--ramp", "0",
        ])
        .args([
            "--size",
            "1M",
            "--sweep-qd",
            "1,4",
            "--order",
            "interleaved",
        ])
        .args([
            "--latency-target",
            "p99=1500us",
            "--production-qd",
            "3",
            "--refine",
        ])
        .args([
            "--with",
            "--random-pct 50",
            "--seed",
            "5",
            "--json",
            "./t.dat",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_bounded(c, Duration::from_secs(120));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let o = &v["options"];
    assert_eq!(o["order"], "interleaved", "{o}");
    assert_eq!(o["latency_target"]["stat"], "p99", "{o}");
    assert_eq!(o["latency_target"]["ns"], 1_500_000.0, "{o}");
    // Refinement measured the geometric midpoint of 1 and 4 on the fleet.
    assert_eq!(o["refined_qd"], serde_json::json!([2]), "{o}");
    let qds: Vec<u64> = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["qd"].as_u64().unwrap())
        .collect();
    assert_eq!(qds, [1, 2, 4]);
    assert!(err.contains("qd 2 on 2 hosts"), "{err}");
    assert_eq!(v["production"]["qd"], 3.0, "{v:#}");
    // --with reached every host's workload.
    let sweep_dir = dir.path().join("oio-results");
    let run_dir = std::fs::read_dir(&sweep_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    for host in ["a", "b"] {
        let r: Value = serde_json::from_slice(
            &std::fs::read(run_dir.join("qd1").join(format!("{host}.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(
            r["workload"]["stream"][0]["random_pct"], 50,
            "{host}: {r:#}"
        );
    }
}

/// `oio fleet run --repeat N` runs the fleet N times, each run in a folder of its own, and
/// gives the merged documents as an array under --json (as `oio run --repeat` does); on the
/// virtual clock every run is the model's exactly: 2 hosts × 2 servers of 1 ms.
#[test]
fn run_repeats_the_fleet_run_and_keeps_each() {
    let dir = crate::common::scratch();
    let c = local_agents(dir.path(), "run")
        .args([
            "--engine",
            "null",
            "--sim",
            "servers=2,service=1ms,clock=virtual",
        ])
        .args([
            "--rw", "randread", "--bs", "4k", "--qd", "4", "--time", "2s",
        ])
        .args([
            "--ramp", "0", "--size", "1M", "--repeat", "3", "--json", "./t.dat",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_bounded(c, Duration::from_secs(120));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("oio fleet: run 3/3"), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs = v.as_array().expect("an array of merged results");
    assert_eq!(runs.len(), 3);
    for r in runs {
        let iops = r["summary"]["total"]["iops"].as_f64().unwrap();
        assert!((iops - 4000.0).abs() <= 0.01 * 4000.0, "{r:#}");
        assert_eq!(r["hosts"].as_array().unwrap().len(), 2);
    }
    let folders = std::fs::read_dir(dir.path().join("oio-results"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().join("merged.json").exists())
        .count();
    assert_eq!(folders, 3, "one folder per run");
}

/// `oio fleet run --record-device` saves every host's devices beside the merged result, one
/// observation with each host's device as HOST:DEVICE, as `oio run --record-device` saves its
/// own.
#[test]
fn record_device_saves_every_hosts_devices_beside_the_merged_result() {
    let dir = crate::common::scratch();
    let c = local_agents(dir.path(), "run")
        .args([
            "--engine",
            "sync",
            "--rw",
            "randwrite",
            "--bs",
            "4k",
            "--qd",
            "1",
        ])
        .args([
            "--time",
            "3s",
            "--ramp",
            "0",
            "--size",
            "8M",
            "--record-device",
        ])
        .arg("./t-{host}.dat")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_bounded(c, Duration::from_secs(120));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let merged = std::fs::read_dir(dir.path().join("oio-results"))
        .unwrap()
        .map(|e| e.unwrap().path().join("merged.json"))
        .find(|p| p.exists())
        .expect("a merged result");
    let devices = merged.with_file_name("merged.device.json");
    assert!(err.contains("oio: devices: oio-results/fleet-"), "{err}");
    assert!(devices.exists());
    let obs = read_json(devices.to_str().unwrap());
    assert_eq!(obs["schema"], "oio.observation");
    let names: Vec<&str> = obs["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert!(names.iter().any(|n| n.starts_with("a:")), "{names:?}");
    assert!(names.iter().any(|n| n.starts_with("b:")), "{names:?}");
}
