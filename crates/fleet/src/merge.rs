//! Merging hosts: histograms are summed bucket by bucket (and count, sum, min, max exactly),
//! so merged percentiles are those of every I/O of every host; rates and Little's-law
//! outstanding I/O are sums of the hosts'. Percentiles are never averaged.

use oio_core::histogram::{LatencyHistogram, SparseHistogram};
use oio_core::result::{DirStats, Interval, Summary};

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
        d.ios += p.ios;
        d.bytes += p.bytes;
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
        configured_outstanding: parts.iter().map(|s| s.configured_outstanding).sum(),
        offered_iops: any(|s| s.offered_iops),
        backlog_max: parts.iter().filter_map(|s| s.backlog_max).max(),
        dropped: parts.iter().filter_map(|s| s.dropped).reduce(|a, b| a + b),
        sync: (!syncs.is_empty()).then(|| merge_dirs(&syncs)),
        trim: (!trims.is_empty()).then(|| merge_dirs(&trims)),
    }
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
}

/// Schema name of merged fleet results.
pub const FLEET_SCHEMA: &str = oio_core::document::Kind::Fleet.schema();
/// Its version.
pub const FLEET_SCHEMA_VERSION: u32 = oio_core::document::Kind::Fleet.version();

/// One host in the merged result.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct FleetHost {
    /// Its name.
    pub host: String,
    /// The launcher's command line.
    pub launcher: Vec<String>,
    /// Its own result file, when it was written.
    pub result_file: Option<String>,
    /// Agent's clock minus the controller's, ns.
    pub clock_offset_ns: i64,
    /// Round trip of the clock probe kept, ns; offsets and skews are within ± half of it.
    pub clock_rtt_ns: i64,
    /// When its workers started against the common start instant, ns (positive: late).
    pub start_skew_ns: Option<i64>,
    /// "completed", "interrupted", "errors" or "lost".
    pub status: String,
    /// Its total I/Os per second (what the merged total sums).
    pub iops: f64,
    /// Intervals it contributed.
    pub intervals: usize,
    /// Set when it was lost.
    pub lost: Option<crate::controller::Lost>,
}

/// What the controller cost.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct ControllerCost {
    /// CPU seconds (user + system) of the controller process from `go` to the last result.
    pub cpu_s: f64,
    /// That per host and per merged interval, microseconds.
    pub cpu_us_per_host_interval: f64,
    /// Time to build the merged result, ms.
    pub merge_ms: f64,
}

/// The merged result of a fleet run: schema `oio.fleet`.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct FleetResult {
    /// Schema, versions, time, host (the controller's), stop reason, warnings, plan.
    #[serde(flatten)]
    pub envelope: oio_core::document::Envelope,
    /// The common start instant, RFC 3339 UTC with ms (controller's clock).
    pub start: String,
    /// Time between sending `go` and the start instant, ns.
    pub start_lead_ns: u64,
    /// Every host.
    pub hosts: Vec<FleetHost>,
    /// Sum over hosts; histograms summed bucket by bucket.
    pub summary: Summary,
    /// Per interval, summed over the hosts that delivered that interval.
    pub intervals: Vec<Interval>,
    /// Hosts in each merged interval.
    pub hosts_per_interval: Vec<usize>,
    /// Hosts lost during the run, with when and why.
    pub lost: Vec<String>,
    /// The controller's own cost.
    pub controller: ControllerCost,
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
    envelope.plan = serde_json::to_value(plan).ok();
    let mut hosts = Vec::new();
    let mut series: Vec<&[Interval]> = Vec::new();
    let mut summaries: Vec<Summary> = Vec::new();
    let mut lost = Vec::new();
    let mut any_errors = false;
    let mut any_interrupted = run.interrupted;
    let mut undecodable = Vec::new();
    // A host's own result is authoritative (it holds the last, unstreamed intervals); a lost
    // host contributes what it streamed.
    let decoded: Vec<Vec<Interval>> = run
        .hosts
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
        .collect();
    for (i, h) in run.hosts.iter().enumerate() {
        let (iv, summary): (&[Interval], Summary) = match &h.result {
            Some(r) => (&r.intervals, r.summary.clone()),
            None => (&decoded[i], summary_of_intervals(&decoded[i])),
        };
        let status = match (&h.result, &h.lost) {
            (Some(r), _) => r.envelope.stop_reason.to_string(),
            (None, _) => "lost".to_string(),
        };
        match status.as_str() {
            "errors" | "lost" => any_errors = true,
            "interrupted" => any_interrupted = true,
            _ => {}
        }
        if let Some(l) = &h.lost {
            lost.push(format!(
                "host {} was lost {:.3} s after the start ({}): {}",
                h.name, l.at_s, l.at, l.reason
            ));
        }
        hosts.push(FleetHost {
            host: h.name.clone(),
            launcher: h.argv.clone(),
            result_file: files.get(i).cloned().flatten(),
            clock_offset_ns: h.clock.offset_ns,
            clock_rtt_ns: h.clock.rtt_ns,
            start_skew_ns: h.start_skew_ns,
            status,
            iops: summary.total.iops,
            intervals: iv.len(),
            lost: h.lost.clone(),
        });
        series.push(iv);
        summaries.push(summary);
    }
    let (intervals, hosts_per_interval) = merge_series(&series);
    let summary = merge_summaries(&summaries.iter().collect::<Vec<_>>());
    envelope.stopped(if any_errors {
        oio_core::document::StopReason::Errors
    } else if any_interrupted {
        oio_core::document::StopReason::Interrupted
    } else {
        oio_core::document::StopReason::Completed
    });
    envelope.warnings.extend(lost.iter().cloned());
    envelope.warnings.extend(undecodable);
    envelope.warnings.push(
        "rates (IOPS, bytes/s, outstanding I/O) are sums of the hosts' own measurements; latency percentiles come from the hosts' histograms summed bucket by bucket; each host's interval i covers the same span after its own start, which differs from the common start by its start skew".into(),
    );
    let mut warned = std::collections::BTreeSet::new();
    for h in &run.hosts {
        for w in h.result.iter().flat_map(|r| &r.envelope.warnings) {
            // Said once, by the first host that said it.
            if warned.insert(w.clone()) {
                envelope.warnings.push(format!("host {}: {w}", h.name));
            }
        }
    }
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
        summary,
        intervals,
        hosts_per_interval,
        lost,
        controller: ControllerCost {
            cpu_s: run.controller_cpu_s,
            cpu_us_per_host_interval: run.controller_cpu_s * 1e6 / n_hosts / n_int,
            merge_ms: 0.0,
        },
    };
    doc.controller.merge_ms = t0.elapsed().as_secs_f64() * 1e3;
    doc
}
