//! A host ladder (`oio fleet scale`): the same plan on 1, 2, 4, … N hosts, each step a fleet
//! run; scaling efficiency against the first step and the step where it falls below a
//! threshold, or "undecided" where the steps' noise is larger than the difference.
//!
//! Efficiency of step k = (merged rate_k ÷ hosts_k) ÷ (merged rate_1 ÷ hosts_1): 1.0 is linear.
//! Each step's noise is the standard error of its merged rate: with repeats (`--repeat`), from
//! the spread of the repeats' rates (run-to-run: what a rerun would see); otherwise from its
//! intervals (relative standard deviation of the full-length intervals ÷ √n, taking them as
//! independent, which within one run understates it). The efficiency's margin is twice its
//! relative error (the two steps' in quadrature).

// The ladder's types are documents (the report reads them back): defined in oio-documents.
pub use oio_documents::fleet::{Ladder, Scaled, Step};

use oio_core::document::{Envelope, StopReason};
use oio_documents::fleet::{FleetResult, FleetTpccResult};
use std::time::Duration;

/// 1, 2, 4, … below `n`, and `n`.
pub fn default_steps(n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = std::iter::successors(Some(1usize), |k| k.checked_mul(2))
        .take_while(|k| *k < n)
        .collect();
    v.push(n);
    v
}

/// The threshold asked for, checked: a positive efficiency.
pub fn check_threshold(t: f64) -> Result<(), String> {
    if !(t > 0.0 && t.is_finite()) {
        return Err("--threshold: a positive efficiency, e.g. 0.8".into());
    }
    Ok(())
}

/// The steps asked for (or 1, 2, 4, … and all), checked against the `hosts` given.
pub fn steps_of(asked: Option<&[usize]>, hosts: usize) -> Result<Vec<usize>, String> {
    let steps = asked.map_or_else(|| default_steps(hosts), <[usize]>::to_vec);
    if steps.is_empty()
        || steps.windows(2).any(|w| w[0] >= w[1])
        || steps[0] == 0
        || steps[steps.len() - 1] > hosts
    {
        return Err(format!(
            "--steps: increasing host counts from 1 to the {hosts} hosts given, e.g. 1,2,4"
        ));
    }
    Ok(steps)
}

/// The order of the steps in round `round`: ascending, then descending (counterbalanced), so
/// a drift over the ladder's time (caches, a database growing, a neighbour) falls on every
/// step alike.
fn round_order(round: usize, steps: usize) -> Vec<usize> {
    if round.is_multiple_of(2) {
        (0..steps).collect()
    } else {
        (0..steps).rev().collect()
    }
}

/// A step's folder: `hostsK`, then `hostsK-2`, … for its repeats.
pub fn step_dir(k: usize, round: usize) -> String {
    match round {
        0 => format!("hosts{k}"),
        r => format!("hosts{k}-{}", r + 1),
    }
}

/// One run of one step, as [`rounds`] takes it.
pub struct StepRun {
    /// The step as this run measured it.
    pub step: Step,
    /// Ctrl-C stopped the run.
    pub interrupted: bool,
    /// Why the run ended early (a host missing, Ctrl-C), when it did.
    pub ended: Option<StopReason>,
}

/// Runs every step `repeat` times in counterbalanced rounds through `one(hosts, round)`; a
/// step of several runs is their mean ([`repeated`]). The ladder ends at the first run
/// interrupted or cut short (a step with a host missing is not comparable), said in
/// `envelope`. Returns the steps and whether it was interrupted.
pub fn rounds<E>(
    steps: &[usize],
    repeat: usize,
    envelope: &mut Envelope,
    mut one: impl FnMut(usize, usize) -> Result<StepRun, E>,
) -> Result<(Vec<Step>, bool), E> {
    let mut runs: Vec<Vec<Step>> = vec![Vec::new(); steps.len()];
    let mut interrupted = false;
    'rounds: for round in 0..repeat {
        for si in round_order(round, steps.len()) {
            let r = one(steps[si], round)?;
            runs[si].push(r.step);
            if let Some(why) = r.ended {
                interrupted = r.interrupted;
                envelope.stopped(why);
                break 'rounds;
            }
        }
    }
    let done = runs
        .into_iter()
        .filter(|r| !r.is_empty())
        .map(|r| repeated(r, repeat))
        .collect();
    Ok((done, interrupted))
}

/// One step of a ladder from its runs (`repeat` asked): one run as it is; several with their
/// rates' mean, each run's rate and result, complete only when every run was.
fn repeated(mut runs: Vec<Step>, repeat: usize) -> Step {
    if repeat < 2 {
        return runs.remove(0);
    }
    let rates: Vec<f64> = runs.iter().map(|r| r.rate).collect();
    let files: Vec<String> = runs.iter().map(|r| r.result_file.clone()).collect();
    let complete = runs.len() == repeat && runs.iter().all(|r| r.complete);
    let mut s = runs.remove(0);
    s.rate = rates.iter().sum::<f64>() / rates.len() as f64;
    s.repeat_rates = rates;
    s.result_files = files;
    s.complete = complete;
    s
}

/// One step from its merged result: the rates of the intervals every host delivered in full
/// (a short last interval or one with a host missing is not the step's rate).
pub fn io_step(hosts: usize, doc: &FleetResult, file: &str) -> Step {
    let longest = doc
        .intervals
        .iter()
        .map(|i| i.duration_s)
        .fold(0.0, f64::max);
    let interval_rates = doc
        .intervals
        .iter()
        .zip(&doc.hosts_per_interval)
        .filter(|(i, &n)| n == hosts && i.duration_s >= 0.99 * longest)
        .map(|(i, _)| i.total.iops)
        .collect();
    Step {
        hosts,
        rate: doc.summary.total.iops,
        interval_rates,
        p99_ns: doc.summary.total.latency_ns.p99,
        result_file: file.to_string(),
        complete: !doc.envelope.partial,
        repeat_rates: Vec::new(),
        result_files: Vec::new(),
    }
}

/// One TPC-C step from its merged result: the NOPM of the intervals every host delivered in
/// full. An interval counts when at least half the asked length (the window's short last one
/// is not the step's rate; one closed a little late under load still is, its NOPM being over
/// its own length).
pub fn tpcc_step(hosts: usize, doc: &FleetTpccResult, file: &str, interval: Duration) -> Step {
    let full = 0.5 * interval.as_secs_f64();
    let mut prev = 0.0;
    let mut interval_rates = Vec::new();
    for i in &doc.intervals {
        if i.hosts == hosts && i.t_s - prev >= full {
            interval_rates.push(i.nopm);
        }
        prev = i.t_s;
    }
    Step {
        hosts,
        rate: doc.summary.nopm,
        interval_rates,
        p99_ns: doc.summary.new_order_latency_ns.p99,
        result_file: file.to_string(),
        complete: !doc.envelope.partial,
        repeat_rates: Vec::new(),
        result_files: Vec::new(),
    }
}

/// How a ladder of `repeat` runs per step was measured, said in its document.
pub fn method(tpcc: bool, repeat: usize) -> String {
    match (tpcc, repeat > 1) {
        (false, true) => format!("each step is {repeat} fleet runs on the first hosts listed (the steps interleaved, ascending then descending); a step's rate is its runs' mean; efficiency = (merged rate ÷ hosts) ÷ the first step's; its margin is two standard errors of the two steps' rates from run to run"),
        (false, false) => "each step is one fleet run on the first hosts listed; efficiency = (merged rate ÷ hosts) ÷ the first step's; its margin is two standard errors of the two steps' rates (from their full-length intervals, taken as independent, which understates the run-to-run spread: give --repeat 2 or more for that)".into(),
        (true, true) => format!("each step is {repeat} fleet TPC-C runs on the first hosts listed (the steps interleaved, ascending then descending), each host on its own database; a step's NOPM is its runs' mean; efficiency = (merged NOPM ÷ hosts) ÷ the first step's; its margin is two standard errors of the two steps' NOPM from run to run; above 1 is flagged, since adding hosts cannot make each do more"),
        (true, false) => "each step is one fleet TPC-C run on the first hosts listed, each host on its own database; efficiency = (merged NOPM ÷ hosts) ÷ the first step's; its margin is two standard errors of the two steps' NOPM (from their full-length intervals, taken as independent, which understates the run-to-run spread: give --repeat 2 or more for that); above 1 is flagged, since adding hosts cannot make each do more".into(),
    }
}

/// The ladder document (`scale.json` of `oio fleet scale`): the steps and the verdict.
#[derive(Debug, serde::Serialize)]
pub struct ScaleDoc<'a> {
    /// Schema, command line, label, host; partial when cut short.
    #[serde(flatten)]
    pub envelope: Envelope,
    /// The workload's name.
    pub workload: String,
    /// The steps and the verdict.
    #[serde(flatten)]
    pub ladder: &'a Ladder,
}

/// The TPC-C ladder document (`scale.json` of `oio fleet tpcc scale`): the plan of each
/// step, the steps and the verdict.
#[derive(Debug, serde::Serialize)]
pub struct TpccScaleDoc<'a> {
    /// Schema, command line, label, host; partial when cut short.
    #[serde(flatten)]
    pub envelope: Envelope,
    /// Workers (connections) on each host.
    pub workers: u32,
    /// What the rates are: "NOPM".
    pub unit: &'static str,
    /// The steps and the verdict.
    #[serde(flatten)]
    pub ladder: &'a Ladder,
}

/// A step's noise: from its repeats when it has two or more, else from its intervals.
fn step_noise(s: &Step) -> Option<f64> {
    if s.repeat_rates.len() >= 2 {
        spread(&s.repeat_rates, 2)
    } else {
        spread(&s.interval_rates, 3)
    }
}

/// Relative standard error of a series' mean, or None with fewer than 3 values or a mean of 0.
#[cfg(test)]
fn noise(rates: &[f64]) -> Option<f64> {
    spread(rates, 3)
}

/// Relative standard error of a series' mean, or None with fewer than `least` values or a
/// mean of 0.
fn spread(rates: &[f64], least: usize) -> Option<f64> {
    let n = rates.len();
    if n < least.max(2) {
        return None;
    }
    let mean = rates.iter().sum::<f64>() / n as f64;
    if mean <= 0.0 {
        return None;
    }
    let var = rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    Some(var.sqrt() / mean / (n as f64).sqrt())
}

/// The ladder's efficiencies and verdict.
pub fn ladder(steps: Vec<Step>, threshold: f64) -> Ladder {
    let first = steps.first().cloned();
    let base = first
        .as_ref()
        .filter(|f| f.complete && f.rate > 0.0 && f.hosts > 0)
        .map(|f| (f.rate / f.hosts as f64, step_noise(f)));
    let scaled: Vec<Scaled> = steps
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            let per_host = if s.hosts > 0 {
                s.rate / s.hosts as f64
            } else {
                0.0
            };
            let nz = step_noise(&s);
            let (efficiency, margin) = match base {
                // The base itself: 1 by definition, no margin against itself.
                Some(_) if i == 0 => (Some(1.0), None),
                Some((b, bn)) if s.complete => {
                    let e = per_host / b;
                    let m = match (nz, bn) {
                        (Some(a), Some(b)) => Some(2.0 * e * (a * a + b * b).sqrt()),
                        _ => None,
                    };
                    (Some(e), m)
                }
                _ => (None, None),
            };
            let flag = efficiency.and_then(|e| above_one(s.hosts, e, margin));
            Scaled {
                step: s,
                per_host,
                noise: nz,
                efficiency,
                margin,
                flag,
            }
        })
        .collect();
    let (below_at, undecided_at, verdict) = verdict(&scaled, threshold);
    Ladder {
        threshold,
        steps: scaled,
        below_at,
        undecided_at,
        verdict,
    }
}

/// An efficiency above 1: each host did more than on its own in the first step, which adding
/// hosts cannot cause; noise when within the margin, a difference between the steps beyond it.
fn above_one(hosts: usize, e: f64, margin: Option<f64>) -> Option<String> {
    if e <= 1.0 {
        return None;
    }
    Some(match margin {
        Some(m) if e - m > 1.0 => format!(
            "{hosts} hosts: efficiency {e:.3} ± {m:.3} is above 1 beyond its noise: adding hosts cannot make each do more, so the steps differ (warmer caches or databases, a faster host added, the first step slowed by something else); check them before believing either"
        ),
        Some(m) => format!(
            "{hosts} hosts: efficiency {e:.3} ± {m:.3} is above 1 within its noise: taken as noise, not as better than linear scaling"
        ),
        None => format!(
            "{hosts} hosts: efficiency {e:.3} is above 1, its noise unknown: taken as noise, not as better than linear scaling"
        ),
    })
}

fn verdict(steps: &[Scaled], t: f64) -> (Option<usize>, Vec<usize>, String) {
    let fmt = |s: &Scaled| match (s.efficiency, s.margin) {
        (Some(e), Some(m)) => format!("{e:.3} ± {m:.3}"),
        (Some(e), None) => format!("{e:.3} (noise unknown)"),
        _ => "-".into(),
    };
    let Some(first) = steps.first() else {
        return (None, Vec::new(), "undecided: no step ran".into());
    };
    if first.efficiency.is_none() {
        return (
            None,
            Vec::new(),
            format!(
                "undecided: the first step ({} host{}) did not complete with a rate to compare against",
                first.step.hosts,
                if first.step.hosts == 1 { "" } else { "s" }
            ),
        );
    }
    // A step whose hosts each did more than the first step's beyond the noise: the steps
    // differ (the first slowed by something else, caches warmed between them), so the first is
    // no base to judge scaling against, whatever the other steps say.
    let unlike: Vec<&Scaled> = steps[1..]
        .iter()
        .filter(|s| matches!((s.efficiency, s.margin), (Some(e), Some(m)) if e - m > 1.0))
        .collect();
    if !unlike.is_empty() {
        let hosts: Vec<usize> = unlike.iter().map(|s| s.step.hosts).collect();
        let v = format!(
            "undecided: at {} hosts each host did more than in the first step beyond the noise ({}): the steps differ, so the first step is no base for scaling; rerun the ladder (a quieter machine, databases and caches warmed alike)",
            join(&hosts),
            unlike.iter().map(|s| fmt(s)).collect::<Vec<_>>().join(", ")
        );
        return (None, hosts, v);
    }
    let mut undecided = Vec::new();
    for s in &steps[1..] {
        let h = s.step.hosts;
        let (Some(e), Some(m)) = (s.efficiency, s.margin) else {
            undecided.push(h);
            continue;
        };
        if e + m < t {
            let mut v = format!(
                "scaling efficiency falls below {t:.2} at {h} hosts ({}, against {} host{})",
                fmt(s),
                first.step.hosts,
                if first.step.hosts == 1 { "" } else { "s" }
            );
            if !undecided.is_empty() {
                v.push_str(&format!(
                    "; undecided at {} hosts: the steps' noise is larger than the difference from the threshold",
                    join(&undecided)
                ));
            }
            return (Some(h), undecided, v);
        }
        if e - m < t {
            undecided.push(h);
        }
    }
    let last = steps.last().map(|s| s.step.hosts).unwrap_or(0);
    if undecided.is_empty() {
        let low = steps[1..]
            .iter()
            .filter_map(|s| Some((s.efficiency?, s)))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        let v = match low {
            Some((_, s)) => format!(
                "scaling efficiency stays at or above {t:.2} through {last} hosts (lowest {} at {} hosts)",
                fmt(s),
                s.step.hosts
            ),
            None => "undecided: only one step".into(),
        };
        (None, undecided, v)
    } else {
        let v = format!(
            "undecided: at {} hosts the efficiency's margin straddles {t:.2} (the steps' noise is larger than the difference, or unknown with fewer than 3 intervals or a step cut short); no step is below it beyond its noise",
            join(&undecided)
        );
        (None, undecided, v)
    }
}

fn join(v: &[usize]) -> String {
    v.iter()
        .map(|h| h.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_steps_double_up_to_every_host() {
        assert_eq!(default_steps(1), [1]);
        assert_eq!(default_steps(4), [1, 2, 4]);
        assert_eq!(default_steps(6), [1, 2, 4, 6]);
    }

    #[test]
    fn steps_must_increase_within_the_hosts() {
        assert_eq!(steps_of(None, 3).unwrap(), [1, 2, 3]);
        assert_eq!(steps_of(Some(&[1, 3]), 3).unwrap(), [1, 3]);
        for bad in [&[2, 1][..], &[0, 1], &[1, 4], &[]] {
            assert!(steps_of(Some(bad), 3).unwrap_err().starts_with("--steps"));
        }
        assert!(check_threshold(0.0).is_err() && check_threshold(0.8).is_ok());
    }

    #[test]
    fn rounds_alternate_and_average_the_repeats() {
        let mut env = Envelope::new("t", 1);
        let mut order = Vec::new();
        let (done, interrupted) = rounds(&[1, 2], 2, &mut env, |k, round| {
            order.push((k, round));
            let mut s = step(k, 100.0 + round as f64 * 10.0, 0.0);
            s.result_file = step_dir(k, round);
            Ok::<_, ()>(StepRun {
                step: s,
                interrupted: false,
                ended: None,
            })
        })
        .unwrap();
        assert_eq!(order, [(1, 0), (2, 0), (2, 1), (1, 1)]);
        assert!(!interrupted);
        assert_eq!(done[0].rate, 105.0);
        assert_eq!(done[1].result_files, ["hosts2", "hosts2-2"]);
    }

    fn step(hosts: usize, per_host: f64, wobble: f64) -> Step {
        let r = per_host * hosts as f64;
        Step {
            hosts,
            rate: r,
            interval_rates: vec![r * (1.0 - wobble), r, r * (1.0 + wobble), r],
            p99_ns: None,
            result_file: String::new(),
            complete: true,
            repeat_rates: Vec::new(),
            result_files: Vec::new(),
        }
    }

    /// Issue 39: with repeats, a step's noise is its repeats' spread, not its intervals':
    /// two identical 1-host steps gave 12,125 and 9,120 NOPM while each run's intervals were
    /// steady, so the margin must come from run to run.
    #[test]
    fn repeats_give_the_margin_from_run_to_run() {
        let mut one = step(1, 10_622.5, 0.001);
        one.repeat_rates = vec![12_125.0, 9_120.0];
        let mut two = step(2, 10_000.0, 0.001);
        two.repeat_rates = vec![20_000.0, 20_000.0];
        let l = ladder(vec![one, two], 0.8);
        // Mean 10,622.5, sd 2,124.9 (n − 1): relative standard error 0.1414.
        let n = l.steps[0].noise.unwrap();
        assert!((n - 2124.85 / 10_622.5 / 2f64.sqrt()).abs() < 1e-5, "{n}");
        assert_eq!(l.steps[1].noise, Some(0.0));
        let e = l.steps[1].efficiency.unwrap();
        assert_eq!(e, 10_000.0 / 10_622.5);
        assert_eq!(l.steps[1].margin, Some(2.0 * e * n));
        // From the intervals alone the margin would have been near 0.
        assert!(noise(&l.steps[0].step.interval_rates).unwrap() < 0.001);
    }

    #[test]
    fn linear_steps_stay_above_and_a_clear_drop_is_named() {
        let l = ladder(vec![step(1, 1000.0, 0.0), step(2, 1000.0, 0.0)], 0.8);
        assert_eq!(l.steps[1].efficiency, Some(1.0));
        assert_eq!(l.below_at, None);
        assert!(l.verdict.starts_with("scaling efficiency stays at or above 0.80 through 2 hosts (lowest 1.000 ± 0.000 at 2 hosts)"), "{}", l.verdict);
        let l = ladder(
            vec![
                step(1, 1000.0, 0.01),
                step(2, 950.0, 0.01),
                step(4, 600.0, 0.01),
                step(8, 300.0, 0.01),
            ],
            0.8,
        );
        assert_eq!(l.below_at, Some(4));
        assert!(l.undecided_at.is_empty());
        assert!(
            l.verdict
                .starts_with("scaling efficiency falls below 0.80 at 4 hosts (0.600 ± "),
            "{}",
            l.verdict
        );
    }

    /// A difference smaller than the noise is undecided, never a confident answer.
    #[test]
    fn noise_larger_than_the_difference_is_undecided() {
        // 0.78 against 0.80 with ±20 % intervals: the margin covers the threshold.
        let l = ladder(vec![step(1, 1000.0, 0.2), step(2, 780.0, 0.2)], 0.8);
        assert_eq!(l.below_at, None);
        assert_eq!(l.undecided_at, [2]);
        assert!(
            l.verdict.starts_with("undecided: at 2 hosts"),
            "{}",
            l.verdict
        );
        // Noise from one wobbling interval in four: sd = r·w·√(2/3), ÷ √4; both steps.
        let m = l.steps[1].margin.unwrap();
        let want = 2.0 * 0.78 * (2.0f64).sqrt() * 0.2 * (2.0f64 / 3.0).sqrt() / 2.0;
        assert!((m - want).abs() < 1e-12, "{m} vs {want}");
        // Too few intervals: the noise is unknown, so undecided.
        let mut short = step(2, 500.0, 0.0);
        short.interval_rates.truncate(2);
        let l = ladder(vec![step(1, 1000.0, 0.0), short], 0.8);
        assert_eq!(l.undecided_at, [2]);
        // A first step that did not complete decides nothing.
        let mut bad = step(1, 1000.0, 0.0);
        bad.complete = false;
        let l = ladder(vec![bad, step(2, 1000.0, 0.0)], 0.8);
        assert!(
            l.verdict.starts_with("undecided: the first step"),
            "{}",
            l.verdict
        );
    }

    /// Above 1 is flagged: as noise within the margin, as a difference between the steps
    /// beyond it; exactly 1 (or below) is not.
    #[test]
    fn efficiency_above_one_is_flagged() {
        let l = ladder(
            vec![
                step(1, 1000.0, 0.2),
                step(2, 1050.0, 0.2),
                step(4, 1500.0, 0.01),
                step(8, 1000.0, 0.01),
            ],
            0.8,
        );
        assert_eq!(l.steps[0].flag, None);
        let f = l.steps[1].flag.as_deref().unwrap();
        assert!(
            f.starts_with("2 hosts: efficiency 1.050 ± ")
                && f.ends_with(
                    "above 1 within its noise: taken as noise, not as better than linear scaling"
                ),
            "{f}"
        );
        // 1.5 ± 2 × 1.5 × √(0.2² + 0.01²) × √(2/3) ÷ 2 ≈ 0.245: beyond the noise.
        let f = l.steps[2].flag.as_deref().unwrap();
        assert!(
            f.starts_with("4 hosts: efficiency 1.500 ± 0.245 is above 1 beyond its noise"),
            "{f}"
        );
        assert_eq!(l.steps[3].flag, None);
        // The 4-host step differs from the first beyond the noise: no verdict on scaling.
        assert!(
            l.verdict.starts_with("undecided: at 4 hosts each host did more than in the first step beyond the noise (1.500 ± 0.245)"),
            "{}",
            l.verdict
        );
        assert_eq!((l.below_at, l.undecided_at.clone()), (None, vec![4]));
        let json = serde_json::to_value(&l).unwrap();
        assert!(json["steps"][3].get("flag").is_none(), "{json}");
    }
}
