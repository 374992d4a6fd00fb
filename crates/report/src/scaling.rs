//! A TPC-C worker ladder (`oio.tpcc.series`) and its step results as the facts
//! [`oio_analysis::scaling`] judges: where scaling stops, and what grew across the stop.
//! Shared by `oio diagnose`, the report's diagnosis and `oio tpcc run`'s closing lines.

use oio_analysis::scaling::{scaling, Scaling, StepFacts, DEFAULT_THRESHOLD_PCT};
use oio_documents::tpcc::result::Series;
use oio_documents::tpcc::TpccResult;
use std::collections::BTreeMap;

/// A result's wait groups: the bottleneck buckets, or SQLite's classes (it has no buckets).
pub fn wait_groups(r: &TpccResult) -> &[oio_documents::tpcc::waits::WaitShare] {
    if r.waits.buckets.is_empty() {
        &r.waits.classes
    } else {
        &r.waits.buckets
    }
}

/// Host CPU busy over a result's intervals (100 − idle − iowait, mean), and the largest
/// steal, percent.
fn host_cpu(r: &TpccResult) -> (Option<f64>, Option<f64>) {
    let cpus: Vec<&oio_core::result::HostCpu> = r
        .intervals
        .iter()
        .filter_map(|i| i.host_cpu.as_ref())
        .collect();
    if cpus.is_empty() {
        return (None, None);
    }
    let busy = cpus
        .iter()
        .map(|c| 100.0 - c.idle_pct - c.iowait_pct)
        .sum::<f64>()
        / cpus.len() as f64;
    let steal = cpus.iter().map(|c| c.steal_pct).fold(0.0, f64::max);
    (Some(busy), Some(steal))
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The ladder's verdict from its series and the results of its runs, found by `result(file)`
/// (a run's result file name as the series records it). None with fewer than two steps.
pub fn of_series<'a>(
    s: &Series,
    result: impl Fn(&str) -> Option<&'a TpccResult>,
) -> Option<Scaling> {
    let steps: Vec<StepFacts> = s
        .steps
        .iter()
        .map(|p| {
            let files: Vec<&str> = if s.runs.is_empty() {
                vec![p.result_file.as_str()]
            } else {
                s.runs
                    .iter()
                    .filter(|r| r.workers == p.workers)
                    .map(|r| r.result_file.as_str())
                    .collect()
            };
            let rs: Vec<&TpccResult> = files.iter().filter_map(|f| result(f)).collect();
            let mut waits: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            for r in &rs {
                for w in wait_groups(r) {
                    waits.entry(w.name.clone()).or_default().push(w.share_pct);
                }
            }
            let cpu: Vec<(Option<f64>, Option<f64>)> = rs.iter().map(|r| host_cpu(r)).collect();
            let busy: Vec<f64> = cpu.iter().filter_map(|c| c.0).collect();
            let steal: Vec<f64> = cpu.iter().filter_map(|c| c.1).collect();
            StepFacts {
                workers: p.workers,
                nopm: p.nopm,
                nopm_runs: if p.nopm_runs.is_empty() {
                    vec![p.nopm]
                } else {
                    p.nopm_runs.clone()
                },
                waits: waits
                    .into_iter()
                    .map(|(k, v)| {
                        // A run without the group had none of it.
                        let n = rs.len().max(v.len()) as f64;
                        (k, v.iter().sum::<f64>() / n)
                    })
                    .collect(),
                host_busy_pct: mean(&busy),
                steal_pct_max: steal.iter().copied().reduce(f64::max),
            }
        })
        .collect();
    let mut sorted = steps;
    sorted.sort_by_key(|s| s.workers);
    scaling(&sorted, DEFAULT_THRESHOLD_PCT)
}
