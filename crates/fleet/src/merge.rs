//! Merging hosts: histograms are summed bucket by bucket (and count, sum, min, max exactly),
//! so merged percentiles are those of every I/O of every host. Percentiles are never averaged.
//!
//! Merged rates are counts over the window they were measured in. A host that ran through
//! adds its own rates, measured over its own window: its part of the fleet's window (the
//! longest host window; they start together within the start skew). A host cut short (lost,
//! or stopped by its own errors) adds its counts up to its last interval spread over the whole
//! fleet window, so it adds nothing after it went silent (see [`Window`]).

use oio_core::histogram::{LatencyHistogram, SparseHistogram};
use oio_core::result::{DirStats, Interval, Summary};

// The merged document's types live in oio-documents (the report reads them without the
// engine); they are re-exported here, where they are built.
pub use oio_documents::fleet::{
    ControllerCost, FleetGroup, FleetHost, FleetResult, HostDevice, Window, FLEET_SCHEMA,
    FLEET_SCHEMA_VERSION,
};

/// Sums per-direction stats of several hosts. IOPS, bytes/s and mean outstanding I/O are the
/// sums of the hosts' (each measured over its own clock); latency comes from the summed
/// histogram. A part without a histogram (latency tracking off) leaves the merged one out.
pub fn merge_dirs(parts: &[&DirStats]) -> DirStats {
    // Buckets are keyed by their highest value, the same in every host's histogram (one
    // layout, checked at hello), so summing by key is the bucket-by-bucket sum.
    let mut buckets: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
    let (mut count, mut sum, mut min, mut max) = (0u64, 0f64, None::<u64>, None::<u64>);
    let mut exact = true;
    let mut d = DirStats::default();
    for p in parts {
        // Saturating, never wrapping or panicking; `refused_hosts` keeps hosts whose counts
        // would overflow out of every merge, so these never saturate on data that was kept.
        d.ios = d.ios.saturating_add(p.ios);
        d.bytes = d.bytes.saturating_add(p.bytes);
        d.iops += p.iops;
        d.bytes_per_sec += p.bytes_per_sec;
        d.outstanding_mean += p.outstanding_mean;
        match &p.histogram {
            Some(h) => {
                for [v, c] in &h.buckets {
                    let e = buckets.entry(*v).or_default();
                    *e = e.saturating_add(*c);
                }
                count = count.saturating_add(h.count);
                sum += h.sum;
                min = min.into_iter().chain(h.min).min();
                max = max.into_iter().chain(h.max).max();
            }
            None if p.ios > 0 => exact = false,
            None => {}
        }
    }
    d.mean_io_bytes = (d.ios > 0).then(|| d.bytes as f64 / d.ios as f64);
    if exact && count > 0 {
        let sparse = SparseHistogram {
            unit: "ns".into(),
            significant_digits: oio_core::histogram::SIGNIFICANT_DIGITS,
            count,
            sum,
            min,
            max,
            buckets: buckets.into_iter().map(|(v, c)| [v, c]).collect(),
        };
        d.latency_ns = LatencyHistogram::from_sparse(&sparse).summary();
        d.histogram = Some(sparse);
    }
    d
}

/// Sums hosts' summaries.
pub fn merge_summaries(parts: &[&Summary]) -> Summary {
    let dir =
        |f: fn(&Summary) -> &DirStats| merge_dirs(&parts.iter().map(|s| f(s)).collect::<Vec<_>>());
    let syncs: Vec<&DirStats> = parts.iter().filter_map(|s| s.sync.as_ref()).collect();
    let trims: Vec<&DirStats> = parts.iter().filter_map(|s| s.trim.as_ref()).collect();
    let any = |f: fn(&Summary) -> Option<f64>| {
        let v: Vec<f64> = parts.iter().filter_map(|s| f(s)).collect();
        (!v.is_empty()).then(|| v.iter().sum())
    };
    Summary {
        read: dir(|s| &s.read),
        write: dir(|s| &s.write),
        total: dir(|s| &s.total),
        configured_outstanding: parts
            .iter()
            .fold(0u32, |a, s| a.saturating_add(s.configured_outstanding)),
        offered_iops: any(|s| s.offered_iops),
        backlog_max: parts.iter().filter_map(|s| s.backlog_max).max(),
        dropped: parts
            .iter()
            .filter_map(|s| s.dropped)
            .reduce(|a, b| a.saturating_add(b)),
        sync: (!syncs.is_empty()).then(|| merge_dirs(&syncs)),
        trim: (!trims.is_empty()).then(|| merge_dirs(&trims)),
    }
}

/// The fleet's window from the hosts' own windows, seconds: the longest.
pub fn fleet_window(own_s: &[f64]) -> f64 {
    own_s
        .iter()
        .copied()
        .filter(|s| s.is_finite())
        .fold(0.0, f64::max)
}

/// A host's figures over `window_s` instead of its own `own_s`: counts stay, rates are the
/// counts over the window (zero outside its own window), and the mean outstanding I/O is
/// weighted by the share of the window it covered.
pub fn spread_dir(d: &DirStats, own_s: f64, window_s: f64) -> DirStats {
    let mut d = d.clone();
    let (rate, share) = if window_s > 0.0 {
        (1.0 / window_s, (own_s / window_s).clamp(0.0, 1.0))
    } else {
        (0.0, 0.0)
    };
    d.iops = d.ios as f64 * rate;
    d.bytes_per_sec = d.bytes as f64 * rate;
    d.outstanding_mean *= share;
    d
}

/// [`spread_dir`] for a whole summary (the open-loop offered rate is weighted the same way).
pub fn spread_summary(s: &Summary, own_s: f64, window_s: f64) -> Summary {
    let share = if window_s > 0.0 {
        (own_s / window_s).clamp(0.0, 1.0)
    } else {
        0.0
    };
    Summary {
        read: spread_dir(&s.read, own_s, window_s),
        write: spread_dir(&s.write, own_s, window_s),
        total: spread_dir(&s.total, own_s, window_s),
        offered_iops: s.offered_iops.map(|o| o * share),
        sync: s.sync.as_ref().map(|d| spread_dir(d, own_s, window_s)),
        trim: s.trim.as_ref().map(|d| spread_dir(d, own_s, window_s)),
        ..s.clone()
    }
}

/// How a host cut short counts in the merged rates: "; host h1 was lost part-way: …", with
/// what it did (`done`, e.g. "1200 I/Os") up to the end of its last interval.
pub fn cut_note(host: &str, status: &str, done: &str, window_s: f64) -> String {
    format!(
        "; host {host} {} part-way: its {done} up to the end of its last interval ({window_s:.3} s into its window) are spread over the whole window, adding nothing after",
        if status == "lost" { "was lost" } else { "stopped on errors" },
    )
}

/// True for a host whose window was cut short: lost, or stopped by its own errors. Its rate
/// over its own shorter window would stand for the whole fleet window it did not run.
pub fn cut_short(status: &str) -> bool {
    matches!(status, "lost" | "errors")
}

/// Merges hosts' summaries over the fleet's window of `window_s`: `parts` holds each host's
/// summary, the seconds it covers and whether it was cut short. A host that ran through adds
/// its own rates (its window is its part of the fleet's, within the start skew and when it
/// closed); one cut short adds its counts spread over the whole window. Counts are summed.
pub fn merge_over_window(parts: &[(&Summary, f64, bool)], window_s: f64) -> Summary {
    let spread: Vec<Summary> = parts
        .iter()
        .map(|(s, own, cut)| match cut {
            true => spread_summary(s, *own, window_s),
            false => (*s).clone(),
        })
        .collect();
    merge_summaries(&spread.iter().collect::<Vec<_>>())
}

/// While every host delivered: the first `n` merged intervals, where `n` is the fewest
/// intervals any host sent. Returns their span (the end of interval `n`, seconds) and the
/// merged rate over it (Σ I/Os ÷ span), or None when some host sent none.
pub fn all_hosts_stretch(series: &[&[Interval]]) -> Option<(f64, f64)> {
    let n = series.iter().map(|s| s.len()).min()?;
    if n == 0 {
        return None;
    }
    let span = series.iter().map(|s| s[n - 1].t_s).fold(0.0, f64::max);
    // Summed wide: only a rate is made of it.
    let ios: u128 = series
        .iter()
        .flat_map(|s| &s[..n])
        .map(|i| u128::from(i.total.ios))
        .sum();
    (span > 0.0).then(|| (span, ios as f64 / span))
}

/// Sums the hosts' series interval by interval: interval `i` of every host covers the same
/// span after the common start (up to each host's start skew). A host that stopped early
/// simply has no part in later intervals; `hosts[i]` says how many hosts each merged interval
/// holds.
pub fn merge_series(series: &[&[Interval]]) -> (Vec<Interval>, Vec<usize>) {
    let n = series.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = Vec::with_capacity(n);
    let mut counts = Vec::with_capacity(n);
    for i in 0..n {
        let parts: Vec<&Interval> = series.iter().filter_map(|s| s.get(i)).collect();
        let dir = |f: fn(&Interval) -> &DirStats| {
            merge_dirs(&parts.iter().map(|p| f(p)).collect::<Vec<_>>())
        };
        let offered: Vec<f64> = parts.iter().filter_map(|p| p.offered_iops).collect();
        out.push(Interval {
            t_s: parts.iter().map(|p| p.t_s).fold(0.0, f64::max),
            duration_s: parts.iter().map(|p| p.duration_s).fold(0.0, f64::max),
            read: dir(|p| &p.read),
            write: dir(|p| &p.write),
            total: dir(|p| &p.total),
            offered_iops: (!offered.is_empty()).then(|| offered.iter().sum()),
            backlog_max: parts.iter().filter_map(|p| p.backlog_max).max(),
            // Each host's CPU is its own (in its result's intervals and `host_noise`).
            host_cpu: None,
            errors: parts.iter().fold(0u64, |a, p| a.saturating_add(p.errors)),
        });
        counts.push(parts.len());
    }
    (out, counts)
}

/// A summary built from the intervals a host delivered before it was lost (its own result
/// never came): counts summed, rates over the delivered time.
pub fn summary_of_intervals(intervals: &[Interval]) -> Summary {
    let secs: f64 = intervals.iter().map(|i| i.duration_s).sum();
    let dir = |f: fn(&Interval) -> &DirStats| {
        let mut d = merge_dirs(&intervals.iter().map(f).collect::<Vec<_>>());
        d.iops = if secs > 0.0 { d.ios as f64 / secs } else { 0.0 };
        d.bytes_per_sec = if secs > 0.0 {
            d.bytes as f64 / secs
        } else {
            0.0
        };
        d.outstanding_mean = d.iops * d.latency_ns.mean.unwrap_or(0.0) / 1e9;
        d
    };
    Summary {
        read: dir(|i| &i.read),
        write: dir(|i| &i.write),
        total: dir(|i| &i.total),
        ..Summary::default()
    }
}

/// Where a count goes in the merged result: the summary, or merged interval `i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Slot {
    Summary,
    Interval(usize),
}

/// One count the merge sums over hosts: where it goes, its direction, which count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    slot: Slot,
    dir: &'static str,
    field: &'static str,
}

impl Key {
    /// The most the merged count may hold.
    fn most(&self) -> u128 {
        match self.field {
            "configured outstanding I/Os" => u128::from(u32::MAX),
            _ => u128::from(u64::MAX),
        }
    }

    /// The count in words, as a host sent it.
    fn words(&self, lost: bool) -> String {
        let dir = if self.dir.is_empty() {
            String::new()
        } else {
            format!("{} ", self.dir)
        };
        match (self.slot, lost) {
            (Slot::Summary, false) => format!("its result's summary: {dir}{}", self.field),
            (Slot::Summary, true) => format!("its streamed intervals' {dir}{} summed", self.field),
            (Slot::Interval(i), _) => format!("its interval {}: {dir}{}", i + 1, self.field),
        }
    }
}

/// Directions and counts of an interval, in the order of their place in a row of counts.
const INTERVAL_DIRS: [&str; 3] = ["read", "write", "total"];
const DIR_FIELDS: [&str; 4] = ["I/Os", "bytes", "histogram count", "histogram buckets"];
/// Counts of one merged interval: each direction's, and its errors.
const INTERVAL_COUNTS: usize = INTERVAL_DIRS.len() * DIR_FIELDS.len() + 1;

/// The place of an interval's count in its row.
fn interval_index(k: &Key) -> usize {
    let dir = INTERVAL_DIRS.iter().position(|d| *d == k.dir);
    let field = DIR_FIELDS.iter().position(|f| *f == k.field);
    match (dir, field) {
        (Some(d), Some(f)) => d * DIR_FIELDS.len() + f,
        _ => INTERVAL_COUNTS - 1,
    }
}

/// The key of place `j` in interval `n`'s row.
fn interval_key(n: usize, j: usize) -> Key {
    let slot = Slot::Interval(n);
    if j + 1 == INTERVAL_COUNTS {
        return Key {
            slot,
            dir: "",
            field: "errors",
        };
    }
    Key {
        slot,
        dir: INTERVAL_DIRS[j / DIR_FIELDS.len()],
        field: DIR_FIELDS[j % DIR_FIELDS.len()],
    }
}

/// What one host adds to the merge: its own result, or (lost) the intervals it streamed.
#[derive(Clone, Copy)]
struct Data<'a> {
    summary: Option<&'a Summary>,
    intervals: &'a [Interval],
}

/// Every count of `d` under `slot`, each as it is summed.
fn dir_counts(slot: Slot, dir: &'static str, d: &DirStats, f: &mut dyn FnMut(Key, u128)) {
    let k = |field| Key { slot, dir, field };
    f(k("I/Os"), u128::from(d.ios));
    f(k("bytes"), u128::from(d.bytes));
    if let Some(h) = &d.histogram {
        f(k("histogram count"), u128::from(h.count));
        // All its buckets together: a bound on any one bucket's sum over hosts.
        let b: u128 = h.buckets.iter().map(|[_, c]| u128::from(*c)).sum();
        f(k("histogram buckets"), b);
    }
}

impl Data<'_> {
    /// Every count this host adds, with the key it is summed under (a key may come more than
    /// once: a lost host's summary is the sum of its intervals).
    fn counts(&self, f: &mut dyn FnMut(Key, u128)) {
        for (i, iv) in self.intervals.iter().enumerate() {
            let slot = Slot::Interval(i);
            for (name, d) in [
                ("read", &iv.read),
                ("write", &iv.write),
                ("total", &iv.total),
            ] {
                dir_counts(slot, name, d, f);
                if self.summary.is_none() {
                    dir_counts(Slot::Summary, name, d, f);
                }
            }
            f(
                Key {
                    slot,
                    dir: "",
                    field: "errors",
                },
                u128::from(iv.errors),
            );
        }
        if let Some(s) = self.summary {
            let dirs = [
                ("read", Some(&s.read)),
                ("write", Some(&s.write)),
                ("total", Some(&s.total)),
            ];
            let more = [("sync", s.sync.as_ref()), ("trim", s.trim.as_ref())];
            for (name, d) in dirs.into_iter().chain(more) {
                if let Some(d) = d {
                    dir_counts(Slot::Summary, name, d, f);
                }
            }
            let k = |field| Key {
                slot: Slot::Summary,
                dir: "",
                field,
            };
            f(
                k("configured outstanding I/Os"),
                u128::from(s.configured_outstanding),
            );
            f(k("dropped arrivals"), u128::from(s.dropped.unwrap_or(0)));
        }
    }

    /// The sum of its counts under `key`.
    fn count(&self, key: Key) -> u128 {
        let mut n = 0u128;
        self.counts(&mut |k, v| {
            if k == key {
                n += v;
            }
        });
        n
    }
}

/// The hosts whose counts cannot be merged (the merged count would overflow what it is kept
/// in), each with why, in words naming what it sent. Whenever a merged count would overflow,
/// the host that sent the most of it is refused and the rest are summed again, until every
/// merged count fits: a hostile or broken agent's counts never wrap, saturate or panic the
/// merge, and the other hosts' figures stay exact.
fn refused_hosts(hosts: &[&str], data: &[Data<'_>]) -> Vec<(usize, String)> {
    let mut refused: Vec<(usize, String)> = Vec::new();
    loop {
        // Interval counts in a flat table (they are most of them: a run of many hosts and
        // intervals is summed at the cost of an addition each), the summary's in a map.
        let mut summary: std::collections::BTreeMap<Key, u128> = Default::default();
        let mut per_interval: Vec<[u128; INTERVAL_COUNTS]> = Vec::new();
        for (i, d) in data.iter().enumerate() {
            if refused.iter().any(|r| r.0 == i) {
                continue;
            }
            d.counts(&mut |k, v| match k.slot {
                Slot::Summary => *summary.entry(k).or_default() += v,
                Slot::Interval(n) => {
                    if per_interval.len() <= n {
                        per_interval.resize(n + 1, [0; INTERVAL_COUNTS]);
                    }
                    per_interval[n][interval_index(&k)] += v;
                }
            });
        }
        let over = summary
            .into_iter()
            .find(|(k, v)| *v > k.most())
            .or_else(|| {
                per_interval.iter().enumerate().find_map(|(n, row)| {
                    let j = row.iter().position(|v| *v > u128::from(u64::MAX))?;
                    Some((interval_key(n, j), row[j]))
                })
            });
        let Some((key, total)) = over else {
            return refused;
        };
        let (worst, own) = data
            .iter()
            .enumerate()
            .filter(|(i, _)| !refused.iter().any(|r| r.0 == *i))
            .map(|(i, d)| (i, d.count(key)))
            .max_by_key(|(_, n)| *n)
            .expect("a total comes from some host");
        let others = total - own;
        let what = if others == 0 {
            format!(
                "{} is {own}, more than the {} a merged count holds",
                data[worst]
                    .summary
                    .map_or_else(|| key.words(true), |_| key.words(false)),
                key.most()
            )
        } else {
            format!(
                "{} is {own}, which with the other hosts' {others} makes more than the {} a merged count holds",
                data[worst].summary.map_or_else(|| key.words(true), |_| key.words(false)),
                key.most()
            )
        };
        refused.push((
            worst,
            format!(
                "host {} sent counts that cannot be merged: {what}; its data is left out of the merged result",
                hosts[worst]
            ),
        ));
    }
}

/// A device's recorded intervals as one row, or None when nothing was recorded.
pub fn host_device(d: &oio_core::observation::DeviceSeries) -> Option<HostDevice> {
    let m = oio_telemetry::diskstats::mean_interval(&d.intervals)?;
    Some(HostDevice {
        name: d.name.clone(),
        read_iops: m.read.iops.unwrap_or(0.0),
        write_iops: m.write.iops.unwrap_or(0.0),
        bytes_per_sec: m.read.bytes_per_sec.unwrap_or(0.0) + m.write.bytes_per_sec.unwrap_or(0.0),
        read_await_ms: m.read.latency_mean_ns.map(|n| n / 1e6),
        write_await_ms: m.write.latency_mean_ns.map(|n| n / 1e6),
        queue_mean: m.queue_mean,
        util_pct: m.util_pct,
        intervals: d.intervals.len(),
        series: d.intervals.clone(),
    })
}

/// %util from which a device counts as saturated (for a device serving one I/O at a time; a
/// device serving many at once, NVMe or an array, can be busy 100 % of the time with room).
pub const SATURATED_UTIL_PCT: f64 = 90.0;

/// Which host's device limited the fleet, in words, or None when no host recorded a device.
/// A device is saturated at [`SATURATED_UTIL_PCT`]; the busiest saturated one is named, with
/// whether its host is the slowest of its group (then it limited the fleet's figure), and a
/// device name several hosts report is said to be possibly one device counted by each.
pub fn device_verdict(hosts: &[FleetHost]) -> Option<String> {
    let rows: Vec<(&FleetHost, &HostDevice)> = hosts
        .iter()
        .flat_map(|h| h.devices.iter().map(move |d| (h, d)))
        .collect();
    let busiest = rows
        .iter()
        .filter(|(_, d)| d.util_pct.is_some())
        .max_by(|a, b| {
            a.1.util_pct
                .unwrap_or(0.0)
                .total_cmp(&b.1.util_pct.unwrap_or(0.0))
        })?;
    let (h, d) = *busiest;
    let util = d.util_pct.unwrap_or(0.0);
    // Hosts on one kernel naming one device: it is one device, named once with its hosts.
    let on_one = |x: &FleetHost, name: &str| -> Vec<&str> {
        let Some(boot) = &x.boot_id else {
            return Vec::new();
        };
        hosts
            .iter()
            .filter(|o| {
                o.boot_id.as_ref() == Some(boot) && o.devices.iter().any(|e| e.name == name)
            })
            .map(|o| o.host.as_str())
            .collect()
    };
    let one_device = on_one(h, &d.name);
    if one_device.len() > 1 {
        let mut out = if util >= SATURATED_UTIL_PCT {
            format!(
                "device {}, which hosts {} share (one kernel: one machine's namespaces or containers), was saturated: busy {util:.0} % of the time (≥ {SATURATED_UTIL_PCT:.0} %), {} I/Os queued on average, r_await {} w_await {}; it is one device, so it limited those hosts together, not any one of them",
                d.name,
                one_device.join(", "),
                d.queue_mean.map(|q| format!("{q:.1}")).unwrap_or("?".into()),
                d.read_await_ms.map(|v| format!("{v:.2} ms")).unwrap_or("-".into()),
                d.write_await_ms.map(|v| format!("{v:.2} ms")).unwrap_or("-".into()),
            )
        } else {
            format!(
                "no device was busy {SATURATED_UTIL_PCT:.0} % of the time or more (the busiest: device {}, which hosts {} share (one kernel), {util:.0} %): by this rule no device limited the fleet; %util says little for devices that serve many I/Os at once (NVMe, arrays): compare their queue (aqu-sz) with their depth",
                d.name,
                one_device.join(", ")
            )
        };
        out.push_str(
            "; each of those hosts' device figures are that one device's whole traffic, not its own",
        );
        return Some(out);
    }
    let mut names: Vec<&str> = rows.iter().map(|(_, d)| d.name.as_str()).collect();
    names.sort_unstable();
    let shared: Vec<&str> = names
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| w[0])
        .collect();
    let mut shared = shared;
    shared.dedup();
    let mut out = if util >= SATURATED_UTIL_PCT {
        let peers: Vec<&FleetHost> = hosts.iter().filter(|o| o.group == h.group).collect();
        let slowest = peers.len() > 1 && peers.iter().all(|o| o.host == h.host || o.iops >= h.iops);
        format!(
            "host {}'s device {} was saturated: busy {util:.0} % of the time (≥ {SATURATED_UTIL_PCT:.0} %), {} I/Os queued on average, r_await {} w_await {}; {}",
            h.host,
            d.name,
            d.queue_mean.map(|q| format!("{q:.1}")).unwrap_or("?".into()),
            d.read_await_ms.map(|v| format!("{v:.2} ms")).unwrap_or("-".into()),
            d.write_await_ms.map(|v| format!("{v:.2} ms")).unwrap_or("-".into()),
            if slowest {
                format!(
                    "host {} is the slowest of its {} ({:.1} IOPS): its device limited the fleet's figure",
                    h.host,
                    if h.group.is_empty() { "fleet".to_string() } else { format!("group {}", h.group) },
                    h.iops
                )
            } else if peers.len() > 1 {
                format!("yet host {} is not the slowest of its peers: the device limits that host, undecided whether it limited the fleet", h.host)
            } else {
                format!("it limits host {}, alone in its group", h.host)
            }
        )
    } else {
        format!(
            "no host's device was busy {SATURATED_UTIL_PCT:.0} % of the time or more (the busiest: host {}'s {}, {util:.0} %): by this rule no device limited the fleet; %util says little for devices that serve many I/Os at once (NVMe, arrays): compare their queue (aqu-sz) with their depth",
            h.host, d.name
        )
    };
    if !shared.is_empty() {
        out.push_str(&format!(
            "; several hosts report a device named {}: if it is one device (namespaces or containers of one machine, a shared array), each host's figures are that device's whole traffic, not its own",
            shared.join(", ")
        ));
    }
    Some(out)
}

/// Builds the merged document. `files[i]` is where host `i`'s own result was written.
pub fn document(
    run: &crate::controller::FleetRun,
    plan: &oio_engine::RunPlan,
    files: &[Option<String>],
) -> FleetResult {
    let mut envelope = oio_core::document::Envelope::new(FLEET_SCHEMA, FLEET_SCHEMA_VERSION);
    envelope.host = Some(oio_core::host::HostInfo::detect());
    let t0 = std::time::Instant::now();
    envelope.plan = serde_json::to_value(plan_as_used(run, plan)).ok();
    let mut undecodable = Vec::new();
    let decoded = decode_lost(run, &mut undecodable);
    let data: Vec<Data<'_>> = run
        .hosts
        .iter()
        .zip(&decoded)
        .map(|(h, d)| match &h.result {
            Some(r) => Data {
                summary: Some(&r.summary),
                intervals: &r.intervals,
            },
            None => Data {
                summary: None,
                intervals: d,
            },
        })
        .collect();
    let names: Vec<&str> = run.hosts.iter().map(|h| h.name.as_str()).collect();
    let refused = refused_hosts(&names, &data);
    let faulty = |i: usize| refused.iter().find(|r| r.0 == i).map(|r| r.1.clone());
    // Each host's series, summary and own window: its result is authoritative (it holds the
    // last, unstreamed intervals); a lost host contributes what it streamed; a faulty one
    // nothing.
    let parts: Vec<(&[Interval], Summary, f64)> = run
        .hosts
        .iter()
        .zip(&decoded)
        .enumerate()
        .map(|(i, (h, d))| match &h.result {
            _ if faulty(i).is_some() => (&[][..], Summary::default(), 0.0),
            Some(r) => (&r.intervals[..], r.summary.clone(), r.duration_s),
            None => (
                &d[..],
                summary_of_intervals(d),
                d.iter().map(|i| i.t_s).fold(0.0, f64::max),
            ),
        })
        .collect();
    let status: Vec<String> = run
        .hosts
        .iter()
        .enumerate()
        .map(|(i, h)| match &h.result {
            _ if faulty(i).is_some() => "faulty".to_string(),
            Some(r) => r.envelope.stop_reason.to_string(),
            None => "lost".to_string(),
        })
        .collect();
    let window_s = fleet_window(&parts.iter().map(|p| p.2).collect::<Vec<_>>());
    let summary = merge_over_window(
        &parts
            .iter()
            .zip(&status)
            .map(|(p, st)| (&p.1, p.2, cut_short(st)))
            .collect::<Vec<_>>(),
        window_s,
    );
    let series: Vec<&[Interval]> = parts.iter().map(|p| p.0).collect();
    let (intervals, hosts_per_interval) = merge_series(&series);
    let groups = groups(run, &parts, &status, window_s);
    let (mut any_errors, mut any_interrupted) = (false, run.interrupted);
    let mut hosts = Vec::new();
    let mut lost = Vec::new();
    for (i, ((h, (iv, s, own_s)), status)) in run.hosts.iter().zip(&parts).zip(status).enumerate() {
        match status.as_str() {
            "errors" | "lost" | "faulty" => any_errors = true,
            "interrupted" => any_interrupted = true,
            _ => {}
        }
        if let Some(l) = &h.lost {
            lost.push(l.describe(&h.name));
        }
        let file = files.get(i).cloned().flatten();
        hosts.push(host_row(h, file, status, (iv, s, *own_s), faulty(i)));
    }
    let mut summary = summary;
    let mut window = io_window(&hosts, &series, window_s, summary.total.iops);
    let overlap = overlap(&hosts, &series);
    if let Some(o) = &overlap {
        o.apply(&mut summary, &mut window);
    }
    envelope.stopped(if any_errors {
        oio_core::document::StopReason::Errors
    } else if any_interrupted {
        oio_core::document::StopReason::Interrupted
    } else {
        oio_core::document::StopReason::Completed
    });
    if let Some(o) = &overlap {
        envelope.warnings.push(o.warning());
    }
    envelope.warnings.extend(lost.iter().cloned());
    envelope.warnings.extend(
        refused
            .iter()
            .map(|r| oio_core::text::printable(&r.1).into_owned()),
    );
    envelope.warnings.extend(undecodable);
    envelope.warnings.push(format!(
        "{}; latency percentiles come from the hosts' histograms summed bucket by bucket; each host's interval i covers the same span after its own start, which differs from the common start by its start skew",
        window.basis
    ));
    envelope.warnings.extend(mixed_warning(&groups));
    envelope.warnings.extend(host_warnings(run));
    envelope.warnings.extend(timing_warnings(run));
    let idle: Vec<(usize, usize)> = series
        .iter()
        .map(|s| (s.iter().filter(|i| i.total.ios == 0).count(), s.len()))
        .collect();
    envelope
        .warnings
        .extend(stall_warnings(run, plan.interval.as_secs_f64(), &idle));
    let n_int = intervals.len().max(1) as f64;
    let n_hosts = run.hosts.len().max(1) as f64;
    let mut doc = FleetResult {
        envelope,
        start: humantime::format_rfc3339_millis(
            std::time::UNIX_EPOCH + std::time::Duration::from_nanos(run.start_ns.max(0) as u64),
        )
        .to_string(),
        start_lead_ns: run.lead.as_nanos() as u64,
        hosts,
        window,
        summary,
        devices: None,
        groups,
        intervals,
        hosts_per_interval,
        lost,
        controller: ControllerCost {
            cpu_s: run.controller_cpu_s,
            cpu_us_per_host_interval: run.controller_cpu_s * 1e6 / n_hosts / n_int,
            merge_ms: 0.0,
        },
    };
    doc.devices = device_verdict(&doc.hosts);
    doc.controller.merge_ms = t0.elapsed().as_secs_f64() * 1e3;
    doc
}

/// Hosts that ran different workload groups: the merged latency mixes them.
fn mixed_warning(groups: &[FleetGroup]) -> Option<String> {
    (groups.len() > 1).then(|| {
        format!(
            "mixed workloads: hosts ran {} workload groups ({}): the merged rates add up across them, but the merged latency percentiles mix different workloads; each group's own (groups) are the ones to compare, and a host is compared with its own group only",
            groups.len(),
            groups
                .iter()
                .map(|g| format!("{}: {} on {}", g.name, g.workload, g.hosts.join(", ")))
                .collect::<Vec<_>>()
                .join("; ")
        )
    })
}

/// Host `h`'s row of the merged document: where its result went, how it ended, its own
/// series, summary and window, and what it ran on.
fn host_row(
    h: &crate::controller::HostOutcome,
    result_file: Option<String>,
    status: String,
    (iv, s, own_s): (&[Interval], &Summary, f64),
    faulty: Option<String>,
) -> FleetHost {
    FleetHost {
        host: h.name.clone(),
        boot_id: h.boot_id.clone(),
        launcher: h.argv.clone(),
        result_file,
        clock_offset_ns: h.clock.offset_ns,
        clock_rtt_ns: h.clock.rtt_ns,
        start_skew_ns: h.start_skew_ns,
        status,
        iops: s.total.iops,
        ios: s.total.ios,
        window_s: own_s,
        intervals: iv.len(),
        lost: h.lost.clone(),
        faulty,
        group: h.group.clone(),
        read_share_pct: (s.total.ios > 0).then(|| 100.0 * s.read.ios as f64 / s.total.ios as f64),
        workload: h
            .plan
            .as_ref()
            .map(|p| p.workload.name.clone())
            .unwrap_or_default(),
        bindings: h
            .plan
            .as_ref()
            .map(|p| p.bindings.clone())
            .unwrap_or_default(),
        devices: h
            .devices
            .iter()
            .flat_map(|o| &o.devices)
            .filter_map(host_device)
            .collect(),
        logs: Vec::new(),
    }
}

/// The plan the hosts ran: the first host's on the command line's workload (its bindings as
/// it used them: the inventory's targets, not the command line's), else the first host's,
/// else the command line's.
fn plan_as_used<'a>(
    run: &'a crate::controller::FleetRun,
    plan: &'a oio_engine::RunPlan,
) -> &'a oio_engine::RunPlan {
    let on_cli = |h: &&crate::controller::HostOutcome| {
        h.group.is_empty() || h.group == crate::inventory::COMMAND_LINE_GROUP
    };
    run.hosts
        .iter()
        .find(on_cli)
        .or(run.hosts.first())
        .and_then(|h| h.plan.as_ref())
        .unwrap_or(plan)
}

/// Each host's own warnings, each said once with every host that said it ("hosts a, b: …"),
/// in the order first said.
pub fn host_warnings(run: &crate::controller::FleetRun) -> Vec<String> {
    let mut said: Vec<(String, Vec<&str>)> = Vec::new();
    for h in &run.hosts {
        let own = h.result.iter().map(|r| &r.envelope.warnings);
        let tpcc = h.tpcc_result.iter().map(|r| &r.envelope.warnings);
        let sql = h.sql_result.iter().map(|r| &r.envelope.warnings);
        for w in own.chain(tpcc).chain(sql).flatten() {
            match said.iter_mut().find(|(x, _)| x == w) {
                Some((_, hs)) => hs.push(&h.name),
                None => said.push((w.clone(), vec![&h.name])),
            }
        }
    }
    said.into_iter()
        .map(|(w, hs)| {
            format!(
                "host{} {}: {w}",
                if hs.len() == 1 { "" } else { "s" },
                hs.join(", ")
            )
        })
        .collect()
}

/// A clock further than this from the controller's is warned about.
pub const CLOCK_OFFSET_WARN_NS: i64 = 1_000_000_000;
/// A start skew larger than this is warned about.
pub const START_SKEW_WARN_NS: i64 = 10_000_000;

/// Warnings for hosts whose clock is far off (starts are corrected for it, timestamps in the
/// host's own files are not) and whose start skew exceeds [`START_SKEW_WARN_NS`].
pub fn timing_warnings(run: &crate::controller::FleetRun) -> Vec<String> {
    let mut out = Vec::new();
    for h in &run.hosts {
        if h.clock.offset_ns.abs() > CLOCK_OFFSET_WARN_NS {
            out.push(format!(
                "host {}: its clock is {:+.3} s off the controller's (± {:.3} ms): starts were corrected for it, but times in its own files are its clock's; synchronise the clocks (chrony, NTP) to compare them",
                h.name,
                h.clock.offset_ns as f64 / 1e9,
                h.clock.rtt_ns as f64 / 2e6
            ));
        }
        if let Some(s) = h.start_skew_ns.filter(|s| s.abs() > START_SKEW_WARN_NS) {
            out.push(format!(
                "host {}: it started {:.3} ms {} the common start (more than {:.0} ms; ± {:.3} ms): its intervals are that much off the others' in the merged series",
                h.name,
                s.abs() as f64 / 1e6,
                if s > 0 { "after" } else { "before" },
                START_SKEW_WARN_NS as f64 / 1e6,
                h.clock.rtt_ns as f64 / 2e6
            ));
        }
    }
    out
}

/// Hosts that produced nothing for part of the window, though their run "completed": the
/// longest wait between their intervals passed two intervals and a second (stopped, or their
/// storage or link hung), or some of their intervals did nothing (`idle[i]`: intervals with
/// no I/O, TPC-C no transaction, and how many it had). A lost host is said elsewhere.
pub fn stall_warnings(
    run: &crate::controller::FleetRun,
    interval_s: f64,
    idle: &[(usize, usize)],
) -> Vec<String> {
    let mut out = Vec::new();
    for (i, h) in run.hosts.iter().enumerate() {
        if h.lost.is_some() {
            continue;
        }
        let mut said = Vec::new();
        if let Some((gap, from)) = h.longest_gap.filter(|g| g.0 > 2.0 * interval_s + 1.0) {
            said.push(format!(
                "it sent no interval for {gap:.1} s (from {from:.1} s after the start; its intervals are {interval_s:.1} s): it was stopped, or its storage or link hung"
            ));
        }
        if let Some(&(n, of)) = idle.get(i).filter(|x| x.0 > 0) {
            said.push(format!("{n} of its {of} intervals did nothing"));
        }
        if !said.is_empty() {
            out.push(format!(
                "host {}: {} for part of the window: its figures (and the merged ones) include that stall, they are not what it does running",
                h.name,
                said.join("; ")
            ));
        }
    }
    out
}

/// One merged section per workload group when hosts ran more than one (none otherwise).
fn groups(
    run: &crate::controller::FleetRun,
    parts: &[(&[Interval], Summary, f64)],
    status: &[String],
    window_s: f64,
) -> Vec<FleetGroup> {
    let mut names: Vec<&str> = Vec::new();
    for h in &run.hosts {
        if !names.contains(&h.group.as_str()) {
            names.push(&h.group);
        }
    }
    if names.len() < 2 {
        return Vec::new();
    }
    names
        .into_iter()
        .map(|g| {
            let members: Vec<usize> = (0..run.hosts.len())
                .filter(|&i| run.hosts[i].group == g)
                .collect();
            let summary = merge_over_window(
                &members
                    .iter()
                    .map(|&i| (&parts[i].1, parts[i].2, cut_short(&status[i])))
                    .collect::<Vec<_>>(),
                window_s,
            );
            FleetGroup {
                name: g.to_string(),
                workload: run.hosts[members[0]]
                    .plan
                    .as_ref()
                    .map(|p| p.workload.name.clone())
                    .unwrap_or_default(),
                hosts: members.iter().map(|&i| run.hosts[i].name.clone()).collect(),
                summary,
            }
        })
        .collect()
}

/// The streamed intervals of every host whose own result never came (empty for the others:
/// their result holds every interval); undecodable ones are left out and said.
fn decode_lost(
    run: &crate::controller::FleetRun,
    undecodable: &mut Vec<String>,
) -> Vec<Vec<Interval>> {
    run.hosts
        .iter()
        .map(|h| match &h.result {
            Some(_) => Vec::new(),
            None => h
                .streamed
                .iter()
                .filter_map(|w| {
                    w.to_interval()
                        .map_err(|e| {
                            undecodable.push(format!(
                                "host {}: interval {}: {e}; left out",
                                h.name, w.index
                            ))
                        })
                        .ok()
                })
                .collect(),
        })
        .collect()
}

/// Where the hosts' windows did not open together (a host that waited, e.g. for a target's
/// lock with `--wait`, or started late): the stretch every host measured, and the merged
/// rates over it.
#[derive(Debug, PartialEq)]
struct Overlap {
    /// Seconds after the common start (controller's clock) when the last host started.
    start_s: f64,
    /// When the first host's window ended.
    end_s: f64,
    /// The host that started last, and how long after the first.
    late: (String, f64),
    /// Read, write, total I/Os per second over the overlap.
    iops: [f64; 3],
    /// Read, write, total bytes per second over the overlap.
    bytes_per_sec: [f64; 3],
}

impl Overlap {
    /// The merged rates and window become the overlap's.
    fn apply(&self, summary: &mut Summary, window: &mut Window) {
        for (d, k) in [
            (&mut summary.read, 0),
            (&mut summary.write, 1),
            (&mut summary.total, 2),
        ] {
            d.iops = self.iops[k];
            d.bytes_per_sec = self.bytes_per_sec[k];
        }
        window.duration_s = self.len_s();
        window.basis = self.basis();
    }

    fn len_s(&self) -> f64 {
        (self.end_s - self.start_s).max(0.0)
    }

    fn basis(&self) -> String {
        if self.len_s() <= 0.0 {
            return format!(
                "the hosts' windows did not overlap: host {} started {:.3} s after the first, when another host had finished; no stretch has every host measuring, so there is no merged rate (0 IOPS); counts (I/Os, bytes) and latencies are each host's whole run",
                self.late.0, self.late.1
            );
        }
        format!(
            "the hosts' windows did not open together: host {} started {:.3} s after the first, so the merged rates are over the {:.3} s every host measured (from {:.3} s to {:.3} s after the common start): {:.1} IOPS, from each host's intervals whose middle falls in it; counts (I/Os, bytes) and latencies are each host's whole run",
            self.late.0,
            self.late.1,
            self.len_s(),
            self.start_s,
            self.end_s,
            self.iops[2]
        )
    }

    fn warning(&self) -> String {
        format!(
            "hosts did not run together: {} (did it wait for another run's lock on its target with --wait?); runs that did not overlap are not added up",
            self.basis()
        )
    }
}

/// The hosts' common stretch when their starts are further apart than one interval and a
/// quarter of the longest window (then summing their rates would add runs that largely did
/// not run together), else None. Hosts cut short (lost, stopped on errors) are merged over
/// the window as they are anyway, and left out here.
fn overlap(hosts: &[FleetHost], series: &[&[Interval]]) -> Option<Overlap> {
    // Each host that measured: its start after the common start, its window, its series.
    let ran: Vec<(&FleetHost, f64, &[Interval])> = hosts
        .iter()
        .zip(series)
        .filter(|(h, s)| !s.is_empty() && h.faulty.is_none() && !cut_short(&h.status))
        .filter_map(|(h, s)| Some((h, h.start_skew_ns? as f64 / 1e9, *s)))
        .collect();
    let interval_s = ran
        .iter()
        .filter_map(|r| r.2.first())
        .map(|i| i.duration_s)
        .fold(0.0, f64::max);
    let first = ran.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
    let (late, start_s) = ran
        .iter()
        .map(|r| (&r.0.host, r.1))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let longest = ran.iter().map(|r| r.0.window_s).fold(0.0, f64::max);
    let apart = interval_s
        .max(longest / 4.0)
        .max(START_SKEW_WARN_NS as f64 / 1e9);
    if ran.len() < 2 || start_s - first <= apart {
        return None;
    }
    let end_s = ran
        .iter()
        .map(|r| r.1 + r.0.window_s)
        .fold(f64::INFINITY, f64::min);
    let len = end_s - start_s;
    let (mut ios, mut bytes) = ([0u64; 3], [0u64; 3]);
    for (_, skew, s) in &ran {
        for i in s.iter() {
            let mid = skew + i.t_s - i.duration_s / 2.0;
            if mid >= start_s && mid < end_s {
                for (k, d) in [&i.read, &i.write, &i.total].into_iter().enumerate() {
                    ios[k] = ios[k].saturating_add(d.ios);
                    bytes[k] = bytes[k].saturating_add(d.bytes);
                }
            }
        }
    }
    let rate = |n: u64| if len > 0.0 { n as f64 / len } else { 0.0 };
    Some(Overlap {
        start_s,
        end_s,
        late: (late.clone(), start_s - first),
        iops: ios.map(rate),
        bytes_per_sec: bytes.map(rate),
    })
}

/// The window of a merged workload result, with the sentence that says what its rates are.
fn io_window(hosts: &[FleetHost], series: &[&[Interval]], window_s: f64, iops: f64) -> Window {
    let cut: Vec<&FleetHost> = hosts.iter().filter(|h| cut_short(&h.status)).collect();
    let mut basis = format!(
        "merged rates (IOPS, bytes/s, outstanding I/O) are over the fleet window of {window_s:.3} s (the longest host window; the windows start together within the start skew): {iops:.1} IOPS; each host that ran through adds its own rates over its own window"
    );
    if cut.is_empty() {
        return Window {
            duration_s: window_s,
            basis,
            all_hosts_s: None,
            all_hosts_rate: None,
        };
    }
    for h in &cut {
        basis.push_str(&cut_note(
            &h.host,
            &h.status,
            &format!("{} I/Os", h.ios),
            h.window_s,
        ));
    }
    let stretch = all_hosts_stretch(series);
    match stretch {
        Some((span, rate)) => basis.push_str(&format!(
            "; while all {} hosts delivered (the first {span:.3} s) the merged rate was {rate:.1} IOPS",
            hosts.len()
        )),
        None => basis.push_str("; no stretch of the window has every host's intervals"),
    }
    Window {
        duration_s: window_s,
        basis,
        all_hosts_s: stretch.map(|s| s.0),
        all_hosts_rate: stretch.map(|s| s.1),
    }
}

/// Every host's devices over the window as one observation (`HOST:DEVICE` per device), as
/// `oio run --record-device` saves its own; None when no host recorded one.
pub fn devices(doc: &FleetResult) -> Option<oio_core::observation::Observation> {
    let mut obs = oio_core::observation::Observation::new(
        oio_core::observation::SourceKind::Record,
        Vec::new(),
    );
    for h in &doc.hosts {
        for d in &h.devices {
            obs.device_mut(&format!("{}:{}", h.host, d.name)).intervals = d.series.clone();
        }
    }
    (!obs.devices.is_empty()).then_some(obs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn stats(values: &[u64], secs: f64) -> DirStats {
        let mut h = LatencyHistogram::new();
        for &v in values {
            h.record(v);
        }
        DirStats::from_parts(
            values.len() as u64,
            values.len() as u64 * 4096,
            &h,
            secs,
            true,
        )
    }

    #[test]
    fn merged_buckets_are_the_sum_of_the_hosts_buckets() {
        let a = stats(&[100, 100, 5_000, 70_000], 1.0);
        let b = stats(&[100, 6_000, 9_000_000], 2.0);
        let c = stats(&[], 1.0);
        let m = merge_dirs(&[&a, &b, &c]);
        let mut want: BTreeMap<u64, u64> = BTreeMap::new();
        for d in [&a, &b] {
            for [v, n] in &d.histogram.as_ref().unwrap().buckets {
                *want.entry(*v).or_default() += n;
            }
        }
        let got: BTreeMap<u64, u64> = m
            .histogram
            .as_ref()
            .unwrap()
            .buckets
            .iter()
            .map(|[v, n]| (*v, *n))
            .collect();
        assert_eq!(got, want);
        assert_eq!(m.ios, 7);
        assert_eq!(m.iops, a.iops + b.iops);
        assert_eq!(m.latency_ns.max, Some(9_000_000));
        assert_eq!(m.latency_ns.min, Some(100));
        let mean = (100.0 + 100.0 + 5_000.0 + 70_000.0 + 100.0 + 6_000.0 + 9_000_000.0) / 7.0;
        assert!((m.latency_ns.mean.unwrap() - mean).abs() < 1e-6);
        // Not the mean of the hosts' p99s.
        assert_eq!(m.latency_ns.p99, Some(9_000_000));
    }

    #[test]
    fn a_part_without_histogram_makes_no_merged_latency() {
        let a = stats(&[100], 1.0);
        let mut b = stats(&[200], 1.0);
        b.histogram = None;
        let m = merge_dirs(&[&a, &b]);
        assert!(m.histogram.is_none());
        assert_eq!(m.latency_ns.p50, None);
        assert_eq!(m.ios, 2);
    }

    #[test]
    fn series_merge_by_index_and_count_the_hosts_in_each() {
        let iv = |v: u64| Interval {
            t_s: 1.0,
            duration_s: 1.0,
            read: stats(&[v], 1.0),
            write: DirStats::default(),
            total: stats(&[v], 1.0),
            offered_iops: None,
            backlog_max: None,
            host_cpu: None,
            errors: 0,
        };
        let a = vec![iv(10), iv(20)];
        let b = vec![iv(30)];
        let (m, n) = merge_series(&[&a, &b]);
        assert_eq!(n, vec![2, 1]);
        assert_eq!(m[0].total.ios, 2);
        assert_eq!(m[1].total.latency_ns.max, Some(20));
        let s = summary_of_intervals(&a);
        assert_eq!(s.total.ios, 2);
        assert!((s.total.iops - 1.0).abs() < 1e-9);
    }

    /// One second of `ios` reads of `lat_ns` each, ending at `t_s`.
    fn second(t_s: f64, ios: usize, lat_ns: u64) -> Interval {
        let d = stats(&vec![lat_ns; ios], 1.0);
        Interval {
            t_s,
            duration_s: 1.0,
            read: d.clone(),
            write: DirStats::default(),
            total: d,
            offered_iops: None,
            backlog_max: None,
            host_cpu: None,
            errors: 0,
        }
    }

    /// A host's own result made of `n` one-second intervals of `ios` I/Os each.
    fn result(n: usize, ios: usize, lat_ns: u64) -> oio_core::result::RunResult {
        let intervals: Vec<Interval> = (1..=n).map(|t| second(t as f64, ios, lat_ns)).collect();
        oio_core::result::RunResult {
            envelope: oio_core::document::Envelope::new(
                oio_core::result::RUN_SCHEMA,
                oio_core::result::RUN_SCHEMA_VERSION,
            ),
            workload: oio_core::profiles::profile("oltp-data").unwrap(),
            options: oio_core::result::RunOptions {
                time_s: n as f64,
                ramp_s: 0.0,
                interval_s: 1.0,
                engine_requested: "null".into(),
                direct: false,
                submit: "per_io".into(),
                submit_auto: None,
                seed: 1,
                latency_tracking: true,
            },
            targets: Vec::new(),
            engine: Default::default(),
            duration_s: n as f64,
            summary: summary_of_intervals(&intervals),
            streams: Vec::new(),
            intervals,
            cpu: Default::default(),
            errors: Default::default(),
            access_order: None,
            verify: None,
            host_noise: None,
            output_errors: Vec::new(),
        }
    }

    fn plan() -> oio_engine::RunPlan {
        oio_engine::RunPlan {
            workload: oio_core::profiles::profile("oltp-data").unwrap(),
            bindings: Vec::new(),
            target_options: oio_engine::TargetOptions {
                write: false,
                direct: false,
                size: None,
                allow_overwrite: false,
                destroy_data: false,
                fill_seed: 0,
                wait: false,
            },
            engine: oio_engine::EngineKind::Null,
            submit: oio_engine::SubmitMode::PerIo,
            time: std::time::Duration::from_secs(8),
            ramp: std::time::Duration::ZERO,
            interval: std::time::Duration::from_secs(1),
            seed: 1,
            latency_tracking: true,
            io_limit: None,
            verify: false,
            track_order: false,
            sim: None,
            lat_log: None,
            hdr_log: None,
            memory_limit: None,
        }
    }

    /// The issue's case: two hosts ran the whole 8 s window, a third went silent after 2 s.
    /// It adds its I/Os up to its last interval, not its rate while alive.
    #[test]
    fn a_lost_host_adds_its_ios_up_to_its_last_message_over_the_fleet_window() {
        use crate::controller::{test_lost, test_outcome, FleetRun};
        use crate::protocol::WireInterval;
        let mut a = test_outcome("a");
        a.result = Some(result(8, 1000, 100_000));
        let mut b = test_outcome("b");
        b.result = Some(result(8, 500, 200_000));
        let mut c = test_outcome("c");
        c.streamed = (0..2)
            .map(|i| WireInterval::from_interval(i, &second((i + 1) as f64, 900, 50_000)))
            .collect();
        c.lost = Some(test_lost(2.0));
        let outstanding: Vec<f64> = [&a, &b]
            .iter()
            .map(|h| h.result.as_ref().unwrap().summary.total.outstanding_mean)
            .collect();
        let run = FleetRun {
            start_ns: 0,
            lead: std::time::Duration::ZERO,
            hosts: vec![a, b, c],
            interrupted: false,
            controller_cpu_s: 0.0,
        };
        let doc = document(&run, &plan(), &[None, None, None]);
        let t = &doc.summary.total;
        assert_eq!(doc.window.duration_s, 8.0);
        assert_eq!(t.ios, 8 * 1000 + 8 * 500 + 2 * 900);
        // Σ I/Os ÷ the window: 13,800 / 8 s, not the sum of rates 1000 + 500 + 900.
        assert_eq!(t.iops, 13_800.0 / 8.0);
        assert_eq!(t.bytes_per_sec, 13_800.0 * 4096.0 / 8.0);
        // Little's law per host, the lost host's weighted by the quarter of the window it ran.
        let c_out = 900.0 * 50_000.0 / 1e9;
        let want = outstanding[0] + outstanding[1] + c_out * 2.0 / 8.0;
        assert!((t.outstanding_mean - want).abs() < 1e-9, "{t:?}");
        // The lost host's own row: its rate while measured, over the 2 s it covers.
        let h = &doc.hosts[2];
        assert_eq!((h.status.as_str(), h.ios, h.window_s), ("lost", 1800, 2.0));
        assert_eq!(h.iops, 900.0);
        // While all three delivered: the first 2 s, at (1000 + 500 + 900) × 2 / 2 s.
        assert_eq!(doc.window.all_hosts_s, Some(2.0));
        assert_eq!(doc.window.all_hosts_rate, Some(2400.0));
        assert!(
            doc.window.basis.contains("fleet window of 8.000 s")
                && doc.window.basis.contains(
                    "host c was lost part-way: its 1800 I/Os up to the end of its last interval (2.000 s into its window) are spread over the whole window, adding nothing after"
                ),
            "{}",
            doc.window.basis
        );
        assert_eq!(doc.hosts_per_interval, vec![3, 3, 2, 2, 2, 2, 2, 2]);
        assert!(doc.envelope.partial);
    }

    /// Issue 39: a host that started 2 s late (it waited for a lock with --wait) ran 2 s of
    /// its 4 s window beside the other: the merged rates are over those 2 s (1000 + 700 I/Os
    /// per second), not the sum of two runs that only half overlapped; said. Started 5 s
    /// late, nothing overlaps: no merged rate. Within an interval and a quarter of the window
    /// of each other, the hosts ran together: the usual sum.
    #[test]
    fn hosts_whose_windows_did_not_open_together_merge_over_their_overlap_only() {
        use crate::controller::{test_outcome, FleetRun};
        let run_with = |late_s: f64| {
            let mut a = test_outcome("a");
            a.result = Some(result(4, 1000, 100_000));
            let mut b = test_outcome("b");
            b.result = Some(result(4, 700, 100_000));
            b.start_skew_ns = Some((late_s * 1e9) as i64);
            FleetRun {
                start_ns: 0,
                lead: std::time::Duration::ZERO,
                hosts: vec![a, b],
                interrupted: false,
                controller_cpu_s: 0.0,
            }
        };
        let doc = document(&run_with(2.0), &plan(), &[None, None]);
        // a's seconds 3 and 4, b's seconds 1 and 2 (ending 2 s later): 3400 I/Os over 2 s.
        assert_eq!(doc.summary.total.iops, 1700.0);
        assert_eq!(doc.summary.read.iops, 1700.0);
        assert_eq!(doc.summary.total.bytes_per_sec, 1700.0 * 4096.0);
        assert_eq!(doc.summary.total.ios, 4 * 1000 + 4 * 700);
        assert_eq!(doc.window.duration_s, 2.0);
        assert!(
            doc.window.basis.starts_with("the hosts' windows did not open together: host b started 2.000 s after the first, so the merged rates are over the 2.000 s every host measured (from 2.000 s to 4.000 s after the common start): 1700.0 IOPS"),
            "{}",
            doc.window.basis
        );
        assert!(doc
            .envelope
            .warnings
            .iter()
            .any(|w| w.starts_with("hosts did not run together: ") && w.contains("--wait")));
        let doc = document(&run_with(5.0), &plan(), &[None, None]);
        assert_eq!(doc.summary.total.iops, 0.0);
        assert_eq!(doc.window.duration_s, 0.0);
        assert!(
            doc.window.basis.starts_with(
                "the hosts' windows did not overlap: host b started 5.000 s after the first"
            ),
            "{}",
            doc.window.basis
        );
        // Within a quarter of the window (and an interval): the usual sum.
        let doc = document(&run_with(1.0), &plan(), &[None, None]);
        assert_eq!(doc.summary.total.iops, 1700.0);
        assert_eq!(doc.window.duration_s, 4.0);
        assert!(!doc
            .envelope
            .warnings
            .iter()
            .any(|w| w.starts_with("hosts did not")));
    }

    /// Without a loss, hosts of equal windows merge to the sum of their own rates.
    #[test]
    fn hosts_that_ran_the_whole_window_merge_to_the_sum_of_their_rates() {
        use crate::controller::{test_outcome, FleetRun};
        let mut a = test_outcome("a");
        a.result = Some(result(4, 300, 100_000));
        let mut b = test_outcome("b");
        b.result = Some(result(4, 700, 100_000));
        let run = FleetRun {
            start_ns: 0,
            lead: std::time::Duration::ZERO,
            hosts: vec![a, b],
            interrupted: false,
            controller_cpu_s: 0.0,
        };
        let doc = document(&run, &plan(), &[None, None]);
        assert_eq!(doc.summary.total.iops, 1000.0);
        assert_eq!(doc.window.duration_s, 4.0);
        assert_eq!(doc.window.all_hosts_s, None);
        assert!(!doc.envelope.partial);
        let sum: f64 = doc.hosts.iter().map(|h| h.iops).sum();
        assert_eq!(doc.summary.total.iops, sum);
    }

    /// Issue 37: a host claiming `ios = u64::MAX` (in its summary, or in one interval), or
    /// whose streamed intervals add up past 64 bits, is refused as faulty, named with what it
    /// sent; the merged counts are the other hosts' exactly, never wrapped or saturated.
    #[test]
    fn a_host_whose_counts_would_overflow_the_merge_is_refused_as_faulty() {
        use crate::controller::{test_lost, test_outcome, FleetRun};
        use crate::protocol::WireInterval;
        let fleet = |hosts| FleetRun {
            start_ns: 0,
            lead: std::time::Duration::ZERO,
            hosts,
            interrupted: false,
            controller_cpu_s: 0.0,
        };
        let honest = |name: &str, ios: usize| {
            let mut h = test_outcome(name);
            h.result = Some(result(4, ios, 100_000));
            h
        };
        // In its summary.
        let mut bad = honest("bad", 10);
        bad.result.as_mut().unwrap().summary.total.ios = u64::MAX;
        let run = fleet(vec![honest("a", 300), bad, honest("c", 700)]);
        let doc = document(&run, &plan(), &[None, None, None]);
        assert_eq!(doc.summary.total.ios, 4 * 300 + 4 * 700);
        assert_eq!(doc.summary.total.iops, 1000.0);
        let b = &doc.hosts[1];
        assert_eq!((b.status.as_str(), b.ios, b.intervals), ("faulty", 0, 0));
        let why = b.faulty.as_deref().unwrap();
        assert_eq!(
            why,
            "host bad sent counts that cannot be merged: its result's summary: total I/Os is 18446744073709551615, which with the other hosts' 4000 makes more than the 18446744073709551615 a merged count holds; its data is left out of the merged result"
        );
        assert!(doc.envelope.warnings.iter().any(|w| w == why));
        assert!(doc.envelope.partial);
        assert_eq!(doc.hosts_per_interval, vec![2, 2, 2, 2]);
        assert_eq!(doc.intervals[0].total.ios, 1000);
        assert!(doc.hosts[0].faulty.is_none() && doc.hosts[2].faulty.is_none());
        // In one interval, its summary plausible.
        let mut bad = honest("bad", 10);
        bad.result.as_mut().unwrap().intervals[1].read.ios = u64::MAX;
        let run = fleet(vec![honest("a", 300), bad]);
        let doc = document(&run, &plan(), &[None, None]);
        assert_eq!(doc.summary.total.ios, 1200);
        assert_eq!(doc.intervals[1].read.ios, 300);
        assert!(
            doc.hosts[1]
                .faulty
                .as_deref()
                .unwrap()
                .contains("its interval 2: read I/Os is 18446744073709551615, which with the other hosts' 300"),
            "{:?}",
            doc.hosts[1].faulty
        );
        // A lost host whose streamed intervals overflow on their own; and a histogram whose
        // buckets claim more than 64 bits in all.
        let mut lost = test_outcome("lost");
        let mut big = second(1.0, 5, 50_000);
        big.total.ios = u64::MAX / 2 + 1;
        lost.streamed = (0..2)
            .map(|i| {
                WireInterval::from_interval(
                    i,
                    &Interval {
                        t_s: (i + 1) as f64,
                        ..big.clone()
                    },
                )
            })
            .collect();
        lost.lost = Some(test_lost(2.0));
        let mut hist = honest("hist", 10);
        let h = hist
            .result
            .as_mut()
            .unwrap()
            .summary
            .read
            .histogram
            .as_mut()
            .unwrap();
        h.buckets.push([1 << 40, u64::MAX]);
        let run = fleet(vec![lost, honest("a", 300), hist]);
        let doc = document(&run, &plan(), &[None, None, None]);
        let status: Vec<&str> = doc.hosts.iter().map(|h| h.status.as_str()).collect();
        assert_eq!(status, ["faulty", "completed", "faulty"]);
        assert!(
            doc.hosts[0].faulty.as_deref().unwrap().contains(
                "its streamed intervals' total I/Os summed is 18446744073709551616, which with the other hosts' 1200"
            ),
            "{:?}",
            doc.hosts[0].faulty
        );
        assert!(
            doc.hosts[2]
                .faulty
                .as_deref()
                .unwrap()
                .contains("its result's summary: read histogram buckets is 18446744073709551655"),
            "{:?}",
            doc.hosts[2].faulty
        );
        assert_eq!(doc.summary.total.ios, 1200);
        assert_eq!(doc.summary.total.histogram.as_ref().unwrap().count, 1200);
    }

    fn dev_host(name: &str, group: &str, iops: f64, dev: &str, util: f64) -> FleetHost {
        FleetHost {
            boot_id: None,
            host: name.into(),
            launcher: Vec::new(),
            result_file: None,
            clock_offset_ns: 0,
            clock_rtt_ns: 0,
            start_skew_ns: Some(0),
            status: "completed".into(),
            iops,
            ios: 0,
            window_s: 1.0,
            intervals: 1,
            lost: None,
            faulty: None,
            group: group.into(),
            workload: String::new(),
            read_share_pct: None,
            logs: Vec::new(),
            devices: vec![HostDevice {
                name: dev.into(),
                util_pct: Some(util),
                queue_mean: Some(3.5),
                read_await_ms: Some(1.25),
                ..HostDevice::default()
            }],
            bindings: Vec::new(),
        }
    }

    /// The saturated device of the slowest host of its group is named as the fleet's limit; a
    /// saturated device on a host that is not the slowest is undecided; none saturated says so.
    #[test]
    fn the_verdict_names_the_saturated_device_of_the_slowest_host() {
        let hosts = vec![
            dev_host("a", "r", 1000.0, "sda", 40.0),
            dev_host("b", "r", 400.0, "sdb", 97.0),
            dev_host("c", "r", 990.0, "sdc", 50.0),
        ];
        let v = device_verdict(&hosts).unwrap();
        assert!(
            v.starts_with("host b's device sdb was saturated: busy 97 % of the time (≥ 90 %), 3.5 I/Os queued on average, r_await 1.25 ms w_await -; host b is the slowest of its group r (400.0 IOPS): its device limited the fleet's figure"),
            "{v}"
        );
        assert!(!v.contains("several hosts"), "{v}");
        let mut fast = hosts.clone();
        fast[1].iops = 5000.0;
        let v = device_verdict(&fast).unwrap();
        assert!(v.contains("undecided whether it limited the fleet"), "{v}");
        let mut idle = hosts.clone();
        idle[1].devices[0].util_pct = Some(60.0);
        idle[2].devices[0].name = "sda".into();
        let v = device_verdict(&idle).unwrap();
        assert!(v.starts_with("no host's device was busy 90 % of the time or more (the busiest: host b's sdb, 60 %)"), "{v}");
        assert!(v.contains("several hosts report a device named sda"), "{v}");
        let none: Vec<FleetHost> = hosts
            .into_iter()
            .map(|mut h| {
                h.devices.clear();
                h
            })
            .collect();
        assert_eq!(device_verdict(&none), None);
    }

    /// Issue 39: hosts on one kernel (namespaces of one machine) that all report vda report
    /// one device: it is named once with its hosts, no one host's device blamed.
    #[test]
    fn a_device_hosts_share_on_one_kernel_is_named_once() {
        let mut hosts = vec![
            dev_host("a", "r", 1000.0, "vda", 99.0),
            dev_host("b", "r", 400.0, "vda", 99.0),
            dev_host("c", "r", 990.0, "vda", 99.0),
        ];
        for h in &mut hosts {
            h.boot_id = Some("b0".into());
        }
        let v = device_verdict(&hosts).unwrap();
        assert!(
            v.starts_with("device vda, which hosts a, b, c share (one kernel: one machine's namespaces or containers), was saturated: busy 99 %"),
            "{v}"
        );
        assert!(!v.contains("host b is the slowest"), "{v}");
        // On different kernels, vda is three devices: the old rule, and the guess said.
        hosts[2].boot_id = Some("b1".into());
        hosts[1].boot_id = Some("b2".into());
        let v = device_verdict(&hosts).unwrap();
        assert!(
            v.starts_with("host c's device vda was saturated")
                && v.contains("several hosts report a device named vda: if it is one device"),
            "{v}"
        );
    }

    /// The issue's cases: a clock 2 days off and a one-off 36.6 ms start skew are warned
    /// about; 0.5 s and 2 ms are not.
    #[test]
    fn far_clocks_and_late_starts_are_warned_about() {
        use crate::controller::{test_outcome, FleetRun};
        let mut a = test_outcome("a");
        a.clock.offset_ns = -2 * 86_400 * 1_000_000_000;
        a.clock.rtt_ns = 40_000;
        let mut b = test_outcome("b");
        b.start_skew_ns = Some(36_600_000);
        let mut c = test_outcome("c");
        c.clock.offset_ns = 500_000_000;
        c.start_skew_ns = Some(-2_000_000);
        let run = FleetRun {
            start_ns: 0,
            lead: std::time::Duration::ZERO,
            hosts: vec![a, b, c],
            interrupted: false,
            controller_cpu_s: 0.0,
        };
        let w = timing_warnings(&run);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].starts_with(
                "host a: its clock is -172800.000 s off the controller's (± 0.020 ms)"
            ),
            "{}",
            w[0]
        );
        assert!(
            w[1].starts_with(
                "host b: it started 36.600 ms after the common start (more than 10 ms"
            ),
            "{}",
            w[1]
        );
    }

    #[test]
    fn a_summary_spread_over_a_longer_window_keeps_its_counts() {
        let s = Summary {
            total: stats(&[1_000_000; 10], 2.0),
            offered_iops: Some(6.0),
            ..Summary::default()
        };
        let m = merge_over_window(&[(&s, 2.0, true)], 5.0);
        assert_eq!(m.total.ios, 10);
        assert_eq!(m.total.iops, 2.0);
        assert!((m.offered_iops.unwrap() - 6.0 * 2.0 / 5.0).abs() < 1e-12);
        assert!((m.total.outstanding_mean - s.total.outstanding_mean * 0.4).abs() < 1e-12);
        assert_eq!(fleet_window(&[2.0, 5.0, f64::NAN]), 5.0);
        // No window at all: no rates, never a division by zero.
        let z = merge_over_window(&[(&s, 0.0, true)], 0.0);
        assert_eq!((z.total.ios, z.total.iops), (10, 0.0));
        // A host that ran through keeps its own rates.
        let t = merge_over_window(&[(&s, 2.0, false)], 5.0);
        assert_eq!(t.total.iops, s.total.iops);
        assert!(cut_short("lost") && cut_short("errors") && !cut_short("interrupted"));
    }
}
