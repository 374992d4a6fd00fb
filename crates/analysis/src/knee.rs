//! The knee of a queue-depth sweep: where adding outstanding I/O stops buying throughput and
//! starts buying only latency (seed 003: fine below a queue of 16, collapse towards 800).
//!
//! The rule is stated, not fitted, so a reader can check it against the table:
//! - **knee**: the smallest depth whose mean IOPS reaches [`DEFAULT_FRACTION`] (90 %) of the
//!   peak mean IOPS of the sweep;
//! - **saturation**: the smallest depth from which every deeper point gains less than 10 %
//!   IOPS while its mean latency grows at least half as fast as the depth. By Little's law
//!   (outstanding = IOPS × latency), with IOPS flat, latency must grow in proportion to
//!   depth: that is queueing, not work.
//!
//! Uncertainty is reported two ways: the grid (the knee lies between the previous depth
//! tried and the one found), and, when points were repeated, a bootstrap over the repeats of
//! each point (resample each point's per-run IOPS, find the knee again), giving an interval of
//! depths and the share of resamples that agree with the reported knee.

use crate::stats::SeededRng;
use serde::{Deserialize, Serialize};

/// Share of the peak IOPS that defines the knee.
pub const DEFAULT_FRACTION: f64 = 0.9;
/// IOPS gain below which deeper points count as "no gain" for saturation.
pub const SATURATION_GAIN: f64 = 0.10;

/// One depth of a sweep, as the knee finder needs it.
#[derive(Clone, Debug, Default)]
pub struct KneeInput {
    /// Outstanding I/O (queue depth).
    pub qd: u32,
    /// IOPS of each repeat at this depth.
    pub iops_runs: Vec<f64>,
    /// Mean latency, ns.
    pub latency_mean_ns: Option<f64>,
    /// Median latency, ns.
    pub latency_p50_ns: Option<f64>,
    /// 99th percentile latency, ns.
    pub latency_p99_ns: Option<f64>,
}

impl KneeInput {
    fn iops(&self) -> f64 {
        if self.iops_runs.is_empty() {
            0.0
        } else {
            self.iops_runs.iter().sum::<f64>() / self.iops_runs.len() as f64
        }
    }
}

/// Latencies at the knee.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KneeLatency {
    /// Mean, ns.
    pub mean: Option<f64>,
    /// Median, ns.
    pub p50: Option<f64>,
    /// 99th percentile, ns.
    pub p99: Option<f64>,
}

/// The knee, its uncertainty and the saturation point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    /// The rule, in words.
    pub rule: String,
    /// Depth of the knee.
    pub qd: u32,
    /// Mean IOPS at the knee.
    pub iops: f64,
    /// Latency at the knee.
    pub latency_ns: KneeLatency,
    /// Highest mean IOPS of the sweep.
    pub peak_iops: f64,
    /// Depth where it was reached.
    pub peak_qd: u32,
    /// The knee's IOPS as a share of the peak, percent.
    pub pct_of_peak: f64,
    /// Grid resolution: the knee lies in (qd_range[0], qd_range[1]]; [0] is the previous depth
    /// tried (0 when the knee is the first point).
    pub qd_range: [u32; 2],
    /// Bootstrap interval of the knee depth over repeats (null without repeats).
    pub qd_ci: Option<[u32; 2]>,
    /// Share of bootstrap resamples that found this same depth (null without repeats).
    pub stability: Option<f64>,
    /// Depth from which deeper queues only add latency (null when the sweep never got there).
    pub saturation_qd: Option<u32>,
    /// One sentence for humans.
    pub summary: String,
}

/// The rule as printed.
pub fn rule_text(fraction: f64) -> String {
    format!(
        "knee = smallest depth reaching {:.0} % of the peak mean IOPS; saturation = smallest depth from which every deeper point gains < {:.0} % IOPS while mean latency grows at least half as fast as depth (Little's law: queueing without throughput)",
        fraction * 100.0,
        SATURATION_GAIN * 100.0
    )
}

fn knee_index(iops: &[f64], fraction: f64) -> Option<(usize, usize)> {
    let (peak_i, peak) = iops
        .iter()
        .copied()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    if peak <= 0.0 {
        return None;
    }
    let k = iops.iter().position(|&v| v >= fraction * peak)?;
    Some((k, peak_i))
}

fn saturation_index(points: &[KneeInput], iops: &[f64], from: usize) -> Option<usize> {
    (from..points.len().saturating_sub(1)).find(|&i| {
        let base = iops[i];
        let Some(lat_i) = points[i].latency_mean_ns else {
            return false;
        };
        points[i + 1..].iter().zip(&iops[i + 1..]).all(|(p, &v)| {
            let depth_ratio = p.qd as f64 / points[i].qd.max(1) as f64;
            let lat_ratio = p.latency_mean_ns.map_or(0.0, |l| l / lat_i.max(1e-9));
            v < base * (1.0 + SATURATION_GAIN) && lat_ratio >= 0.5 * depth_ratio
        })
    })
}

/// Finds the knee of points sorted by depth; `None` with no points or no IOPS.
pub fn find_knee(points: &[KneeInput], fraction: f64, seed: u64) -> Option<Knee> {
    let iops: Vec<f64> = points.iter().map(KneeInput::iops).collect();
    let (k, peak_i) = knee_index(&iops, fraction)?;
    let saturation = saturation_index(points, &iops, k).map(|i| points[i].qd);
    let (mut qd_ci, mut stability) = (None, None);
    if points.iter().all(|p| p.iops_runs.len() >= 2) {
        let mut rng = SeededRng::new(seed);
        let resamples = 1000;
        let mut found = Vec::with_capacity(resamples);
        let mut resampled = vec![0.0; points.len()];
        for _ in 0..resamples {
            for (r, p) in resampled.iter_mut().zip(points) {
                let n = p.iops_runs.len();
                *r = (0..n).map(|_| p.iops_runs[rng.below(n)]).sum::<f64>() / n as f64;
            }
            if let Some((kk, _)) = knee_index(&resampled, fraction) {
                found.push(kk);
            }
        }
        if !found.is_empty() {
            found.sort_unstable();
            let q = |f: f64| found[((found.len() - 1) as f64 * f).round() as usize];
            qd_ci = Some([points[q(0.025)].qd, points[q(0.975)].qd]);
            stability = Some(found.iter().filter(|&&x| x == k).count() as f64 / found.len() as f64);
        }
    }
    let p = &points[k];
    let prev = if k > 0 { points[k - 1].qd } else { 0 };
    let peak = iops[peak_i];
    let summary = format!(
        "knee at queue depth {} ({:.0} IOPS, {:.0} % of the peak {:.0} at depth {}){}{}",
        p.qd,
        iops[k],
        100.0 * iops[k] / peak,
        peak,
        points[peak_i].qd,
        match qd_ci {
            Some([lo, hi]) if lo != hi => format!("; over repeats it lies between {lo} and {hi}"),
            Some(_) => "; the same depth in every resample of the repeats".to_string(),
            None if prev > 0 => format!("; between depth {prev} (exclusive) and {}", p.qd),
            None => String::new(),
        },
        match saturation {
            Some(s) => format!("; from depth {s} on, deeper queues only add latency"),
            None => String::new(),
        }
    );
    Some(Knee {
        rule: rule_text(fraction),
        qd: p.qd,
        iops: iops[k],
        latency_ns: KneeLatency {
            mean: p.latency_mean_ns,
            p50: p.latency_p50_ns,
            p99: p.latency_p99_ns,
        },
        peak_iops: peak,
        peak_qd: points[peak_i].qd,
        pct_of_peak: 100.0 * iops[k] / peak,
        qd_range: [prev, p.qd],
        qd_ci,
        stability,
        saturation_qd: saturation,
        summary,
    })
}

/// Where a production queue depth lies against the sweep, and what latency the sweep implies.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Production {
    /// The production outstanding I/O.
    pub qd: f64,
    /// "below the knee", "between the knee and saturation", "beyond saturation" or
    /// "at or beyond the knee".
    pub position: String,
    /// IOPS the sweep implies at that depth (log-log interpolation between neighbours).
    pub iops: Option<f64>,
    /// p99 latency the sweep implies, ns.
    pub latency_p99_ns: Option<f64>,
    /// Mean latency the sweep implies, ns.
    pub latency_mean_ns: Option<f64>,
    /// One sentence.
    pub summary: String,
}

fn interp(points: &[KneeInput], qd: f64, f: impl Fn(&KneeInput) -> Option<f64>) -> Option<f64> {
    let first = points.first()?;
    let last = points.last()?;
    if qd <= first.qd as f64 {
        return f(first);
    }
    if qd >= last.qd as f64 {
        return f(last);
    }
    let i = points.iter().position(|p| p.qd as f64 >= qd)?;
    let (a, b) = (&points[i - 1], &points[i]);
    let (ya, yb) = (f(a)?, f(b)?);
    if ya <= 0.0 || yb <= 0.0 {
        return Some(ya + (yb - ya) * (qd - a.qd as f64) / (b.qd - a.qd) as f64);
    }
    let t = (qd.ln() - (a.qd as f64).ln()) / ((b.qd as f64).ln() - (a.qd as f64).ln());
    Some((ya.ln() + t * (yb.ln() - ya.ln())).exp())
}

/// Places a production depth against the knee.
pub fn place_production(points: &[KneeInput], knee: &Knee, qd: f64) -> Production {
    let position = if qd < knee.qd as f64 {
        "below the knee"
    } else if let Some(s) = knee.saturation_qd {
        if qd < s as f64 {
            "between the knee and saturation"
        } else {
            "beyond saturation"
        }
    } else {
        "at or beyond the knee"
    };
    let iops = interp(points, qd, |p| Some(p.iops()));
    let p99 = interp(points, qd, |p| p.latency_p99_ns);
    let mean = interp(points, qd, |p| p.latency_mean_ns);
    let outside = points
        .last()
        .is_some_and(|l| qd > l.qd as f64 || qd < points[0].qd as f64);
    let summary = format!(
        "production outstanding I/O {qd:.1} is {position} (knee {}){}{}",
        knee.qd,
        match p99 {
            Some(v) => format!(
                "; the sweep implies p99 latency ≈ {} and mean ≈ {} there",
                oio_core::units::format_ns(v),
                mean.map(oio_core::units::format_ns).unwrap_or("-".into())
            ),
            None => String::new(),
        },
        if outside {
            " (outside the swept depths: the nearest point is used)"
        } else {
            ""
        }
    );
    Production {
        qd,
        position: position.into(),
        iops,
        latency_p99_ns: p99,
        latency_mean_ns: mean,
        summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device that serves `per_qd` IOPS per outstanding I/O up to `peak`, with latency from
    /// Little's law; `noise` spreads the repeats.
    fn curve(per_qd: f64, peak: f64, noise: f64, repeats: usize, seed: u64) -> Vec<KneeInput> {
        let mut rng = SeededRng::new(seed);
        [1u32, 2, 4, 8, 16, 32, 64, 128, 256]
            .iter()
            .map(|&qd| {
                let iops = (qd as f64 * per_qd).min(peak);
                let lat = qd as f64 / iops * 1e9;
                KneeInput {
                    qd,
                    iops_runs: (0..repeats)
                        .map(|_| iops * (1.0 + noise * rng.normal()))
                        .collect(),
                    latency_mean_ns: Some(lat),
                    latency_p50_ns: Some(lat * 0.9),
                    latency_p99_ns: Some(lat * 3.0),
                }
            })
            .collect()
    }

    #[test]
    fn knee_of_a_clean_saturating_curve() {
        // 10k IOPS per outstanding I/O, 160k peak: 90 % of peak (144k) first at depth 16.
        let pts = curve(10_000.0, 160_000.0, 0.0, 1, 1);
        let k = find_knee(&pts, DEFAULT_FRACTION, 1).unwrap();
        assert_eq!(k.qd, 16);
        assert_eq!(k.qd_range, [8, 16]);
        assert_eq!(k.saturation_qd, Some(16));
        assert!((k.iops - 160_000.0).abs() < 1.0);
        assert!((k.latency_ns.mean.unwrap() - 100_000.0).abs() < 1.0);
        assert!(k.qd_ci.is_none());
        assert!(k.rule.contains("90 %"));
    }

    #[test]
    fn knee_before_the_plateau_and_no_saturation_when_still_rising() {
        // Michaelis-Menten-like: iops = 100k * qd / (qd + 4). The observed peak is 98.5k at
        // depth 256, so 90 % of it (88.6k) is first reached at 32 (88.9k). From 32, depth 256
        // still gains 10.8 %: not saturated; from 64 on every deeper point gains < 10 % while
        // latency grows with depth, so saturation is 64.
        let pts: Vec<KneeInput> = [1u32, 2, 4, 8, 16, 32, 64, 128, 256]
            .iter()
            .map(|&qd| {
                let iops = 100_000.0 * qd as f64 / (qd as f64 + 4.0);
                KneeInput {
                    qd,
                    iops_runs: vec![iops],
                    latency_mean_ns: Some(qd as f64 / iops * 1e9),
                    ..Default::default()
                }
            })
            .collect();
        let k = find_knee(&pts, DEFAULT_FRACTION, 1).unwrap();
        assert_eq!(k.qd, 32);
        assert_eq!(k.saturation_qd, Some(64));
        // A sweep that stops while IOPS still climb fast has no saturation point.
        let k = find_knee(&pts[..4], DEFAULT_FRACTION, 1).unwrap();
        assert_eq!(k.qd, 8);
        assert_eq!(k.saturation_qd, None);
    }

    #[test]
    fn repeats_give_an_interval_that_contains_the_true_knee() {
        let pts = curve(10_000.0, 160_000.0, 0.03, 5, 9);
        let k = find_knee(&pts, DEFAULT_FRACTION, 2).unwrap();
        let [lo, hi] = k.qd_ci.unwrap();
        assert!(lo <= 16 && 16 <= hi, "{lo}..{hi}");
        assert!(k.stability.unwrap() > 0.5);
    }

    #[test]
    fn production_depth_is_placed_and_interpolated() {
        let pts = curve(10_000.0, 160_000.0, 0.0, 1, 1);
        let k = find_knee(&pts, DEFAULT_FRACTION, 1).unwrap();
        let p = place_production(&pts, &k, 4.0);
        assert_eq!(p.position, "below the knee");
        assert!((p.iops.unwrap() - 40_000.0).abs() < 1.0);
        let p = place_production(&pts, &k, 100.0);
        assert_eq!(p.position, "beyond saturation");
        // Between 64 and 128 the latency grows with depth: at 100, about 625 us mean.
        assert!((p.latency_mean_ns.unwrap() - 625_000.0).abs() < 10_000.0);
        assert!(p.summary.contains("beyond saturation"));
    }
}
