//! The controller: one launcher process per host, the handshake, clock probes, prepare on
//! every host (any refusal aborts all before any I/O), a common start instant, collection.
//!
//! Each host's stdout is read by its own thread, which stamps every message with the
//! controller's clock as it arrives (clock replies need that) and hands it to one channel;
//! the session logic runs in the caller's thread.

use crate::clock::{estimate, ClockOffset, Sample, PROBES};
use crate::protocol::{now_ns, send, Hello, Message, Reader, TargetCheck, WireInterval};
use crossbeam_channel::{Receiver, RecvTimeoutError};
use oio_core::result::{RunResult, TargetInfo};
use oio_core::Cancel;
use oio_engine::RunPlan;
use serde::{Deserialize, Serialize};
use std::io::{BufReader, Read};
use std::os::unix::process::CommandExt as _;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Bytes of each agent's stderr kept for messages (the last ones).
const STDERR_TAIL: usize = 4096;
/// How long stopped agents get to send their partial results.
const STOP_GRACE: Duration = Duration::from_secs(20);
/// How long a finished agent's launcher gets to exit before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(5);
/// Most streamed intervals kept per host (the engine's own bound on a run's series).
const MAX_STREAMED: usize = 1_000_000;
/// Longest line of any message but a final result: an interval carries at most three
/// histograms, each at most [`crate::protocol::max_histogram_b64`] bytes.
const SMALL_LINE: usize = 1 << 20;
/// The stall limit when the caller gives none.
pub const DEFAULT_STALL: Duration = Duration::from_secs(120);
/// How often the controller tells each running agent it is there.
const BEAT: Duration = Duration::from_secs(1);

/// The silence after which an agent stops its I/O: the stall limit, within 3 s (three beats
/// missed) and 10 s (a cut host does not run on for long unobserved).
fn watchdog(stall: Duration) -> Duration {
    stall.clamp(3 * BEAT, Duration::from_secs(10))
}

/// One host to run on.
#[derive(Clone, Debug)]
pub struct HostJob {
    /// Its name (results, messages).
    pub name: String,
    /// The launcher's command line for it.
    pub argv: Vec<String>,
    /// What to run there.
    pub plan: Work,
    /// Its workload group (results keep one section per group); empty: the only one.
    pub group: String,
}

/// What a fleet runs on each host.
#[derive(Clone, Debug)]
pub enum Work {
    /// A workload, with this host's target bindings.
    Io(RunPlan),
    /// A TPC-C run, with this host's database.
    Tpcc(oio_tpcc::TpccRunPlan),
    /// A SQL script run, with this host's database.
    Sql(crate::protocol::WireSqlPlan),
}

/// What the hosts run, for a header and a result's folder: the workload's name (`default`
/// when no job runs a workload), or when workload groups run different workloads, "mixed"
/// and each group's.
pub fn workload_name(default: &str, jobs: &[HostJob]) -> String {
    let mut groups: Vec<(&str, &str)> = Vec::new();
    for j in jobs {
        if let Work::Io(p) = &j.plan {
            if !groups.iter().any(|g| g.0 == j.group) {
                groups.push((&j.group, &p.workload.name));
            }
        }
    }
    if groups.len() < 2 {
        return groups.first().map_or(default, |g| g.1).to_string();
    }
    format!(
        "mixed ({})",
        groups
            .iter()
            .map(|(g, w)| format!("{g}: {w}"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

impl Work {
    /// Where the `started` message is taken, after the common start: a workload's workers
    /// start at the instant (the engine times its ramp from there); a TPC-C driver reports
    /// when its measured window opens, after connecting and its ramp.
    fn started_after(&self) -> Duration {
        match self {
            Work::Io(_) => Duration::ZERO,
            Work::Tpcc(p) => Duration::from_secs_f64(p.step.ramp_s.clamp(0.0, 1e9)),
            Work::Sql(p) => Duration::from_secs_f64(p.options.ramp_s.clamp(0.0, 1e9)),
        }
    }

    /// What an agent running this may send: its streamed intervals (count and times) and the
    /// longest line.
    fn bounds(&self) -> Bounds {
        let (series_s, interval_s, steps) = match self {
            Work::Io(p) => (
                (p.ramp + p.time).as_secs_f64(),
                p.interval.as_secs_f64().max(1e-3),
                1.0,
            ),
            Work::Tpcc(p) => (
                (p.step.ramp_s + p.step.time_s).max(0.0),
                p.step.interval_s.max(1e-3),
                p.workers.len().max(1) as f64,
            ),
            Work::Sql(p) => (
                (p.options.ramp_s + p.options.time_s).max(0.0),
                p.options.interval_s.max(1e-3),
                1.0,
            ),
        };
        // Every interval of the series, a short last one, and a margin.
        let per_step = (series_s / interval_s).ceil() + 3.0;
        let intervals = (per_step * steps).min(MAX_STREAMED as f64) as usize;
        // A final result holds every interval with its histograms (each at most every bucket
        // of oio's layout), besides its summary.
        let logs = match self {
            Work::Io(p) if p.lat_log.is_some() || p.hdr_log.is_some() => {
                (crate::protocol::MAX_LOG_BYTES as u64).div_ceil(3) * 4 + (1 << 20)
            }
            _ => 0,
        };
        let line = (intervals as u64 + 4)
            .saturating_mul(crate::protocol::max_result_interval_bytes() as u64)
            .saturating_add(16 << 20)
            .saturating_add(logs)
            .min(crate::protocol::MAX_LINE as u64) as usize;
        Bounds {
            intervals,
            t_s: series_s + 2.0 * interval_s + 5.0,
            line,
        }
    }

    fn length(&self) -> Duration {
        match self {
            Work::Io(p) => p.ramp + p.time,
            Work::Tpcc(p) => {
                let s = (p.step.ramp_s + p.step.time_s) * p.workers.len() as f64;
                // Each step also connects, snapshots and settles; bounded by its timeouts.
                Duration::from_secs_f64(s.clamp(0.0, 1e9)) + p.step.timeouts.call_bound()
            }
            Work::Sql(p) => {
                let s = p.options.ramp_s + p.options.time_s;
                // Connecting, and the workers' last transactions, bounded by the timeouts.
                Duration::from_secs_f64(s.clamp(0.0, 1e9)) + p.options.timeouts.call_bound()
            }
        }
    }
}

/// What the controller accepts from one agent: more is refused, naming the host, so a broken
/// or hostile agent cannot make the controller grow without limit.
#[derive(Clone, Copy, Debug)]
struct Bounds {
    /// Streamed intervals.
    intervals: usize,
    /// Latest end of an interval, seconds into the host's series.
    t_s: f64,
    /// Longest line (a final result).
    line: usize,
}

/// Settings of a fleet session.
#[derive(Clone, Debug)]
pub struct Options {
    /// This oio's `--version` (agents must match it).
    pub oio_version: String,
    /// Time for every launcher to connect and say hello.
    pub connect_timeout: Duration,
    /// Least time between sending `go` and the start instant.
    pub min_lead: Duration,
    /// A host that sends nothing for this long (its agent stopped, its link dead), or whose
    /// prepare or check does not advance for this long (its storage hangs), is stalled.
    pub stall_timeout: Duration,
}

/// Why a fleet session did not run.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// A host could not be started, reached or prepared; nothing ran anywhere.
    #[error("host {host}: {reason}; nothing was started on any host")]
    Host {
        /// The host.
        host: String,
        /// What it said or what happened.
        reason: String,
    },
    /// Ctrl-C (or the caller) stopped the session before the start.
    #[error("stopped before the start; nothing was started on any host")]
    Interrupted,
    /// The caller's check of the prepared hosts refused them.
    #[error("{0}; nothing was started on any host")]
    Refused(GateError),
}

pub use oio_documents::fleet::Lost;

/// What the caller's check before the start sees of one prepared host.
#[derive(Clone, Copy, Debug)]
pub struct Prepared<'a> {
    /// Its name.
    pub host: &'a str,
    /// Its targets, as prepared (a workload).
    pub targets: &'a [TargetInfo],
    /// Its database (password redacted) and warehouses (TPC-C).
    pub tpcc: Option<&'a (String, u32)>,
}

/// What one host did.
#[derive(Clone, Debug)]
pub struct HostOutcome {
    /// Its name.
    pub name: String,
    /// Its workload group (see [`HostJob::group`]).
    pub group: String,
    /// The plan it ran (a workload; its own bindings and workload).
    pub plan: Option<RunPlan>,
    /// The launcher's command line.
    pub argv: Vec<String>,
    /// The agent's hello.
    pub hello: Hello,
    /// Its clock against the controller's.
    pub clock: ClockOffset,
    /// The targets as prepared.
    pub targets: Vec<TargetInfo>,
    /// When its workers started against the common start, ns (controller's clock, through
    /// the clock offset: uncertain by ± half the probe's round trip).
    pub start_skew_ns: Option<i64>,
    /// Intervals as they were streamed, still encoded: they are decoded only for a host whose
    /// own result never came (its result holds them all otherwise), which keeps the
    /// controller's cost per host and interval to parsing one line.
    pub streamed: Vec<WireInterval>,
    /// Its own result, when it came.
    pub result: Option<RunResult>,
    /// Its targets' devices over the measured window, when it recorded them.
    pub devices: Option<oio_core::observation::Observation>,
    /// Its `--hdr-log`/`--lat-log` files, as it sent them.
    pub logs: Vec<crate::protocol::LogFile>,
    /// TPC-C: its database (password redacted) and warehouses, as prepared.
    pub tpcc_ready: Option<(String, u32)>,
    /// TPC-C: its database as the server names it (see [`oio_tpcc::database::identity`]).
    pub tpcc_identity: Option<String>,
    /// TPC-C: intervals as streamed (whole counts and histograms; merged as they are).
    pub tpcc_streamed: Vec<crate::protocol::WireTpccInterval>,
    /// TPC-C: its own result, when it came.
    pub tpcc_result: Option<oio_tpcc::TpccResult>,
    /// SQL: intervals as streamed (whole counts and histograms; merged as they are).
    pub sql_streamed: Vec<crate::protocol::WireSqlInterval>,
    /// SQL: its own result, when it came.
    pub sql_result: Option<oio_documents::sql::SqlResult>,
    /// Set when the host was lost.
    pub lost: Option<Lost>,
    /// The boot id of its agent's kernel, from its targets' identities (None: not reported).
    pub boot_id: Option<String>,
    /// When its last message arrived, controller's clock, ns since 1970, and what it was.
    pub last_heard: (i64, String),
    /// Its longest wait between intervals during the run (from the start of its window to
    /// its first, and between any two), seconds, and when it began, seconds after the common
    /// start: a host stopped or hung for part of the window shows here.
    pub longest_gap: Option<(f64, f64)>,
    /// The last of what its launcher wrote on stderr.
    pub stderr_tail: String,
}

impl HostOutcome {
    /// Its result came, or it was lost.
    pub fn finished(&self) -> bool {
        self.result.is_some()
            || self.tpcc_result.is_some()
            || self.sql_result.is_some()
            || self.lost.is_some()
    }
}

/// A fleet run as collected.
#[derive(Clone, Debug)]
pub struct FleetRun {
    /// The common start, controller's clock, ns since 1970.
    pub start_ns: i64,
    /// Time from sending `go` to the start instant.
    pub lead: Duration,
    /// Every host, in the order given.
    pub hosts: Vec<HostOutcome>,
    /// True when Ctrl-C (the caller's token) stopped the run.
    pub interrupted: bool,
    /// The controller's CPU seconds (user + system) from `go` to the last result.
    pub controller_cpu_s: f64,
}

enum Ev {
    Msg(Message),
    Eof,
    Bad(String),
}

struct Session {
    name: String,
    argv: Vec<String>,
    child: Child,
    stdin: Option<ChildStdin>,
    stderr: Arc<Mutex<Vec<u8>>>,
    threads: Vec<std::thread::JoinHandle<()>>,
    hello: Option<Hello>,
    clock: ClockOffset,
    samples: Vec<Sample>,
    probe_sent: i64,
    targets: Vec<TargetInfo>,
    tpcc_ready: Option<(String, u32)>,
    tpcc_identity: Option<String>,
    /// Its targets as its kernel knows them (see [`crate::protocol::target_identity`]).
    target_ids: Vec<String>,
    /// When its last message arrived (controller's clock, ns) and what it was.
    heard: (i64, String),
    gone: bool,
    /// When anything last came from it (a keepalive too).
    alive: Instant,
    /// When its work last moved, and what its last `progress` said (phase, count, words).
    moved: Instant,
    progress: Option<(String, u64, String)>,
    /// Found stalled: it gets no grace to exit when the fleet ends.
    hung: bool,
}

/// How long a phase may take.
#[derive(Clone, Copy, Debug)]
enum Limit {
    /// Every host answers within this.
    Answer(Duration),
    /// No host stalls for this long (see [`Options::stall_timeout`]).
    Stall(Duration),
}

impl Session {
    /// Notes anything that came from it; a `progress` moves it only when its count or words
    /// changed.
    fn heard_from(&mut self, m: &Message) {
        let now = Instant::now();
        self.alive = now;
        match m {
            Message::Progress {
                phase,
                done,
                detail,
                ..
            } => {
                let p = (phase.clone(), *done, detail.clone());
                if self.progress.as_ref() != Some(&p) {
                    self.moved = now;
                    self.progress = Some(p);
                }
            }
            _ => self.moved = now,
        }
    }

    /// Why it is stalled in `phase`, if it is: silent for `limit`, or (where the agent counts
    /// its steps: preparing or checking targets) not advancing for `limit`.
    fn stalled(&self, phase: &str, limit: Duration) -> Option<String> {
        let now = Instant::now();
        let silent = now.duration_since(self.alive);
        let last = match &self.progress {
            Some((_, _, d)) if !d.is_empty() => d.clone(),
            _ => self.heard.1.clone(),
        };
        if silent >= limit {
            return Some(format!(
                "stalled during {phase}: nothing heard from it for {:.1} s (the stall limit is {:.1} s; its last word: {}): its agent is stopped or its connection hangs",
                silent.as_secs_f64(),
                limit.as_secs_f64(),
                if last.is_empty() { "none" } else { &last }
            ));
        }
        let counts = matches!(&self.progress, Some((p, _, _)) if p == "prepare" || p == "check");
        let still = now.duration_since(self.moved);
        if counts && still >= limit {
            return Some(format!(
                "stalled during {phase}: no progress for {:.1} s while {last}; its agent still answers, so its storage may hang (a dead NFS mount?); give a longer --stall-timeout if the host is only slow",
                still.as_secs_f64()
            ));
        }
        None
    }

    fn tell(&mut self, m: &Message) -> bool {
        match self.stdin.as_mut() {
            Some(w) => send(w, m).is_ok(),
            None => false,
        }
    }

    /// The lines of the last of its launcher's stderr.
    fn stderr_lines(&self) -> Vec<String> {
        let b = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&b)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// The last of its launcher's stderr, its lines joined by " / " (one line in a message).
    fn stderr_tail(&self) -> String {
        self.stderr_lines().join(" / ")
    }

    /// What happened to a host that went away: its launcher's exit and last stderr.
    fn why_gone(&mut self) -> String {
        let deadline = Instant::now() + Duration::from_millis(500);
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                _ => break None,
            }
        };
        // Once it exited, its stderr (the reason it gave, e.g. a refused install directory)
        // is read to its end before it is quoted: the reader may lag on a busy machine.
        let deadline = Instant::now() + Duration::from_secs(2);
        while status.is_some()
            && Instant::now() < deadline
            && !self.threads.iter().all(|t| t.is_finished())
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut why = match status {
            Some(s) => format!("the connection closed ({} exited: {s})", self.argv[0]),
            None => "the connection closed".to_string(),
        };
        let lines = self.stderr_lines();
        if !lines.is_empty() {
            why.push_str(": ");
            why.push_str(&lines[lines.len().saturating_sub(3)..].join(" / "));
        }
        why
    }
}

struct Fleet {
    sessions: Vec<Session>,
    rx: Receiver<(usize, i64, Ev)>,
}

impl Drop for Fleet {
    /// Every launcher ends with the fleet: stdin closed (an agent then stops and exits), a
    /// grace period, then a kill; the threads of every launcher that ended joined. A launcher
    /// that outlives its kill (an agent stuck in the kernel on a frozen file system or a dead
    /// NFS mount, when the launcher is the agent itself) is left behind with its threads, so
    /// the controller still ends and says what happened.
    fn drop(&mut self) {
        for s in &mut self.sessions {
            s.stdin = None;
        }
        let deadline = Instant::now() + EXIT_GRACE;
        for s in &mut self.sessions {
            let ended = if s.hung {
                kill_group(&mut s.child)
            } else {
                loop {
                    match s.child.try_wait() {
                        Ok(Some(_)) | Err(_) => {
                            // Anything it left behind in its group (it just ended: the
                            // group's number is not free for reuse while a member lives).
                            let _ = rustix::process::kill_process_group(
                                rustix::process::Pid::from_child(&s.child),
                                rustix::process::Signal::KILL,
                            );
                            break true;
                        }
                        Ok(None) if Instant::now() < deadline => {
                            std::thread::sleep(Duration::from_millis(10))
                        }
                        Ok(None) => break kill_group(&mut s.child),
                    }
                }
            };
            if ended {
                for t in s.threads.drain(..) {
                    let _ = t.join();
                }
            } else {
                // Its output may stay open as long as it lives: the readers are not waited for.
                s.threads.clear();
            }
        }
    }
}

/// How long a killed launcher is waited for before it is left behind.
const KILL_GRACE: Duration = Duration::from_secs(2);

/// Kills a launcher and whatever it started (its own process group: a helper it left behind
/// would hold its output open, and the reader of that output would never end). Whether it
/// ended within [`KILL_GRACE`]: a process in uninterruptible sleep dies only when it wakes.
fn kill_group(child: &mut Child) -> bool {
    let _ = rustix::process::kill_process_group(
        rustix::process::Pid::from_child(child),
        rustix::process::Signal::KILL,
    );
    let _ = child.kill();
    let deadline = Instant::now() + KILL_GRACE;
    loop {
        match child.try_wait() {
            Ok(Some(_)) | Err(_) => return true,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => return false,
        }
    }
}

impl Fleet {
    fn launch(jobs: &[(String, Vec<String>, usize, usize)]) -> Result<Fleet, FleetError> {
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut fleet = Fleet {
            sessions: Vec::with_capacity(jobs.len()),
            rx,
        };
        for (i, (name, argv, line, most)) in jobs.iter().enumerate() {
            let (line, most) = (*line, *most);
            // Its own process group: Ctrl-C at a terminal reaches the controller's group only,
            // so the controller stops each agent through the protocol and keeps its partial
            // result, instead of every ssh dying at once with the session it carried.
            // An installed copy at a path on the host runs only after its directories are
            // checked there, as `fleet install` checks them.
            let run = crate::launch::guarded_launcher(argv);
            let mut child = Command::new(&run[0])
                .args(&run[1..])
                .process_group(0)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| FleetError::Host {
                    host: name.clone(),
                    reason: format!("cannot start the launcher `{}`: {e}", argv.join(" ")),
                })?;
            let stdout = child.stdout.take().expect("piped");
            let mut stderr = child.stderr.take().expect("piped");
            let tail = Arc::new(Mutex::new(Vec::new()));
            let tx = tx.clone();
            let reader = std::thread::Builder::new()
                .name(format!("oio-fleet-{i}"))
                .spawn(move || {
                    let mut r = Reader::with_limit(BufReader::new(stdout), line);
                    // Intervals beyond the plan's are refused here, as they arrive: a host
                    // that streams without end is not read on into memory the controller
                    // has not yet worked through (its own check refuses the same one).
                    let mut intervals = 0usize;
                    loop {
                        let m = r.next_message();
                        let at = now_ns();
                        if let Ok(Some(
                            Message::Interval(_)
                            | Message::TpccInterval(_)
                            | Message::SqlInterval(_),
                        )) = &m
                        {
                            intervals += 1;
                        }
                        let (ev, last) = match m {
                            Ok(Some(_)) if intervals > most => {
                                (Ev::Bad(Reject::ExtraInterval { most }.to_string()), true)
                            }
                            Ok(Some(m)) if r.last_len() > SMALL_LINE && !is_result(&m) => (
                                Ev::Bad(format!(
                                    "a {} message of {} bytes; at most {SMALL_LINE} are accepted",
                                    m.name(),
                                    r.last_len()
                                )),
                                true,
                            ),
                            Ok(Some(m)) => (Ev::Msg(m), false),
                            Ok(None) => (Ev::Eof, true),
                            Err(e) => (Ev::Bad(e.to_string()), true),
                        };
                        if tx.send((i, at, ev)).is_err() || last {
                            return;
                        }
                    }
                });
            let t2 = Arc::clone(&tail);
            let err_reader = std::thread::Builder::new()
                .name(format!("oio-fleet-err-{i}"))
                .spawn(move || {
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = stderr.read(&mut buf) {
                        if n == 0 {
                            return;
                        }
                        let mut t = t2.lock().unwrap_or_else(|e| e.into_inner());
                        t.extend_from_slice(&buf[..n]);
                        if t.len() > STDERR_TAIL {
                            let cut = t.len() - STDERR_TAIL;
                            t.drain(..cut);
                        }
                    }
                });
            let stdin = child.stdin.take();
            let mut threads = Vec::new();
            let mut failed = None;
            for t in [reader, err_reader] {
                match t {
                    Ok(h) => threads.push(h),
                    Err(e) => failed = Some(e),
                }
            }
            fleet.sessions.push(Session {
                name: name.clone(),
                argv: argv.clone(),
                child,
                stdin,
                stderr: tail,
                threads,
                hello: None,
                clock: ClockOffset::default(),
                samples: Vec::new(),
                probe_sent: 0,
                targets: Vec::new(),
                tpcc_ready: None,
                tpcc_identity: None,
                target_ids: Vec::new(),
                heard: (0, String::new()),
                gone: false,
                alive: Instant::now(),
                moved: Instant::now(),
                progress: None,
                hung: false,
            });
            if let Some(e) = failed {
                return Err(FleetError::Host {
                    host: name.clone(),
                    reason: format!("starting a reader thread: {e}"),
                });
            }
        }
        Ok(fleet)
    }

    /// What host `i` did wrong, its own words (errors, stderr, lines it sent) escaped: the
    /// reason reaches a terminal, where control characters would act (set the clipboard or
    /// the title, clear the screen, start a line that looks like oio's own).
    fn host_error(&mut self, i: usize, reason: String) -> FleetError {
        FleetError::Host {
            host: self.sessions[i].name.clone(),
            reason: oio_core::text::printable(&reason).into_owned(),
        }
    }

    /// Waits until `done(session)` holds for every session, handling each message with
    /// `on`; any error, end of file or timeout fails naming the host.
    fn wait_all(
        &mut self,
        phase: &str,
        limit: Limit,
        cancel: &Cancel,
        on: impl FnMut(&mut Session, i64, Message) -> Result<bool, Reject>,
    ) -> Result<(), FleetError> {
        let done = vec![false; self.sessions.len()];
        self.wait_some(phase, limit, cancel, done, on)
    }

    /// [`Fleet::wait_all`] for the sessions not `done` already.
    fn wait_some(
        &mut self,
        phase: &str,
        limit: Limit,
        cancel: &Cancel,
        mut done: Vec<bool>,
        mut on: impl FnMut(&mut Session, i64, Message) -> Result<bool, Reject>,
    ) -> Result<(), FleetError> {
        let start = Instant::now();
        for s in &mut self.sessions {
            (s.alive, s.moved, s.progress) = (start, start, None);
        }
        while done.iter().any(|d| !d) {
            if cancel.is_cancelled() {
                return Err(FleetError::Interrupted);
            }
            let late = match limit {
                Limit::Answer(t) if start.elapsed() >= t => done
                    .iter()
                    .position(|d| !d)
                    .map(|i| (i, format!("no answer to {phase} within {t:?}"))),
                Limit::Answer(_) => None,
                Limit::Stall(t) => (0..done.len())
                    .filter(|&i| !done[i])
                    .find_map(|i| Some((i, self.sessions[i].stalled(phase, t)?))),
            };
            if let Some((i, why)) = late {
                self.sessions[i].hung = matches!(limit, Limit::Stall(_));
                let tail = self.sessions[i].stderr_tail();
                return Err(self.host_error(
                    i,
                    format!(
                        "{why}{}{}",
                        if tail.is_empty() {
                            ""
                        } else {
                            "; its stderr: "
                        },
                        tail
                    ),
                ));
            }
            let (i, at, ev) = match self.rx.recv_timeout(Duration::from_millis(50)) {
                Ok(x) => x,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => {
                    let i = done.iter().position(|d| !d).expect("one is not done");
                    return Err(self.host_error(i, "every connection closed".into()));
                }
            };
            match ev {
                Ev::Msg(Message::Error { phase, message }) => {
                    return Err(self.host_error(i, format!("{phase}: {message}")))
                }
                Ev::Msg(m @ Message::Progress { .. }) => self.sessions[i].heard_from(&m),
                Ev::Msg(m) => {
                    self.sessions[i].heard_from(&m);
                    self.sessions[i].heard = (at, m.name().to_string());
                    match on(&mut self.sessions[i], at, m) {
                        Ok(true) => done[i] = true,
                        Ok(false) => {}
                        Err(e) => return Err(self.host_error(i, e.to_string())),
                    }
                }
                Ev::Eof => {
                    self.sessions[i].gone = true;
                    let why = self.sessions[i].why_gone();
                    return Err(self.host_error(i, format!("during {phase}: {why}")));
                }
                Ev::Bad(e) => return Err(self.host_error(i, format!("during {phase}: {e}"))),
            }
        }
        Ok(())
    }

    /// Hello both ways, then clock probes, on every host at once.
    fn connect(&mut self, opts: &Options, cancel: &Cancel) -> Result<(), FleetError> {
        let me = Hello::current(&opts.oio_version);
        for s in &mut self.sessions {
            s.tell(&Message::Hello(me.clone()));
        }
        self.wait_all(
            "hello",
            Limit::Answer(opts.connect_timeout),
            cancel,
            |s, _, m| match m {
                Message::Hello(peer) => {
                    me.check_agent(&peer)
                        .map_err(|e| Reject::Hello(e.to_string()))?;
                    s.hello = Some(peer);
                    Ok(true)
                }
                other => Err(Reject::unexpected("hello", &other)),
            },
        )?;
        for seq in 0..PROBES {
            for s in &mut self.sessions {
                s.probe_sent = now_ns();
                s.tell(&Message::Time { seq });
            }
            self.wait_all(
                "a clock probe",
                Limit::Answer(opts.connect_timeout),
                cancel,
                |s, at, m| match m {
                    Message::TimeReply { seq: got, agent_ns } if got == seq => {
                        s.samples.push(Sample {
                            sent_ns: s.probe_sent,
                            agent_ns,
                            received_ns: at,
                        });
                        Ok(true)
                    }
                    other => Err(Reject::unexpected(format!("time_reply {seq}"), &other)),
                },
            )?;
        }
        for s in &mut self.sessions {
            s.clock = estimate(&s.samples).unwrap_or_default();
        }
        Ok(())
    }

    /// Tells every host still connected to stop.
    fn stop_all(&mut self, reason: &str) {
        for s in &mut self.sessions {
            s.tell(&Message::Stop {
                reason: reason.to_string(),
            });
        }
    }
}

fn jobs_argv(jobs: &[HostJob]) -> Vec<(String, Vec<String>, usize, usize)> {
    jobs.iter()
        .map(|j| {
            let b = j.plan.bounds();
            (j.name.clone(), j.argv.clone(), b.line, b.intervals)
        })
        .collect()
}

/// A final result: the one message that may be longer than [`SMALL_LINE`].
fn is_result(m: &Message) -> bool {
    matches!(
        m,
        Message::Result { .. } | Message::TpccResult { .. } | Message::SqlResult { .. }
    )
}

/// One host's part of a merged interval, for a live view.
#[derive(Clone, Debug, PartialEq)]
pub struct HostLive {
    /// The host.
    pub host: String,
    /// Its IOPS (a workload) or NOPM (TPC-C) of this interval.
    pub value: f64,
    /// I/Os (new orders for TPC-C) it completed in this interval.
    pub count: u64,
    /// Its latency histogram of this interval (every I/O; TPC-C: every transaction).
    pub histogram: Option<oio_core::histogram::SparseHistogram>,
    /// How much later than the first host's this interval arrived at the controller, ms.
    pub lag_ms: f64,
    /// TPC-C: its transactions per minute of this interval as the driver counts them
    /// (committed and intentionally rolled back); None for a workload.
    pub tpm: Option<f64>,
    /// Failed I/Os (TPC-C: transactions failed for good) in this interval; None when the
    /// host's agent does not count them per interval.
    pub errors: Option<u64>,
}

impl HostLive {
    /// A host's figures of one interval, its lag not yet known.
    pub fn new(
        host: &str,
        value: f64,
        count: u64,
        histogram: Option<oio_core::histogram::SparseHistogram>,
    ) -> HostLive {
        HostLive {
            host: host.to_string(),
            value,
            count,
            histogram,
            lag_ms: 0.0,
            tpm: None,
            errors: None,
        }
    }
}

/// One merged interval as soon as every host still running has sent it: for a live view.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    /// 0-based interval index.
    pub index: u64,
    /// Hosts that sent it.
    pub hosts: usize,
    /// Σ of the hosts' IOPS (a workload) or NOPM (TPC-C) of this interval.
    pub value: f64,
    /// "IOPS" or "NOPM".
    pub unit: &'static str,
    /// The host with the lowest value, and that value.
    pub slowest: (String, f64),
    /// Each host that sent it, in the order of the hosts.
    pub per_host: Vec<HostLive>,
    /// Every host, in the order of the hosts: when it was last heard from, and whether it is
    /// left out of this interval as stalled.
    pub heard: Vec<HostHeard>,
}

/// When a host was last heard from, as an interval is shown.
#[derive(Clone, Debug, PartialEq)]
pub struct HostHeard {
    /// The host.
    pub host: String,
    /// Its last message of any kind (a keepalive too), Unix time, seconds.
    pub at_unix_s: f64,
    /// Seconds since that message.
    pub silent_s: f64,
    /// Seconds since its last interval (or since its first was due).
    pub no_interval_s: f64,
    /// Left out of this merged interval: it sent no interval for more than two intervals
    /// and a second while others did (stopped, or its storage or link hangs). Its late
    /// intervals still count in the result.
    pub stalled: bool,
    /// Its result came, or it was lost.
    pub finished: bool,
}

impl Progress {
    /// The hosts' histograms of this interval summed bucket by bucket (None when a host sent
    /// none).
    pub fn merged_histogram(&self) -> Option<oio_core::histogram::SparseHistogram> {
        let mut parts = self.per_host.iter().map(|h| h.histogram.as_ref());
        let first = parts.next()??.clone();
        parts.try_fold(first, |mut acc, h| {
            let h = h?;
            let mut b: std::collections::BTreeMap<u64, u64> =
                acc.buckets.iter().map(|[v, c]| (*v, *c)).collect();
            // Saturating: a live view of what a hostile host claims never wraps or panics
            // (the merged result refuses such a host).
            for [v, c] in &h.buckets {
                let e = b.entry(*v).or_default();
                *e = e.saturating_add(*c);
            }
            acc.buckets = b.into_iter().map(|(v, c)| [v, c]).collect();
            acc.count = acc.count.saturating_add(h.count);
            acc.sum += h.sum;
            acc.min = acc.min.into_iter().chain(h.min).min();
            acc.max = acc.max.into_iter().chain(h.max).max();
            Some(acc)
        })
    }
}

/// Sums intervals by index until every host has sent one or finished; bounded, since an
/// index is dropped once it is complete and at most [`MAX_STREAMED`] are pending. An index is
/// reported once: a host that finished with fewer intervals is not waited for, and nothing
/// arriving for an index already reported (a lost host's late message) reports it again.
#[derive(Default)]
struct Progressor {
    pending: std::collections::BTreeMap<u64, (Progress, Vec<(usize, i64)>)>,
    /// The next index to report.
    next: u64,
    /// Hosts whose value is not added to the merged one: a database another host already
    /// reads (its NOPM is the whole database's).
    uncounted: Vec<bool>,
}

impl Progressor {
    /// Host `i` sent interval `index` (its figures in `live`), arriving at `at` (controller's
    /// clock, ns).
    fn add(&mut self, index: u64, unit: &'static str, i: usize, live: HostLive, at: i64) {
        if index < self.next
            || (self.pending.len() >= MAX_STREAMED && !self.pending.contains_key(&index))
        {
            return;
        }
        let (p, arrivals) = self.pending.entry(index).or_insert_with(|| {
            (
                Progress {
                    index,
                    hosts: 0,
                    value: 0.0,
                    unit,
                    slowest: (live.host.clone(), f64::INFINITY),
                    per_host: Vec::new(),
                    heard: Vec::new(),
                },
                Vec::new(),
            )
        });
        p.hosts += 1;
        if !self.uncounted.get(i).copied().unwrap_or(false) {
            p.value += live.value;
        }
        if live.value < p.slowest.1 {
            p.slowest = (live.host.clone(), live.value);
        }
        p.per_host.push(live);
        arrivals.push((i, at));
    }

    /// The complete intervals, oldest first: `sent[i]` is how many intervals host `i` sent,
    /// `finished[i]` whether it sends no more (its result came, or it was lost).
    fn complete(&mut self, sent: &[usize], finished: &[bool], report: &mut dyn FnMut(&Progress)) {
        while let Some(e) = self.pending.first_entry() {
            let index = *e.key();
            let due = (0..sent.len()).all(|i| finished[i] || sent[i] as u64 > index);
            if !due {
                return;
            }
            let (mut p, arrivals) = e.remove();
            let first = arrivals.iter().map(|a| a.1).min().unwrap_or(0);
            // In the order of the hosts, each with how late its part arrived.
            let mut order: Vec<usize> = (0..p.per_host.len()).collect();
            order.sort_by_key(|&k| arrivals[k].0);
            let mut per_host = Vec::with_capacity(order.len());
            // Summed again in the order of the hosts, as the merged result sums them (the
            // order of arrival could differ from it in the last bit).
            p.value = 0.0;
            for k in order {
                let mut h = p.per_host[k].clone();
                h.lag_ms = (arrivals[k].1 - first) as f64 / 1e6;
                if !self.uncounted.get(arrivals[k].0).copied().unwrap_or(false) {
                    p.value += h.value;
                }
                per_host.push(h);
            }
            p.per_host = per_host;
            self.next = index + 1;
            report(&p);
        }
    }
}

/// Runs one plan on every host: connect, probe clocks, prepare all (any refusal aborts every
/// host before any I/O), start all at one instant, collect. A host lost mid-run is named with
/// the time of its last message; the others are stopped and their partial results kept.
pub fn run(jobs: &[HostJob], opts: &Options, cancel: &Cancel) -> Result<FleetRun, FleetError> {
    run_with_progress(jobs, opts, cancel, &mut |_| {})
}

/// [`run`], calling `progress` with each merged interval as it completes.
pub fn run_with_progress(
    jobs: &[HostJob],
    opts: &Options,
    cancel: &Cancel,
    progress: &mut dyn FnMut(&Progress),
) -> Result<FleetRun, FleetError> {
    run_gated(jobs, opts, cancel, progress, &mut |_| Ok(()))
}

/// Why the caller's check before the start refused the prepared hosts (its own error type).
pub type GateError = Box<dyn std::error::Error + Send + Sync>;

/// [`run_with_progress`], with `gate` deciding, once every host is prepared and before any
/// starts, whether the run goes ahead: an `Err` stops every host and is returned as
/// [`FleetError::Refused`] (e.g. a TPC-C baseline that does not match the hosts' databases).
pub fn run_gated(
    jobs: &[HostJob],
    opts: &Options,
    cancel: &Cancel,
    progress: &mut dyn FnMut(&Progress),
    gate: &mut dyn FnMut(&[Prepared<'_>]) -> Result<(), GateError>,
) -> Result<FleetRun, FleetError> {
    let mut fleet = Fleet::launch(&jobs_argv(jobs))?;
    let result = run_on(&mut fleet, jobs, opts, cancel, progress, gate);
    if result.is_err() {
        fleet.stop_all("another host failed before the start");
    }
    result
}

fn run_on(
    fleet: &mut Fleet,
    jobs: &[HostJob],
    opts: &Options,
    cancel: &Cancel,
    progress: &mut dyn FnMut(&Progress),
    gate: &mut dyn FnMut(&[Prepared<'_>]) -> Result<(), GateError>,
) -> Result<FleetRun, FleetError> {
    fleet.connect(opts, cancel)?;
    fleet.prepare(jobs, opts, cancel)?;
    fleet.one_target_each(jobs)?;
    let prepared: Vec<Prepared<'_>> = fleet
        .sessions
        .iter()
        .map(|s| Prepared {
            host: &s.name,
            targets: &s.targets,
            tpcc: s.tpcc_ready.as_ref(),
        })
        .collect();
    gate(&prepared).map_err(FleetError::Refused)?;
    fleet.arm(jobs, opts, cancel)?;
    let cpu0 = oio_engine::sys::process_cpu();
    let (start_ns, lead) = fleet.go(opts);
    let mut c = Collection::new(fleet, jobs, start_ns, lead, opts.stall_timeout);
    c.collect(fleet, cancel, progress);
    let cpu1 = oio_engine::sys::process_cpu();
    for (h, s) in c.out.iter_mut().zip(&fleet.sessions) {
        h.stderr_tail = s.stderr_tail();
    }
    Ok(FleetRun {
        start_ns,
        lead,
        hosts: c.out,
        interrupted: c.interrupted,
        controller_cpu_s: (cpu1.0 - cpu0.0) + (cpu1.1 - cpu0.1),
    })
}

impl Fleet {
    /// Refuses two hosts on one target, as their agents' kernels know it (device and inode,
    /// on one boot), when either writes it: each would measure the other's writes too, a
    /// writer waits for the other's lock (`--wait`) or fails on it mid-run, and the merge
    /// would add up runs that shared one file's work, or did not overlap at all. Hosts that
    /// only read one target share it (many clients of one shared file system is a test of
    /// its own), and the null engine does no I/O to its targets.
    fn one_target_each(&mut self, jobs: &[HostJob]) -> Result<(), FleetError> {
        // Each target: its identity, host, path and whether that host writes it.
        let mut seen: Vec<(&str, usize, &str, bool)> = Vec::new();
        let mut clash = None;
        'hosts: for (i, (s, j)) in self.sessions.iter().zip(jobs).enumerate() {
            let Work::Io(plan) = &j.plan else { continue };
            if plan.engine == oio_engine::EngineKind::Null {
                continue;
            }
            for (id, t) in s.target_ids.iter().zip(&s.targets) {
                if id.is_empty() {
                    continue;
                }
                let writes = plan.writes_to(&std::path::PathBuf::from(&t.path));
                if let Some(&(_, h, other, _)) = seen
                    .iter()
                    .find(|x| x.0 == id.as_str() && x.1 != i && (x.3 || writes))
                {
                    clash = Some((i, t.path.clone(), h, other.to_string(), id.clone()));
                    break 'hosts;
                }
                seen.push((id, i, &t.path, writes));
            }
        }
        let Some((i, path, j, other, id)) = clash else {
            return Ok(());
        };
        let reason = format!(
            "its target {path} is host {}'s target {other} (one {} on one kernel, as both agents report it: {}), and one of them writes it: two hosts on one target would measure each other's I/O, and a writer waits for or fails on the other's lock; give each host its own target (an inventory's per-host `targets`, or {{host}} in the path)",
            self.sessions[j].name,
            if id.contains(":block:") { "block device" } else { "file, the same device and inode" },
            id.split_once(':').map_or(id.as_str(), |x| x.1)
        );
        Err(self.host_error(i, reason))
    }

    /// Sends every host its plan and waits until all are ready. Filling new files may take
    /// long: no limit on the whole, but a host that stalls (see [`Options::stall_timeout`]),
    /// Ctrl-C and any host failing end the wait.
    fn prepare(
        &mut self,
        jobs: &[HostJob],
        opts: &Options,
        cancel: &Cancel,
    ) -> Result<(), FleetError> {
        for (s, j) in self.sessions.iter_mut().zip(jobs) {
            s.tell(&match &j.plan {
                Work::Io(p) => Message::Prepare {
                    plan: Box::new(p.clone()),
                },
                Work::Tpcc(p) => Message::PrepareTpcc {
                    plan: Box::new(p.clone()),
                },
                Work::Sql(p) => Message::PrepareSql {
                    plan: Box::new(p.clone()),
                },
            });
        }
        self.wait_all(
            "prepare",
            Limit::Stall(opts.stall_timeout),
            cancel,
            |s, _, m| match m {
                Message::Ready {
                    targets,
                    identities,
                } => {
                    s.targets = targets;
                    s.target_ids = identities;
                    Ok(true)
                }
                Message::ReadyTpcc {
                    db,
                    warehouses,
                    identity,
                } => {
                    s.tpcc_ready = Some((db, warehouses));
                    s.tpcc_identity = identity;
                    Ok(true)
                }
                // A SQL run's database is kept where a TPC-C run's is (no warehouses).
                Message::ReadySql { db, identity } => {
                    s.tpcc_ready = Some((db, 0));
                    s.tpcc_identity = identity;
                    Ok(true)
                }
                other => Err(Reject::unexpected("ready", &other)),
            },
        )
    }

    /// Has every I/O host open its targets for the run and waits until all have: the start
    /// instant's lead then only carries `go`, however long opening takes (a busy host, a
    /// lock awaited with `--wait`). A host that falls silent, Ctrl-C and any host failing
    /// end the wait.
    fn arm(&mut self, jobs: &[HostJob], opts: &Options, cancel: &Cancel) -> Result<(), FleetError> {
        let mut done = Vec::with_capacity(jobs.len());
        for (s, j) in self.sessions.iter_mut().zip(jobs) {
            let io = matches!(j.plan, Work::Io(_));
            if io {
                s.tell(&Message::Arm);
            }
            done.push(!io);
        }
        self.wait_some(
            "arm",
            Limit::Stall(opts.stall_timeout),
            cancel,
            done,
            |_, _, m| match m {
                Message::Armed => Ok(true),
                other => Err(Reject::unexpected("armed", &other)),
            },
        )
    }

    /// Picks the start instant, leaving room for `go` to reach the slowest host, and tells
    /// every host. Returns the instant (controller's clock, ns) and the lead.
    fn go(&mut self, opts: &Options) -> (i64, Duration) {
        let worst_rtt = self
            .sessions
            .iter()
            .map(|s| s.clock.rtt_ns.max(0) as u64)
            .max()
            .unwrap_or(0);
        let lead = opts
            .min_lead
            .max(Duration::from_nanos(worst_rtt.saturating_mul(4)))
            + Duration::from_micros(500 * self.sessions.len() as u64);
        let start_ns = now_ns().saturating_add(lead.as_nanos() as i64);
        // The first beat arms each agent's watchdog before its run can begin.
        let beat = Message::Beat {
            watchdog_ms: watchdog(opts.stall_timeout).as_millis() as u64,
        };
        for s in &mut self.sessions {
            let start_agent_ns = s.clock.to_agent(start_ns);
            s.tell(&beat);
            s.tell(&Message::Go { start_agent_ns });
        }
        (start_ns, lead)
    }
}

/// The run after `go`: every host's messages until each has sent its result or is lost.
struct Collection {
    out: Vec<HostOutcome>,
    start_ns: i64,
    /// Per host: when its `started` is due after the start instant, ns.
    started_after_ns: Vec<i64>,
    run_deadline: Instant,
    stop_deadline: Option<Instant>,
    interrupted: bool,
    live: Progressor,
    /// Per host: what it may send.
    bounds: Vec<Bounds>,
    /// See [`Options::stall_timeout`].
    stall: Duration,
    /// Per host: its interval, and when its last interval came (or its first is due from).
    interval: Vec<Duration>,
    last_interval: Vec<(Instant, i64)>,
}

impl Collection {
    fn new(
        fleet: &Fleet,
        jobs: &[HostJob],
        start_ns: i64,
        lead: Duration,
        stall: Duration,
    ) -> Collection {
        let out = fleet
            .sessions
            .iter()
            .zip(jobs)
            .map(|(s, j)| HostOutcome {
                name: s.name.clone(),
                group: j.group.clone(),
                plan: match &j.plan {
                    Work::Io(p) => Some(p.clone()),
                    Work::Tpcc(_) | Work::Sql(_) => None,
                },
                argv: s.argv.clone(),
                hello: s.hello.clone().expect("hello received"),
                clock: s.clock,
                targets: s.targets.clone(),
                start_skew_ns: None,
                streamed: Vec::new(),
                result: None,
                devices: None,
                logs: Vec::new(),
                tpcc_ready: s.tpcc_ready.clone(),
                tpcc_identity: s.tpcc_identity.clone(),
                tpcc_streamed: Vec::new(),
                tpcc_result: None,
                sql_streamed: Vec::new(),
                sql_result: None,
                lost: None,
                boot_id: s
                    .target_ids
                    .iter()
                    .find_map(|id| Some(id.split_once(':')?.0.to_string())),
                last_heard: s.heard.clone(),
                longest_gap: None,
                stderr_tail: String::new(),
            })
            .collect();
        let longest = jobs
            .iter()
            .map(|j| j.plan.length())
            .max()
            .unwrap_or_default();
        Collection {
            out,
            start_ns,
            started_after_ns: jobs
                .iter()
                .map(|j| j.plan.started_after().as_nanos().min(i64::MAX as u128) as i64)
                .collect(),
            run_deadline: Instant::now()
                + lead
                + longest
                + Duration::from_secs(30).max(longest / 10),
            stop_deadline: None,
            interrupted: false,
            live: Progressor {
                // A database several hosts drive is counted from the first of them (TPC-C
                // reads the database's own count; a SQL run's drivers count their own commits,
                // each distinct, so every host counts).
                uncounted: fleet
                    .sessions
                    .iter()
                    .zip(jobs)
                    .enumerate()
                    .map(|(i, (s, j))| {
                        matches!(j.plan, Work::Tpcc(_))
                            && s.tpcc_identity.as_ref().is_some_and(|id| {
                                fleet.sessions[..i]
                                    .iter()
                                    .any(|o| o.tpcc_identity.as_ref() == Some(id))
                            })
                    })
                    .collect(),
                ..Progressor::default()
            },
            bounds: jobs.iter().map(|j| j.plan.bounds()).collect(),
            stall,
            interval: jobs
                .iter()
                .map(|j| match &j.plan {
                    Work::Io(p) => p.interval,
                    Work::Tpcc(p) => Duration::from_secs_f64(p.step.interval_s.clamp(1e-3, 1e9)),
                    Work::Sql(p) => Duration::from_secs_f64(p.options.interval_s.clamp(1e-3, 1e9)),
                })
                .collect(),
            last_interval: jobs
                .iter()
                .map(|j| {
                    let after = lead + j.plan.started_after();
                    let ns = start_ns.saturating_add(j.plan.started_after().as_nanos() as i64);
                    (Instant::now() + after, ns)
                })
                .collect(),
        }
    }

    /// Host `i` sent an interval at `at` (controller's clock): its longest wait between
    /// intervals so far.
    fn interval_came(&mut self, i: usize, at: i64) {
        let (_, prev) = self.last_interval[i];
        let gap = (at - prev) as f64 / 1e9;
        let h = &mut self.out[i];
        if h.longest_gap.is_none_or(|g| gap > g.0) {
            h.longest_gap = Some((gap, (prev - self.start_ns) as f64 / 1e9));
        }
        self.last_interval[i] = (Instant::now(), at);
    }

    /// A loss, dated from the host's last message and noticed now.
    fn lost(&self, i: usize, reason: String) -> Lost {
        let (heard, what) = &self.out[i].last_heard;
        Lost {
            at_s: (heard - self.start_ns) as f64 / 1e9,
            at: rfc3339(*heard),
            last_message: what.clone(),
            noticed_s: (now_ns() - self.start_ns) as f64 / 1e9,
            // Printed as it is by every reader of the result: the host's own words escaped.
            reason: oio_core::text::printable(&reason).into_owned(),
        }
    }

    fn collect(&mut self, fleet: &mut Fleet, cancel: &Cancel, progress: &mut dyn FnMut(&Progress)) {
        let beat = Message::Beat {
            watchdog_ms: watchdog(self.stall).as_millis() as u64,
        };
        let mut beaten = Instant::now() - BEAT;
        while self.out.iter().any(|h| !h.finished()) {
            if beaten.elapsed() >= BEAT {
                beaten = Instant::now();
                for (s, h) in fleet.sessions.iter_mut().zip(&self.out) {
                    if !h.finished() {
                        s.tell(&beat);
                    }
                }
            }
            if cancel.is_cancelled() && !self.interrupted {
                self.interrupted = true;
                fleet.stop_all("the controller was interrupted");
                self.stop_deadline
                    .get_or_insert(Instant::now() + STOP_GRACE);
            }
            let now = Instant::now();
            if self
                .stop_deadline
                .map_or(now >= self.run_deadline, |d| now >= d)
            {
                let why = if self.stop_deadline.is_some() {
                    format!("no result within {STOP_GRACE:?} of being told to stop")
                } else {
                    "no result by the end of the run and its grace period".to_string()
                };
                for i in 0..self.out.len() {
                    if !self.out[i].finished() {
                        self.out[i].lost = Some(self.lost(i, why.clone()));
                    }
                }
                break;
            }
            let losses = match fleet.rx.recv_timeout(Duration::from_millis(50)) {
                Ok((i, at, ev)) => self.handle(fleet, i, at, ev).map(|r| (i, r)),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => break,
            }
            .into_iter()
            .chain(self.stalled(fleet))
            .collect::<Vec<_>>();
            for (i, _) in &losses {
                fleet.sessions[*i].hung |= fleet.sessions[*i].stalled("", self.stall).is_some();
            }
            for (i, reason) in losses {
                if !self.out[i].finished() {
                    self.out[i].lost = Some(self.lost(i, reason));
                    fleet.sessions[i].stdin = None;
                    fleet.stop_all(&format!("host {} was lost", self.out[i].name));
                    self.stop_deadline
                        .get_or_insert(Instant::now() + STOP_GRACE);
                }
            }
            self.report(fleet, progress);
        }
    }

    /// Reports every merged interval that is complete: sent by every host still running,
    /// except a host stalled (no interval for two of its intervals and a second, while
    /// another host sent more): the others' figures do not wait on it.
    fn report(&mut self, fleet: &Fleet, progress: &mut dyn FnMut(&Progress)) {
        let sent: Vec<usize> = self
            .out
            .iter()
            .map(|h| {
                h.streamed
                    .len()
                    .max(h.tpcc_streamed.len())
                    .max(h.sql_streamed.len())
            })
            .collect();
        let finished: Vec<bool> = self.out.iter().map(|h| h.finished()).collect();
        let now = Instant::now();
        let most = sent.iter().copied().max().unwrap_or(0);
        let no_interval: Vec<f64> = self
            .last_interval
            .iter()
            .map(|(t, _)| now.saturating_duration_since(*t).as_secs_f64())
            .collect();
        let stalled: Vec<bool> = (0..sent.len())
            .map(|i| {
                let mark = 2.0 * self.interval[i].as_secs_f64() + 1.0;
                !finished[i] && sent[i] < most && no_interval[i] > mark
            })
            .collect();
        let skip: Vec<bool> = (0..sent.len()).map(|i| finished[i] || stalled[i]).collect();
        let unix_now = now_ns() as f64 / 1e9;
        let heard: Vec<HostHeard> = (0..sent.len())
            .map(|i| {
                let silent_s = now
                    .saturating_duration_since(fleet.sessions[i].alive)
                    .as_secs_f64();
                HostHeard {
                    host: self.out[i].name.clone(),
                    at_unix_s: unix_now - silent_s,
                    silent_s,
                    no_interval_s: no_interval[i],
                    stalled: stalled[i],
                    finished: finished[i],
                }
            })
            .collect();
        self.live.complete(&sent, &skip, &mut |p| {
            let mut p = p.clone();
            p.heard = heard.clone();
            progress(&p)
        });
    }

    /// Hosts still running that fell silent for the stall limit, with why.
    fn stalled(&self, fleet: &Fleet) -> Vec<(usize, String)> {
        (0..self.out.len())
            .filter(|&i| !self.out[i].finished())
            .filter_map(|i| Some((i, fleet.sessions[i].stalled("the run", self.stall)?)))
            .collect()
    }

    /// A SQL interval from host `i`, received at `at`: checked, fed to the live figures and
    /// kept; why the host is lost, if it is.
    fn sql_interval(
        &mut self,
        i: usize,
        at: i64,
        w: crate::protocol::WireSqlInterval,
    ) -> Option<String> {
        let h = &mut self.out[i];
        let n = h.sql_streamed.len();
        if let Err(e) = accept_series(
            w.index,
            w.t_s,
            w.duration_s,
            &[&w.latency],
            n,
            &self.bounds[i],
        ) {
            return Some(e.to_string());
        }
        let committed = w.committed_all();
        let tps = if w.duration_s > 0.0 {
            committed as f64 / w.duration_s
        } else {
            0.0
        };
        let hist = w.latency.as_ref().and_then(|x| x.to_sparse().ok());
        let mut live = HostLive::new(&h.name, tps, committed, hist);
        live.errors = Some(w.failed);
        self.live.add(w.index, "TPS", i, live, at);
        self.out[i].sql_streamed.push(w);
        None
    }

    /// One event from host `i`, received at `at` (controller's clock); why the host is lost,
    /// if it is.
    fn handle(&mut self, fleet: &mut Fleet, i: usize, at: i64, ev: Ev) -> Option<String> {
        if let Ev::Msg(m) = &ev {
            fleet.sessions[i].heard_from(m);
            if matches!(m, Message::Progress { .. }) {
                return None;
            }
        }
        let bounds = self.bounds[i];
        let h = &mut self.out[i];
        if let Ev::Msg(m) = &ev {
            let what = match m {
                Message::Interval(w) => format!("interval {}, t = {:.3} s", w.index + 1, w.t_s),
                Message::TpccInterval(w) => {
                    format!("interval {}, t = {:.3} s", w.index + 1, w.t_s)
                }
                Message::SqlInterval(w) => {
                    format!("interval {}, t = {:.3} s", w.index + 1, w.t_s)
                }
                other => other.name().to_string(),
            };
            fleet.sessions[i].heard = (at, what.clone());
            h.last_heard = (at, what);
        }
        let (mut gap_at, mut started) = (None, None);
        let lost = match ev {
            Ev::Msg(Message::Started { agent_ns }) => {
                // The first one: a TPC-C plan of several steps opens a window per step.
                if h.start_skew_ns.is_none() {
                    let due = self.start_ns.saturating_add(self.started_after_ns[i]);
                    h.start_skew_ns = Some(h.clock.to_controller(agent_ns) - due);
                }
                // Its first interval is due an interval after its window opened (a TPC-C
                // driver's connecting is not a stall).
                started = Some(at);
                None
            }
            Ev::Msg(Message::Interval(w)) => {
                if let Err(e) = accept_interval(&w, h.streamed.len(), &bounds) {
                    return Some(e.to_string());
                }
                let hist = w.total.latency.as_ref().and_then(|x| x.to_sparse().ok());
                let mut live = HostLive::new(&h.name, w.total.iops, w.total.ios, hist);
                gap_at = Some(at);
                live.errors = w.errors;
                self.live.add(w.index, "IOPS", i, live, at);
                h.streamed.push(*w);
                None
            }
            Ev::Msg(Message::TpccInterval(w)) => {
                let hists = [&w.latency, &w.new_order_latency];
                if let Err(e) = accept_series(
                    w.index,
                    w.t_s,
                    w.duration_s,
                    &hists,
                    h.tpcc_streamed.len(),
                    &bounds,
                ) {
                    return Some(e.to_string());
                }
                let nopm = if w.duration_s > 0.0 {
                    w.new_orders.max(0) as f64 * 60.0 / w.duration_s
                } else {
                    0.0
                };
                let hist = w.latency.as_ref().and_then(|x| x.to_sparse().ok());
                let mut live = HostLive::new(&h.name, nopm, w.new_orders.max(0) as u64, hist);
                gap_at = Some(at);
                live.tpm = Some(if w.duration_s > 0.0 {
                    w.transactions() as f64 * 60.0 / w.duration_s
                } else {
                    0.0
                });
                live.errors = w.errors;
                self.live.add(w.index, "NOPM", i, live, at);
                h.tpcc_streamed.push(*w);
                None
            }
            Ev::Msg(Message::TpccResult { result }) => {
                h.tpcc_result = Some(*result);
                fleet.sessions[i].stdin = None;
                None
            }
            Ev::Msg(Message::SqlInterval(w)) => {
                let lost = self.sql_interval(i, at, *w);
                gap_at = lost.is_none().then_some(at);
                lost
            }
            Ev::Msg(Message::SqlResult { result }) => {
                if result.intervals.len() > bounds.intervals {
                    return Some(
                        Reject::ResultIntervals {
                            count: result.intervals.len(),
                            most: bounds.intervals,
                        }
                        .to_string(),
                    );
                }
                h.sql_result = Some(*result);
                fleet.sessions[i].stdin = None;
                None
            }
            Ev::Msg(Message::Result {
                result,
                devices,
                logs,
            }) => {
                if let Err(e) = accept_result(&result, &bounds) {
                    return Some(e.to_string());
                }
                if let Err(e) = accept_logs(&logs) {
                    return Some(e.to_string());
                }
                h.logs = logs;
                if let Some(d) = &devices {
                    if let Err(e) = accept_devices(d, &bounds) {
                        return Some(e.to_string());
                    }
                }
                h.result = Some(*result);
                h.devices = devices.map(|d| *d);
                fleet.sessions[i].stdin = None;
                None
            }
            Ev::Msg(Message::Error { phase, message }) => Some(format!("{phase}: {message}")),
            Ev::Msg(other) => Some(format!("unexpected {}", other.name())),
            Ev::Eof => {
                fleet.sessions[i].gone = true;
                Some(fleet.sessions[i].why_gone())
            }
            Ev::Bad(e) => Some(e),
        };
        if let Some(at) = started {
            self.last_interval[i] = (Instant::now(), at);
        }
        if let Some(at) = gap_at {
            self.interval_came(i, at);
        }
        lost
    }
}

/// Why the controller refuses what a host sent (each message says what was expected).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum Reject {
    /// A message other than the one the phase waits for.
    #[error("expected {expected}, got {got}")]
    Unexpected {
        /// The message due (`time_reply 3` for a probe).
        expected: String,
        /// The name of the one that came.
        got: &'static str,
    },
    /// Its hello does not match the controller's (version, protocol).
    #[error("{0}")]
    Hello(String),
    /// More intervals than the plan's series and a margin.
    #[error("it sent more intervals than its plan makes (at most {most}, its series and a margin): refused")]
    ExtraInterval {
        /// Intervals the plan allows.
        most: usize,
    },
    /// An interval out of order.
    #[error("it sent interval index {index} where {due} was due: refused")]
    IntervalIndex {
        /// The index it sent.
        index: u64,
        /// The index due.
        due: usize,
    },
    /// An interval outside the plan's time (or not a finite time).
    #[error("its interval {index} ends at {t_s} s after {duration_s} s, outside its plan's series of {series_s:.3} s: refused")]
    IntervalTime {
        /// The interval's index.
        index: u64,
        /// Its end, s.
        t_s: f64,
        /// Its length, s.
        duration_s: f64,
        /// The plan's series, s.
        series_s: f64,
    },
    /// An interval's histogram larger than oio's layout makes.
    #[error("its interval {index} carries a histogram of {bytes} bytes, more than the {most} oio's layout can need: refused")]
    IntervalHistogram {
        /// The interval's index.
        index: u64,
        /// Its size (base64), bytes.
        bytes: usize,
        /// The largest oio's layout needs.
        most: usize,
    },
    /// A result with more intervals than the plan makes.
    #[error(
        "its result holds {count} intervals, more than its plan makes (at most {most}): refused"
    )]
    ResultIntervals {
        /// Intervals in the result.
        count: usize,
        /// Intervals the plan allows.
        most: usize,
    },
    /// A result's histogram with more buckets than oio's layout has.
    #[error("its result carries a histogram of {buckets} buckets, more than the {most} of oio's layout: refused")]
    ResultHistogram {
        /// Its buckets.
        buckets: usize,
        /// oio's layout's.
        most: usize,
    },
    /// More log bytes than allowed.
    #[error("it sent {bytes} bytes of logs, more than the {most_mib} MiB allowed: refused")]
    LogBytes {
        /// Bytes sent (base64).
        bytes: usize,
        /// The limit, MiB.
        most_mib: usize,
    },
    /// A log name the controller may not write, or a name twice.
    #[error("it sent a log named '{}' (letters, digits, . _ - only, each once): refused", .0.escape_debug())]
    LogName(String),
    /// Telemetry for too many devices.
    #[error("its device telemetry names {0} devices, more than {MAX_DEVICES}: refused")]
    Devices(usize),
    /// A device's telemetry larger than the plan makes.
    #[error("its device telemetry for {} holds {intervals} intervals and {ios} I/O records, more than its plan makes (at most {most} intervals, no records): refused", .device.escape_debug())]
    DeviceSize {
        /// The device.
        device: String,
        /// Its intervals.
        intervals: usize,
        /// Its per-I/O records.
        ios: usize,
        /// Intervals the plan allows.
        most: usize,
    },
}

impl Reject {
    /// `got` where `expected` was due.
    fn unexpected(expected: impl Into<String>, got: &Message) -> Reject {
        Reject::Unexpected {
            expected: expected.into(),
            got: got.name(),
        }
    }
}

/// An interval a host may send as the `n`-th of its series, or why not.
fn accept_interval(w: &WireInterval, n: usize, b: &Bounds) -> Result<(), Reject> {
    let hists = [&w.read.latency, &w.write.latency, &w.total.latency];
    accept_series(w.index, w.t_s, w.duration_s, &hists, n, b)
}

/// The checks every streamed interval passes: the next index, within the plan's series and
/// its time, histograms no larger than oio's layout makes.
fn accept_series(
    index: u64,
    t_s: f64,
    duration_s: f64,
    hists: &[&Option<crate::protocol::WireHistogram>],
    n: usize,
    b: &Bounds,
) -> Result<(), Reject> {
    if n >= b.intervals {
        return Err(Reject::ExtraInterval { most: b.intervals });
    }
    if index != n as u64 {
        return Err(Reject::IntervalIndex { index, due: n });
    }
    if !(t_s.is_finite() && duration_s.is_finite())
        || t_s < 0.0
        || duration_s < 0.0
        || t_s > b.t_s
        || duration_s > b.t_s
    {
        return Err(Reject::IntervalTime {
            index,
            t_s,
            duration_s,
            series_s: b.t_s,
        });
    }
    let most = crate::protocol::max_histogram_b64();
    for h in hists.iter().filter_map(|h| h.as_ref()) {
        if h.v2.len() > most {
            return Err(Reject::IntervalHistogram {
                index,
                bytes: h.v2.len(),
                most,
            });
        }
    }
    Ok(())
}

/// A host's final result, or why it is refused: no more intervals than its plan makes, no
/// histogram with more buckets than oio's layout has.
fn accept_result(r: &RunResult, b: &Bounds) -> Result<(), Reject> {
    if r.intervals.len() > b.intervals {
        return Err(Reject::ResultIntervals {
            count: r.intervals.len(),
            most: b.intervals,
        });
    }
    let most = crate::protocol::max_buckets();
    fn dirs(s: &oio_core::result::Summary) -> impl Iterator<Item = &oio_core::result::DirStats> {
        [&s.read, &s.write, &s.total]
            .into_iter()
            .chain(s.sync.as_ref())
            .chain(s.trim.as_ref())
    }
    let all = dirs(&r.summary)
        .chain(r.streams.iter().flat_map(|st| dirs(&st.summary)))
        .chain(
            r.intervals
                .iter()
                .flat_map(|i| [&i.read, &i.write, &i.total]),
        );
    for d in all {
        for h in [&d.histogram, &d.lag_histogram].into_iter().flatten() {
            if h.buckets.len() > most {
                return Err(Reject::ResultHistogram {
                    buckets: h.buckets.len(),
                    most,
                });
            }
        }
    }
    Ok(())
}

/// A host's log files, or why they are refused: names the controller may write, at most
/// [`crate::protocol::MAX_LOG_BYTES`] in all (as base64), each name once.
fn accept_logs(logs: &[crate::protocol::LogFile]) -> Result<(), Reject> {
    let b64: usize = logs.iter().map(|l| l.data.len()).sum();
    if b64 > crate::protocol::MAX_LOG_BYTES.div_ceil(3) * 4 + 4 * logs.len() {
        return Err(Reject::LogBytes {
            bytes: b64,
            most_mib: crate::protocol::MAX_LOG_BYTES >> 20,
        });
    }
    for (i, l) in logs.iter().enumerate() {
        if !crate::protocol::LogFile::safe_name(&l.name)
            || logs[..i].iter().any(|o| o.name == l.name)
        {
            return Err(Reject::LogName(l.name.clone()));
        }
    }
    Ok(())
}

/// Most devices one host may report.
const MAX_DEVICES: usize = 256;

/// A host's device telemetry, or why it is refused: a bounded number of devices, each with no
/// more intervals than the plan makes and no per-I/O records.
fn accept_devices(o: &oio_core::observation::Observation, b: &Bounds) -> Result<(), Reject> {
    if o.devices.len() > MAX_DEVICES {
        return Err(Reject::Devices(o.devices.len()));
    }
    for d in &o.devices {
        if d.intervals.len() > b.intervals || !d.ios.is_empty() {
            return Err(Reject::DeviceSize {
                device: d.name.clone(),
                intervals: d.intervals.len(),
                ios: d.ios.len(),
                most: b.intervals,
            });
        }
    }
    Ok(())
}

/// An instant of the controller's clock (ns since 1970) as RFC 3339 UTC with ms.
fn rfc3339(ns: i64) -> String {
    humantime::format_rfc3339_millis(std::time::UNIX_EPOCH + Duration::from_nanos(ns.max(0) as u64))
        .to_string()
}

/// A host that answered hello and did nothing else yet, for the merge tests.
#[cfg(test)]
pub(crate) fn test_outcome(name: &str) -> HostOutcome {
    HostOutcome {
        name: name.into(),
        group: String::new(),
        plan: None,
        argv: vec!["true".into()],
        hello: Hello::current("test"),
        clock: ClockOffset::default(),
        targets: Vec::new(),
        start_skew_ns: Some(0),
        streamed: Vec::new(),
        result: None,
        devices: None,
        logs: Vec::new(),
        tpcc_ready: None,
        tpcc_identity: None,
        tpcc_streamed: Vec::new(),
        tpcc_result: None,
        sql_streamed: Vec::new(),
        sql_result: None,
        lost: None,
        boot_id: None,
        last_heard: (0, String::new()),
        longest_gap: None,
        stderr_tail: String::new(),
    }
}

/// A loss dated `at_s` after the start, for the merge tests.
#[cfg(test)]
pub(crate) fn test_lost(at_s: f64) -> Lost {
    Lost {
        at_s,
        at: "t".into(),
        last_message: "interval".into(),
        noticed_s: at_s + 30.0,
        reason: "gone".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_named_as_paths_twice_or_too_large_are_refused() {
        let log = |n: &str, len: usize| crate::protocol::LogFile {
            name: n.into(),
            data: "A".repeat(len),
        };
        assert!(accept_logs(&[log("a.hlog", 8), log("a_lat.1.log", 8)]).is_ok());
        for bad in ["../x", "/etc/passwd", ".hidden", "a b", ""] {
            let e = accept_logs(&[log(bad, 4)]).unwrap_err();
            assert_eq!(e, Reject::LogName(bad.to_string()));
            assert!(e.to_string().contains("refused"), "{bad}: {e}");
        }
        assert!(accept_logs(&[log("a", 4), log("a", 4)]).is_err());
        let big = crate::protocol::MAX_LOG_BYTES / 3 * 4 + 16;
        assert!(accept_logs(&[log("a", big), log("b", big / 2)]).is_err());
    }

    #[test]
    fn progress_reports_an_interval_once_every_running_host_sent_it() {
        let mut p = Progressor::default();
        let mut seen = Vec::new();
        p.add(0, "IOPS", 0, HostLive::new("a", 100.0, 100, None), 1_000);
        p.complete(&[1, 0], &[false, false], &mut |x| seen.push(x.clone()));
        assert!(seen.is_empty());
        p.add(1, "IOPS", 0, HostLive::new("a", 120.0, 120, None), 2_000);
        p.add(0, "IOPS", 1, HostLive::new("b", 40.0, 40, None), 1_500_000);
        p.complete(&[2, 1], &[false, false], &mut |x| seen.push(x.clone()));
        assert_eq!(seen.len(), 1);
        assert_eq!((seen[0].index, seen[0].hosts, seen[0].value), (0, 2, 140.0));
        assert_eq!(seen[0].slowest, ("b".to_string(), 40.0));
        let lags: Vec<(&str, f64)> = seen[0]
            .per_host
            .iter()
            .map(|h| (h.host.as_str(), h.lag_ms))
            .collect();
        assert_eq!(lags, [("a", 0.0), ("b", 1.499)]);
        // b is finished (lost, or its result came without interval 1): interval 1 is
        // complete with a alone, and b's late interval 1 does not report it again (the
        // issue's last interval split across two lines).
        p.complete(&[2, 1], &[false, true], &mut |x| seen.push(x.clone()));
        assert_eq!(seen.len(), 2);
        assert_eq!((seen[1].index, seen[1].hosts), (1, 1));
        p.add(1, "IOPS", 1, HostLive::new("b", 50.0, 50, None), 3_000);
        p.complete(&[2, 2], &[true, true], &mut |x| seen.push(x.clone()));
        assert_eq!(seen.len(), 2);
    }
}

/// Starts one agent with `argv`, exchanges hellos (a mismatch is refused) and closes the
/// session: the version it answers with, or why it did not.
pub fn hello(
    host: &str,
    argv: Vec<String>,
    opts: &Options,
    cancel: &Cancel,
) -> Result<String, FleetError> {
    let mut fleet = Fleet::launch(&[(host.to_string(), argv, crate::protocol::MAX_LINE, 0)])?;
    fleet.connect(opts, cancel)?;
    Ok(fleet.sessions[0]
        .hello
        .as_ref()
        .map(|h| h.oio_version.clone())
        .unwrap_or_default())
}

/// What `check` found on one host.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CheckOutcome {
    /// The host.
    pub host: String,
    /// Its oio version, when it answered.
    pub oio_version: Option<String>,
    /// Its clock against the controller's, when it answered.
    pub clock: Option<ClockOffset>,
    /// Its targets.
    pub targets: Vec<TargetCheck>,
    /// Why it could not be checked.
    pub error: Option<String>,
}

impl CheckOutcome {
    /// Reachable, same version, every target usable or creatable.
    pub fn ok(&self) -> bool {
        self.error.is_none() && self.targets.iter().all(|t| t.status != "refused")
    }
}

/// Checks every host on its own (one failing does not stop the others): reachable, same oio,
/// clock, targets; nothing is created or written.
pub fn check(jobs: &[HostJob], opts: &Options, cancel: &Cancel) -> Vec<CheckOutcome> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .iter()
            .map(|j| scope.spawn(move || check_one(j, opts, cancel)))
            .collect();
        handles
            .into_iter()
            .zip(jobs)
            .map(|(h, j)| {
                h.join().unwrap_or_else(|_| CheckOutcome {
                    host: j.name.clone(),
                    oio_version: None,
                    clock: None,
                    targets: Vec::new(),
                    error: Some("the check of this host failed internally".into()),
                })
            })
            .collect()
    })
}

fn check_one(job: &HostJob, opts: &Options, cancel: &Cancel) -> CheckOutcome {
    let mut out = CheckOutcome {
        host: job.name.clone(),
        oio_version: None,
        clock: None,
        targets: Vec::new(),
        error: None,
    };
    let mut fleet = match Fleet::launch(&jobs_argv(std::slice::from_ref(job))) {
        Ok(f) => f,
        Err(e) => {
            out.error = Some(e.about_host(&job.name));
            return out;
        }
    };
    if let Err(e) = fleet.connect(opts, cancel) {
        out.oio_version = fleet.sessions[0]
            .hello
            .as_ref()
            .map(|h| h.oio_version.clone());
        out.error = Some(e.about_host(&job.name));
        return out;
    }
    out.oio_version = fleet.sessions[0]
        .hello
        .as_ref()
        .map(|h| h.oio_version.clone());
    out.clock = Some(fleet.sessions[0].clock);
    let Work::Io(plan) = &job.plan else {
        out.error = Some("check takes a workload plan".into());
        return out;
    };
    fleet.sessions[0].tell(&Message::Check {
        plan: Box::new(plan.clone()),
    });
    let mut targets = Vec::new();
    let r = fleet.wait_all(
        "check",
        Limit::Stall(opts.stall_timeout),
        cancel,
        |_, _, m| match m {
            Message::Checked { targets: t } => {
                targets = t;
                Ok(true)
            }
            other => Err(Reject::unexpected("checked", &other)),
        },
    );
    out.targets = targets;
    if let Err(e) = r {
        out.error = Some(e.about_host(&job.name));
    }
    out
}

impl FleetError {
    /// The error told about one host, without its name (the caller's line already names it).
    pub fn about_host(&self, host: &str) -> String {
        match self {
            FleetError::Host { reason, .. } => reason.clone(),
            other => other.to_string().replace(&format!("host {host}: "), ""),
        }
    }
}
