//! Where scaling stops, and why: a worker (or host) ladder's efficiency per step, the step
//! after which it falls below a stated threshold, and the waits and host CPU that grew across
//! that step.
//!
//! Efficiency at a step is NOPM per worker against the first step's NOPM per worker (100 % =
//! linear). The stop is called only when the run-to-run spread agrees: every run of the step
//! must be below the threshold against the first step's best run (and the step before's runs
//! above it against the first step's worst); with one run per step nothing measured the noise,
//! so the reading is given but the verdict is "undecided".

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Default threshold: below 70 % of linear, adding workers mostly adds waiting.
pub const DEFAULT_THRESHOLD_PCT: f64 = 70.0;

/// What one step of a ladder measured.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct StepFacts {
    /// Workers (or hosts) at this step.
    pub workers: u32,
    /// The step's NOPM (the median of its runs).
    pub nopm: f64,
    /// Each run's NOPM (their spread is the noise; one value: not measured).
    pub nopm_runs: Vec<f64>,
    /// Wait groups, percent of the profile, mean over the step's runs.
    pub waits: BTreeMap<String, f64>,
    /// Host CPU busy (100 − idle − iowait), percent of all CPUs, mean over the step's runs.
    pub host_busy_pct: Option<f64>,
    /// Largest steal seen in the step's intervals, percent.
    pub steal_pct_max: Option<f64>,
}

/// The verdict on a ladder.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Scaling {
    /// Efficiency per step, percent of linear (the first step is 100).
    pub efficiency_pct: Vec<f64>,
    /// The threshold, percent.
    pub threshold_pct: f64,
    /// "holds" (never below the threshold), "stops" or "undecided".
    pub status: String,
    /// The last worker count before efficiency falls below the threshold.
    pub stops_after: Option<u32>,
    /// One sentence: "scaling stops after 2 workers: efficiency 58 % at 4 (threshold 70 %);
    /// lock waits 3 % → 41 %, host CPU 95 %".
    pub summary: String,
    /// The numbers behind it, one per line.
    pub evidence: Vec<String>,
}

/// "1 worker", "4 workers".
fn workers(n: u32) -> String {
    if n == 1 {
        "1 worker".into()
    } else {
        format!("{n} workers")
    }
}

fn eff(nopm: f64, workers: u32, base_per_worker: f64) -> f64 {
    if workers == 0 || base_per_worker <= 0.0 {
        return f64::NAN;
    }
    nopm / workers as f64 / base_per_worker * 100.0
}

/// Judges a ladder (steps in increasing worker order; at least two).
pub fn scaling(steps: &[StepFacts], threshold_pct: f64) -> Option<Scaling> {
    if steps.len() < 2 || steps[0].workers == 0 || steps[0].nopm <= 0.0 {
        return None;
    }
    let base = steps[0].nopm / steps[0].workers as f64;
    let efficiency: Vec<f64> = steps.iter().map(|s| eff(s.nopm, s.workers, base)).collect();
    let line = steps
        .iter()
        .zip(&efficiency)
        .map(|(s, e)| format!("{} → {e:.0} %", s.workers))
        .collect::<Vec<_>>()
        .join(", ");
    let mut evidence = vec![format!(
        "efficiency by workers (throughput per worker against {}'s): {line}",
        steps[0].workers
    )];
    let Some(i) = efficiency.iter().position(|e| *e < threshold_pct) else {
        let one_run = steps.iter().any(|s| s.nopm_runs.len() < 2);
        let first = &steps[0];
        let base_hi = first
            .nopm_runs
            .iter()
            .map(|n| n / first.workers as f64)
            .fold(base, f64::max);
        let straddles = steps.iter().skip(1).any(|s| {
            s.nopm_runs
                .iter()
                .any(|n| eff(*n, s.workers, base_hi) < threshold_pct)
        });
        let caveat = if one_run {
            "; one run per count measured no noise, so this is a reading, not a verdict (--repeat 3)"
        } else if straddles {
            "; undecided: some runs fall below it, so the runs' spread straddles the threshold (more repeats, or a quieter host)"
        } else {
            ""
        };
        return Some(Scaling {
            efficiency_pct: efficiency.clone(),
            threshold_pct,
            status: if one_run || straddles { "undecided" } else { "holds" }.into(),
            stops_after: None,
            summary: format!(
                "scaling holds up to {}: efficiency stays at or above {threshold_pct:.0} % ({line}){caveat}",
                workers(steps.last().map_or(0, |s| s.workers)),
            ),
            evidence,
        });
    };
    let (before, at) = (&steps[i - 1], &steps[i]);
    // Every run of the step below, every run of the step before at or above: the spread agrees.
    let runs = |s: &StepFacts| {
        if s.nopm_runs.is_empty() {
            vec![s.nopm]
        } else {
            s.nopm_runs.clone()
        }
    };
    // The first step's own runs are noise too: judged at its least and most favourable run.
    let first = runs(&steps[0]);
    let per_worker = |n: f64| n / steps[0].workers as f64;
    let base_lo = first
        .iter()
        .copied()
        .map(per_worker)
        .fold(f64::INFINITY, f64::min);
    let base_hi = first.iter().copied().map(per_worker).fold(0.0, f64::max);
    let all_below = runs(at)
        .iter()
        .all(|n| eff(*n, at.workers, base_lo) < threshold_pct);
    let before_above = i == 1
        || runs(before)
            .iter()
            .all(|n| eff(*n, before.workers, base_hi) >= threshold_pct);
    let measured = at.nopm_runs.len() >= 2 && steps[0].nopm_runs.len() >= 2;
    let why = why(before, at);
    evidence.extend(why.1.iter().cloned());
    let status = if measured && all_below && before_above {
        "stops"
    } else {
        "undecided"
    };
    let caveat = match (measured, all_below && before_above) {
        (false, _) => "; one run per count measured no noise, so this is a reading, not a verdict (--repeat 3)".to_string(),
        (true, false) => "; undecided: the runs' spread straddles the threshold (more repeats, or a quieter host)".to_string(),
        (true, true) => String::new(),
    };
    Some(Scaling {
        efficiency_pct: efficiency.clone(),
        threshold_pct,
        status: status.into(),
        stops_after: Some(before.workers),
        summary: format!(
            "scaling {} after {}: efficiency {:.0} % at {} (threshold {threshold_pct:.0} %){}{caveat}",
            if status == "stops" { "stops" } else { "seems to stop" },
            workers(before.workers),
            efficiency[i],
            at.workers,
            why.0
        ),
        evidence,
    })
}

/// The waits that grew most across the stop, and the host CPU at the step: (" : lock 3 % →
/// 41 %, host CPU 95 %", evidence lines).
fn why(before: &StepFacts, at: &StepFacts) -> (String, Vec<String>) {
    let mut grew: Vec<(&String, f64, f64)> = at
        .waits
        .iter()
        .map(|(k, v)| (k, before.waits.get(k).copied().unwrap_or(0.0), *v))
        .filter(|(_, a, b)| b - a >= 5.0)
        .collect();
    grew.sort_by(|x, y| (y.2 - y.1).total_cmp(&(x.2 - x.1)));
    let mut parts: Vec<String> = grew
        .iter()
        .take(2)
        .map(|(k, a, b)| format!("{k} waits {a:.0} % → {b:.0} %"))
        .collect();
    let mut evidence: Vec<String> = grew
        .iter()
        .map(|(k, a, b)| {
            format!(
                "{k}: {a:.1} % of the wait profile at {}, {b:.1} % at {}",
                workers(before.workers),
                at.workers
            )
        })
        .collect();
    if let Some(c) = at.host_busy_pct {
        parts.push(format!("host CPU {c:.0} % busy"));
        evidence.push(format!(
            "host CPU busy at {}: {c:.0} %{}",
            workers(at.workers),
            before.host_busy_pct.map_or(String::new(), |b| format!(
                " ({b:.0} % at {})",
                before.workers
            ))
        ));
    }
    if let Some(s) = at.steal_pct_max.filter(|s| *s >= 1.0) {
        parts.push(format!("steal up to {s:.0} %"));
        evidence.push(format!(
            "hypervisor steal up to {s:.0} % at {}: a neighbour took CPU",
            workers(at.workers)
        ));
    }
    if grew.is_empty() {
        evidence.push("no wait group grew by 5 points or more across the step".into());
    }
    let text = if parts.is_empty() {
        String::new()
    } else {
        format!(": {}", parts.join(", "))
    };
    (text, evidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(workers: u32, runs: &[f64], lock: f64, cpu: f64) -> StepFacts {
        let mut v = runs.to_vec();
        v.sort_by(f64::total_cmp);
        StepFacts {
            workers,
            nopm: v[v.len() / 2],
            nopm_runs: runs.to_vec(),
            waits: [("row_locks".to_string(), lock)].into_iter().collect(),
            host_busy_pct: Some(cpu),
            steal_pct_max: Some(0.0),
        }
    }

    #[test]
    fn the_stop_is_named_with_the_waits_that_grew_when_every_run_agrees() {
        let s = scaling(
            &[
                step(1, &[1000.0, 1010.0, 990.0], 3.0, 40.0),
                step(2, &[1900.0, 1950.0, 1920.0], 5.0, 70.0),
                step(4, &[2300.0, 2250.0, 2280.0], 41.0, 95.0),
            ],
            DEFAULT_THRESHOLD_PCT,
        )
        .unwrap();
        assert_eq!(s.status, "stops");
        assert_eq!(s.stops_after, Some(2));
        assert!(
            (s.efficiency_pct[2] - 57.0).abs() < 0.1,
            "{:?}",
            s.efficiency_pct
        );
        assert!(
            s.summary.starts_with("scaling stops after 2 workers: efficiency 57 % at 4 (threshold 70 %): row_locks waits 5 % → 41 %, host CPU 95 % busy"),
            "{}",
            s.summary
        );
    }

    #[test]
    fn single_runs_or_a_straddling_spread_leave_it_undecided() {
        let one = scaling(
            &[
                step(1, &[1000.0], 3.0, 40.0),
                step(4, &[2000.0], 30.0, 90.0),
            ],
            DEFAULT_THRESHOLD_PCT,
        )
        .unwrap();
        assert_eq!(one.status, "undecided");
        assert!(one.summary.contains("--repeat 3"), "{}", one.summary);
        let straddle = scaling(
            &[
                step(1, &[1000.0, 1000.0], 3.0, 40.0),
                step(2, &[1300.0, 1500.0], 3.0, 40.0),
            ],
            DEFAULT_THRESHOLD_PCT,
        )
        .unwrap();
        assert_eq!(straddle.status, "undecided", "{}", straddle.summary);
        assert!(
            straddle.summary.contains("straddles"),
            "{}",
            straddle.summary
        );
        let holds = scaling(
            &[
                step(1, &[1000.0, 1000.0], 3.0, 40.0),
                step(2, &[1950.0, 1990.0], 3.0, 60.0),
            ],
            DEFAULT_THRESHOLD_PCT,
        )
        .unwrap();
        assert_eq!(holds.status, "holds");
        assert_eq!(holds.stops_after, None);
        // A noisy first step (720 and 2,158 NOPM) cannot anchor a stop its best run would undo.
        let noisy = scaling(
            &[
                step(1, &[2158.0, 720.0], 3.0, 40.0),
                step(2, &[2280.0, 3864.0], 3.0, 40.0),
                step(4, &[2460.0, 3569.0], 30.0, 100.0),
            ],
            DEFAULT_THRESHOLD_PCT,
        )
        .unwrap();
        assert_eq!(noisy.status, "undecided", "{}", noisy.summary);
    }
}
