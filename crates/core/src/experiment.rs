//! Experiment identity: which runs are one experiment, and what tells experiments apart.
//!
//! Two runs belong to one experiment when they ran the same workload (its name, and per stream
//! the access pattern, the sizes and the read share), with the same engine and I/O mode, on the
//! same target (host, device, file), under the same load (closed loop, or open loop at one
//! offered rate), and are both real or both simulated by the same model. The closed-loop depth
//! is deliberately not part of the identity: it is what a depth series varies, so runs of one
//! experiment at one depth ([`depth`]) are repeats, and runs at several depths are its curve.
//! Open-loop runs at different rates are different experiments: their outstanding I/O follows
//! from the rate and the device, not from a setting.
//!
//! This is the one notion of an experiment (re-exported as `oio_documents::experiment`), so
//! every command agrees on what "the same experiment" means:
//! - `oio diagnose` partitions its inputs with [`partition`] and never pools runs across groups;
//! - the report's sections hold runs of one directory and one [`series_key`] (the key, an open
//!   loop's rate left out so a rate series stays one section): never runs diagnose would keep
//!   apart, except the configurations of an `oio compare --run` and a blend's phases, which
//!   differ by design;
//! - `oio compare` says when a group's runs are not repeats of one [`point`] ([`spans`]).
//!
//! [`ExperimentKey::differs`] and [`differences`] name what sets groups apart for their labels.

use crate::result::RunResult;
use crate::units::format_duration;
use crate::workload::{Distribution, Load, Rate, Stream};
use serde::{Deserialize, Serialize};

/// How a run's warnings start when an imported result held a phase that laid out or filled
/// the file (fio's sequential fill jobs): left out of the summary, or, when nothing else was
/// there, all the result measures.
pub const LAYOUT_PHASE: &str = "fio layout phase:";

/// What makes runs one experiment. Every field is text as shown to people; a field that a
/// document does not record is empty (and compares equal only to another empty one).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ExperimentKey {
    /// The workload's name.
    pub workload: String,
    /// Access pattern per stream: "random", "sequential" or "N % random" (streams joined by " + ").
    pub pattern: String,
    /// I/O sizes per stream: "4k", or "r 8k / w 64k" when reads and writes differ.
    pub sizes: String,
    /// Read share per stream, percent of I/Os.
    pub read_pct: String,
    /// The engine that ran the I/O ("io_uring", "sync", "null", "fio/libaio").
    pub engine: String,
    /// "direct" (O_DIRECT) or "buffered".
    pub io: String,
    /// The targets: path, and the block device underneath when known ("data.dat on sdb").
    pub target: String,
    /// Host name (empty when not recorded).
    pub host: String,
    /// "closed loop", or "open loop at 5000/s poisson".
    pub load: String,
    /// The simulated device's model (or "null engine: no device") when no device was measured.
    pub simulated: Option<String>,
    /// The name the user gave the runs (`--label`; empty when none): runs named apart are
    /// different experiments however alike their settings look (a database setting, a
    /// firmware, a cable oio cannot see), and runs of one name are repeats.
    #[serde(default)]
    pub label: String,
}

/// Names of the fields of [`ExperimentKey`], in the order labels show them.
pub const FIELDS: [&str; 11] = [
    "label",
    "workload",
    "pattern",
    "sizes",
    "read_pct",
    "engine",
    "io",
    "target",
    "host",
    "load",
    "simulated",
];

impl ExperimentKey {
    /// The identity of a run.
    pub fn of(r: &RunResult) -> ExperimentKey {
        let streams = &r.workload.streams;
        let join =
            |f: &dyn Fn(&Stream) -> String| streams.iter().map(f).collect::<Vec<_>>().join(" + ");
        let mut targets: Vec<String> = r
            .targets
            .iter()
            .map(|t| match &t.device {
                Some(d) if !d.name.is_empty() => format!("{} on {}", t.path, d.name),
                _ => t.path.clone(),
            })
            .collect();
        targets.sort();
        targets.dedup();
        ExperimentKey {
            workload: r.workload.name.clone(),
            pattern: join(&pattern),
            sizes: join(&sizes),
            read_pct: join(&|s| trim_num(s.read_pct.0)),
            engine: r.engine.name.clone(),
            io: if r.options.direct {
                "direct".into()
            } else {
                "buffered".into()
            },
            target: targets.join(", "),
            host: r
                .envelope
                .host
                .as_ref()
                .map(|h| h.hostname.clone())
                .unwrap_or_default(),
            load: load(streams),
            simulated: simulated(r),
            label: r.envelope.label.clone().unwrap_or_default(),
        }
    }

    /// The value of a field by name (see [`FIELDS`]); `simulated` reads "no" for a real run.
    pub fn field(&self, name: &str) -> Option<String> {
        Some(match name {
            "label" => self.label.clone(),
            "workload" => self.workload.clone(),
            "pattern" => self.pattern.clone(),
            "sizes" => self.sizes.clone(),
            "read_pct" => self.read_pct.clone(),
            "engine" => self.engine.clone(),
            "io" => self.io.clone(),
            "target" => self.target.clone(),
            "host" => self.host.clone(),
            "load" => self.load.clone(),
            "simulated" => self.simulated.clone().unwrap_or_else(|| "no".into()),
            _ => return None,
        })
    }

    /// The fields in which `other` differs from this key.
    pub fn differs(&self, other: &ExperimentKey) -> Vec<&'static str> {
        FIELDS
            .iter()
            .copied()
            .filter(|f| self.field(f) != other.field(f))
            .collect()
    }

    /// One line naming the experiment: "randread-4k (random 4k, 100 % read) · io_uring ·
    /// data.dat on sdb · closed loop", with "simulated: MODEL" in place of the target when no
    /// device was measured, after the label ("async: randread-4k …") when there is one. Empty
    /// fields are left out.
    pub fn label(&self) -> String {
        let mut shape = Vec::new();
        if !self.pattern.is_empty() {
            shape.push(self.pattern.clone());
        }
        if !self.sizes.is_empty() {
            shape.push(self.sizes.clone());
        }
        if !self.read_pct.is_empty() {
            shape.push(format!("{} % read", self.read_pct));
        }
        let mut parts = vec![if shape.is_empty() {
            self.workload.clone()
        } else {
            format!("{} ({})", self.workload, shape.join(", "))
        }];
        let mut engine = self.engine.clone();
        if self.io == "buffered" {
            engine.push_str(", buffered");
        }
        parts.push(engine);
        match &self.simulated {
            Some(m) => parts.push(format!("simulated: {m}")),
            None => {
                let mut t = self.target.clone();
                if !self.host.is_empty() {
                    t = format!("{}:{t}", self.host);
                }
                parts.push(t);
            }
        }
        parts.push(self.load.clone());
        parts.retain(|p| !p.is_empty());
        let line = parts.join(" · ");
        if self.label.is_empty() {
            line
        } else {
            format!("{}: {line}", self.label)
        }
    }
}

/// The point of a run within its experiment: the closed-loop depth (over all streams), or
/// for open loop the most I/Os it allowed in flight. Runs of one key and one depth are repeats.
pub fn depth(r: &RunResult) -> u32 {
    r.workload.streams.iter().map(Stream::slots).sum()
}

/// The simulated device's model (from the run's warning), or "null engine: no device", or
/// None for a run that reached a device.
pub fn simulated(r: &RunResult) -> Option<String> {
    let model = r.envelope.warnings.iter().find_map(|w| {
        let rest = w.strip_prefix("simulated device (")?;
        // The model holds parentheses of its own only in its text; the warning closes with "):".
        rest.rfind("):").map(|i| rest[..i].to_string())
    });
    let sim_feature = r.engine.features.iter().any(|f| f == "simulated_device");
    match model {
        Some(m) => Some(m),
        None if sim_feature => Some("simulated device".into()),
        None if r.engine.name == "null" => Some("null engine: no device".into()),
        None => None,
    }
}

fn trim_num(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

fn pattern(s: &Stream) -> String {
    let base = match s.random_pct.0 {
        p if p >= 100.0 => "random".to_string(),
        p if p <= 0.0 => "sequential".to_string(),
        p => format!("{} % random", trim_num(p)),
    };
    match &s.distribution {
        Some(d) if s.random_pct.0 > 0.0 && *d != Distribution::Uniform => format!("{base} {d}"),
        _ => base,
    }
}

fn sizes(s: &Stream) -> String {
    let r = (s.read_pct.0 > 0.0)
        .then(|| s.read_mix())
        .flatten()
        .map(|m| m.to_string());
    let w = (s.read_pct.0 < 100.0)
        .then(|| s.write_mix())
        .flatten()
        .map(|m| m.to_string());
    match (r, w) {
        (Some(r), Some(w)) if r == w => r,
        (Some(r), Some(w)) => format!("r {r} / w {w}"),
        (Some(x), None) | (None, Some(x)) => x,
        (None, None) => String::new(),
    }
}

fn rate_text(r: &Rate) -> String {
    let arrival = format!("{:?}", r.arrival).to_lowercase();
    if !r.schedule.is_empty() {
        let rates: Vec<String> = r.schedule.iter().map(|s| trim_num(s.iops)).collect();
        return format!("a schedule of {}/s, {arrival}", rates.join("/"));
    }
    let mut t = format!("{}/s {arrival}", trim_num(r.iops));
    if let (Some(b), Some(on), Some(off)) = (r.burst_iops, r.burst_on, r.burst_off) {
        t.push_str(&format!(
            ", bursts of {}/s for {}, {} apart",
            trim_num(b),
            format_duration(on.0),
            format_duration(off.0)
        ));
    }
    t
}

fn load(streams: &[Stream]) -> String {
    let open: Vec<String> = streams
        .iter()
        .filter_map(|s| match s.load() {
            Load::Open { .. } => s.rate.as_ref().map(rate_text),
            Load::Closed { .. } => None,
        })
        .collect();
    if open.is_empty() {
        "closed loop".into()
    } else if open.len() == streams.len() {
        format!("open loop at {}", open.join(" + "))
    } else {
        format!("mixed loop, open at {}", open.join(" + "))
    }
}

/// A set of items that share one key, in the order they were first seen.
#[derive(Clone, Debug, PartialEq)]
pub struct Group<K> {
    /// The key the members share.
    pub key: K,
    /// Indices of the members in the partitioned list, in their order there.
    pub members: Vec<usize>,
}

/// Partitions `items` by `key`: one group per distinct key, groups in first-seen order.
/// Quadratic in the number of groups, which stays small (one per experiment).
pub fn partition<T, K: PartialEq>(items: &[T], key: impl Fn(&T) -> K) -> Vec<Group<K>> {
    let mut out: Vec<Group<K>> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let k = key(item);
        match out.iter_mut().find(|g| g.key == k) {
            Some(g) => g.members.push(i),
            None => out.push(Group {
                key: k,
                members: vec![i],
            }),
        }
    }
    out
}

/// For each key, "field value" for every field that is not the same across all `keys`: what
/// tells the groups apart (empty with one key, or when all are equal).
pub fn differences(keys: &[&ExperimentKey]) -> Vec<Vec<String>> {
    let varying: Vec<&str> = FIELDS
        .iter()
        .copied()
        .filter(|f| keys.iter().any(|k| k.field(f) != keys[0].field(f)))
        .collect();
    keys.iter()
        .map(|k| {
            varying
                .iter()
                .map(|f| {
                    let v = k.field(f).unwrap_or_default();
                    format!("{f} {}", if v.is_empty() { "-" } else { &v })
                })
                .collect()
        })
        .collect()
}

/// Where a run sits among experiments: its key and its depth ([`depth`]). Runs at one point
/// are repeats of each other.
pub fn point(r: &RunResult) -> (ExperimentKey, u32) {
    (ExperimentKey::of(r), depth(r))
}

/// What keeps `points` from being repeats of one experiment at one point: "FIELD a | b" for
/// each field of the key that varies (in [`FIELDS`] order), then "depth 1 | 4" when the depth
/// does. Empty when they are repeats (or there are none).
pub fn spans(points: &[(ExperimentKey, u32)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut varies = |name: &str, values: Vec<String>| {
        let mut seen: Vec<String> = Vec::new();
        for v in values {
            let v = if v.is_empty() { "-".to_string() } else { v };
            if !seen.contains(&v) {
                seen.push(v);
            }
        }
        if seen.len() > 1 {
            out.push(format!("{name} {}", seen.join(" | ")));
        }
    };
    for f in FIELDS {
        varies(
            f,
            points
                .iter()
                .map(|(k, _)| k.field(f).unwrap_or_default())
                .collect(),
        );
    }
    varies("depth", points.iter().map(|(_, d)| d.to_string()).collect());
    out
}

/// The identity a series of experiments shares: the key with an open loop's offered rate left
/// out ("open loop"), so runs of one workload at several rates (each rate an experiment of its
/// own) are one series, as depths are one curve.
pub fn series_key(r: &RunResult) -> ExperimentKey {
    let mut k = ExperimentKey::of(r);
    if k.load.starts_with("open loop") {
        k.load = "open loop".into();
    } else if k.load.starts_with("mixed loop") {
        k.load = "mixed loop".into();
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{EngineInfo, RunOptions, Summary, TargetInfo};
    use crate::sizemix::SizeMix;
    use crate::workload::{Percent, Workload};

    fn run(name: &str, qd: Option<u32>, rate: Option<f64>, engine: &str) -> RunResult {
        let stream = Stream {
            read_pct: Percent(70.0),
            bs: Some(SizeMix::single(4096)),
            outstanding: qd,
            rate: rate.map(|iops| Rate {
                iops,
                ..Default::default()
            }),
            ..Default::default()
        };
        RunResult {
            envelope: crate::Envelope::new("oio.run", 1),
            workload: Workload {
                name: name.into(),
                description: String::new(),
                streams: vec![stream],
            },
            options: RunOptions {
                time_s: 1.0,
                ramp_s: 0.0,
                interval_s: 1.0,
                engine_requested: engine.into(),
                direct: true,
                submit: String::new(),
                submit_auto: None,
                seed: 0,
                latency_tracking: true,
            },
            targets: vec![TargetInfo {
                path: "f.dat".into(),
                ..Default::default()
            }],
            engine: EngineInfo {
                name: engine.into(),
                ..Default::default()
            },
            duration_s: 1.0,
            summary: Summary::default(),
            streams: vec![],
            intervals: vec![],
            cpu: Default::default(),
            errors: Default::default(),
            access_order: None,
            verify: None,
            host_noise: None,
            output_errors: Vec::new(),
        }
    }

    #[test]
    fn depths_share_a_key_rates_and_engines_do_not() {
        let a = run("oltp", Some(1), None, "io_uring");
        let b = run("oltp", Some(32), None, "io_uring");
        assert_eq!(ExperimentKey::of(&a), ExperimentKey::of(&b));
        assert_eq!((depth(&a), depth(&b)), (1, 32));
        let o1 = run("oltp", None, Some(1000.0), "io_uring");
        let o2 = run("oltp", None, Some(2000.0), "io_uring");
        assert_eq!(
            ExperimentKey::of(&o1).differs(&ExperimentKey::of(&o2)),
            ["load"]
        );
        assert_eq!(
            ExperimentKey::of(&o1).differs(&ExperimentKey::of(&a)),
            ["load"]
        );
        let mut n = run("oltp", Some(1), None, "null");
        n.envelope.warnings.push(
            "simulated device (8 servers × 1.00 ms fixed service (x)): no I/O reached any device"
                .into(),
        );
        let k = ExperimentKey::of(&n);
        assert_eq!(
            k.simulated.as_deref(),
            Some("8 servers × 1.00 ms fixed service (x)")
        );
        assert_eq!(k.differs(&ExperimentKey::of(&a)), ["engine", "simulated"]);
        assert!(k.label().contains("simulated: 8 servers"), "{}", k.label());
        let groups = partition(&[a, o1, b, n, o2], ExperimentKey::of);
        let members: Vec<&[usize]> = groups.iter().map(|g| g.members.as_slice()).collect();
        assert_eq!(members, [&[0, 2][..], &[1], &[3], &[4]]);
        let keys: Vec<&ExperimentKey> = groups.iter().map(|g| &g.key).collect();
        let d = differences(&keys);
        assert_eq!(
            d[0],
            ["engine io_uring", "load closed loop", "simulated no"]
        );
        assert_eq!(d[1][1], "load open loop at 1000/s constant");
    }

    #[test]
    fn the_label_names_the_shape() {
        let r = run("oltp", Some(8), None, "io_uring");
        assert_eq!(
            ExperimentKey::of(&r).label(),
            "oltp (random, 4k, 70 % read) · io_uring · f.dat · closed loop"
        );
    }

    #[test]
    fn spans_name_what_keeps_runs_from_being_repeats() {
        let a = run("oltp", Some(1), None, "io_uring");
        let a2 = run("oltp", Some(1), None, "io_uring");
        let deep = run("oltp", Some(4), None, "io_uring");
        let sync = run("oltp", Some(1), None, "sync");
        assert!(spans(&[point(&a), point(&a2)]).is_empty());
        assert!(spans(&[]).is_empty());
        assert_eq!(spans(&[point(&a), point(&deep)]), ["depth 1 | 4"]);
        assert_eq!(
            spans(&[point(&a), point(&sync), point(&deep)]),
            ["engine io_uring | sync", "depth 1 | 4"]
        );
        // Rates are experiments of their own, one series.
        let o1 = run("oltp", None, Some(1000.0), "io_uring");
        let o2 = run("oltp", None, Some(2000.0), "io_uring");
        assert_ne!(ExperimentKey::of(&o1), ExperimentKey::of(&o2));
        assert_eq!(series_key(&o1), series_key(&o2));
        assert_eq!(series_key(&o1).load, "open loop");
        assert_ne!(series_key(&o1), series_key(&a));
        assert_eq!(series_key(&a), ExperimentKey::of(&a));
    }
}
