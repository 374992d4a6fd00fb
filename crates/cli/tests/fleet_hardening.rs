//! `oio fleet` against stalled, hostile and misconfigured hosts, with local agents (a launcher
//! that starts `oio agent --stdio` on this machine, or a fake agent in this test behind two
//! named pipes): issue 22 items 10, 14 and 16.

use crate::common::scratch;
use crate::fleet::{sh, wait_bounded};
use oio_fleet::protocol::{send, Hello, Message, Reader, WireHistogram, WireInterval};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn oio() -> &'static str {
    env!("CARGO_BIN_EXE_oio")
}

/// This oio's version, as its agents say it.
fn version() -> String {
    let out = Command::new(oio()).arg("--version").output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .trim_start_matches("oio ")
        .to_string()
}

/// A launcher of local agents that writes each agent's pid to `DIR/HOST.pid` first.
fn pid_launcher(dir: &Path) -> String {
    let script = dir.join("launch.sh");
    std::fs::write(
        &script,
        format!(
            "echo $$ > '{}/'\"$1\".pid\nexec '{}' agent --stdio\n",
            dir.display(),
            oio()
        ),
    )
    .unwrap();
    format!("sh '{}' {{host}}", script.display())
}

/// An inventory giving each host its own target `DIR/HOST/t.dat`.
fn inventory(dir: &Path, hosts: &[&str]) -> PathBuf {
    let mut t = String::new();
    for h in hosts {
        std::fs::create_dir_all(dir.join(h)).unwrap();
        t.push_str(&format!(
            "[[host]]\nname = \"{h}\"\ntargets = [\"{}\"]\n",
            dir.join(h).join("t.dat").display()
        ));
    }
    let p = dir.join("inventory.toml");
    std::fs::write(&p, t).unwrap();
    p
}

/// Waits (bounded) until `cond` holds, polling.
fn wait_until(what: &str, limit: Duration, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn pid_of(dir: &Path, host: &str) -> Option<u32> {
    std::fs::read_to_string(dir.join(format!("{host}.pid")))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// True when process `pid` runs the engine's workers past the start gate (it is measuring):
/// a worker is `oio-setup-N` while it builds its engine and waits for the start, through a
/// fleet's arm, and `oio-worker-N` once the run has started.
pub(crate) fn measuring(pid: u32) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|rd| {
            rd.flatten().any(|t| {
                std::fs::read_to_string(t.path().join("comm"))
                    .is_ok_and(|c| c.starts_with("oio-worker"))
            })
        })
        .unwrap_or(false)
}

/// A stopped process is continued and killed when the test ends, however it ends.
struct Stopped(u32);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = sh(&["kill", "-CONT", &self.0.to_string()]);
        let _ = sh(&["kill", "-9", &self.0.to_string()]);
    }
}

fn fleet(dir: &Path, sub: &str, hosts: &[&str], args: &[&str]) -> Command {
    let mut c = Command::new(oio());
    c.env("NO_COLOR", "1")
        .current_dir(dir)
        .args(["fleet", sub, "--inventory"])
        .arg(inventory(dir, hosts))
        .arg("--launcher")
        .arg(pid_launcher(dir))
        .arg("--out")
        .arg(dir.join("res"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Issue 22 item 10: an agent stopped (SIGSTOP) while it fills its file no longer hangs the
/// controller: after the stall limit the host is named with the phase and how long it was
/// silent, the other host is stopped (its temporary file removed) and nothing starts.
#[test]
fn an_agent_stopped_while_it_fills_is_named_as_stalled_in_prepare() {
    let dir = scratch();
    let t0 = Instant::now();
    let c = fleet(
        dir.path(),
        "run",
        &["a", "b"],
        &[
            "--stall-timeout",
            "2s",
            "--rw",
            "randread",
            "--engine",
            "sync",
            "--buffered",
            "--size",
            "1G",
            "--time",
            "5s",
            "--ramp",
            "0",
        ],
    )
    .spawn()
    .unwrap();
    // b's agent is filling once a file appears in its directory.
    let b_dir = dir.path().join("b");
    wait_until("b starts filling", Duration::from_secs(60), || {
        std::fs::read_dir(&b_dir).is_ok_and(|mut d| d.next().is_some())
    });
    let pid = pid_of(dir.path(), "b").expect("b's pid");
    sh(&["kill", "-STOP", &pid.to_string()]).unwrap();
    let _stopped = Stopped(pid);
    let stopped_at = Instant::now();
    let out = wait_bounded(c, Duration::from_secs(90));
    let waited = stopped_at.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stderr}");
    println!(
        "the controller ended {:.1} s after b was stopped ({:.1} s in all)",
        waited.as_secs_f64(),
        t0.elapsed().as_secs_f64()
    );
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("host b: stalled during prepare: nothing heard from it for "),
        "{stderr}"
    );
    assert!(stderr.contains("its agent is stopped or its connection hangs"));
    assert!(
        stderr.contains("nothing was started on any host"),
        "{stderr}"
    );
    assert!(!stderr.contains("the connection closed"), "{stderr}");
    // 2 s of silence, plus up to a keepalive period and the controller's polling.
    assert!(waited >= Duration::from_secs(2), "{waited:?}");
    assert!(waited < Duration::from_secs(30), "{waited:?}");
    // a was told to stop: its fill ends and leaves no temporary file (or it had finished).
    let a_dir = dir.path().join("a");
    wait_until(
        "a's temporary file removed",
        Duration::from_secs(30),
        || {
            std::fs::read_dir(&a_dir)
                .unwrap()
                .flatten()
                .all(|e| e.file_name() == "t.dat")
        },
    );
    assert!(crate::fleet::walk_json(&dir.path().join("res")).is_empty());
}

/// Issue 22 item 10, a host whose storage hangs: b's target is on a file system frozen while
/// b fills it, so b's agent (here the launcher itself) sleeps in the kernel and outlives its
/// kill. The controller still ends, names b as stalled during prepare and leaves the agent
/// behind; found by bench/audit, where it waited on that agent for good.
#[test]
fn a_host_whose_file_system_freezes_while_it_fills_does_not_hang_the_controller() {
    if !crate::common::is_root() || Command::new("fsfreeze").arg("--version").output().is_err() {
        crate::common::missing("needs root, loop devices and fsfreeze");
        return;
    }
    let dir = scratch();
    let img = scratch();
    let Some(fs) = crate::openloop::mount_ext4_at(img.path(), &dir.path().join("b"), 1536 << 20)
    else {
        crate::common::missing("could not mount a loop ext4 filesystem");
        return;
    };
    let c = fleet(
        dir.path(),
        "run",
        &["a", "b"],
        &[
            "--stall-timeout",
            "2s",
            "--rw",
            "randread",
            "--engine",
            "sync",
            "--size",
            "1G",
            "--time",
            "5s",
            "--ramp",
            "0",
        ],
    )
    .spawn()
    .unwrap();
    wait_until("b starts filling", Duration::from_secs(60), || {
        std::fs::read_dir(&fs.dir).is_ok_and(|d| d.flatten().any(|e| e.file_name() != "lost+found"))
    });
    let pid = pid_of(dir.path(), "b").expect("b's pid");
    assert!(Command::new("fsfreeze")
        .arg("-f")
        .arg(&fs.dir)
        .status()
        .unwrap()
        .success());
    let frozen_at = Instant::now();
    let out = {
        let _thaw = crate::openloop::Frozen(&fs.dir);
        wait_bounded(c, Duration::from_secs(120))
    };
    let waited = frozen_at.elapsed();
    // Thawed: the agent wakes to its kill; the file system is unmounted only after it ended.
    wait_until(
        "b's agent ends once thawed",
        Duration::from_secs(60),
        || {
            !Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z "))
        },
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stderr}");
    println!(
        "the controller ended {:.1} s after b's file system froze",
        waited.as_secs_f64()
    );
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("host b: stalled during prepare: no progress for ")
            && stderr.contains("its storage may hang"),
        "{stderr}"
    );
    assert!(
        stderr.contains("nothing was started on any host"),
        "{stderr}"
    );
    assert!(waited < Duration::from_secs(60), "{waited:?}");
    assert!(crate::fleet::walk_json(&dir.path().join("res")).is_empty());
}

/// Issue 22 item 10, during the run: an agent stopped mid-run is lost as stalled once it is
/// silent for the stall limit (keepalives come every second, intervals or not); the other host
/// is stopped and keeps its partial result.
#[test]
fn an_agent_stopped_mid_run_is_lost_as_stalled_and_the_others_keep_their_results() {
    let dir = scratch();
    let c = fleet(
        dir.path(),
        "run",
        &["a", "b"],
        &[
            "--stall-timeout",
            "3s",
            "--rw",
            "randread",
            "--engine",
            "null",
            "--size",
            "1M",
            "--time",
            "120s",
            "--ramp",
            "0",
            "--interval",
            "500ms",
            "--json",
        ],
    )
    .spawn()
    .unwrap();
    wait_until("b measuring", Duration::from_secs(60), || {
        pid_of(dir.path(), "b").is_some_and(measuring)
    });
    let pid = pid_of(dir.path(), "b").unwrap();
    sh(&["kill", "-STOP", &pid.to_string()]).unwrap();
    let _stopped = Stopped(pid);
    let stopped_at = Instant::now();
    let out = wait_bounded(c, Duration::from_secs(90));
    let waited = stopped_at.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!(
        "{stderr}\nended {:.1} s after the stop",
        waited.as_secs_f64()
    );
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(waited < Duration::from_secs(40), "{waited:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("the merged result");
    assert_eq!(doc["partial"], true);
    assert_eq!(doc["hosts"][1]["status"], "lost", "{doc:#}");
    let reason = doc["hosts"][1]["lost"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("stalled during the run: nothing heard from it for "),
        "{reason}"
    );
    assert_eq!(doc["hosts"][0]["status"], "interrupted", "{doc:#}");
    assert!(doc["hosts"][0]["result_file"].is_string(), "{doc:#}");
}

/// The two ends of a fake agent behind named pipes: the launcher copies its stdin into
/// `DIR/in` and `DIR/out` onto its stdout.
fn fifo_launcher(dir: &Path) -> String {
    sh(&["mkfifo", dir.join("in").to_str().unwrap()]).unwrap();
    sh(&["mkfifo", dir.join("out").to_str().unwrap()]).unwrap();
    let script = dir.join("fake.sh");
    std::fs::write(
        &script,
        format!(
            "if [ \"$1\" = fake ]; then cat '{d}/out' & exec cat > '{d}/in'; fi\nexec '{oio}' agent --stdio\n",
            d = dir.display(),
            oio = oio()
        ),
    )
    .unwrap();
    format!("sh '{}' {{host}}", script.display())
}

/// A histogram with a bucket in every decade position: a large but valid one.
fn wide_histogram() -> WireHistogram {
    let mut h = oio_core::histogram::LatencyHistogram::new();
    let mut v = 1u64;
    while v < 3_000_000_000_000 {
        h.record(v);
        v = v + v / 50 + 1;
    }
    WireHistogram::from_sparse(&h.to_sparse())
}

/// Plays the agent's part through `go` (`armed` at once) on the fake agent's pipes: the reader of what the
/// controller sends and the writer to it.
fn fake_until_go(
    dir: &Path,
    version: &str,
) -> (Reader<std::io::BufReader<std::fs::File>>, std::fs::File) {
    let input = std::fs::File::open(dir.join("in")).unwrap();
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("out"))
        .unwrap();
    let mut r = Reader::new(std::io::BufReader::new(input));
    loop {
        match r.next_message() {
            Ok(Some(Message::Hello(_))) => {
                send(&mut out, &Message::Hello(Hello::current(version))).unwrap()
            }
            Ok(Some(Message::Time { seq })) => send(
                &mut out,
                &Message::TimeReply {
                    seq,
                    agent_ns: oio_fleet::protocol::now_ns(),
                },
            )
            .unwrap(),
            Ok(Some(Message::Prepare { .. })) => send(
                &mut out,
                &Message::Ready {
                    targets: vec![],
                    identities: vec![],
                },
            )
            .unwrap(),
            Ok(Some(Message::Arm)) => send(&mut out, &Message::Armed).unwrap(),
            Ok(Some(Message::Go { start_agent_ns })) => {
                send(
                    &mut out,
                    &Message::Started {
                        agent_ns: start_agent_ns,
                    },
                )
                .unwrap();
                break;
            }
            // The controller's beat (the watchdog): nothing to answer.
            Ok(Some(Message::Beat { .. })) => {}
            other => panic!("the fake agent got {other:?}"),
        }
    }
    (r, out)
}

/// Plays the agent's part until `go`, then streams intervals without end (as the hostile
/// agent of the issue did). Returns how many it wrote before the controller hung up.
fn hostile_agent(dir: PathBuf, version: String) -> u64 {
    let (mut r, mut out) = fake_until_go(&dir, &version);
    // Stdin is drained (stop messages) so the controller never blocks on it.
    std::thread::spawn(move || while let Ok(Some(_)) = r.next_message() {});
    let h = wide_histogram();
    let dir_stats = oio_fleet::protocol::WireDir {
        ios: h.count,
        bytes: h.count * 4096,
        iops: h.count as f64,
        bytes_per_sec: h.count as f64 * 4096.0,
        latency: Some(h),
    };
    let mut sent = 0u64;
    while sent < 1_000_000 {
        let w = WireInterval {
            index: sent,
            t_s: (sent + 1) as f64,
            duration_s: 1.0,
            read: dir_stats.clone(),
            write: dir_stats.clone(),
            total: dir_stats.clone(),
            errors: None,
        };
        if send(&mut out, &Message::Interval(Box::new(w))).is_err() {
            break;
        }
        sent += 1;
    }
    sent
}

/// The controller's peak resident memory, kB, polled until it exits.
fn wait_with_peak(mut c: Child, limit: Duration) -> (std::process::Output, u64) {
    let pid = c.id();
    let mut peak = 0;
    let deadline = Instant::now() + limit;
    let mut stdout = c.stdout.take().unwrap();
    let mut stderr = c.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut v).unwrap();
        v
    });
    let e = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut stderr, &mut v).unwrap();
        v
    });
    let status = loop {
        if let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
            if let Some(kb) = s
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse::<u64>().ok())
            {
                peak = peak.max(kb);
            }
        }
        if let Some(s) = c.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = c.kill();
            panic!("the controller did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    (
        std::process::Output {
            status,
            stdout: o.join().unwrap(),
            stderr: e.join().unwrap(),
        },
        peak,
    )
}

/// Issue 22 item 14: an agent that streams intervals past the end of its plan is refused
/// after the plan's intervals and a margin, named, and the controller stays small; the other
/// host is stopped and keeps its result.
#[test]
fn an_agent_streaming_past_its_plan_is_refused_and_the_controller_stays_small() {
    let dir = scratch();
    let launcher = fifo_launcher(dir.path());
    let (d, v) = (dir.path().to_path_buf(), version());
    let fake = std::thread::spawn(move || hostile_agent(d, v));
    let c = Command::new(oio())
        .env("NO_COLOR", "1")
        .current_dir(dir.path())
        .args(["fleet", "run", "--inventory"])
        .arg(inventory(dir.path(), &["real", "fake"]))
        .arg("--launcher")
        .arg(&launcher)
        .arg("--out")
        .arg(dir.path().join("res"))
        .args([
            "--rw",
            "randread",
            "--engine",
            "null",
            "--size",
            "1M",
            "--time",
            "2s",
            "--ramp",
            "0",
            "--interval",
            "1s",
            "--json",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (out, peak_kb) = wait_with_peak(c, Duration::from_secs(120));
    let sent = fake.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stderr}");
    println!(
        "the fake agent wrote {sent} intervals of {} bytes each before the controller hung up; controller peak RSS {:.1} MiB",
        serde_json::to_string(&wide_histogram()).unwrap().len() * 3,
        peak_kb as f64 / 1024.0
    );
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("the merged result");
    let fake = &doc["hosts"][1];
    assert_eq!(fake["status"], "lost", "{doc:#}");
    let reason = fake["lost"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("it sent more intervals than its plan makes (at most 5"),
        "{reason}"
    );
    assert!(
        stderr.contains("host fake was lost") && stderr.contains("more intervals than its plan"),
        "{stderr}"
    );
    // Its 5 accepted intervals are kept, nothing more.
    assert_eq!(fake["intervals"], 5, "{fake}");
    assert_eq!(doc["hosts"][0]["status"], "interrupted", "{doc:#}");
    assert!(sent < 1_000_000, "the controller never hung up");
    assert!(peak_kb < 300 * 1024, "controller peak RSS {peak_kb} kB");
}

/// Issue 22 item 16: `fleet check` grows nothing (an oio file smaller than --size stays as it
/// is) and refuses exactly what `fleet run` refuses, in the same words: /proc, a missing
/// directory.
#[test]
fn check_changes_nothing_and_refuses_what_run_refuses() {
    let dir = scratch();
    let t = dir.path().join("a").join("t.dat");
    std::fs::create_dir_all(t.parent().unwrap()).unwrap();
    let made = Command::new(oio())
        .args([
            "run", "--engine", "null", "--rw", "randread", "--time", "100ms", "--ramp", "0",
            "--size", "1M", "--out",
        ])
        .arg(dir.path().join("res0"))
        .arg(&t)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let before = std::fs::metadata(&t).unwrap();
    let check = |target: &str, size: &str| {
        let c = fleet(
            dir.path(),
            "check",
            &["a"],
            &["--rw", "randwrite", "--size", size, "--json"],
        );
        let mut c = c;
        // The inventory's target is replaced by the one given.
        let inv = dir.path().join("inventory.toml");
        std::fs::write(
            &inv,
            format!("[[host]]\nname = \"a\"\ntargets = [\"{target}\"]\n"),
        )
        .unwrap();
        let out = wait_bounded(c.spawn().unwrap(), Duration::from_secs(60));
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        (out.status.code(), v)
    };
    // Smaller than asked: the check says prepare would grow it, and changes nothing.
    let (code, v) = check(t.to_str().unwrap(), "4M");
    assert_eq!(code, Some(0), "{v:#}");
    let detail = v[0]["targets"][0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("prepare would grow it to 4.00 MiB"),
        "{detail}"
    );
    let after = std::fs::metadata(&t).unwrap();
    assert_eq!(after.len(), 1 << 20);
    assert_eq!(after.modified().unwrap(), before.modified().unwrap());
    use std::os::unix::fs::MetadataExt as _;
    assert_eq!(
        (after.ctime(), after.ctime_nsec()),
        (before.ctime(), before.ctime_nsec())
    );
    // What run refuses, check refuses, in the same words.
    let missing = dir.path().join("no").join("such").join("t.dat");
    for target in ["/proc/oio.dat", missing.to_str().unwrap()] {
        let (code, v) = check(target, "1M");
        assert_eq!(code, Some(1), "{v:#}");
        assert_eq!(v[0]["targets"][0]["status"], "refused", "{v:#}");
        let why = v[0]["targets"][0]["detail"].as_str().unwrap().to_string();
        let inv = dir.path().join("inventory.toml");
        std::fs::write(
            &inv,
            format!("[[host]]\nname = \"a\"\ntargets = [\"{target}\"]\n"),
        )
        .unwrap();
        let out = Command::new(oio())
            .env("NO_COLOR", "1")
            .current_dir(dir.path())
            .args(["fleet", "run", "--inventory"])
            .arg(&inv)
            .arg("--launcher")
            .arg(pid_launcher(dir.path()))
            .arg("--out")
            .arg(dir.path().join("res"))
            .args([
                "--rw",
                "randwrite",
                "--size",
                "1M",
                "--time",
                "1s",
                "--engine",
                "null",
            ])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        println!("{target}: check: {why}\nrun: {stderr}");
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(&why), "run: {stderr}\ncheck: {why}");
    }
    assert!(!missing.parent().unwrap().exists());
}

/// One scrape of `--metrics`: the interval, each host's IOPS of it, the merged IOPS, and the
/// I/O counters since the start.
#[derive(Debug)]
struct Scrape {
    interval: usize,
    iops: std::collections::BTreeMap<String, f64>,
    merged: f64,
    ios: std::collections::BTreeMap<String, u64>,
    merged_ios: u64,
    merged_count: u64,
    merged_inf: u64,
}

fn scrape(addr: &str) -> Option<Scrape> {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(addr).ok()?;
    c.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(c, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut text = String::new();
    c.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    let mut s = Scrape {
        interval: 0,
        iops: Default::default(),
        merged: 0.0,
        ios: Default::default(),
        merged_ios: 0,
        merged_count: 0,
        merged_inf: 0,
    };
    let label = |k: &str| k.split('"').nth(1).unwrap().to_string();
    for l in body.lines().filter(|l| !l.starts_with('#')) {
        let (k, v) = l.rsplit_once(' ').unwrap();
        match k {
            "oio_fleet_interval" => s.interval = v.parse().unwrap(),
            "oio_fleet_merged_interval_iops" => s.merged = v.parse().unwrap(),
            "oio_fleet_merged_ios_total" => s.merged_ios = v.parse().unwrap(),
            "oio_fleet_merged_latency_seconds_count" => s.merged_count = v.parse().unwrap(),
            "oio_fleet_merged_latency_seconds_bucket{le=\"+Inf\"}" => {
                s.merged_inf = v.parse().unwrap()
            }
            _ if k.starts_with("oio_fleet_interval_iops{") => {
                s.iops.insert(label(k), v.parse().unwrap());
            }
            _ if k.starts_with("oio_fleet_ios_total{") => {
                s.ios.insert(label(k), v.parse().unwrap());
            }
            _ => {}
        }
    }
    (s.interval > 0).then_some(s)
}

/// Issue 26 item 4: `--metrics` serves the live figures while the run lasts; every scrape's
/// per-host and merged IOPS are exactly the final result's for that interval, and its counters
/// the sums of the intervals so far.
#[test]
fn a_metrics_scrape_during_a_run_matches_the_final_intervals() {
    let dir = scratch();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut c = fleet(
        dir.path(),
        "run",
        &["m1", "m2"],
        &[
            "--engine",
            "null",
            "--sim",
            "servers=4,service=1ms",
            "--rw",
            "randread",
            "--size",
            "1M",
            "--time",
            "4s",
            "--ramp",
            "0s",
            "--interval",
            "1s",
            "--json",
            "--metrics",
            &addr,
        ],
    )
    .spawn()
    .unwrap();
    // Scraped until the last of the 4 intervals is seen or the endpoint closes with the run
    // (the run's stdout is read only afterwards, by wait_bounded).
    let mut scrapes: Vec<Scrape> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline && scrapes.last().is_none_or(|l| l.interval < 4) {
        let up = std::net::TcpStream::connect(&addr).is_ok();
        if !up && (!scrapes.is_empty() || c.try_wait().unwrap().is_some()) {
            break;
        }
        if let Some(s) = scrape(&addr) {
            if scrapes.last().is_none_or(|l| l.interval != s.interval) {
                scrapes.push(s);
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = wait_bounded(c, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!scrapes.is_empty(), "no scrape saw an interval");
    let own: std::collections::BTreeMap<String, Value> = doc["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let p = h["result_file"].as_str().unwrap();
            let f = if Path::new(p).is_absolute() {
                PathBuf::from(p)
            } else {
                dir.path().join(p)
            };
            (
                h["host"].as_str().unwrap().to_string(),
                serde_json::from_slice(&std::fs::read(f).unwrap()).unwrap(),
            )
        })
        .collect();
    for s in &scrapes {
        let k = s.interval - 1;
        println!(
            "scraped interval {}: {:?} merged {} IOPS, {} I/Os so far",
            s.interval, s.iops, s.merged, s.merged_ios
        );
        assert_eq!(
            s.merged,
            doc["intervals"][k]["total"]["iops"].as_f64().unwrap(),
            "merged IOPS of interval {}",
            s.interval
        );
        let mut sum = 0;
        for (h, r) in &own {
            assert_eq!(
                s.iops[h],
                r["intervals"][k]["total"]["iops"].as_f64().unwrap(),
                "{h}'s IOPS of interval {}",
                s.interval
            );
            let ios: u64 = r["intervals"].as_array().unwrap()[..=k]
                .iter()
                .map(|i| i["total"]["ios"].as_u64().unwrap())
                .sum();
            assert_eq!(s.ios[h], ios, "{h}'s I/Os through interval {}", s.interval);
            sum += ios;
        }
        assert_eq!(
            (s.merged_ios, s.merged_count, s.merged_inf),
            (sum, sum, sum)
        );
    }
}

/// Issue 39 item 6: `oio fleet scale --repeat N` runs every step N times in rounds
/// (ascending, then descending), keeps each run, and takes a step's margin from its runs'
/// spread; on the model every run of a step is the same, so the ladder is exact.
#[test]
fn a_host_ladder_with_repeats_interleaves_its_steps_and_keeps_each_run() {
    let dir = scratch();
    let out = fleet(
        dir.path(),
        "scale",
        &["s1", "s2"],
        &[
            "--engine",
            "null",
            "--sim",
            "servers=8,service=1ms,clock=virtual",
            "--rw",
            "randread",
            "--size",
            "1M",
            "--time",
            "2s",
            "--ramp",
            "0s",
            "--steps",
            "1,2",
            "--repeat",
            "2",
            "--json",
        ],
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // Counterbalanced: 1, 2, then 2, 1.
    let order: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("oio fleet scale: "))
        .collect();
    assert_eq!(
        order,
        [
            "oio fleet scale: 1 host, run 1 of 2",
            "oio fleet scale: 2 hosts, run 1 of 2",
            "oio fleet scale: 2 hosts, run 2 of 2",
            "oio fleet scale: 1 host, run 2 of 2",
        ],
        "{err}"
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let schema: Value =
        serde_json::from_str(include_str!("../../../schema/fleet-scale.schema.json")).unwrap();
    let v = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let steps = doc["steps"].as_array().unwrap();
    let first = steps[0]["rate"].as_f64().unwrap();
    for s in steps {
        let rates = s["repeat_rates"].as_array().unwrap();
        assert_eq!(rates.len(), 2, "{s}");
        assert_eq!(rates[0], rates[1], "{s}");
        assert_eq!(s["result_files"].as_array().unwrap().len(), 2, "{s}");
        assert_eq!(s["efficiency"].as_f64().unwrap(), 1.0, "{s}");
        assert_eq!(
            s["rate"].as_f64().unwrap(),
            s["hosts"].as_f64().unwrap() * first
        );
    }
    assert!(
        doc["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().starts_with("each step is 2 fleet runs")),
        "{doc}"
    );
}

/// Issue 26 item 2: `oio fleet scale` on local agents against the simulated device on a
/// virtual clock: each host's rate is the model's exactly, so every step's efficiency is
/// exactly 1 and the ladder stays above the threshold; each step keeps its merged result.
#[test]
fn a_host_ladder_of_the_model_scales_exactly_linearly() {
    let dir = scratch();
    let out = fleet(
        dir.path(),
        "scale",
        &["s1", "s2", "s3", "s4"],
        &[
            "--engine",
            "null",
            "--sim",
            "servers=8,service=1ms,clock=virtual",
            "--rw",
            "randread",
            "--size",
            "1M",
            "--time",
            "4s",
            "--ramp",
            "0s",
            "--interval",
            "1s",
            "--steps",
            "1,2,4",
            "--json",
        ],
    )
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["schema"], "oio.fleet.scale");
    let schema: Value =
        serde_json::from_str(include_str!("../../../schema/fleet-scale.schema.json")).unwrap();
    let v = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let steps = doc["steps"].as_array().unwrap();
    let hosts: Vec<u64> = steps.iter().map(|s| s["hosts"].as_u64().unwrap()).collect();
    assert_eq!(hosts, [1, 2, 4]);
    let first = steps[0]["rate"].as_f64().unwrap();
    for s in steps {
        let k = s["hosts"].as_f64().unwrap();
        assert_eq!(s["rate"].as_f64().unwrap(), k * first, "{s}");
        assert_eq!(s["efficiency"].as_f64().unwrap(), 1.0, "{s}");
        let merged: Value = serde_json::from_slice(
            &std::fs::read(dir.path().join(s["result_file"].as_str().unwrap()))
                .or_else(|_| std::fs::read(s["result_file"].as_str().unwrap()))
                .unwrap(),
        )
        .unwrap();
        assert_eq!(merged["hosts"].as_array().unwrap().len() as f64, k);
    }
    assert_eq!(doc["below_at"], Value::Null);
    assert!(
        doc["verdict"]
            .as_str()
            .unwrap()
            .starts_with("scaling efficiency stays at or above 0.80 through 4 hosts"),
        "{}",
        doc["verdict"]
    );
    ladder_in_the_report(dir.path(), &doc, "IOPS");
    let e = fleet(dir.path(), "scale", &["s1", "s2"], &["--steps", "1,3"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&e.stderr)
        .contains("--steps: increasing host counts from 1 to the 2 hosts given"));
}

/// `oio report` on a ladder's results shows the ladder as a table: one row per step with its
/// hosts, its rate in `unit`, the rate per host and the efficiency ± its margin, exactly as the
/// document has them, and the document's verdict word for word.
fn ladder_in_the_report(dir: &Path, doc: &Value, unit: &str) {
    let r = Command::new(oio())
        .current_dir(dir)
        .args(["report", "res", "-o", "r.html"])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let html = std::fs::read_to_string(dir.join("r.html")).unwrap();
    let section = &html[html
        .find("<section data-kind=\"ladder\">")
        .expect("a ladder section")..];
    let section = &section[..section.find("</section>").unwrap()];
    let verdict = doc["verdict"].as_str().unwrap().replace('&', "&amp;");
    assert!(
        section.contains(&format!("<p class=\"verdict\">{verdict}</p>")),
        "{section}"
    );
    let steps = doc["steps"].as_array().unwrap();
    let rows = section.matches("<tr><td>").count();
    assert_eq!(rows, steps.len(), "{section}");
    for s in steps {
        let efficiency = match (s["efficiency"].as_f64(), s["margin"].as_f64()) {
            (Some(e), Some(m)) => format!("{e:.2} ± {m:.2}"),
            (Some(e), None) => format!("{e:.2} (margin unknown)"),
            (None, _) => "-".into(),
        };
        let row = format!(
            "<tr><td>{}</td><td>{:.1} {unit}</td><td>{:.1}</td>",
            s["hosts"],
            s["rate"].as_f64().unwrap(),
            s["per_host"].as_f64().unwrap()
        );
        let at = section
            .find(&row)
            .unwrap_or_else(|| panic!("{row} in {section}"));
        let tr = &section[at..];
        let tr = &tr[..tr.find("</tr>").unwrap()];
        assert!(tr.contains(&format!("<td>{efficiency}</td>")), "{tr}");
    }
    // The ladder is not also listed among the documents the report has no section for.
    assert!(!html.contains("data-kind=\"others\""), "others section");
}

/// Issue 26 item 5: each host's `--hdr-log`/`--lat-log` files come back to the controller
/// (`{host}` names them apart on the hosts), byte for byte, under `HOST.logs/`.
#[test]
fn hosts_send_their_logs_to_the_controller() {
    let dir = scratch();
    let out = fleet(
        dir.path(),
        "run",
        &["l1", "l2"],
        &[
            "--engine",
            "null",
            "--sim",
            "servers=4,service=1ms,clock=virtual",
            "--rw",
            "randread",
            "--size",
            "1M",
            "--time",
            "2s",
            "--ramp",
            "0s",
            "--interval",
            "1s",
            "--hdr-log",
            "{host}.hlog",
            "--lat-log",
            "{host}",
            "--json",
        ],
    )
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    for h in doc["hosts"].as_array().unwrap() {
        let name = h["host"].as_str().unwrap();
        let logs: Vec<&str> = h["logs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap())
            .collect();
        assert_eq!(logs.len(), 2, "{h}");
        for (got, on_host) in logs
            .iter()
            .zip([format!("{name}.hlog"), format!("{name}_lat.1.log")])
        {
            assert!(got.ends_with(&format!("{name}.logs/{on_host}")), "{got}");
            let p = if Path::new(got).is_absolute() {
                PathBuf::from(got)
            } else {
                dir.path().join(got)
            };
            let copy = std::fs::read(p).unwrap();
            assert!(!copy.is_empty());
            assert_eq!(
                copy,
                std::fs::read(dir.path().join(&on_host)).unwrap(),
                "{on_host}"
            );
        }
    }
}

/// A TPC-C database `DIR/HOST.db` for each host (one build, copied: a build is slow).
fn tpcc_dbs(dir: &Path, hosts: &[&str]) {
    let out = Command::new(oio())
        .env("NO_COLOR", "1")
        .current_dir(dir)
        .args(["tpcc", "build", "--db"])
        .arg(format!("sqlite:{}.db", hosts[0]))
        .args(["-W", "1", "--workers", "2"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tpcc build: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for h in &hosts[1..] {
        std::fs::copy(
            dir.join(format!("{}.db", hosts[0])),
            dir.join(format!("{h}.db")),
        )
        .unwrap();
    }
}

/// `oio fleet tpcc ACTION` on local agents, each host on its own `HOST.db`.
fn fleet_tpcc(dir: &Path, action: &str, hosts: &[&str], args: &[&str]) -> Command {
    let mut c = Command::new(oio());
    c.env("NO_COLOR", "1")
        .current_dir(dir)
        .args(["fleet", "tpcc", action, "--hosts"])
        .arg(hosts.join(","))
        .arg("--launcher")
        .arg(format!("'{}' agent --stdio", oio()))
        .args(["--db", "sqlite:{host}.db", "--out", "res"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn read_in(dir: &Path, p: &str) -> Value {
    let f = if Path::new(p).is_absolute() {
        PathBuf::from(p)
    } else {
        dir.join(p)
    };
    serde_json::from_slice(&std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display())))
        .unwrap()
}

/// `oio fleet tpcc scale` on SQLite behind local agents: a 1 → 2 → 3 ladder (the default
/// steps for three hosts), each step a fleet TPC-C run with its merged result; each step's
/// efficiency is exactly NOPM_n ÷ (n × NOPM_1) of those results, a step above 1 is flagged,
/// and the first step below the threshold beyond its margin is named. The threshold is 100 so
/// that the step named is certain whatever this machine's load: a step's relative noise is
/// at most 1 (all of a series in one interval), so its margin is at most 2√2 × its efficiency.
#[test]
fn a_tpcc_host_ladder_names_the_step_below_its_threshold_and_flags_above_one() {
    let dir = scratch();
    let d = dir.path();
    let hosts = ["a", "b", "c"];
    tpcc_dbs(d, &hosts);
    let mut c = fleet_tpcc(
        d,
        "scale",
        &hosts,
        &[
            "-n",
            "1",
            "--ramp",
            "0",
            "--time",
            "3s",
            "--interval",
            "500ms",
            "--threshold",
            "100",
            "--json",
        ],
    );
    let out = wait_bounded(c.spawn().unwrap(), Duration::from_secs(300));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    println!("{}", serde_json::to_string_pretty(&doc["steps"]).unwrap());
    assert_eq!(doc["schema"], "oio.fleet.tpcc.scale");
    assert_eq!(
        (doc["unit"].as_str(), doc["workers"].as_u64()),
        (Some("NOPM"), Some(1))
    );
    let schema: Value =
        serde_json::from_str(include_str!("../../../schema/fleet-tpcc-scale.schema.json")).unwrap();
    let v = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let steps = doc["steps"].as_array().unwrap();
    let n: Vec<u64> = steps.iter().map(|s| s["hosts"].as_u64().unwrap()).collect();
    assert_eq!(n, [1, 2, 3]);
    let nopm1 = steps[0]["rate"].as_f64().unwrap();
    assert!(nopm1 > 0.0, "{doc}");
    for s in steps {
        let k = s["hosts"].as_u64().unwrap();
        let merged = read_in(d, s["result_file"].as_str().unwrap());
        assert_eq!(merged["schema"], "oio.fleet.tpcc");
        assert_eq!(merged["hosts"].as_array().unwrap().len() as u64, k);
        let nopm = merged["summary"]["nopm"].as_f64().unwrap();
        assert_eq!(s["rate"].as_f64(), Some(nopm), "{s}");
        let e = s["efficiency"].as_f64().unwrap();
        let want = (nopm / k as f64) / nopm1;
        assert!((e - want).abs() <= 1e-12 * want, "{e} vs {want}");
        // 3 s in 500 ms intervals: at least 5 full ones, so every step's noise is known.
        assert!(s["interval_rates"].as_array().unwrap().len() >= 5, "{s}");
        assert_eq!(s["flag"].is_string(), e > 1.0, "{s}");
        if k > 1 {
            let m = s["margin"].as_f64().unwrap();
            assert!(m <= 2.0 * 2f64.sqrt() * e + 1e-9, "{s}");
        }
    }
    // A step whose hosts each did more than the first's beyond the noise (the first slowed on a
    // busy machine) leaves the ladder undecided: the first step is then no base. Otherwise the
    // threshold of 100 is crossed at 2 hosts.
    let unlike: Vec<u64> = steps[1..]
        .iter()
        .filter(|s| s["efficiency"].as_f64().unwrap() - s["margin"].as_f64().unwrap() > 1.0)
        .map(|s| s["hosts"].as_u64().unwrap())
        .collect();
    let verdict = doc["verdict"].as_str().unwrap();
    if unlike.is_empty() {
        assert_eq!(doc["below_at"], 2, "{doc}");
        assert!(
            verdict.starts_with("scaling efficiency falls below 100.00 at 2 hosts ("),
            "{verdict}"
        );
    } else {
        assert!(doc["below_at"].is_null(), "{doc}");
        assert_eq!(doc["undecided_at"], serde_json::json!(unlike), "{doc}");
        assert!(
            verdict.starts_with("undecided: at ") && verdict.contains("no base for scaling"),
            "{verdict}"
        );
    }
    ladder_in_the_report(d, &doc, "NOPM");
    // Each host's own TPC-C result is named after its host in the fleet (the merged result
    // lists it beside the file), not "TPC-C run N": the agents share this machine's hostname.
    let html = std::fs::read_to_string(d.join("r.html")).unwrap();
    for h in hosts {
        assert!(html.contains(&format!("host {h}")), "host {h}");
    }
    assert!(!html.contains("TPC-C run 1"), "unnamed TPC-C runs");
    // Without --json: the table, one row per step, the verdict and any flag under it.
    let mut c = fleet_tpcc(
        d,
        "scale",
        &hosts[..2],
        &[
            "-n",
            "1",
            "--ramp",
            "0",
            "--time",
            "1s",
            "--interval",
            "500ms",
        ],
    );
    let out = wait_bounded(c.spawn().unwrap(), Duration::from_secs(300));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].contains("merged NOPM") && lines[0].contains("New-Order p99"),
        "{text}"
    );
    assert!(lines[1].trim_start().starts_with("1 ") && lines[1].contains("1.000 (base)"));
    assert!(lines[2].trim_start().starts_with("2 "), "{text}");
    assert!(
        lines[3].starts_with("scaling efficiency") || lines[3].starts_with("undecided"),
        "{text}"
    );
    // A baseline belongs to `fleet tpcc run`: refused before anything runs.
    let out = fleet_tpcc(d, "scale", &hosts, &["--baseline", "x.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("--baseline: a ladder's baseline is its first step"));
}

/// One scrape of a TPC-C run's `--metrics`: the interval, each host's NOPM and TPM of it, the
/// merged ones, and the new orders and transaction-latency count since the start.
#[derive(Debug, Default)]
struct TpccScrape {
    interval: usize,
    nopm: std::collections::BTreeMap<String, f64>,
    tpm: std::collections::BTreeMap<String, f64>,
    merged_nopm: f64,
    merged_tpm: f64,
    new_orders: std::collections::BTreeMap<String, u64>,
    latency_count: std::collections::BTreeMap<String, u64>,
}

fn scrape_tpcc(addr: &str) -> Option<TpccScrape> {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(addr).ok()?;
    c.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(c, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut text = String::new();
    c.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let mut s = TpccScrape::default();
    let label = |k: &str| k.split('"').nth(1).unwrap().to_string();
    for l in body.lines().filter(|l| !l.starts_with('#')) {
        let (k, v) = l.rsplit_once(' ').unwrap();
        match k {
            "oio_fleet_interval" => s.interval = v.parse().unwrap(),
            "oio_fleet_merged_interval_nopm" => s.merged_nopm = v.parse().unwrap(),
            "oio_fleet_merged_interval_tpm" => s.merged_tpm = v.parse().unwrap(),
            _ if k.starts_with("oio_fleet_interval_nopm{") => {
                s.nopm.insert(label(k), v.parse().unwrap());
            }
            _ if k.starts_with("oio_fleet_interval_tpm{") => {
                s.tpm.insert(label(k), v.parse().unwrap());
            }
            _ if k.starts_with("oio_fleet_ios_total{") => {
                s.new_orders.insert(label(k), v.parse().unwrap());
            }
            _ if k.starts_with("oio_fleet_latency_seconds_count{") => {
                s.latency_count.insert(label(k), v.parse().unwrap());
            }
            _ => {}
        }
    }
    (s.interval > 0).then_some(s)
}

/// Issue 26 item 4 for TPC-C: `oio fleet tpcc run --metrics` serves per-host and merged NOPM
/// and TPM while the run lasts; every scrape's figures are exactly the final results' for that
/// interval (each host's own result and the merged one), its counters the sums so far.
#[test]
fn a_tpcc_metrics_scrape_during_a_run_matches_the_final_intervals() {
    let dir = scratch();
    let d = dir.path();
    let hosts = ["m1", "m2"];
    tpcc_dbs(d, &hosts);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut c = fleet_tpcc(
        d,
        "run",
        &hosts,
        &[
            "-n",
            "1",
            "--ramp",
            "0",
            "--time",
            "3s",
            "--interval",
            "500ms",
            "--json",
            "--metrics",
            &addr,
        ],
    )
    .spawn()
    .unwrap();
    // Scraped until the endpoint closes with the run (stdout is read afterwards).
    let mut scrapes: Vec<TpccScrape> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(180);
    while Instant::now() < deadline {
        let up = std::net::TcpStream::connect(&addr).is_ok();
        if !up && (!scrapes.is_empty() || c.try_wait().unwrap().is_some()) {
            break;
        }
        if let Some(s) = scrape_tpcc(&addr) {
            if scrapes.last().is_none_or(|l| l.interval != s.interval) {
                scrapes.push(s);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = wait_bounded(c, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!scrapes.is_empty(), "no scrape saw an interval");
    let own: std::collections::BTreeMap<String, Value> = doc["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["host"].as_str().unwrap().to_string(),
                read_in(d, h["result_file"].as_str().unwrap()),
            )
        })
        .collect();
    for s in &scrapes {
        let k = s.interval - 1;
        println!(
            "scraped interval {}: NOPM {:?} merged {}, TPM {:?} merged {}",
            s.interval, s.nopm, s.merged_nopm, s.tpm, s.merged_tpm
        );
        let m = &doc["intervals"][k];
        // Rates computed twice (as streamed, and in the results): equal but for the last bit.
        let same = |a: f64, b: Option<f64>| b.is_some_and(|b| (a - b).abs() <= 1e-12 * a.abs());
        assert!(
            same(s.merged_nopm, m["nopm"].as_f64()),
            "merged NOPM of {}: {} vs {}",
            s.interval,
            s.merged_nopm,
            m["nopm"]
        );
        assert!(
            same(s.merged_tpm, m["tpm_client"].as_f64()),
            "merged TPM of {}: {} vs {}",
            s.interval,
            s.merged_tpm,
            m["tpm_client"]
        );
        for (h, r) in &own {
            let iv = &r["intervals"][k];
            // One ULP apart was seen under load.
            assert!(
                same(s.nopm[h], iv["nopm"].as_f64()),
                "{h}'s NOPM of {}: {} vs {}",
                s.interval,
                s.nopm[h],
                iv["nopm"]
            );
            assert!(
                same(s.tpm[h], iv["tpm_client"].as_f64()),
                "{h}'s TPM of {}: {} vs {}",
                s.interval,
                s.tpm[h],
                iv["tpm_client"]
            );
            // The latency histogram counts the transactions of the intervals so far, as the
            // host's own result counts them per type.
            let upto = &r["intervals"].as_array().unwrap()[..=k];
            let n: u64 = upto
                .iter()
                .flat_map(|i| i["latency_by_type_ns"].as_object().unwrap().values())
                .map(|t| t["n"].as_u64().unwrap())
                .sum();
            assert_eq!(
                s.latency_count[h], n,
                "{h}'s transactions through {}",
                s.interval
            );
        }
        let new_orders: u64 = doc["intervals"].as_array().unwrap()[..=k]
            .iter()
            .map(|i| i["new_orders"].as_u64().unwrap())
            .sum();
        assert_eq!(s.new_orders.values().sum::<u64>(), new_orders, "{s:?}");
    }
}

/// Issue 26 item 4, errors: a host whose interval carries errors shows them in the live
/// figures (`oio_fleet_interval_errors{host}` beside the live table's errors column, which
/// reads the same `HostLive::errors`), and a host that does not count them has none there
/// (not a 0). The fake agent sends one interval with 7 errors, then goes silent and is lost
/// after the stall limit; the real agent's engine counts its errors per interval: none.
#[test]
fn a_hosts_errors_in_an_interval_reach_the_live_figures() {
    let dir = scratch();
    let launcher = fifo_launcher(dir.path());
    let (d, v) = (dir.path().to_path_buf(), version());
    let fake = std::thread::spawn(move || {
        let (mut r, mut out) = fake_until_go(&d, &v);
        let mut h = oio_core::histogram::LatencyHistogram::new();
        for _ in 0..10 {
            h.record(1_000_000);
        }
        let dir = oio_fleet::protocol::WireDir {
            ios: 10,
            bytes: 40_960,
            iops: 10.0,
            bytes_per_sec: 40_960.0,
            latency: Some(WireHistogram::from_sparse(&h.to_sparse())),
        };
        let w = WireInterval {
            index: 0,
            t_s: 1.0,
            duration_s: 1.0,
            read: dir.clone(),
            write: oio_fleet::protocol::WireDir {
                ios: 0,
                bytes: 0,
                iops: 0.0,
                bytes_per_sec: 0.0,
                latency: None,
            },
            total: dir,
            errors: Some(7),
        };
        send(&mut out, &Message::Interval(Box::new(w))).unwrap();
        // Silent from here on, draining what the controller sends until it hangs up.
        while let Ok(Some(_)) = r.next_message() {}
    });
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut c = Command::new(oio())
        .env("NO_COLOR", "1")
        .current_dir(dir.path())
        .args(["fleet", "run", "--inventory"])
        .arg(inventory(dir.path(), &["real", "fake"]))
        .arg("--launcher")
        .arg(&launcher)
        .arg("--out")
        .arg(dir.path().join("res"))
        .args([
            "--rw",
            "randread",
            "--engine",
            "null",
            "--size",
            "1M",
            "--time",
            "30s",
            "--ramp",
            "0",
            "--interval",
            "1s",
            "--stall-timeout",
            "4s",
            "--json",
            "--metrics",
            &addr,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Scraped until the first interval is served or the run ends (then it was never seen).
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut seen = None;
    while Instant::now() < deadline && seen.is_none() {
        if c.try_wait().unwrap().is_some() {
            break;
        }
        seen = metrics_text(&addr).filter(|t| t.contains("\noio_fleet_interval 1\n"));
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = wait_bounded(c, Duration::from_secs(120));
    fake.join().unwrap();
    let text = seen.unwrap_or_else(|| {
        panic!(
            "no scrape saw interval 1: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let mut errors: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("oio_fleet_interval_errors"))
        .collect();
    errors.sort();
    assert_eq!(
        errors,
        [
            "oio_fleet_interval_errors{host=\"fake\"} 7",
            "oio_fleet_interval_errors{host=\"real\"} 0"
        ],
        "{text}"
    );
    // The fake went silent: lost after the stall limit, the run partial.
    assert_eq!(out.status.code(), Some(1));
}

/// The body of one `GET /metrics`, or None while nothing listens.
fn metrics_text(addr: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(addr).ok()?;
    c.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(c, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut text = String::new();
    c.read_to_string(&mut text).ok()?;
    Some(text.split_once("\r\n\r\n")?.1.to_string())
}

/// `system.posix_acl_access` of `dir`: owner rwx, user `user` rwx, owning group r-x, mask
/// rwx, others r-x (the kernel's xattr format, version 2).
fn acl_granting_write(dir: &Path, user: u32) -> std::io::Result<()> {
    const UNDEFINED: u32 = u32::MAX;
    let mut v = 2u32.to_le_bytes().to_vec();
    for (tag, perm, id) in [
        (0x01u16, 7u16, UNDEFINED),
        (0x02, 7, user),
        (0x04, 5, UNDEFINED),
        (0x10, 7, UNDEFINED),
        (0x20, 5, UNDEFINED),
    ] {
        v.extend_from_slice(&tag.to_le_bytes());
        v.extend_from_slice(&perm.to_le_bytes());
        v.extend_from_slice(&id.to_le_bytes());
    }
    rustix::fs::setxattr(
        dir,
        "system.posix_acl_access",
        &v,
        rustix::fs::XattrFlags::empty(),
    )
    .map_err(std::io::Error::from)
}

fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Issue 37: `fleet install --dest DIR` refuses a DIR its group may write, or that a POSIX ACL
/// lets another user write (a member could swap `DIR/oio` before root's next run), naming it;
/// and a fleet command refuses to run an agent from such a directory.
#[test]
fn a_destination_others_may_write_is_refused_by_install_and_run() {
    let dir = scratch();
    let dest = dir.path().join("bin");
    std::fs::create_dir(&dest).unwrap();
    chmod(&dest, 0o775);
    let gid = {
        use std::os::unix::fs::MetadataExt as _;
        std::fs::metadata(&dest).unwrap().gid()
    };
    let install = |dest: &Path| {
        let c = Command::new(oio())
            .env("NO_COLOR", "1")
            .args([
                "fleet",
                "install",
                "--hosts",
                "h1",
                "--transport",
                "env",
                "--dest",
            ])
            .arg(dest)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_bounded(c, Duration::from_secs(300))
    };
    let out = install(&dest);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "h1: {} is writable by its group (gid {gid}, mode 775) without the sticky bit",
            dest.display()
        )),
        "{stderr}"
    );
    assert!(!dest.join("oio").exists());
    // The same check when an agent is run from there: a link to this oio in the directory.
    std::os::unix::fs::symlink(oio(), dest.join("oio")).unwrap();
    let run = |t: &str| {
        Command::new(oio())
            .env("NO_COLOR", "1")
            .current_dir(dir.path())
            .args(["fleet", "run", "--hosts", "h1", "--launcher"])
            .arg(format!("env {}/oio agent --stdio", dest.display()))
            .args(["--engine", "null", "--rw", "randread", "--size", "1M"])
            .args(["--time", t, "--ramp", "0", "--out", "res"])
            .arg(dir.path().join("t.dat"))
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = run("1s");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "host h1: during hello: the connection closed (env exited: exit status: 3): {} is writable by its group (gid {gid}, mode 775)",
            dest.display()
        )) && stderr.contains("nothing was started on any host"),
        "{stderr}"
    );
    // Writable by its owner alone, the same agent runs.
    chmod(&dest, 0o755);
    let out = run("200ms");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // An ACL granting another user write: refused as an ACL.
    std::fs::remove_file(dest.join("oio")).unwrap();
    if let Err(e) = acl_granting_write(&dest, 65534) {
        crate::common::missing(&format!("POSIX ACLs on the scratch file system: {e}"));
        return;
    }
    let out = install(&dest);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "h1: {} has a POSIX ACL (system.posix_acl_access) that lets users or groups other than its owner write it",
            dest.display()
        )),
        "{stderr}"
    );
    assert!(!dest.join("oio").exists());
}

/// What a fake agent does once the run has started.
type Hostile = Box<dyn FnOnce(&mut std::fs::File) + Send>;

/// `oio fleet run` of a real host and a fake one (`hostile` plays its part after `go`, then
/// it drains the controller's messages until it is hung up on): its output.
fn run_with_fake(
    dir: &Path,
    hello_version: String,
    hostile: Hostile,
    json: bool,
) -> std::process::Output {
    let launcher = fifo_launcher(dir);
    let d = dir.to_path_buf();
    let fake = std::thread::spawn(move || {
        let (mut r, mut out) = fake_until_go(&d, &hello_version);
        hostile(&mut out);
        drop(out);
        while let Ok(Some(_)) = r.next_message() {}
    });
    let mut c = Command::new(oio());
    c.env("NO_COLOR", "1")
        .current_dir(dir)
        .args(["fleet", "run", "--inventory"])
        .arg(inventory(dir, &["real", "fake"]))
        .arg("--launcher")
        .arg(&launcher)
        .arg("--out")
        .arg(dir.join("res"))
        .args([
            "--rw",
            "randread",
            "--engine",
            "null",
            "--size",
            "1M",
            "--time",
            "30s",
            "--ramp",
            "0",
            "--interval",
            "1s",
            "--connect-timeout",
            "20s",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if json {
        c.arg("--json");
    }
    let out = wait_bounded(c.spawn().unwrap(), Duration::from_secs(120));
    // A fake refused at hello never gets to `go` (its thread ends on the closed pipe, or is
    // left to it).
    if fake.is_finished() {
        let _ = fake.join();
    }
    out
}

/// Control characters a terminal acts on: OSC 52 (sets the clipboard), a title, a screen
/// clear, a carriage return and a line feed that start a spoofed line, a C1 CSI.
const HOSTILE: &str =
    "\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;pwned\x07\x1b[2J\roio: all hosts completed\n\u{9b}31m";

fn assert_no_controls(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let bad: Vec<char> = text
        .chars()
        .filter(|c| c.is_control() && *c != '\n')
        .collect();
    assert!(bad.is_empty(), "{what} carries {bad:?}:\n{text}");
}

/// Issue 37: what an agent says reaches the terminal escaped: a hello whose version carries
/// control characters, an error message full of them mid-run; the output has none but its
/// own line feeds, and shows them as escapes.
#[test]
fn a_hostile_agents_words_reach_the_terminal_escaped() {
    let dir = scratch();
    // Its hello's version.
    let out = run_with_fake(
        dir.path(),
        format!("{}{HOSTILE}", version()),
        Box::new(|_| {}),
        false,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stderr}");
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("host fake: it runs oio "), "{stderr}");
    assert!(
        stderr.contains("\\u{1b}]52;c;cm0gLXJmIH4=\\u{7}"),
        "{stderr}"
    );
    assert_no_controls("stderr", &out.stderr);
    assert_no_controls("stdout", &out.stdout);
    // Mid-run: an error message, the host lost; the table and the warnings printed.
    let dir = scratch();
    let out = run_with_fake(
        dir.path(),
        version(),
        Box::new(|out| {
            let _ = send(
                out,
                &Message::Error {
                    phase: format!("run{HOSTILE}"),
                    message: HOSTILE.to_string(),
                },
            );
        }),
        false,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stderr}\n{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("host fake was lost")
            && stderr.contains("\\u{1b}[2J\\u{d}oio: all hosts completed\\u{a}\\u{9b}31m"),
        "{stderr}"
    );
    assert_no_controls("stderr", &out.stderr);
    assert_no_controls("stdout", &out.stdout);
}

/// Issue 37: an agent claiming `ios = u64::MAX` is refused as faulty, named with what it
/// sent; the merged count is exactly the other host's, never wrapped.
#[test]
fn a_hostile_agents_overflowing_count_is_refused_and_the_others_merge_exactly() {
    let dir = scratch();
    let out = run_with_fake(
        dir.path(),
        version(),
        Box::new(|out| {
            let mut h = oio_core::histogram::LatencyHistogram::new();
            for _ in 0..10 {
                h.record(1_000_000);
            }
            let d = oio_fleet::protocol::WireDir {
                ios: u64::MAX,
                bytes: 4096,
                iops: 1.0,
                bytes_per_sec: 4096.0,
                latency: Some(WireHistogram::from_sparse(&h.to_sparse())),
            };
            let w = WireInterval {
                index: 0,
                t_s: 1.0,
                duration_s: 1.0,
                read: d.clone(),
                write: oio_fleet::protocol::WireDir {
                    ios: 0,
                    bytes: 0,
                    iops: 0.0,
                    bytes_per_sec: 0.0,
                    latency: None,
                },
                total: d,
                errors: None,
            };
            let _ = send(out, &Message::Interval(Box::new(w)));
            let _ = send(
                out,
                &Message::Error {
                    phase: "run".into(),
                    message: "done".into(),
                },
            );
        }),
        true,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("the merged result");
    let fake = &doc["hosts"][1];
    assert_eq!(fake["status"], "faulty", "{doc:#}");
    let why = fake["faulty"].as_str().unwrap();
    assert!(
        why.starts_with("host fake sent counts that cannot be merged: its streamed intervals' read I/Os summed is 18446744073709551615, which with the other hosts' "),
        "{why}"
    );
    assert!(stderr.contains(why), "{stderr}");
    let real = read_in(dir.path(), doc["hosts"][0]["result_file"].as_str().unwrap());
    let real_ios = real["summary"]["total"]["ios"].as_u64().unwrap();
    assert!(real_ios > 0);
    assert_eq!(
        doc["summary"]["total"]["ios"].as_u64(),
        Some(real_ios),
        "{doc:#}"
    );
    assert_eq!(doc["hosts"][0]["ios"].as_u64(), Some(real_ios));
    let first: u64 = real["intervals"][0]["total"]["ios"].as_u64().unwrap();
    assert_eq!(doc["intervals"][0]["total"]["ios"].as_u64(), Some(first));
}

/// A client of `--metrics` that sends its request a byte a second, and one that sends
/// nothing: each holds its connection until the server closes it. Returns how many bytes
/// the slow one sent.
fn slowloris(addr: String, stop: std::sync::Arc<std::sync::atomic::AtomicBool>) -> usize {
    use std::io::Write;
    use std::sync::atomic::Ordering;
    let deadline = Instant::now() + Duration::from_secs(120);
    let (mut slow, _idle) = loop {
        match (
            std::net::TcpStream::connect(&addr),
            std::net::TcpStream::connect(&addr),
        ) {
            (Ok(a), Ok(b)) => break (a, b),
            _ if Instant::now() < deadline && !stop.load(Ordering::SeqCst) => {
                std::thread::sleep(Duration::from_millis(20))
            }
            _ => return 0,
        }
    };
    let mut sent = 0;
    for b in b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: "
        .iter()
        .cycle()
    {
        if stop.load(Ordering::SeqCst) || slow.write_all(&[*b]).is_err() {
            break;
        }
        sent += 1;
        std::thread::sleep(Duration::from_millis(900));
    }
    sent
}

/// Issue 37: idle and slow clients of `--metrics` do not hold the end of a fleet run: the run
/// ends and its result is saved within a bound of its own length, and Ctrl-C (SIGINT) ends a
/// run at once as it does without them.
#[test]
fn slow_metrics_clients_hold_neither_the_end_of_a_run_nor_ctrl_c() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let run = |time: &str| {
        let dir = scratch();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr = format!("127.0.0.1:{port}");
        let c = fleet(
            dir.path(),
            "run",
            &["m1", "m2"],
            &[
                "--engine",
                "null",
                "--rw",
                "randread",
                "--size",
                "1M",
                "--time",
                time,
                "--ramp",
                "0s",
                "--interval",
                "500ms",
                "--json",
                "--metrics",
                &addr,
            ],
        )
        .spawn()
        .unwrap();
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let s = std::sync::Arc::clone(&stop);
        let client = std::thread::spawn(move || slowloris(addr, s));
        (dir, c, stop, client)
    };
    // To its end: 3 s measured.
    let (dir, c, stop, client) = run("3s");
    let t0 = Instant::now();
    let out = wait_bounded(c, Duration::from_secs(120));
    let took = t0.elapsed();
    stop.store(true, Ordering::SeqCst);
    let sent = client.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let window = doc["window"]["duration_s"].as_f64().unwrap();
    println!(
        "a run of {window:.3} s ended {:.1} s after it was started, a slow client having sent {sent} bytes",
        took.as_secs_f64()
    );
    assert!(sent > 0, "the slow client never connected");
    // Its own length, the agents' start and stop (debug builds on a busy machine), and no
    // more than a scrape's deadline (3 s) for the clients.
    assert!(
        took.as_secs_f64() < window + 20.0,
        "{took:?} for a window of {window} s"
    );
    assert!(crate::fleet::walk_json(&dir.path().join("res")).len() >= 3);
    // Ctrl-C mid-run: honoured at once, the partial result saved, exit 130.
    let (dir, c, stop, client) = run("120s");
    wait_until("m2 measuring", Duration::from_secs(60), || {
        pid_of(dir.path(), "m2").is_some_and(measuring)
    });
    // The clients are connected before the interrupt.
    std::thread::sleep(Duration::from_millis(1500));
    sh(&["kill", "-INT", &c.id().to_string()]).unwrap();
    let t0 = Instant::now();
    let out = wait_bounded(c, Duration::from_secs(90));
    let took = t0.elapsed();
    stop.store(true, Ordering::SeqCst);
    client.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("ended {:.1} s after SIGINT", took.as_secs_f64());
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(took < Duration::from_secs(20), "{took:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["hosts"][0]["status"], "interrupted", "{doc:#}");
    assert!(crate::fleet::walk_json(&dir.path().join("res")).len() >= 3);
}

/// Issue 39: two hosts given one target (one file, as both agents' kernels report its device
/// and inode; here through two different paths, one a symlink) are refused once prepared,
/// before any I/O: `--wait` would otherwise run them one after the other and the merge add
/// up two runs that never overlapped.
#[test]
fn two_hosts_on_one_target_are_refused_before_any_io() {
    let dir = scratch();
    std::fs::create_dir_all(dir.path().join("a")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("a"), dir.path().join("b")).unwrap();
    let mut inv = String::new();
    for h in ["a", "b"] {
        inv.push_str(&format!(
            "[[host]]\nname = \"{h}\"\ntargets = [\"{}\"]\n",
            dir.path().join(h).join("t.dat").display()
        ));
    }
    std::fs::write(dir.path().join("inv.toml"), inv).unwrap();
    let out = Command::new(oio())
        .env("NO_COLOR", "1")
        .current_dir(dir.path())
        .args(["fleet", "run", "--inventory", "inv.toml", "--launcher"])
        .arg(pid_launcher(dir.path()))
        .args([
            "--out",
            "res",
            "--rw",
            "randwrite",
            "--size",
            "1M",
            "--time",
            "2s",
        ])
        .args(["--ramp", "0", "--engine", "sync", "--buffered", "--wait"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "host b: its target {} is host a's target {} (one file, the same device and inode on one kernel",
            dir.path().join("b/t.dat").display(),
            dir.path().join("a/t.dat").display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("nothing was started on any host"),
        "{stderr}"
    );
    assert!(crate::fleet::walk_json(&dir.path().join("res")).is_empty());
}

/// The body of one scrape of `http://ADDR/metrics` with `accept` as its Accept header (none
/// when empty), and its Content-Type; None while nothing listens.
fn scrape_body(addr: &str, accept: &str) -> Option<(String, String)> {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(addr).ok()?;
    c.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let accept = if accept.is_empty() {
        String::new()
    } else {
        format!("Accept: {accept}\r\n")
    };
    write!(c, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\n{accept}\r\n").ok()?;
    let mut text = String::new();
    c.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let ctype = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Type: "))?
        .to_string();
    Some((ctype, body.to_string()))
}

/// Samples of a 0.0.4 exposition, `name{labels}` to value.
fn samples(body: &str) -> std::collections::BTreeMap<String, f64> {
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(' ')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

/// Issue 39, done-when 3: an agent stopped (SIGSTOP) for 5 s of a 10 s run, under the stall
/// limit: while it is stopped the others' intervals keep coming to `/metrics` (it is marked
/// stalled, its last-heard time stands still while theirs moves), and afterwards the result
/// warns that it sent no interval for that long.
#[test]
fn a_host_stopped_for_a_while_does_not_freeze_the_others_and_the_result_warns() {
    let dir = scratch();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let c = fleet(
        dir.path(),
        "run",
        &["a", "b", "c"],
        &[
            "--stall-timeout",
            "60s",
            "--engine",
            "null",
            "--sim",
            "servers=4,service=1ms",
            "--rw",
            "randread",
            "--size",
            "1M",
            "--time",
            "10s",
            "--ramp",
            "0",
            "--interval",
            "1s",
            "--json",
            "--metrics",
            &addr,
        ],
    )
    .spawn()
    .unwrap();
    let interval = |m: &std::collections::BTreeMap<String, f64>| {
        m.get("oio_fleet_interval").copied().unwrap_or(0.0)
    };
    let scrape_now = || samples(&scrape_body(&addr, "").map(|s| s.1).unwrap_or_default());
    wait_until("the first merged interval", Duration::from_secs(60), || {
        interval(&scrape_now()) >= 1.0
    });
    let pid = pid_of(dir.path(), "b").expect("b's pid");
    sh(&["kill", "-STOP", &pid.to_string()]).unwrap();
    let stopped = Stopped(pid);
    let at_stop = interval(&scrape_now());
    let t0 = Instant::now();
    let (mut seen_stalled, mut last) = (false, Default::default());
    while t0.elapsed() < Duration::from_secs(5) {
        let m = scrape_now();
        seen_stalled |= m.get("oio_fleet_host_stalled{host=\"b\"}") == Some(&1.0);
        if interval(&m) > 0.0 {
            last = m;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    sh(&["kill", "-CONT", &pid.to_string()]).unwrap();
    let out = wait_bounded(c, Duration::from_secs(90));
    drop(stopped);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stderr}");
    let m: std::collections::BTreeMap<String, f64> = last;
    let heard =
        |h: &str| m[&format!("oio_fleet_host_last_heard_timestamp_seconds{{host=\"{h}\"}}")];
    println!(
        "interval {at_stop} at the stop, {} 5 s later; last heard a {:.1} s, b {:.1} s",
        interval(&m),
        heard("a"),
        heard("b")
    );
    // Within 5 s of the stop (the mark is 2 intervals and a second): at least one more
    // interval shown without b, and b marked stalled.
    assert!(interval(&m) >= at_stop + 1.0, "{m:#?}");
    assert!(seen_stalled, "{m:#?}");
    assert!(heard("a") - heard("b") > 2.0, "{m:#?}");
    assert!(out.status.code().is_some_and(|c| c <= 1), "{stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("the merged result");
    assert_eq!(doc["hosts"][1]["status"], "completed", "{doc:#}");
    let w = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .find(|w| w.starts_with("host b: it sent no interval for "))
        .unwrap_or_else(|| panic!("no stall warning: {:#}", doc["warnings"]));
    let gap: f64 = w["host b: it sent no interval for ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((4.5..30.0).contains(&gap), "{w}");
    assert!(
        stderr.contains("host b: it sent no interval for "),
        "{stderr}"
    );
}

/// A Python with prometheus_client (the Prometheus project's own client library), in a venv
/// this test keeps under the target directory; None (said) when it cannot be had.
fn prometheus_python() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("prometheus-venv");
    let py = root.join("bin/python");
    let has = |py: &Path| {
        Command::new(py)
            .args(["-c", "import prometheus_client.openmetrics.parser"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if has(&py) {
        return Some(py);
    }
    // Built beside, then renamed into place: test processes running at once never see half
    // a venv.
    let tmp = root.with_extension(format!("tmp{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&tmp)
        .output()
        .is_ok_and(|o| o.status.success())
        && Command::new(tmp.join("bin/python"))
            .args(["-m", "pip", "install", "-q", "prometheus_client"])
            .output()
            .is_ok_and(|o| o.status.success());
    if !made {
        let _ = std::fs::remove_dir_all(&tmp);
        crate::common::missing("python3 -m venv with `pip install prometheus_client`");
        return None;
    }
    if std::fs::rename(&tmp, &root).is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    has(&py).then_some(py)
}

/// Parses an exposition with prometheus_client's OpenMetrics parser (`om`) or its Prometheus
/// text parser (`text`): each family's name, type and samples as JSON, or the parser's error.
fn parse_with_prometheus_client(py: &Path, which: &str, body: &str) -> Result<Value, String> {
    use std::io::Write;
    let script = r#"
import json, sys
if sys.argv[1] == "om":
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse
else:
    from prometheus_client.parser import text_string_to_metric_families as parse
out = [{"name": f.name, "type": f.type,
        "samples": [{"name": s.name, "labels": s.labels, "value": s.value} for s in f.samples]}
       for f in parse(sys.stdin.read())]
print(json.dumps(out))
"#;
    let mut c = Command::new(py)
        .args(["-c", script, which])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(body.as_bytes()).unwrap();
    let o = c.wait_with_output().unwrap();
    if !o.status.success() {
        return Err(String::from_utf8_lossy(&o.stderr).into_owned());
    }
    Ok(serde_json::from_slice(&o.stdout).unwrap())
}

/// Issue 39, done-when 4: `/metrics` is OpenMetrics that prometheus_client's OpenMetrics parser
/// accepts, every family typed (counters named per the spec), per-host last-heard series; a
/// scraper that does not ask for OpenMetrics gets the 0.0.4 text format, typed too. With
/// `-q` the bound address of `--metrics …:0` is still printed, and `--metrics-linger` keeps
/// the final interval there after the result is written.
#[test]
fn metrics_are_openmetrics_that_prometheus_client_parses_with_every_family_typed() {
    let Some(py) = prometheus_python() else {
        return;
    };
    let dir = scratch();
    let mut c = fleet(
        dir.path(),
        "run",
        &["m1", "m2"],
        &[
            "-q",
            "--engine",
            "null",
            "--sim",
            "servers=4,service=1ms",
            "--rw",
            "randread",
            "--size",
            "1M",
            "--time",
            "3s",
            "--ramp",
            "0",
            "--interval",
            "1s",
            "--metrics",
            "127.0.0.1:0",
            "--metrics-linger",
            "20s",
        ],
    )
    .spawn()
    .unwrap();
    let mut err = std::io::BufReader::new(c.stderr.take().unwrap());
    let mut line = String::new();
    let addr = loop {
        line.clear();
        let n = std::io::BufRead::read_line(&mut err, &mut line).unwrap();
        assert!(n > 0, "no address printed with -q");
        if let Some(a) = line
            .trim()
            .strip_prefix("oio fleet: live figures at http://")
        {
            break a.trim_end_matches("/metrics").to_string();
        }
    };
    // The merged result is written while the endpoint lingers: the final interval is there.
    wait_until("the merged result", Duration::from_secs(60), || {
        crate::fleet::walk_json(&dir.path().join("res"))
            .iter()
            .any(|p| p.ends_with("merged.json"))
    });
    let (om_type, om) = scrape_body(
        &addr,
        "application/openmetrics-text; version=1.0.0,text/plain;version=0.0.4;q=0.5",
    )
    .expect("the endpoint lingers after the run");
    let (text_type, text) = scrape_body(&addr, "").expect("the endpoint lingers");
    // Ctrl-C ends the linger (the run was over: nothing else is interrupted).
    let t0 = Instant::now();
    sh(&["kill", "-INT", &c.id().to_string()]).unwrap();
    let out = wait_bounded(c, Duration::from_secs(30));
    assert!(
        t0.elapsed() < Duration::from_secs(15),
        "the linger outlived Ctrl-C"
    );
    assert!(out.status.code().is_some(), "{:?}", out.status);
    assert!(
        om_type.starts_with("application/openmetrics-text; version=1.0.0"),
        "{om_type}"
    );
    assert!(
        text_type.starts_with("text/plain; version=0.0.4"),
        "{text_type}"
    );
    assert!(om.ends_with("# EOF\n"), "{om}");
    let merged = crate::fleet::walk_json(&dir.path().join("res"))
        .into_iter()
        .find(|p| p.ends_with("merged.json"))
        .unwrap();
    let doc: Value = serde_json::from_slice(&std::fs::read(merged).unwrap()).unwrap();
    let n_intervals = doc["intervals"].as_array().unwrap().len() as f64;

    let families = parse_with_prometheus_client(&py, "om", &om)
        .unwrap_or_else(|e| panic!("prometheus_client refused the OpenMetrics: {e}\n{om}"));
    let fams = families.as_array().unwrap();
    let family = |name: &str| {
        fams.iter()
            .find(|f| f["name"] == name)
            .unwrap_or_else(|| panic!("no family {name}: {families:#}"))
    };
    for f in fams {
        assert!(
            ["counter", "gauge", "histogram"].contains(&f["type"].as_str().unwrap()),
            "untyped family: {f:#}"
        );
        assert!(!f["samples"].as_array().unwrap().is_empty(), "{f:#}");
    }
    assert_eq!(
        family("oio_fleet_interval")["samples"][0]["value"],
        n_intervals
    );
    let ios = family("oio_fleet_ios");
    assert_eq!(ios["type"], "counter");
    let per_host: Vec<(&str, &str)> = ios["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap(),
                s["labels"]["host"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        per_host,
        [("oio_fleet_ios_total", "m1"), ("oio_fleet_ios_total", "m2")]
    );
    let total: f64 = ios["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["value"].as_f64().unwrap())
        .sum();
    assert_eq!(
        total,
        doc["summary"]["total"]["ios"].as_f64().unwrap(),
        "the final interval's counters are the result's I/Os"
    );
    assert_eq!(family("oio_fleet_merged_ios")["type"], "counter");
    assert_eq!(family("oio_fleet_latency_seconds")["type"], "histogram");
    let heard = family("oio_fleet_host_last_heard_timestamp_seconds");
    assert_eq!(heard["samples"].as_array().unwrap().len(), 2);

    let families = parse_with_prometheus_client(&py, "text", &text)
        .unwrap_or_else(|e| panic!("prometheus_client refused the 0.0.4 text: {e}\n{text}"));
    for f in families.as_array().unwrap() {
        assert!(
            ["counter", "gauge", "histogram"].contains(&f["type"].as_str().unwrap()),
            "untyped family in the 0.0.4 text: {f:#}"
        );
    }
    assert!(
        families
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["name"] == "oio_fleet_ios"
                && f["type"] == "counter"
                && f["samples"].as_array().unwrap().len() == 2),
        "{families:#}"
    );
}

/// Issue 39: an agent whose controller falls silent without its pipe closing (a link that
/// died, here a launcher that stops passing the controller's messages on after `go` but
/// keeps the pipe open) stops its I/O within its watchdog (the stall limit of 3 s here,
/// beats every second), not at its planned end 30 s later, and says why in its result.
#[test]
fn an_agent_cut_off_from_its_controller_stops_its_io_within_its_watchdog() {
    let dir = scratch();
    let script = dir.path().join("deaf.sh");
    std::fs::write(
        &script,
        format!(
            "{{ while IFS= read -r l; do printf '%s\\n' \"$l\"; case $l in *'\"msg\":\"go\"'*) exec sleep 120 ;; esac; done; }} | exec '{}' agent --stdio\n",
            oio()
        ),
    )
    .unwrap();
    let t0 = Instant::now();
    let out = Command::new(oio())
        .env("NO_COLOR", "1")
        .current_dir(dir.path())
        .args(["fleet", "run", "--hosts", "deaf", "--launcher"])
        .arg(format!("sh '{}' {{host}}", script.display()))
        .args(["--engine", "null", "--sim", "servers=4,service=1ms"])
        .args([
            "--rw", "randread", "--size", "1M", "--time", "30s", "--ramp", "0",
        ])
        .args(["--stall-timeout", "3s", "--json", "--out", "res", "t.dat"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let took = t0.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stderr}\nended after {:.1} s", took.as_secs_f64());
    let doc: Value = serde_json::from_slice(&out.stdout).expect("the merged result");
    let h = &doc["hosts"][0];
    assert_eq!(h["status"], "interrupted", "{doc:#}");
    // The watchdog is 3 s after the last beat that got through (just before go); a second
    // of keepalive polling and an interval's end on top.
    let window = h["window_s"].as_f64().unwrap();
    assert!((2.0..6.0).contains(&window), "its window: {window} s");
    assert!(took < Duration::from_secs(25), "{took:?}");
    assert!(
        stderr.contains("host deaf: the controller was silent for "),
        "{stderr}"
    );
    assert_eq!(out.status.code(), Some(1), "{stderr}");
}
