//! The null engine: every I/O completes at once without touching a device, or, given a
//! service model ([`SimDevice`]), at the time a simulated device would have finished it.
//!
//! Without a model it exists to test the run loop, the statistics and the reports
//! deterministically, and to measure what oio itself costs per I/O (like fio's `null` engine
//! and `t/io_uring -N`). With a model it is a device whose knee is known in advance: `k`
//! parallel servers with a service time `S` serve `min(depth, k) / S` I/Os per second at a
//! latency of about `S · max(1, depth / k)`, so sweeps and their knee rules can be checked
//! against the answer. Completions become ready at their simulated time on the run's clock:
//! real time by default, or, with `clock=virtual`, simulated time that jumps from event to
//! event (see [`crate::clock`]), which makes the run's numbers exact and its duration short.

use super::{Completion, Engine, EngineError, EngineSetup, IoRequest, SlotStates};
use crate::clock::Clock;
use crate::sys::AlignedBuf;
use oio_core::units::{format_ns, parse_duration};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Most servers a simulated device may have (bounds its memory and the per-I/O search).
pub const MAX_SIM_SERVERS: u32 = 4096;

/// How service times are drawn around their mean.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServiceDist {
    /// Every I/O takes exactly the mean.
    Fixed,
    /// Exponential with that mean (memoryless, as in M/M/k).
    Exp,
    /// Log-normal with that mean and this σ of the underlying normal (a long right tail).
    LogNormal {
        /// σ of ln(service time), 0 < σ ≤ 3.
        sigma: f64,
    },
}

/// One group of identical servers.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SimTier {
    /// Servers working in parallel.
    pub servers: u32,
    /// Mean service time.
    #[serde(with = "oio_core::units::duration_ns")]
    pub service: Duration,
    /// Distribution of service times.
    pub dist: ServiceDist,
}

/// A simulated device: tiers of servers, the first preferred (a fast cache in front of slower
/// media gives a second plateau). An I/O takes the first free server in tier order, else
/// waits in one FIFO queue for the server that frees first.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SimDevice {
    /// At least one tier.
    pub tiers: Vec<SimTier>,
    /// Run on a virtual clock (`clock=virtual`): time jumps to the next completion or arrival
    /// instead of passing, so the numbers are the model's exactly.
    pub virtual_clock: bool,
    /// Disturbances drawn once per run from its seed, so a model can be as noisy as a real
    /// machine and the conclusions drawn from it can be tested against a known answer.
    #[serde(default, skip_serializing_if = "Disturbance::is_none")]
    pub disturbance: Disturbance,
}

/// What makes one run of a simulated device unlike another: every service time of the run is
/// multiplied by one factor drawn from the run's seed.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Disturbance {
    /// Run-to-run noise (`jitter=5%`): σ of ln(factor), about the relative standard deviation
    /// of a run's IOPS.
    #[serde(default)]
    pub jitter: f64,
    /// A neighbour (`neighbour=10%:2`): with this probability a run shares the device with
    /// one that makes every service `neighbour_slowdown` times longer.
    #[serde(default)]
    pub neighbour_prob: f64,
    /// How much slower a run with a neighbour serves.
    #[serde(default)]
    pub neighbour_slowdown: f64,
    /// Drift (`drift=2%`): each run this process starts on the device serves this much slower
    /// than the one before it, as a machine that warms up or a device that fills does; what an
    /// experiment's order must not confuse with an effect.
    #[serde(default)]
    pub drift: f64,
    /// Outliers (`outliers=0.1%:50`): this share of the I/Os takes `outlier_slowdown` times its
    /// service time (a retried read, a garbage-collection stall).
    #[serde(default)]
    pub outlier_prob: f64,
    /// How much longer an outlier takes.
    #[serde(default)]
    pub outlier_slowdown: f64,
}

/// Runs started on drifting simulated devices by this process: a run's place in the
/// session, which is what drift follows.
static DRIFT_RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Disturbance {
    /// No disturbance at all.
    pub fn is_none(&self) -> bool {
        self.jitter == 0.0
            && self.neighbour_prob == 0.0
            && self.drift == 0.0
            && self.outlier_prob == 0.0
    }

    /// The drift factor of the next run started in this process: (1 + drift)^n for its n-th.
    fn next_drift(&self) -> f64 {
        if self.drift == 0.0 {
            return 1.0;
        }
        let n = DRIFT_RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        (1.0 + self.drift).powf(n as f64)
    }

    /// The factor on every service time of the run with this seed (1 without disturbance).
    pub fn factor(&self, seed: u64) -> f64 {
        if self.is_none() {
            return 1.0;
        }
        // Its own stream, so the service times drawn from `seed` stay what they were.
        let mut rng = fastrand::Rng::with_seed(seed ^ 0xD157_0B0A_5EED_F00D);
        let u1 = 1.0 - rng.f64();
        let u2 = rng.f64();
        let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        let slow = if rng.f64() < self.neighbour_prob {
            self.neighbour_slowdown
        } else {
            1.0
        };
        (self.jitter * z).exp() * slow
    }
}

impl SimDevice {
    /// IOPS the model serves at `depth` outstanding I/Os in a closed loop (service means only;
    /// the run loop's own delay between a completion and the next submission is not in it).
    pub fn model_iops(&self, depth: u32) -> f64 {
        let mut left = depth;
        let mut iops = 0.0;
        for t in &self.tiers {
            let n = left.min(t.servers);
            iops += n as f64 / t.service.as_secs_f64().max(1e-12);
            left -= n;
        }
        iops
    }
}

/// A `--sim` value that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--sim '{input}': {what}; expected e.g. servers=8,service=1ms,dist=exp (dist fixed, exp or lognormal[,sigma=0.5]; a second tier after '+', e.g. servers=4,service=100us+servers=16,service=2ms; clock=virtual for simulated time; jitter=5% for run-to-run noise; neighbour=10%:2 for runs slowed 2× by a neighbour; drift=2% for each run slower than the last; outliers=0.1%:50 for I/Os 50× slower)")]
pub struct SimParseError {
    /// The text given.
    pub input: String,
    /// What was wrong.
    pub what: String,
}

impl FromStr for SimDevice {
    type Err = SimParseError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let err = |what: String| SimParseError {
            input: input.to_string(),
            what,
        };
        let mut tiers = Vec::new();
        let mut total = 0u32;
        let mut virtual_clock = false;
        let mut disturbance = Disturbance::default();
        for part in input.split('+') {
            let (mut servers, mut service, mut dist, mut sigma) = (None, None, "fixed", None);
            for kv in part.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let (k, v) = kv
                    .split_once('=')
                    .ok_or_else(|| err(format!("'{kv}' is not KEY=VALUE")))?;
                match k.trim() {
                    "servers" | "k" => {
                        servers = Some(
                            v.trim()
                                .parse::<u32>()
                                .map_err(|_| err(format!("servers '{v}' is not a whole number")))?,
                        )
                    }
                    "service" | "s" => {
                        let d = parse_duration(v).map_err(|e| err(e.to_string()))?;
                        service = Some(d);
                    }
                    "dist" => dist = v.trim(),
                    // One clock for the whole device: accepted in any tier.
                    "clock" => {
                        virtual_clock = match v.trim() {
                            "virtual" => true,
                            "real" => false,
                            other => {
                                return Err(err(format!(
                                    "clock '{other}' is not 'virtual' or 'real'"
                                )))
                            }
                        }
                    }
                    // Whole-device settings too, accepted in any tier.
                    "jitter" => {
                        disturbance.jitter = parse_share(v)
                            .filter(|j| *j <= 1.0)
                            .ok_or_else(|| err(format!("jitter '{v}' is not 0 to 100 %")))?
                    }
                    "neighbour" | "neighbor" => {
                        let bad =
                            || err(format!("neighbour '{v}' is not SHARE:SLOWDOWN, e.g. 10%:2"));
                        let (p, f) = v.split_once(':').ok_or_else(bad)?;
                        let p = parse_share(p).filter(|p| *p <= 1.0).ok_or_else(bad)?;
                        let f = f
                            .trim()
                            .parse::<f64>()
                            .ok()
                            .filter(|f| (1.0..=100.0).contains(f))
                            .ok_or_else(bad)?;
                        disturbance.neighbour_prob = p;
                        disturbance.neighbour_slowdown = f;
                    }
                    "drift" => {
                        disturbance.drift = parse_share(v)
                            .filter(|d| *d <= 1.0)
                            .ok_or_else(|| err(format!("drift '{v}' is not 0 to 100 % per run")))?
                    }
                    "outliers" => {
                        let bad = || {
                            err(format!(
                                "outliers '{v}' is not SHARE:SLOWDOWN, e.g. 0.1%:50"
                            ))
                        };
                        let (p, f) = v.split_once(':').ok_or_else(bad)?;
                        let p = parse_share(p).filter(|p| *p <= 1.0).ok_or_else(bad)?;
                        let f = f
                            .trim()
                            .parse::<f64>()
                            .ok()
                            .filter(|f| (1.0..=10_000.0).contains(f))
                            .ok_or_else(bad)?;
                        disturbance.outlier_prob = p;
                        disturbance.outlier_slowdown = f;
                    }
                    "sigma" => {
                        sigma = Some(
                            v.trim()
                                .parse::<f64>()
                                .map_err(|_| err(format!("sigma '{v}' is not a number")))?,
                        )
                    }
                    other => return Err(err(format!("unknown key '{other}'"))),
                }
            }
            let servers = servers.ok_or_else(|| err("servers=N is missing".into()))?;
            let service = service.ok_or_else(|| err("service=DURATION is missing".into()))?;
            if servers == 0 {
                return Err(err("servers must be at least 1".into()));
            }
            total = total.saturating_add(servers);
            if total > MAX_SIM_SERVERS {
                return Err(err(format!("at most {MAX_SIM_SERVERS} servers in all")));
            }
            if service < Duration::from_micros(1) || service > Duration::from_secs(10) {
                return Err(err("service must be 1us to 10s".into()));
            }
            let dist = match dist {
                "fixed" => ServiceDist::Fixed,
                "exp" | "exponential" => ServiceDist::Exp,
                "lognormal" | "lognorm" => {
                    let sigma = sigma.unwrap_or(0.5);
                    if !(sigma > 0.0 && sigma <= 3.0) {
                        return Err(err(format!("sigma {sigma} is not in (0, 3]")));
                    }
                    ServiceDist::LogNormal { sigma }
                }
                other => return Err(err(format!("unknown dist '{other}'"))),
            };
            if sigma.is_some() && !matches!(dist, ServiceDist::LogNormal { .. }) {
                return Err(err("sigma goes with dist=lognormal".into()));
            }
            tiers.push(SimTier {
                servers,
                service,
                dist,
            });
        }
        Ok(SimDevice {
            tiers,
            virtual_clock,
            disturbance,
        })
    }
}

/// A share as `5%` or `0.05`.
fn parse_share(v: &str) -> Option<f64> {
    let v = v.trim();
    let x = match v.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().ok()? / 100.0,
        None => v.parse::<f64>().ok()?,
    };
    (x.is_finite() && x >= 0.0).then_some(x)
}

impl fmt::Display for SimDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.tiers.iter().enumerate() {
            if i > 0 {
                f.write_str(", then ")?;
            }
            let dist = match t.dist {
                ServiceDist::Fixed => "fixed".to_string(),
                ServiceDist::Exp => "exponential".to_string(),
                ServiceDist::LogNormal { sigma } => format!("log-normal σ {sigma}"),
            };
            write!(
                f,
                "{} server{} × {} {dist} service",
                t.servers,
                if t.servers == 1 { "" } else { "s" },
                format_ns(t.service.as_nanos() as f64)
            )?;
        }
        if self.virtual_clock {
            f.write_str(", on a virtual clock")?;
        }
        let d = &self.disturbance;
        if d.jitter > 0.0 {
            write!(f, ", run-to-run jitter {:.1} %", d.jitter * 100.0)?;
        }
        if d.neighbour_prob > 0.0 {
            write!(
                f,
                ", a neighbour slowing {:.0} % of runs {}×",
                d.neighbour_prob * 100.0,
                d.neighbour_slowdown
            )?;
        }
        if d.drift > 0.0 {
            write!(
                f,
                ", each run {:.1} % slower than the last",
                d.drift * 100.0
            )?;
        }
        if d.outlier_prob > 0.0 {
            write!(
                f,
                ", {} % of I/Os {}× slower",
                d.outlier_prob * 100.0,
                d.outlier_slowdown
            )?;
        }
        Ok(())
    }
}

impl SimDevice {
    /// The model as `--sim` text that parses back to it (service times in whole
    /// nanoseconds): for a plan that recorded the model rather than the text it was given in.
    pub fn spec(&self) -> String {
        let mut tiers = Vec::new();
        for t in &self.tiers {
            let mut s = format!("servers={},service={}ns", t.servers, t.service.as_nanos());
            match t.dist {
                ServiceDist::Fixed => {}
                ServiceDist::Exp => s.push_str(",dist=exp"),
                ServiceDist::LogNormal { sigma } => {
                    s.push_str(&format!(",dist=lognormal,sigma={sigma}"))
                }
            }
            tiers.push(s);
        }
        let mut device = String::new();
        if self.virtual_clock {
            device.push_str(",clock=virtual");
        }
        let d = &self.disturbance;
        if d.jitter > 0.0 {
            device.push_str(&format!(",jitter={}", d.jitter));
        }
        if d.neighbour_prob > 0.0 {
            device.push_str(&format!(
                ",neighbour={}:{}",
                d.neighbour_prob, d.neighbour_slowdown
            ));
        }
        if d.drift > 0.0 {
            device.push_str(&format!(",drift={}", d.drift));
        }
        if d.outlier_prob > 0.0 {
            device.push_str(&format!(
                ",outliers={}:{}",
                d.outlier_prob, d.outlier_slowdown
            ));
        }
        // Whole-device settings are accepted in any tier: the first carries them.
        match tiers.first_mut() {
            Some(first) => first.push_str(&device),
            None => return device.trim_start_matches(',').to_string(),
        }
        tiers.join("+")
    }
}

/// A simulated device as a plan holds it: the text it was given in
/// (`servers=8,service=1ms,dist=exp`), which parses back to the same model, and the model.
/// Plans record the text; a plan that recorded the model (the agent protocol up to version 4,
/// fleet results before it) reads back too.
#[derive(Clone, Debug, PartialEq)]
pub struct Sim {
    text: String,
    device: SimDevice,
}

impl Sim {
    /// The model.
    pub fn device(&self) -> &SimDevice {
        &self.device
    }

    /// The text it was given in.
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl FromStr for Sim {
    type Err = SimParseError;
    fn from_str(s: &str) -> Result<Sim, SimParseError> {
        Ok(Sim {
            device: s.parse()?,
            text: s.to_string(),
        })
    }
}

impl serde::Serialize for Sim {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> serde::Deserialize<'de> for Sim {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Sim, D::Error> {
        struct Text;
        impl<'de> serde::de::Visitor<'de> for Text {
            type Value = Sim;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a simulated device, e.g. \"servers=8,service=1ms\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Sim, E> {
                v.parse().map_err(E::custom)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Sim, A::Error> {
                use serde::Deserialize;
                // Through its text, so the model is checked as `--sim` checks it.
                SimDevice::deserialize(serde::de::value::MapAccessDeserializer::new(map))?
                    .spec()
                    .parse()
                    .map_err(serde::de::Error::custom)
            }
        }
        d.deserialize_any(Text)
    }
}

/// The servers of a simulated device, shared by every worker of a run (one device, whatever
/// the number of threads driving it).
pub struct SimShared {
    clock: Clock,
    state: Mutex<SimState>,
}

struct SimState {
    /// (time the server is next free, ns since epoch; its tier), in tier order.
    servers: Vec<(u64, usize)>,
    tiers: Vec<SimTier>,
    rng: fastrand::Rng,
    /// (share of I/Os, slowdown) of outliers; share 0 without.
    outliers: (f64, f64),
}

impl SimShared {
    /// A device in its idle state on its own real clock; `seed` draws the service times.
    pub fn new(dev: &SimDevice, seed: u64) -> Arc<SimShared> {
        SimShared::with_clock(dev, seed, Clock::real())
    }

    /// A device in its idle state whose time is `clock` (the run's); its disturbance, if any,
    /// scales every service time of the run by one factor drawn from `seed`.
    pub fn with_clock(dev: &SimDevice, seed: u64, clock: Clock) -> Arc<SimShared> {
        let factor = dev.disturbance.factor(seed) * dev.disturbance.next_drift();
        let tiers = dev
            .tiers
            .iter()
            .map(|t| SimTier {
                service: Duration::from_nanos(
                    ((t.service.as_nanos() as f64) * factor).round().max(1.0) as u64,
                ),
                ..t.clone()
            })
            .collect();
        let servers = dev
            .tiers
            .iter()
            .enumerate()
            .flat_map(|(i, t)| std::iter::repeat_n((0u64, i), t.servers as usize))
            .collect();
        Arc::new(SimShared {
            clock,
            state: Mutex::new(SimState {
                servers,
                tiers,
                rng: fastrand::Rng::with_seed(seed),
                outliers: (
                    dev.disturbance.outlier_prob,
                    dev.disturbance.outlier_slowdown,
                ),
            }),
        })
    }

    fn now(&self) -> u64 {
        self.clock.now()
    }

    /// Admits an I/O arriving at `now` and returns when it completes.
    fn admit(&self, now: u64) -> u64 {
        // A poisoned lock only means another worker panicked; the state is still consistent.
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let st = &mut *st;
        let idx = st
            .servers
            .iter()
            .position(|&(free, _)| free <= now)
            .unwrap_or_else(|| {
                // FIFO: the next I/O in line takes the server that frees first (the faster
                // tier on a tie, as it comes first).
                let mut best = 0;
                for (i, &(free, _)) in st.servers.iter().enumerate() {
                    if free < st.servers[best].0 {
                        best = i;
                    }
                }
                best
            });
        let (free, tier) = st.servers[idx];
        let t = &st.tiers[tier];
        let mean = t.service.as_nanos() as f64;
        let service = match t.dist {
            ServiceDist::Fixed => mean,
            // 1 - u lies in (0, 1], so the logarithm is finite.
            ServiceDist::Exp => -mean * (1.0 - st.rng.f64()).ln(),
            ServiceDist::LogNormal { sigma } => {
                let u1 = 1.0 - st.rng.f64();
                let u2 = st.rng.f64();
                let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                // mu chosen so that the mean is `mean`: E = exp(mu + sigma²/2).
                (mean.ln() - sigma * sigma / 2.0 + sigma * z).exp()
            }
        };
        // Drawn only when outliers are asked for, so other models keep their service times.
        let service = if st.outliers.0 > 0.0 && st.rng.f64() < st.outliers.0 {
            service * st.outliers.1
        } else {
            service
        };
        let done = free.max(now) + service.max(1.0) as u64;
        st.servers[idx].0 = done;
        done
    }
}

/// Completes every request immediately with its full length, or at its simulated time.
pub struct NullEngine {
    slots: SlotStates,
    ready: Vec<Completion>,
    bufs: Vec<AlignedBuf>,
    sim: Option<Arc<SimShared>>,
    /// Simulated I/Os not yet due: (due ns, slot, result).
    pending: BinaryHeap<Reverse<(u64, u32, i32)>>,
    /// Simulated I/Os queued, not yet submitted: (slot, result).
    queued: Vec<(u32, i32)>,
}

impl NullEngine {
    /// A null engine with `setup.depth` slots (buffers are allocated so that the
    /// `buffer()` contract holds, as verification needs it).
    pub fn new(setup: &EngineSetup) -> NullEngine {
        NullEngine {
            slots: SlotStates::new(setup.depth),
            ready: Vec::with_capacity(setup.depth as usize),
            bufs: (0..setup.depth)
                .map(|_| AlignedBuf::new(setup.buf_size))
                .collect(),
            sim: None,
            pending: BinaryHeap::with_capacity(setup.depth as usize),
            queued: Vec::new(),
        }
    }

    /// A null engine whose I/Os complete when the simulated device `sim` finishes them.
    pub fn simulated(setup: &EngineSetup, sim: Arc<SimShared>) -> NullEngine {
        NullEngine {
            sim: Some(sim),
            ..NullEngine::new(setup)
        }
    }

    /// Holds a request for the simulated device until it is submitted.
    #[inline(never)]
    fn queue_simulated(&mut self, req: IoRequest) {
        self.queued.push((req.slot, req.len as i32));
    }

    /// Moves due simulated completions to `ready`.
    fn collect_due(&mut self, now: u64) {
        while let Some(Reverse((due, slot, result))) = self.pending.peek().copied() {
            if due > now {
                break;
            }
            self.pending.pop();
            self.ready.push(Completion { slot, result });
        }
    }
}

impl Engine for NullEngine {
    fn name(&self) -> &'static str {
        "null"
    }

    fn features(&self) -> Vec<String> {
        let mut f = vec!["no_io".to_string()];
        if self.sim.is_some() {
            f.push("simulated_device".into());
        }
        f
    }

    fn buffer(&mut self, slot: u32) -> Option<&mut [u8]> {
        if self.slots.is_busy(slot) {
            return None;
        }
        Some(self.bufs[slot as usize].as_mut_slice())
    }

    #[inline(always)]
    fn queue(&mut self, req: IoRequest) -> Result<(), EngineError> {
        self.slots.acquire(req.slot);
        match &self.sim {
            // Small enough to inline into the run loop: oio's own cost per I/O is what the
            // null engine measures.
            None => self.ready.push(Completion {
                slot: req.slot,
                result: req.len as i32,
            }),
            Some(_) => self.queue_simulated(req),
        }
        Ok(())
    }

    fn submit_and_wait(
        &mut self,
        min: usize,
        timeout: Option<Duration>,
    ) -> Result<usize, EngineError> {
        let Some(sim) = self.sim.clone() else {
            return Ok(self.ready.len());
        };
        // Queued I/Os reach the simulated device now, as a real one's do when submitted
        // (the run loop times a batch once it is queued, before this).
        let start = sim.now();
        let submitted = self.queued.len();
        for (slot, result) in self.queued.drain(..) {
            let due = sim.admit(start);
            self.pending.push(Reverse((due, slot, result)));
        }
        let deadline = timeout.map(|t| start.saturating_add(t.as_nanos() as u64));
        let mut now = start;
        loop {
            self.collect_due(now);
            if self.ready.len() >= min {
                break;
            }
            // Sleep until the next completion is due, but no later than the deadline; with
            // nothing in flight and no deadline there is nothing to wait for.
            let next = self.pending.peek().map(|Reverse((due, _, _))| *due);
            let until = match (next, deadline) {
                (Some(n), Some(d)) => n.min(d),
                (Some(n), None) => n,
                (None, Some(d)) => d,
                (None, None) => break,
            };
            if until > now {
                sim.clock.sleep_until(until);
            }
            now = sim.now();
            if deadline.is_some_and(|d| now >= d) {
                self.collect_due(now);
                break;
            }
        }
        Ok(submitted)
    }

    #[inline]
    fn reap(&mut self, out: &mut Vec<Completion>) {
        if let Some(sim) = &self.sim {
            let now = sim.now();
            self.collect_due(now);
        }
        for c in &self.ready {
            self.slots.release(c.slot);
        }
        if out.is_empty() {
            // The caller's vector is empty between turns: a swap moves them without a copy.
            std::mem::swap(out, &mut self.ready);
        } else {
            out.append(&mut self.ready);
        }
    }

    fn in_flight(&self) -> usize {
        self.slots.count()
    }

    fn starts_on_queue(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::Dir;
    use std::time::Instant;

    fn setup(depth: u32) -> EngineSetup {
        EngineSetup {
            depth,
            buf_size: 4096,
            files: Vec::new(),
            fill_seed: 1,
            submit: Default::default(),
            dsync_writes: false,
        }
    }

    fn req(slot: u32) -> IoRequest {
        IoRequest {
            slot,
            file: 0,
            dir: Dir::Read,
            offset: 0,
            len: 4096,
        }
    }

    #[test]
    fn parses_models_and_refuses_bad_ones() {
        let d: SimDevice = "servers=8,service=1ms,dist=exp".parse().unwrap();
        assert_eq!(d.tiers.len(), 1);
        assert_eq!(d.tiers[0].servers, 8);
        assert_eq!(d.tiers[0].service, Duration::from_millis(1));
        assert_eq!(d.tiers[0].dist, ServiceDist::Exp);
        assert_eq!(d.model_iops(4), 4000.0);
        assert_eq!(d.model_iops(64), 8000.0);
        let d: SimDevice = "servers=2,service=100us+servers=4,service=2ms,dist=lognormal,sigma=1"
            .parse()
            .unwrap();
        assert_eq!(d.tiers[1].dist, ServiceDist::LogNormal { sigma: 1.0 });
        // 2 fast servers at 10k IOPS each, then 4 slow at 500 each.
        assert!((d.model_iops(3) - 20_500.0).abs() < 1e-6);
        assert!((d.model_iops(100) - 22_000.0).abs() < 1e-6);
        assert!(d.to_string().contains("2 servers"), "{d}");
        for bad in [
            "servers=8",
            "service=1ms",
            "servers=0,service=1ms",
            "servers=8,service=1ms,dist=gamma",
            "servers=8,service=1ms,sigma=1",
            "servers=8,service=lots",
            "servers=99999,service=1ms",
            "servers=8,service=1ms,colour=red",
            "servers=8;service=1ms",
        ] {
            let e = bad.parse::<SimDevice>().unwrap_err();
            assert!(e.to_string().contains(bad), "{e}");
        }
    }

    #[test]
    fn completions_wait_for_their_simulated_time() {
        // One server of 20 ms: two I/Os queue behind each other.
        let dev: SimDevice = "servers=1,service=20ms".parse().unwrap();
        let mut e = NullEngine::simulated(&setup(2), SimShared::new(&dev, 1));
        let t0 = Instant::now();
        e.queue(req(0)).unwrap();
        e.queue(req(1)).unwrap();
        assert_eq!(e.submit_and_wait(0, None).unwrap(), 2);
        let mut out = Vec::new();
        e.reap(&mut out);
        assert!(out.is_empty(), "nothing is due at once");
        // A short timeout returns without a completion.
        e.submit_and_wait(1, Some(Duration::from_millis(2)))
            .unwrap();
        e.reap(&mut out);
        assert!(out.is_empty());
        e.submit_and_wait(1, Some(Duration::from_secs(5))).unwrap();
        e.reap(&mut out);
        assert_eq!(out.len(), 1);
        assert!(t0.elapsed() >= Duration::from_millis(20));
        e.submit_and_wait(1, Some(Duration::from_secs(5))).unwrap();
        e.reap(&mut out);
        assert_eq!(out.len(), 2);
        assert!(
            t0.elapsed() >= Duration::from_millis(40),
            "FIFO behind one server"
        );
        assert_eq!(e.in_flight(), 0);
        // Nothing in flight and no deadline: no hang.
        assert_eq!(e.submit_and_wait(1, None).unwrap(), 0);
    }

    #[test]
    fn a_virtual_clock_is_named_and_refused_when_misspelt() {
        let d: SimDevice = "servers=4,service=1ms,clock=virtual".parse().unwrap();
        assert!(d.virtual_clock);
        assert!(d.to_string().ends_with("on a virtual clock"), "{d}");
        assert!(
            !"servers=4,service=1ms,clock=real"
                .parse::<SimDevice>()
                .unwrap()
                .virtual_clock
        );
        let e = "servers=4,service=1ms,clock=fast"
            .parse::<SimDevice>()
            .unwrap_err();
        assert!(e.to_string().contains("clock 'fast'"), "{e}");
    }

    #[test]
    fn on_a_virtual_clock_completions_come_at_their_exact_time_without_sleeping() {
        // One server of 10 s: real time would take 20 s.
        let dev: SimDevice = "servers=1,service=10s,clock=virtual".parse().unwrap();
        let clock = Clock::simulated();
        let _p = clock.participant();
        let mut e = NullEngine::simulated(&setup(2), SimShared::with_clock(&dev, 1, clock.clone()));
        let t0 = Instant::now();
        e.queue(req(0)).unwrap();
        e.queue(req(1)).unwrap();
        let mut out = Vec::new();
        // A timeout moves time only to the deadline.
        e.submit_and_wait(1, Some(Duration::from_secs(3))).unwrap();
        e.reap(&mut out);
        assert!(out.is_empty());
        assert_eq!(clock.now(), 3_000_000_000);
        e.submit_and_wait(1, None).unwrap();
        e.reap(&mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(clock.now(), 10_000_000_000, "the first completion, exactly");
        e.submit_and_wait(1, None).unwrap();
        e.reap(&mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(clock.now(), 20_000_000_000, "FIFO behind one server");
        assert!(t0.elapsed() < Duration::from_secs(5), "no real waiting");
    }

    #[test]
    fn fast_tier_first_and_service_means_hold() {
        let dev: SimDevice = "servers=1,service=1ms+servers=1,service=5ms,dist=exp"
            .parse()
            .unwrap();
        let sim = SimShared::new(&dev, 7);
        // Both idle at t=0: the first I/O takes the fast server, the second the slow one.
        assert_eq!(sim.admit(0), 1_000_000);
        let slow = sim.admit(0);
        assert_ne!(slow, 1_000_000);
        // Means of the distributions, from many draws on an always-free server.
        for (spec, mean) in [
            ("servers=1,service=1ms,dist=exp", 1e6),
            ("servers=1,service=1ms,dist=lognormal,sigma=0.8", 1e6),
        ] {
            let sim = SimShared::new(&spec.parse().unwrap(), 3);
            let n = 20_000u64;
            let mut t = 0u64;
            let mut sum = 0.0;
            for _ in 0..n {
                let done = sim.admit(t);
                sum += (done - t) as f64;
                t = done;
            }
            let m = sum / n as f64;
            assert!((m / mean - 1.0).abs() < 0.05, "{spec}: mean {m}");
        }
    }

    #[test]
    fn a_disturbance_scales_each_run_by_one_factor_from_its_seed() {
        let dev: SimDevice = "servers=1,service=1ms,jitter=10%,neighbour=20%:3"
            .parse()
            .unwrap();
        assert_eq!(dev.disturbance.jitter, 0.1);
        assert_eq!(dev.disturbance.neighbour_prob, 0.2);
        assert_eq!(dev.disturbance.neighbour_slowdown, 3.0);
        assert!(dev.to_string().contains("jitter 10.0 %"), "{dev}");
        // One factor per run: every service time of the run is the mean times it, exactly.
        for seed in [1, 2, 3] {
            let f = dev.disturbance.factor(seed);
            let sim = SimShared::new(&dev, seed);
            let want = (1e6 * f).round() as u64;
            assert_eq!(sim.admit(0), want);
            assert_eq!(sim.admit(want), 2 * want);
        }
        // Over many runs: ln(factor) of runs without a neighbour has σ ≈ jitter, and about the
        // chosen share of runs carries the slowdown (factors near 3 apart from jitter).
        let n = 4000;
        let logs: Vec<f64> = (0..n).map(|s| dev.disturbance.factor(s).ln()).collect();
        let slowed = logs.iter().filter(|l| **l > 3f64.ln() - 0.4).count();
        assert!((slowed as f64 / n as f64 - 0.2).abs() < 0.03, "{slowed}");
        let quiet: Vec<f64> = logs.into_iter().filter(|l| *l < 0.5).collect();
        let m = quiet.iter().sum::<f64>() / quiet.len() as f64;
        let sd = (quiet.iter().map(|l| (l - m).powi(2)).sum::<f64>() / quiet.len() as f64).sqrt();
        assert!(
            m.abs() < 0.01 && (sd - 0.1).abs() < 0.01,
            "mean {m} sd {sd}"
        );
        // No disturbance: the factor is 1 and the service times are the model's.
        let calm: SimDevice = "servers=1,service=1ms".parse().unwrap();
        assert_eq!(calm.disturbance.factor(9), 1.0);
        assert_eq!(SimShared::new(&calm, 9).admit(0), 1_000_000);
    }

    #[test]
    fn drift_slows_each_run_after_the_last_and_outliers_take_their_share() {
        // Drift follows the process's run count, so two runs in a row differ by the factor
        // exactly, whichever runs came before (other tests may have started drifting devices).
        let dev: SimDevice = "servers=1,service=1ms,drift=10%".parse().unwrap();
        assert!(
            dev.to_string().contains("10.0 % slower than the last"),
            "{dev}"
        );
        let first = SimShared::new(&dev, 1).admit(0) as f64;
        let second = SimShared::new(&dev, 1).admit(0) as f64;
        assert!((second / first - 1.1).abs() < 1e-6, "{first} {second}");
        // Outliers: about 1 % of the I/Os take 50× the service, the rest exactly it.
        let dev: SimDevice = "servers=1,service=1ms,outliers=1%:50".parse().unwrap();
        let sim = SimShared::new(&dev, 5);
        let (mut t, mut slow, n) = (0u64, 0u32, 20_000);
        for _ in 0..n {
            let done = sim.admit(t);
            match done - t {
                1_000_000 => {}
                50_000_000 => slow += 1,
                other => panic!("service {other} ns"),
            }
            t = done;
        }
        assert!((150..=250).contains(&slow), "{slow} outliers of {n}");
    }

    #[test]
    fn disturbances_out_of_range_are_refused_with_the_form() {
        for (spec, what) in [
            ("servers=1,service=1ms,jitter=150%", "jitter '150%'"),
            ("servers=1,service=1ms,jitter=-1", "jitter '-1'"),
            ("servers=1,service=1ms,neighbour=10%", "SHARE:SLOWDOWN"),
            ("servers=1,service=1ms,neighbour=10%:0.5", "SHARE:SLOWDOWN"),
            ("servers=1,service=1ms,neighbour=2:2", "SHARE:SLOWDOWN"),
            ("servers=1,service=1ms,drift=200%", "drift '200%'"),
            ("servers=1,service=1ms,outliers=1%", "SHARE:SLOWDOWN"),
            ("servers=1,service=1ms,outliers=1%:0", "SHARE:SLOWDOWN"),
        ] {
            let e = spec.parse::<SimDevice>().unwrap_err().to_string();
            assert!(e.contains(what), "{spec}: {e}");
        }
    }
}
