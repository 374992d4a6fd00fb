//! Little's law where the knee cannot be placed: a depth at which, beyond the noise, at least
//! half of the outstanding I/Os waited. The device then serves fewer than half of that depth at
//! once, wherever below it the knee lies. A plateau needs several flat points to show through
//! run-to-run noise; this needs one point far enough beyond the device's concurrency.

use super::{sd_upper, KneeInput, NoiseModel, NOISE_Z};
use serde::{Deserialize, Serialize};

/// The shallowest depth from which on, beyond the noise, at least half of the I/Os waited.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Waited {
    /// The depth.
    pub qd: u32,
    /// Mean IOPS there.
    pub iops: f64,
    /// Unloaded latency, ns, fitted to every point kept: latency flat up to the device's
    /// concurrency, then growing in proportion to the depth.
    pub unloaded_latency_ns: f64,
    /// I/Os in service there by Little's law: IOPS × the unloaded latency.
    pub in_service: f64,
    /// Its 95 % upper bound (the noise of the point and of the unloaded latency).
    pub in_service_upper: f64,
    /// σ of a point's ln IOPS the bound allowed for, percent: the points' scatter about the
    /// fit at its 95 % upper bound, or a point's own noise when larger.
    pub noise_pct: f64,
}

impl Waited {
    /// "by Little's law 16,000 IOPS × 1.00 ms unloaded ≈ 16.0 I/Os in service of qd 256 (at
    /// most 31.0 allowing for a σ of 12 % in a point's IOPS), so more than half of them waited".
    pub fn text(&self) -> String {
        format!(
            "by Little's law {} IOPS × {} unloaded ≈ {:.1} I/Os in service of qd {} (at most {:.1} allowing for a σ of {:.0} % in a point's IOPS), so more than half of them waited",
            super::fmt_iops(self.iops),
            oio_core::units::format_ns(self.unloaded_latency_ns),
            self.in_service,
            self.qd,
            self.in_service_upper,
            self.noise_pct
        )
    }
}

/// The fewest points the fit needs: two parameters, and two degrees of freedom left for the
/// scatter (one says nothing of how far a point may stray).
const MIN_POINTS: usize = 4;

/// Break depths tried per factor e of depth when fitting.
const FIT_STEPS_PER_E: f64 = 64.0;

/// The latency model fitted: ln latency = a + max(0, ln qd − c), i.e. every I/O in service up
/// to e^c outstanding and the rest waiting. Returns a and the residual σ.
fn fit(xy: &[(f64, f64)]) -> (f64, f64) {
    let lo = xy.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let hi = xy.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max) + 1.0;
    let steps = ((hi - lo) * FIT_STEPS_PER_E).ceil().max(1.0) as usize;
    let n = xy.len() as f64;
    let mut best = (f64::INFINITY, 0.0);
    for s in 0..=steps {
        let c = lo + (hi - lo) * s as f64 / steps as f64;
        let bend = |x: f64| (x - c).max(0.0);
        let a = xy.iter().map(|&(x, y)| y - bend(x)).sum::<f64>() / n;
        let rss: f64 = xy.iter().map(|&(x, y)| (y - a - bend(x)).powi(2)).sum();
        if rss < best.0 {
            best = (rss, a);
        }
    }
    let df = n - 2.0;
    (best.1, (best.0 / df).sqrt())
}

/// The latency fit over the kept points with latency: their indices, the unloaded latency
/// (ns), the σ of a point's ln IOPS to allow for, and the 95 % margin of one point's I/Os in
/// service (its own noise and that of the unloaded latency fitted from n points). None with
/// fewer than [`MIN_POINTS`] points.
struct Fitted {
    idx: Vec<usize>,
    l0: f64,
    sigma: f64,
    margin: f64,
}

fn fitted(points: &[KneeInput], iops: &[f64], keep: &[bool], noise: &NoiseModel) -> Option<Fitted> {
    let idx: Vec<usize> = (0..points.len())
        .filter(|&i| keep[i] && iops[i] > 0.0)
        .filter(|&i| points[i].latency_mean_ns.is_some_and(|l| l > 0.0))
        .collect();
    if idx.len() < MIN_POINTS {
        return None;
    }
    let xy: Vec<(f64, f64)> = idx
        .iter()
        .map(|&i| {
            let x = (points[i].qd.max(1) as f64).ln();
            (x, points[i].latency_mean_ns.unwrap_or(1.0).ln())
        })
        .collect();
    let (a, sd) = fit(&xy);
    let n = idx.len() as f64;
    let own = idx
        .iter()
        .filter_map(|&i| noise.sigma[i])
        .fold(0.0f64, f64::max);
    let sigma = sd_upper(sd, n - 2.0)?.max(own);
    Some(Fitted {
        idx,
        l0: a.exp(),
        sigma,
        margin: NOISE_Z * sigma * (1.0 + 1.0 / n).sqrt(),
    })
}

/// I/Os in service at point `i` by Little's law (its IOPS × the fitted unloaded latency) at
/// the 95 % upper bound of its noise: below the point's depth, some of its I/Os waited beyond
/// the noise. None when the fit cannot be made.
pub(super) fn in_service_upper(
    points: &[KneeInput],
    iops: &[f64],
    keep: &[bool],
    noise: &NoiseModel,
    i: usize,
) -> Option<f64> {
    let f = fitted(points, iops, keep, noise)?;
    Some(iops[i] * f.l0 / 1e9 * f.margin.exp())
}

/// The shallowest kept depth from which on every kept point had, beyond the noise, at least
/// half its I/Os waiting, and whose IOPS are not below the sweep's most beyond the noise (a
/// run slowed by something else shows fewer I/Os in service too: it must not be the
/// evidence). None without latency, with fewer than [`MIN_POINTS`] points, or when no depth
/// shows it.
pub(super) fn waited(
    points: &[KneeInput],
    iops: &[f64],
    keep: &[bool],
    noise: &NoiseModel,
) -> Option<Waited> {
    let Fitted {
        idx,
        l0,
        sigma,
        margin,
    } = fitted(points, iops, keep, noise)?;
    let top = idx.iter().map(|&i| iops[i]).fold(0.0f64, f64::max);
    let half_waited = |i: usize| {
        let q = points[i].qd as f64;
        (q / (iops[i] * l0 / 1e9)).ln() - 2f64.ln() >= margin
    };
    let near_top = |i: usize| (top / iops[i]).ln() <= NOISE_Z * sigma * 2f64.sqrt();
    let from = (0..idx.len()).find(|&j| idx[j..].iter().all(|&i| half_waited(i)))?;
    let i = idx[from];
    if !near_top(i) {
        return None;
    }
    let in_service = iops[i] * l0 / 1e9;
    Some(Waited {
        qd: points[i].qd,
        iops: iops[i],
        unloaded_latency_ns: l0,
        in_service,
        in_service_upper: in_service * margin.exp(),
        noise_pct: sigma * 100.0,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{find_knee, noise, KneeOptions};
    use super::*;

    const GRID: [u32; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];

    /// One run per depth of `k` servers of 1 ms, each run's IOPS times its factor (a run-to-run
    /// wiggle); latency by Little's law (mean = depth ÷ IOPS).
    fn servers(grid: &[u32], k: f64, factor: &[f64]) -> Vec<KneeInput> {
        grid.iter()
            .zip(factor.iter().cycle())
            .map(|(&qd, f)| {
                let iops = (qd as f64).min(k) * 1e3 * f;
                KneeInput {
                    qd,
                    iops_runs: vec![iops],
                    latency_mean_ns: Some(qd as f64 / iops * 1e9),
                    ..Default::default()
                }
            })
            .collect()
    }

    fn waited_of(pts: &[KneeInput]) -> Option<Waited> {
        let iops: Vec<f64> = pts.iter().map(KneeInput::iops).collect();
        waited(pts, &iops, &vec![true; pts.len()], &noise(pts))
    }

    const WIGGLE: [f64; 3] = [1.0, 1.03, 0.97];

    #[test]
    fn half_waiting_starts_a_doubling_beyond_the_servers() {
        // 16 servers: at qd 32 exactly half wait (not beyond the noise), at 64 three quarters.
        let w = waited_of(&servers(&GRID, 16.0, &WIGGLE)).unwrap();
        assert_eq!(w.qd, 64);
        assert!((w.in_service - 16.0).abs() < 1.0, "{w:?}");
        assert!(w.in_service_upper < 32.0, "{w:?}");
        assert!(
            w.text().contains("I/Os in service of qd 64"),
            "{}",
            w.text()
        );
    }

    #[test]
    fn nothing_waited_on_a_device_wider_than_the_sweep() {
        assert_eq!(waited_of(&servers(&GRID, 1024.0, &WIGGLE)), None);
    }

    #[test]
    fn a_slowed_top_run_is_not_evidence() {
        // Servers beyond the sweep; the deepest run 2× slower (half "in service": not beyond
        // it) or 5× slower (more than half waited, but a fall below the sweep's most IOPS).
        for slow in [2.0, 5.0] {
            let mut pts = servers(&GRID, 1024.0, &WIGGLE);
            let top = pts.last_mut().unwrap();
            top.iops_runs[0] /= slow;
            top.latency_mean_ns = top.latency_mean_ns.map(|l| l * slow);
            assert_eq!(waited_of(&pts), None, "slowed {slow}×");
        }
    }

    #[test]
    fn scatter_widens_the_bound_until_only_the_deepest_point_shows_it() {
        // A coarse grid of 5 single runs scattered ±20 %: the fit's σ from 3 degrees of
        // freedom, at its upper bound, allows for far more, so only qd 256 (16 of 256 in
        // service) is beyond it.
        let pts = servers(&[1, 4, 16, 64, 256], 16.0, &[1.0, 1.2, 0.8]);
        let w = waited_of(&pts).unwrap();
        assert_eq!(w.qd, 256, "{w:?}");
        assert!(w.noise_pct > 20.0, "{w:?}");
        // Fewer points than the fit needs: no claim.
        assert_eq!(waited_of(&pts[..3]), None);
    }

    #[test]
    fn the_knee_records_it() {
        let pts = servers(&GRID, 16.0, &WIGGLE);
        let k = find_knee(&pts, &KneeOptions::default(), 1).unwrap();
        assert_eq!(k.waited.map(|w| w.qd), Some(64));
    }
}
