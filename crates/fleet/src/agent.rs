//! The agent's side of a session (`oio agent --stdio`): answer the controller on a pipe,
//! prepare the targets, start at the instant given, stream intervals, send the result.
//!
//! The controller going away (end of file or an error on stdin, a broken stdout) sets the stop
//! flag at once, so the engine stops its I/O within a batch and the agent returns.

use crate::protocol::{now_ns, send, Hello, Message, ReadError, Reader, TargetCheck, WireInterval};
use oio_core::result::{Interval, TargetInfo};
use oio_engine::{RunObserver, RunPlan, Start, TargetOptions};
use std::io::{BufReader, Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long an agent waits for the controller's hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(60);
/// How long an agent waits between messages before the run (a controller that stalls).
const IDLE_TIMEOUT: Duration = Duration::from_secs(24 * 3600);
/// The farthest in the future a start instant may be.
const MAX_START_WAIT: Duration = Duration::from_secs(3600);
/// After this long without sending anything, the agent says where it is (`progress`).
pub const KEEPALIVE: Duration = Duration::from_secs(1);

/// How a session ended.
#[derive(Debug, PartialEq, Eq)]
pub enum AgentEnd {
    /// A run finished and its result was sent.
    Ran {
        /// Why the run stopped ("completed", "interrupted", "errors").
        stop_reason: String,
    },
    /// The controller stopped the session, or went away, before a run.
    Stopped(String),
    /// A `check` or other session ended without running.
    Done,
}

/// Why a session failed (the controller was told too, when it could be).
#[derive(Debug, thiserror::Error)]
#[error("{phase}: {message}")]
pub struct AgentError {
    /// Where: hello, prepare, run, protocol.
    pub phase: &'static str,
    /// What.
    pub message: String,
}

enum Incoming {
    Msg(Message),
    Eof,
    Bad(ReadError),
}

/// The pipe to the controller, and whether the controller is gone (its end of our stdin
/// closed): nothing more is written then, so an agent never blocks on a pipe nobody reads.
struct Link {
    w: Mutex<Box<dyn Write + Send>>,
    gone: AtomicBool,
    /// When the last message went out.
    sent: Mutex<Instant>,
    /// Where the session thread is, for keepalives.
    beat: Mutex<Beat>,
    /// When the controller was last heard from, and the watchdog its first `beat` armed.
    heard: Mutex<(Instant, Option<Duration>)>,
    /// Set when the watchdog stopped the run: why, for the result's warnings.
    watchdog: Mutex<Option<String>>,
}

/// What the session thread is doing: the phase, a count that moves while its work does, and
/// words for messages.
#[derive(Clone, Debug, Default)]
struct Beat {
    phase: &'static str,
    done: u64,
    total: u64,
    detail: String,
}

impl Link {
    fn beat(&self, f: impl FnOnce(&mut Beat)) {
        f(&mut self.beat.lock().unwrap_or_else(|e| e.into_inner()));
    }
}

/// Sends a `progress` whenever nothing went out for [`KEEPALIVE`], until `end` closes. A thread
/// of the agent's own process: an agent that is stopped (SIGSTOP) or gone falls silent.
/// It is the watchdog too: once armed, a controller silent for longer stops the run.
fn keepalive(out: Out, stop: Arc<AtomicBool>, end: crossbeam_channel::Receiver<()>) {
    loop {
        match end.recv_timeout(KEEPALIVE / 4) {
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
            _ => return,
        }
        let (heard, armed) = *out.heard.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(limit) = armed.filter(|l| heard.elapsed() > *l) {
            let mut w = out.watchdog.lock().unwrap_or_else(|e| e.into_inner());
            if w.is_none() {
                *w = Some(format!(
                    "the controller was silent for {:.1} s (its watchdog is {:.1} s: it beats every second): this agent stopped its I/O then, so a host cut off from its controller does not run on unobserved",
                    heard.elapsed().as_secs_f64(),
                    limit.as_secs_f64()
                ));
                stop.store(true, Ordering::SeqCst);
            }
        }
        let quiet = out.sent.lock().unwrap_or_else(|e| e.into_inner()).elapsed();
        if quiet < KEEPALIVE {
            continue;
        }
        let b = out.beat.lock().unwrap_or_else(|e| e.into_inner()).clone();
        emit(
            &out,
            &stop,
            &Message::Progress {
                phase: b.phase.to_string(),
                done: b.done,
                total: b.total,
                detail: b.detail,
            },
        );
    }
}

type Out = Arc<Link>;

/// Writes one message; a failed write means the controller is gone, so it stops everything.
fn emit(out: &Out, stop: &AtomicBool, m: &Message) -> bool {
    if out.gone.load(Ordering::SeqCst) {
        return false;
    }
    let mut w = out.w.lock().unwrap_or_else(|e| e.into_inner());
    if send(&mut **w, m).is_err() {
        stop.store(true, Ordering::SeqCst);
        return false;
    }
    *out.sent.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    true
}

fn fail(out: &Out, stop: &AtomicBool, phase: &'static str, message: String) -> AgentError {
    emit(
        out,
        stop,
        &Message::Error {
            phase: phase.into(),
            message: message.clone(),
        },
    );
    AgentError { phase, message }
}

/// Serves one session on `input`/`output`. `stop` is the caller's (its signal handler's)
/// flag; the session sets it too when the controller goes away or says stop.
pub fn serve(
    input: impl Read + Send + 'static,
    output: impl Write + Send + 'static,
    oio_version: &str,
    stop: Arc<AtomicBool>,
) -> Result<AgentEnd, AgentError> {
    let out: Out = Arc::new(Link {
        w: Mutex::new(Box::new(output)),
        gone: AtomicBool::new(false),
        sent: Mutex::new(Instant::now()),
        beat: Mutex::new(Beat::default()),
        heard: Mutex::new((Instant::now(), None)),
        watchdog: Mutex::new(None),
    });
    let rx = spawn_reader(input, &out, &stop)?;
    if let Some(end) = hello(&rx, &out, &stop, oio_version)? {
        return Ok(end);
    }
    // Keepalives from here on; the thread ends when this function returns (`_end` dropped).
    let (_end, end) = crossbeam_channel::bounded::<()>(0);
    {
        let (out, stop) = (Arc::clone(&out), Arc::clone(&stop));
        std::thread::Builder::new()
            .name("oio-agent-keepalive".into())
            .spawn(move || keepalive(out, stop, end))
            .map_err(|e| AgentError {
                phase: "start",
                message: format!("starting the keepalive thread: {e}"),
            })?;
    }
    session(&rx, &out, &stop)
}

/// Starts the thread that reads the controller's messages: clock probes are answered there,
/// a stop sets `stop` at once, the rest is handed on.
fn spawn_reader(
    input: impl Read + Send + 'static,
    out: &Out,
    stop: &Arc<AtomicBool>,
) -> Result<crossbeam_channel::Receiver<Incoming>, AgentError> {
    let (tx, rx) = crossbeam_channel::unbounded::<Incoming>();
    // Clock probes are answered here, the moment they are read, so the answer's
    // timestamp is not delayed by whatever the session thread is doing.
    let (out, stop) = (Arc::clone(out), Arc::clone(stop));
    std::thread::Builder::new()
        .name("oio-agent-stdin".into())
        .spawn(move || {
            let mut r = Reader::new(BufReader::new(input));
            loop {
                let next = r.next_message();
                out.heard.lock().unwrap_or_else(|e| e.into_inner()).0 = Instant::now();
                let m = match next {
                    Ok(Some(Message::Beat { watchdog_ms })) => {
                        let limit = Duration::from_millis(watchdog_ms);
                        out.heard.lock().unwrap_or_else(|e| e.into_inner()).1 =
                            (watchdog_ms > 0).then_some(limit);
                        continue;
                    }
                    Ok(Some(Message::Time { seq })) => {
                        let reply = Message::TimeReply {
                            seq,
                            agent_ns: now_ns(),
                        };
                        emit(&out, &stop, &reply);
                        continue;
                    }
                    Ok(Some(Message::Stop { reason })) => {
                        stop.store(true, Ordering::SeqCst);
                        Incoming::Msg(Message::Stop { reason })
                    }
                    Ok(Some(m)) => Incoming::Msg(m),
                    Ok(None) => {
                        out.gone.store(true, Ordering::SeqCst);
                        stop.store(true, Ordering::SeqCst);
                        Incoming::Eof
                    }
                    Err(e) => {
                        stop.store(true, Ordering::SeqCst);
                        Incoming::Bad(e)
                    }
                };
                let last = !matches!(m, Incoming::Msg(_));
                if tx.send(m).is_err() || last {
                    return;
                }
            }
        })
        .map_err(|e| AgentError {
            phase: "start",
            message: format!("starting the reader thread: {e}"),
        })?;
    Ok(rx)
}

/// The hello exchange: the controller's first, checked, then ours. Some when the session ends
/// there without an error (no hello came).
fn hello(
    rx: &crossbeam_channel::Receiver<Incoming>,
    out: &Out,
    stop: &Arc<AtomicBool>,
    oio_version: &str,
) -> Result<Option<AgentEnd>, AgentError> {
    let me = Hello::current(oio_version);
    match rx.recv_timeout(HELLO_TIMEOUT) {
        Ok(Incoming::Msg(Message::Hello(peer))) => {
            if let Err(e) = me.check_controller(&peer) {
                return Err(fail(out, stop, "hello", e.to_string()));
            }
            emit(out, stop, &Message::Hello(me));
            Ok(None)
        }
        Ok(Incoming::Msg(m)) => Err(fail(
            out,
            stop,
            "protocol",
            format!("expected hello first, got {}", m.name()),
        )),
        Ok(Incoming::Eof) | Err(_) => Ok(Some(AgentEnd::Stopped(
            "no hello from the controller".into(),
        ))),
        Ok(Incoming::Bad(e)) => Err(fail(out, stop, "protocol", e.to_string())),
    }
}

/// After the hello: check, or prepare then go, or stop.
fn session(
    rx: &crossbeam_channel::Receiver<Incoming>,
    out: &Out,
    stop: &Arc<AtomicBool>,
) -> Result<AgentEnd, AgentError> {
    let mut prepared: Option<Prepared> = None;
    loop {
        let m = match rx.recv_timeout(IDLE_TIMEOUT) {
            Ok(Incoming::Msg(m)) => m,
            Ok(Incoming::Eof) => return Ok(AgentEnd::Stopped("the controller went away".into())),
            Ok(Incoming::Bad(e)) => return Err(fail(out, stop, "protocol", e.to_string())),
            Err(_) => return Ok(AgentEnd::Stopped("the controller fell silent".into())),
        };
        match m {
            Message::Check { plan } => {
                out.beat(|b| {
                    *b = Beat {
                        phase: "check",
                        ..Beat::default()
                    }
                });
                let targets = check_targets(&plan, out);
                emit(out, stop, &Message::Checked { targets });
                return Ok(AgentEnd::Done);
            }
            Message::Prepare { plan } => match prepare_targets(&plan, stop, out) {
                Ok(targets) => {
                    let mut devices: Vec<String> = Vec::new();
                    for d in targets.iter().filter_map(|t| t.device.as_ref()) {
                        if !devices.contains(&d.name) {
                            devices.push(d.name.clone());
                        }
                    }
                    let identities = bound_paths(&plan)
                        .unwrap_or_default()
                        .iter()
                        .map(|(p, _)| crate::protocol::target_identity(p).unwrap_or_default())
                        .collect();
                    out.beat(|b| {
                        *b = Beat {
                            phase: "waiting",
                            ..Beat::default()
                        }
                    });
                    emit(
                        out,
                        stop,
                        &Message::Ready {
                            targets,
                            identities,
                        },
                    );
                    prepared = Some(Prepared::Io(plan, devices));
                }
                Err(e) => return Err(fail(out, stop, "prepare", e)),
            },
            Message::PrepareTpcc { plan } => match prepare_tpcc(&plan, out) {
                Ok((db, warehouses, identity)) => {
                    out.beat(|b| {
                        *b = Beat {
                            phase: "waiting",
                            ..Beat::default()
                        }
                    });
                    emit(
                        out,
                        stop,
                        &Message::ReadyTpcc {
                            db,
                            warehouses,
                            identity,
                        },
                    );
                    prepared = Some(Prepared::Tpcc(plan));
                }
                Err(e) => return Err(fail(out, stop, "prepare", e.to_string())),
            },
            Message::PrepareSql { plan } => match prepare_sql(&plan, out) {
                Ok((run, db, identity)) => {
                    out.beat(|b| {
                        *b = Beat {
                            phase: "waiting",
                            ..Beat::default()
                        }
                    });
                    emit(out, stop, &Message::ReadySql { db, identity });
                    prepared = Some(Prepared::Sql(Box::new(run), plan.device.clone()));
                }
                Err(e) => return Err(fail(out, stop, "prepare", e)),
            },
            // The engine opens the targets and makes its workers' inputs, then says `armed`
            // from its start gate and waits there for `go`: the lead before the start instant
            // only has to carry `go`, however slow opening is on a busy host.
            Message::Arm => {
                let Some(Prepared::Io(plan, devices)) = prepared.take() else {
                    return Err(fail(
                        out,
                        stop,
                        "protocol",
                        "arm before an I/O plan's prepare".into(),
                    ));
                };
                out.beat(|b| {
                    *b = Beat {
                        phase: "arm",
                        ..Beat::default()
                    }
                });
                return run(&plan, &devices, out, stop, Gate::new(rx));
            }
            Message::Go { start_agent_ns } => {
                let plan = match prepared.take() {
                    None => return Err(fail(out, stop, "protocol", "go before prepare".into())),
                    Some(p) => p,
                };
                let start =
                    start_instant(start_agent_ns, out).map_err(|why| fail(out, stop, "go", why))?;
                return match plan {
                    Prepared::Io(..) => Err(fail(out, stop, "protocol", "go before arm".into())),
                    Prepared::Tpcc(plan) => run_tpcc(&plan, out, stop, start),
                    Prepared::Sql(plan, device) => {
                        run_sql(&plan, device.as_deref(), out, stop, start)
                    }
                };
            }
            Message::Stop { reason } => return Ok(AgentEnd::Stopped(reason)),
            other => {
                return Err(fail(
                    out,
                    stop,
                    "protocol",
                    format!("unexpected {}", other.name()),
                ))
            }
        }
    }
}

/// Opens a TPC-C plan's database and checks its build (keepalives say so meanwhile).
fn prepare_tpcc(
    plan: &oio_tpcc::TpccRunPlan,
    out: &Out,
) -> Result<(String, u32, Option<String>), crate::tpcc::FleetTpccError> {
    out.beat(|b| {
        *b = Beat {
            phase: "prepare_tpcc",
            detail: "opening the database".into(),
            ..Beat::default()
        }
    });
    crate::tpcc::prepare(plan)
}

/// The start instant `go` names, on this host's clock, and the phase turned to `run`; refused
/// when it is more than [`MAX_START_WAIT`] away.
fn start_instant(start_agent_ns: i64, out: &Out) -> Result<std::time::SystemTime, String> {
    let wait = Duration::from_nanos(start_agent_ns.saturating_sub(now_ns()).max(0) as u64);
    if wait > MAX_START_WAIT {
        return Err(format!(
            "the start instant is {wait:?} away; at most {MAX_START_WAIT:?}"
        ));
    }
    out.beat(|b| {
        *b = Beat {
            phase: "run",
            ..Beat::default()
        }
    });
    Ok(std::time::UNIX_EPOCH + Duration::from_nanos(start_agent_ns.max(0) as u64))
}

/// A plan made ready: a database plan waits for `go`, an I/O plan for `arm` (then in the
/// engine's start gate for `go`, its targets open).
enum Prepared {
    /// The plan and its targets' block devices (diskstats names), recorded during the run.
    Io(Box<RunPlan>, Vec<String>),
    Tpcc(Box<oio_tpcc::TpccRunPlan>),
    /// The loaded script run (its setup done) and `--device`.
    Sql(Box<oio_sql::SqlRun>, Option<String>),
}

/// Loads a SQL plan, opens its database and runs the script's setup (keepalives say so
/// meanwhile).
fn prepare_sql(
    plan: &crate::protocol::WireSqlPlan,
    out: &Out,
) -> Result<(oio_sql::SqlRun, String, Option<String>), String> {
    out.beat(|b| {
        *b = Beat {
            phase: "prepare_sql",
            detail: "opening the database and running the script's setup".into(),
            ..Beat::default()
        }
    });
    crate::sql::prepare(plan)
}

/// Runs the script (its setup already done) from the start instant, streaming each interval.
fn run_sql(
    plan: &oio_sql::SqlRun,
    device: Option<&str>,
    out: &Out,
    stop: &Arc<AtomicBool>,
    start: std::time::SystemTime,
) -> Result<AgentEnd, AgentError> {
    // Where the database lives is found before the start instant: it takes a query.
    let (device, warnings) = oio_tpcc::device::locate(device, &plan.db, &plan.options.timeouts)
        .map_err(|e| fail(out, stop, "run", e.to_string()))?;
    let interval = Duration::from_secs_f64(plan.options.interval_s);
    // The workers connect now, in the lead before the start instant, and wait for it
    // (`Streamer::start_at`): connecting is not part of the start skew.
    // The run's own stop: the session's (a `stop`, the controller gone) or the streamer's
    // (the database refuses the script).
    let cancel = oio_core::Cancel::from_flag(Arc::clone(stop)).child();
    let mut obs = crate::sql::Streamer {
        send: &mut |m| {
            emit(out, stop, &m);
        },
        sent: 0,
        device: device.map(|d| oio_tpcc::device::Diskstats::new(d, interval)),
        start,
        cancel: cancel.clone(),
        committed: 0,
        refused: None,
    };
    let mut plan = plan.clone();
    plan.options.setup = false;
    let ran = oio_sql::run(&plan, &mut obs, &cancel);
    if let Some(why) = obs.refused.take() {
        return Err(fail(out, stop, "run", why));
    }
    match ran {
        Ok(mut result) => {
            result.envelope.warnings.splice(0..0, warnings);
            if let Some(w) = out
                .watchdog
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone()
            {
                result.envelope.warnings.push(w);
            }
            let stop_reason = result.envelope.stop_reason.to_string();
            emit(
                out,
                stop,
                &Message::SqlResult {
                    result: Box::new(result),
                },
            );
            Ok(AgentEnd::Ran { stop_reason })
        }
        Err(e) => Err(fail(out, stop, "run", e.to_string())),
    }
}

/// Waits for the start instant (the TPC-C driver has no start barrier of its own), then runs
/// the plan, streaming each interval.
fn run_tpcc(
    plan: &oio_tpcc::TpccRunPlan,
    out: &Out,
    stop: &Arc<AtomicBool>,
    start: std::time::SystemTime,
) -> Result<AgentEnd, AgentError> {
    // Where the database lives is found before the start instant: it takes a query.
    let (device, warnings) = match plan.db.parse::<oio_tpcc::DbUrl>() {
        Ok(db) => oio_tpcc::device::locate(plan.device.as_deref(), &db, &plan.step.timeouts)
            .map_err(|e| fail(out, stop, "run", e.to_string()))?,
        Err(e) => return Err(fail(out, stop, "run", e.to_string())),
    };
    let interval = Duration::from_secs_f64(plan.step.interval_s);
    while let Ok(left) = start.duration_since(std::time::SystemTime::now()) {
        if stop.load(Ordering::SeqCst) {
            return Ok(AgentEnd::Stopped("stopped before the start".into()));
        }
        std::thread::sleep(left.min(Duration::from_millis(2)));
    }
    // `started` is sent when the measured window opens (after connecting and the ramp):
    // that is the instant the hosts' windows are compared at.
    let mut obs = crate::tpcc::Streamer {
        send: &mut |m| {
            emit(out, stop, &m);
        },
        sent: 0,
        result: None,
        device: device.map(|d| oio_tpcc::device::Diskstats::new(d, interval)),
        warnings,
    };
    let cancel = oio_core::Cancel::from_flag(Arc::clone(stop));
    match oio_tpcc::run(plan, &mut obs, &cancel) {
        Ok(_) => match obs.result.take() {
            Some(mut result) => {
                if let Some(w) = out
                    .watchdog
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone()
                {
                    result.envelope.warnings.push(w);
                }
                let stop_reason = result.envelope.stop_reason.to_string();
                emit(
                    out,
                    stop,
                    &Message::TpccResult {
                        result: Box::new(result),
                    },
                );
                Ok(AgentEnd::Ran { stop_reason })
            }
            None => Err(fail(out, stop, "run", "the run produced no result".into())),
        },
        Err(e) => Err(fail(out, stop, "run", e.to_string())),
    }
}

fn run(
    plan: &RunPlan,
    devices: &[String],
    out: &Out,
    stop: &Arc<AtomicBool>,
    gate: Gate,
) -> Result<AgentEnd, AgentError> {
    let mut obs = Streamer {
        out: Arc::clone(out),
        stop: Arc::clone(stop),
        sent: 0,
        last_t: None,
        gate,
        // The null engine sends nothing to the devices: their figures would be others' I/O.
        devices: if plan.engine == oio_engine::EngineKind::Null {
            Vec::new()
        } else {
            devices.to_vec()
        },
        interval: plan.interval,
        recorder: None,
        // Nothing to say for the null engine (its result says no I/O reached a device).
        telemetry: (plan.engine == oio_engine::EngineKind::Null).then(String::new),
    };
    let ran = crate::execute(plan, &mut obs, stop);
    // No `go`: whatever the engine did after its gate opened on a stop is no run.
    match obs.gate.ended.take() {
        Some(Err(GateEnd::Stopped(why))) => return Ok(AgentEnd::Stopped(why)),
        Some(Err(GateEnd::Failed(phase, why))) => return Err(fail(out, stop, phase, why)),
        // The engine refused before its targets were open: the controller is still waiting
        // for `armed`.
        None => {
            if let Err(e) = &ran {
                return Err(fail(out, stop, "arm", e.to_string()));
            }
        }
        Some(Ok(())) => {}
    }
    match ran {
        Ok(mut result) => {
            let stop_reason = result.envelope.stop_reason.to_string();
            let devices = obs.devices_recorded(plan.ramp.as_secs_f64());
            if let Some(w) = obs.telemetry.take().filter(|w| !w.is_empty()) {
                result.envelope.warnings.push(w);
            }
            if let Some(w) = out
                .watchdog
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone()
            {
                result.envelope.warnings.push(w);
            }
            emit(
                out,
                stop,
                &Message::Result {
                    logs: collect_logs(plan, &mut result.envelope.warnings),
                    result: Box::new(result),
                    devices: devices.map(Box::new),
                },
            );
            Ok(AgentEnd::Ran { stop_reason })
        }
        Err(e) => Err(fail(out, stop, "run", e.to_string())),
    }
}

/// The run's `--hdr-log` file and `--lat-log` files (`PREFIX_lat.N.log`), read for the
/// controller up to [`crate::protocol::MAX_LOG_BYTES`] in all; what does not fit, or cannot be
/// read, stays on the host and is said in `warnings`.
fn collect_logs(plan: &RunPlan, warnings: &mut Vec<String>) -> Vec<crate::protocol::LogFile> {
    use base64::Engine as _;
    let mut paths: Vec<PathBuf> = plan.hdr_log.iter().cloned().collect();
    if let Some(prefix) = &plan.lat_log {
        for n in 1.. {
            let p = PathBuf::from(format!("{}_lat.{n}.log", prefix.display()));
            if !p.exists() {
                break;
            }
            paths.push(p);
        }
    }
    let (mut out, mut total) = (Vec::new(), 0usize);
    for p in paths {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !crate::protocol::LogFile::safe_name(&name) {
            warnings.push(format!(
                "log {}: its name is not one the controller writes (letters, digits, . _ -); left on this host",
                p.display()
            ));
            continue;
        }
        let size = std::fs::metadata(&p).map(|m| m.len() as usize).unwrap_or(0);
        if total.saturating_add(size) > crate::protocol::MAX_LOG_BYTES {
            warnings.push(format!(
                "log {}: {size} bytes would pass the {} MiB sent with a result; left on this host",
                p.display(),
                crate::protocol::MAX_LOG_BYTES >> 20
            ));
            continue;
        }
        match std::fs::read(&p) {
            Ok(b) => {
                total += b.len();
                out.push(crate::protocol::LogFile {
                    name,
                    data: base64::engine::general_purpose::STANDARD.encode(&b),
                });
            }
            Err(e) => warnings.push(format!("log {}: {e}; left on this host", p.display())),
        }
    }
    out
}

/// Streams the run's progress to the controller.
struct Streamer {
    out: Out,
    stop: Arc<AtomicBool>,
    sent: u64,
    last_t: Option<f64>,
    gate: Gate,
    /// The targets' block devices, recorded from /proc/diskstats while the workers run.
    devices: Vec<String>,
    interval: Duration,
    recorder: Option<oio_telemetry::diskstats::DiskstatsRecorder>,
    /// Why no device was recorded, for the result's warnings.
    telemetry: Option<String>,
}

impl Streamer {
    /// The devices' intervals within the measured window (the ramp's left out), or None.
    fn devices_recorded(&mut self, ramp_s: f64) -> Option<oio_core::observation::Observation> {
        let rec = self.recorder.take()?;
        match rec.stop() {
            Ok(mut o) => {
                for d in &mut o.devices {
                    // Recorded from the workers' start: the ramp is not measured.
                    d.intervals.retain(|i| i.t_s > ramp_s + 1e-3);
                    for i in &mut d.intervals {
                        i.t_s -= ramp_s;
                    }
                }
                Some(o)
            }
            Err(e) => {
                self.telemetry = Some(format!("device telemetry: {e}; none recorded"));
                None
            }
        }
    }
}

impl RunObserver for Streamer {
    fn started(&mut self, start: &Start<'_>) {
        if !self.gate.opened() {
            return;
        }
        if self.devices.is_empty() && self.telemetry.is_none() {
            self.telemetry = Some(
                "device telemetry: the targets have no block device (tmpfs, overlay, NFS?); none recorded"
                    .into(),
            );
        } else {
            match oio_telemetry::diskstats::DiskstatsRecorder::start(&self.devices, self.interval) {
                Ok(r) => self.recorder = Some(r),
                Err(e) => self.telemetry = Some(format!("device telemetry: {e}; none recorded")),
            }
        }
        let agent_ns = match start.began.duration_since(std::time::UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
            Err(_) => now_ns(),
        };
        let m = Message::Started { agent_ns };
        emit(&self.out, &self.stop, &m);
    }

    fn tick(&mut self, _elapsed: Duration, last: Option<&Interval>) {
        let Some(i) = last.filter(|_| self.gate.opened()) else {
            return;
        };
        if self.last_t == Some(i.t_s) {
            return;
        }
        self.last_t = Some(i.t_s);
        let m = Message::Interval(Box::new(WireInterval::from_interval(self.sent, i)));
        self.sent += 1;
        emit(&self.out, &self.stop, &m);
    }

    fn interval_histograms(&self) -> bool {
        true
    }

    fn start_at(&self) -> Option<std::time::SystemTime> {
        Some(self.gate.wait(&self.out, &self.stop))
    }
}

/// The engine's start gate on an agent: with the targets open and the workers' inputs made,
/// it says `armed` and waits for the controller's `go`.
struct Gate {
    rx: crossbeam_channel::Receiver<Incoming>,
    /// Whether `armed` went out.
    said: std::cell::Cell<bool>,
    /// How the wait ended (None: the engine never reached the gate).
    ended: std::cell::RefCell<Option<Result<(), GateEnd>>>,
}

/// Why a gate opened without `go`.
enum GateEnd {
    /// The controller stopped the session, or went away.
    Stopped(String),
    /// A message that makes no sense here: (phase, what).
    Failed(&'static str, String),
}

impl Gate {
    fn new(rx: &crossbeam_channel::Receiver<Incoming>) -> Gate {
        Gate {
            rx: rx.clone(),
            said: std::cell::Cell::new(false),
            ended: std::cell::RefCell::new(None),
        }
    }

    /// Whether `go` came: the run is the controller's.
    fn opened(&self) -> bool {
        matches!(*self.ended.borrow(), Some(Ok(())))
    }

    /// Says `armed`, then waits for `go` and returns its instant. Without one, the stop flag
    /// is set and the instant is now: the engine's workers stop at once, and `ended` says why.
    fn wait(&self, out: &Out, stop: &Arc<AtomicBool>) -> std::time::SystemTime {
        if !self.said.replace(true) {
            out.beat(|b| {
                *b = Beat {
                    phase: "waiting",
                    ..Beat::default()
                }
            });
            emit(out, stop, &Message::Armed);
        }
        let end = match self.rx.recv_timeout(IDLE_TIMEOUT) {
            Ok(Incoming::Msg(Message::Go { start_agent_ns })) => {
                match start_instant(start_agent_ns, out) {
                    Ok(start) => {
                        *self.ended.borrow_mut() = Some(Ok(()));
                        return start;
                    }
                    Err(why) => GateEnd::Failed("go", why),
                }
            }
            Ok(Incoming::Msg(Message::Stop { reason })) => GateEnd::Stopped(reason),
            Ok(Incoming::Eof) => GateEnd::Stopped("the controller went away".into()),
            Err(_) => GateEnd::Stopped("the controller fell silent".into()),
            Ok(Incoming::Bad(e)) => GateEnd::Failed("protocol", e.to_string()),
            Ok(Incoming::Msg(other)) => {
                GateEnd::Failed("protocol", format!("unexpected {}", other.name()))
            }
        };
        stop.store(true, Ordering::SeqCst);
        *self.ended.borrow_mut() = Some(Err(end));
        std::time::SystemTime::now()
    }
}

/// Every bound path once, with the role of the first stream using it (as the engine does).
fn bound_paths(plan: &RunPlan) -> Result<Vec<(PathBuf, String)>, String> {
    let mut paths: Vec<(PathBuf, String)> = Vec::new();
    for s in &plan.workload.streams {
        let role = s.target.clone().unwrap_or_default();
        for p in plan
            .paths_for(s.target.as_deref())
            .map_err(|e| e.to_string())?
        {
            if !paths.iter().any(|(q, _)| q == p) {
                paths.push((p.clone(), role.clone()));
            }
        }
    }
    Ok(paths)
}

fn options(plan: &RunPlan, i: usize, p: &PathBuf) -> TargetOptions {
    TargetOptions {
        write: plan.writes_to(p),
        // The engine's fill seed for the i-th target, so a file made here is the one it would make.
        fill_seed: plan.seed ^ (i as u64) << 48,
        ..plan.target_options.clone()
    }
}

/// Opens (creating and filling when asked) every target with all of the engine's safety
/// checks, and checks the plan fits them; runs no I/O. The targets are closed again (files oio
/// owns are sealed as after a run) and the run reopens them.
fn prepare_targets(
    plan: &RunPlan,
    stop: &Arc<AtomicBool>,
    out: &Out,
) -> Result<Vec<TargetInfo>, String> {
    out.beat(|b| {
        *b = Beat {
            phase: "prepare",
            ..Beat::default()
        }
    });
    plan.workload.check().map_err(|e| e.to_string())?;
    plan.check_paths().map_err(|e| e.to_string())?;
    if plan.sim.is_some() && plan.engine != oio_engine::EngineKind::Null {
        return Err("a simulated device (--sim) needs --engine null".into());
    }
    let paths = bound_paths(plan)?;
    let mut opened = Vec::with_capacity(paths.len());
    // The count moves with every target opened and every MiB filled.
    let mut steps = 0u64;
    for (i, (p, role)) in paths.iter().enumerate() {
        out.beat(|b| {
            b.done = steps;
            b.detail = format!("opening {}", p.display());
        });
        let t = oio_engine::target::prepare(
            p,
            role,
            &options(plan, i, p),
            &oio_core::Cancel::from_flag(Arc::clone(stop)),
            &mut |done, total| {
                out.beat(|b| {
                    b.done = steps.saturating_add(done);
                    b.total = total;
                    b.detail = format!(
                        "filling {}: {} of {}",
                        p.display(),
                        oio_core::units::format_bytes(done as f64),
                        oio_core::units::format_bytes(total as f64)
                    );
                })
            },
        )
        .map_err(|e| e.to_string())?;
        steps = steps.saturating_add(t.size).saturating_add(1);
        opened.push(t);
    }
    let meta: Vec<(PathBuf, u64, u64)> = paths
        .iter()
        .zip(&opened)
        .map(|((p, _), t)| (p.clone(), t.size, t.direct_align))
        .collect();
    plan.assign(&meta).map_err(|e| e.to_string())?;
    Ok(opened.into_iter().map(|t| t.info).collect())
}

/// What `prepare` would do with each target, changing nothing: the engine's own checks
/// (`oio_engine::target::validate`, which `prepare` makes first), so a check passes exactly
/// what a run accepts, and creates, grows or seals nothing.
fn check_targets(plan: &RunPlan, out: &Out) -> Vec<TargetCheck> {
    let paths = match bound_paths(plan) {
        Ok(p) => p,
        Err(e) => {
            return vec![TargetCheck {
                path: String::new(),
                role: String::new(),
                status: "refused".into(),
                detail: e,
            }]
        }
    };
    let mut checked = Vec::new();
    for (i, (p, role)) in paths.iter().enumerate() {
        out.beat(|b| {
            b.done = i as u64;
            b.detail = format!("checking {}", p.display());
        });
        let opts = options(plan, i, p);
        let (status, detail) = match oio_engine::target::validate(p, &opts) {
            Ok(v) => {
                use oio_core::units::format_bytes;
                let what = match v.action {
                    oio_engine::target::Action::Create(n) => (
                        "create",
                        format!("does not exist; prepare would create it ({n} bytes)"),
                    ),
                    oio_engine::target::Action::Grow(from, to) => (
                        "ok",
                        format!(
                            "file of {} created by oio; prepare would grow it to {}",
                            format_bytes(from as f64),
                            format_bytes(to as f64)
                        ),
                    ),
                    oio_engine::target::Action::Use => (
                        "ok",
                        format!(
                            "{} of {} bytes{}",
                            v.kind,
                            v.size,
                            if v.created_by_oio {
                                ", created by oio"
                            } else {
                                ""
                            }
                        ),
                    ),
                };
                (
                    what.0,
                    format!(
                        "{}{}",
                        what.1,
                        if opts.write {
                            ", writable"
                        } else {
                            ", read only"
                        }
                    ),
                )
            }
            Err(e) => ("refused", e.to_string()),
        };
        checked.push(TargetCheck {
            path: p.display().to_string(),
            role: role.clone(),
            status: status.into(),
            detail,
        });
    }
    checked
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plan from a peer with an empty target list is refused before anything is opened
    /// (issue 22 item 15: its workers panicked "empty range").
    #[test]
    fn prepare_refuses_an_empty_target_list() {
        let plan: RunPlan = serde_json::from_value(serde_json::json!({
            "workload": oio_core::profiles::profile("oltp-data").expect("built-in"),
            "bindings": [{ "role": "", "paths": [] }],
            "target_options": { "write": true, "direct": false, "size": 1048576,
                "allow_overwrite": false, "destroy_data": false, "fill_seed": 0 },
            "engine": "null", "submit": "per_io", "time": 1000000000, "ramp": 0,
            "interval": 1000000000, "seed": 1, "latency_tracking": true, "io_limit": null,
            "verify": false, "track_order": false, "sim": null, "lat_log": null
        }))
        .unwrap();
        let out: Out = Arc::new(Link {
            w: Mutex::new(Box::new(std::io::sink())),
            gone: AtomicBool::new(false),
            sent: Mutex::new(Instant::now()),
            beat: Mutex::new(Beat::default()),
            heard: Mutex::new((Instant::now(), None)),
            watchdog: Mutex::new(None),
        });
        let e = prepare_targets(&plan, &Arc::new(AtomicBool::new(false)), &out).unwrap_err();
        assert_eq!(
            e,
            "the plan's target list is empty: give at least one file or device"
        );
    }
}
