//! The sweep document (`oio.sweep` v1, `schema/sweep.schema.json`): one point per queue depth
//! (and block size and read share, for a grid), each from repeated runs, plus the knee.
//!
//! Kept here rather than in the binary so the report crate can draw sweeps it did not run.
//! Public paths: `points[]` with `qd`, `iops`, `latency_ns.p50`, `latency_ns.p99`; `knee.qd`,
//! `knee.iops`, `knee.latency_ns.p99`. A point's latencies come from the histograms of its
//! repeats merged (never averaged); its `iops` is the mean over repeats, with each repeat's
//! value in `iops_runs`. Repeats run in rounds across all points (`options.order`); every
//! run, kept or discarded as warm-up, is listed in `sequence` in the order it ran.

use crate::knee::{self, DriftCheck, Knee, KneeInput, KneeOptions, LatencyTarget, Production};
use oio_core::document::{Envelope, Kind};
use oio_core::histogram::{LatencyHistogram, LatencySummary};
use oio_core::result::{DirStats, Interval, RunResult};
use serde::{Deserialize, Serialize};

/// Schema name of sweep documents.
pub const SCHEMA: &str = Kind::Sweep.schema();
/// Schema version; bumped on incompatible changes.
pub const SCHEMA_VERSION: u32 = Kind::Sweep.version();

/// A whole sweep.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Sweep {
    /// Schema [`SCHEMA`], version, oio version, when the sweep started, command line, host,
    /// partial/stop reason and what to check (warnings).
    #[serde(flatten)]
    pub envelope: Envelope,
    /// Workload name (before per-point overrides).
    pub workload: String,
    /// Target paths.
    pub targets: Vec<String>,
    /// Engine that ran the points.
    pub engine: String,
    /// The simulated device's model when the points ran against one (null: a real target).
    #[serde(default)]
    pub simulated: Option<String>,
    /// Options as they took effect.
    pub options: SweepOptions,
    /// Every point, ordered by block size, read share, then depth.
    pub points: Vec<SweepPoint>,
    /// The knee of the first series (the only one without a grid).
    pub knee: Option<Knee>,
    /// The knee of every (bs, read_pct) series of a grid.
    pub series: Vec<SeriesKnee>,
    /// Where the production outstanding I/O lies (with --production-qd).
    pub production: Option<Production>,
    /// Every run in the order it ran, kept or discarded (empty in older documents).
    #[serde(default)]
    pub sequence: Vec<SweepRun>,
}

impl Sweep {
    /// Every result file the sweep made and keeps: its points' runs, and its drift check's,
    /// which belongs to no point.
    pub fn sources(&self) -> impl Iterator<Item = &str> {
        let checks = self.sequence.iter().filter(|r| r.check);
        self.points
            .iter()
            .flat_map(|p| p.sources.iter())
            .chain(checks.filter_map(|r| r.source.as_ref()))
            .map(String::as_str)
    }
}

/// One run of a sweep, in the order the runs were made.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SweepRun {
    /// Outstanding I/O of its point.
    pub qd: u32,
    /// Block size mix of its point (null: the workload's).
    pub bs: Option<String>,
    /// Read share of its point, percent (null: the workload's).
    pub read_pct: Option<f64>,
    /// Round, from 1: each round runs every point once (refined depths run in rounds of
    /// their own, after the grid's).
    pub round: u32,
    /// Seed of the run.
    pub seed: u64,
    /// IOPS of the run.
    pub iops: f64,
    /// Its IOPS drift, percent (null: too short to judge).
    pub drift_pct: Option<f64>,
    /// Why the point did not keep it (null: kept), e.g. warm-up: drift above the steady-state
    /// bound, rerun.
    pub discarded: Option<String>,
    /// Its result file (null for a discarded run: only this record is kept).
    pub source: Option<String>,
    /// A drift check: with one run per depth, the first point measured once more after the
    /// last, not part of its point (false in older documents).
    #[serde(default)]
    pub check: bool,
}

/// Options of the sweep.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SweepOptions {
    /// Depths swept.
    pub qd: Vec<u32>,
    /// Block sizes swept (empty: the workload's).
    pub bs: Vec<String>,
    /// Read shares swept, percent (empty: the workload's).
    pub read_pct: Vec<f64>,
    /// Measured seconds per run.
    pub time_s: f64,
    /// Ramp seconds per run.
    pub ramp_s: f64,
    /// Repeats per point.
    pub repeat: u32,
    /// Steady-state bound: |IOPS slope| × run length / mean IOPS, percent (null: not checked).
    pub steady_pct: Option<f64>,
    /// Most runs per repeat while waiting for steady state.
    pub steady_max_runs: u32,
    /// Share of peak IOPS defining the knee.
    pub knee_fraction: f64,
    /// The latency target rule's target (null: not asked for).
    #[serde(default)]
    pub latency_target: Option<LatencyTarget>,
    /// Depths added between grid points around the knee (`--refine`), and measured.
    #[serde(default)]
    pub refined_qd: Vec<u32>,
    /// Order of the repeats across the points: `counterbalanced` (each round every point once,
    /// every other round reversed), `interleaved`, `shuffled` or `as_given` (one run per
    /// depth, in the order given); null in older documents (a point's repeats back to back).
    #[serde(default)]
    pub order: Option<String>,
    /// Seed of the shuffled order (null: not shuffled).
    #[serde(default)]
    pub order_seed: Option<u64>,
}

/// Steady state of a point.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Steady {
    /// Whether every repeat ended within the bound (null when not checked).
    pub reached: Option<bool>,
    /// Largest |slope| over the point's kept runs: IOPS change over a run as a percent of its
    /// mean (null: a run had fewer than 3 intervals, too short to judge).
    pub drift_pct: Option<f64>,
    /// Runs made (including those discarded as not yet steady).
    pub runs_made: u32,
}

/// One point.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SweepPoint {
    /// Outstanding I/O.
    pub qd: u32,
    /// Block size mix of this point (null: the workload's).
    pub bs: Option<String>,
    /// Read share of this point, percent (null: the workload's).
    pub read_pct: Option<f64>,
    /// Repeats kept.
    pub runs: usize,
    /// Mean IOPS over repeats.
    pub iops: f64,
    /// IOPS of each repeat.
    pub iops_runs: Vec<f64>,
    /// Mean bytes per second over repeats.
    pub bytes_per_sec: f64,
    /// Latency from the repeats' histograms merged, ns.
    pub latency_ns: LatencySummary,
    /// Mean outstanding I/O by Little's law (mean IOPS × merged mean latency).
    pub outstanding_mean: f64,
    /// Relative standard deviation of the per-interval IOPS within the runs, percent (null:
    /// fewer than 3 full intervals). With one run per point it stands in for the noise.
    #[serde(default)]
    pub interval_cv_pct: Option<f64>,
    /// Relative standard error of one run's mean IOPS from its intervals, percent: the
    /// interval spread over √n_eff, n_eff allowing for the intervals' autocorrelation (pooled
    /// over the repeats; null: fewer than 3 full intervals). With one run per point it is the
    /// knee's noise.
    #[serde(default)]
    pub interval_se_pct: Option<f64>,
    /// Steady state.
    pub steady: Steady,
    /// Result files of the repeats.
    pub sources: Vec<String>,
    /// Runs measured while a neighbour used the host's CPU: they cap the knee's confidence.
    #[serde(default)]
    pub noisy_runs: usize,
}

/// The knee of one series of a grid.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SeriesKnee {
    /// Block size (null: the workload's).
    pub bs: Option<String>,
    /// Read share, percent (null: the workload's).
    pub read_pct: Option<f64>,
    /// The knee.
    pub knee: Option<Knee>,
}

/// Fewest intervals a run needs before its drift or spread means anything: two points always
/// lie on a line.
pub const MIN_INTERVALS: usize = 3;

/// IOPS drift of a run: least-squares slope of interval IOPS × run length / mean, percent;
/// None with fewer than [`MIN_INTERVALS`] intervals (too short to judge).
pub fn drift_pct(r: &RunResult) -> Option<f64> {
    drift_of(&r.intervals)
}

/// IOPS drift of a series of intervals, as [`drift_pct`].
pub fn drift_of(intervals: &[Interval]) -> Option<f64> {
    let xs: Vec<f64> = intervals.iter().map(|i| i.t_s).collect();
    let ys: Vec<f64> = intervals.iter().map(|i| i.total.iops).collect();
    let n = xs.len();
    if n < MIN_INTERVALS {
        return None;
    }
    let mx = xs.iter().sum::<f64>() / n as f64;
    let my = ys.iter().sum::<f64>() / n as f64;
    let sxx: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum();
    if sxx <= 0.0 || my <= 0.0 {
        return Some(0.0);
    }
    let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let span = xs[n - 1] - xs[0] + intervals[0].duration_s;
    Some((sxy / sxx * span / my * 100.0).abs())
}

/// Relative sd of a run's interval IOPS (full intervals only: the last may be cut short), a
/// fraction; None with fewer than [`MIN_INTERVALS`] of them.
pub fn interval_cv(r: &RunResult) -> Option<f64> {
    cv_of(&r.intervals)
}

/// The IOPS of the full intervals (the last may be cut short).
fn full_iops(intervals: &[Interval]) -> Vec<f64> {
    let full = intervals.iter().map(|i| i.duration_s).fold(0.0, f64::max);
    intervals
        .iter()
        .filter(|i| i.duration_s >= 0.9 * full)
        .map(|i| i.total.iops)
        .collect()
}

/// Mean and sample variance of at least [`MIN_INTERVALS`] values with a positive mean.
fn mean_var(ys: &[f64]) -> Option<(f64, f64)> {
    let n = ys.len();
    if n < MIN_INTERVALS {
        return None;
    }
    let m = ys.iter().sum::<f64>() / n as f64;
    if m <= 0.0 {
        return None;
    }
    Some((
        m,
        ys.iter().map(|y| (y - m).powi(2)).sum::<f64>() / (n - 1) as f64,
    ))
}

/// Relative sd of intervals' IOPS (full intervals only), a fraction.
pub fn cv_of(intervals: &[Interval]) -> Option<f64> {
    let (m, var) = mean_var(&full_iops(intervals))?;
    Some(var.sqrt() / m)
}

/// Relative standard error of a run's mean IOPS from its full intervals, a fraction; None
/// with fewer than [`MIN_INTERVALS`] of them.
pub fn mean_se(r: &RunResult) -> Option<f64> {
    se_of(&r.intervals)
}

/// cv / √n_eff with n_eff = n (1 − r) / (1 + r), r the lag-1 autocorrelation of the intervals'
/// IOPS (an AR(1) approximation). Successive intervals of a device are alike (a slow drift,
/// a burst spanning several), so n intervals tell less than n independent values; r from a
/// few intervals is biased low, so Kendall's correction r + (1 + 3r) / n is added, and r is
/// kept within 0..=0.9 (intervals are never taken as less alike than independent ones).
pub fn se_of(intervals: &[Interval]) -> Option<f64> {
    let ys = full_iops(intervals);
    let (m, var) = mean_var(&ys)?;
    let n = ys.len() as f64;
    let ss: f64 = ys.iter().map(|y| (y - m).powi(2)).sum();
    if ss <= 0.0 {
        return Some(0.0);
    }
    let r1 = ys.windows(2).map(|w| (w[0] - m) * (w[1] - m)).sum::<f64>() / ss;
    let r = (r1 + (1.0 + 3.0 * r1) / n).clamp(0.0, 0.9);
    let n_eff = (n * (1.0 - r) / (1.0 + r)).max(1.0);
    Some(var.sqrt() / m / n_eff.sqrt())
}

/// What a point needs of one run: its totals and its intervals.
#[derive(Clone, Copy, Debug)]
pub struct Measured<'a> {
    /// Reads and writes together.
    pub total: &'a DirStats,
    /// The intervals whose spread is the run's noise (a fleet's: those every host delivered).
    pub intervals: &'a [Interval],
    /// Measured while a neighbour used the host's CPU (`RunResult::noisy_host`).
    pub noisy: bool,
}

impl<'a> From<&'a RunResult> for Measured<'a> {
    fn from(r: &'a RunResult) -> Self {
        Measured {
            total: &r.summary.total,
            intervals: &r.intervals,
            noisy: r.noisy_host(),
        }
    }
}

/// Builds a point from its repeats.
pub fn point(
    qd: u32,
    bs: Option<String>,
    read_pct: Option<f64>,
    runs: &[RunResult],
    sources: Vec<String>,
    steady: Steady,
) -> SweepPoint {
    let m: Vec<Measured> = runs.iter().map(Measured::from).collect();
    point_of(qd, bs, read_pct, &m, sources, steady)
}

/// Builds a point from what its repeats measured (a run result's, or a fleet run's merged).
pub fn point_of(
    qd: u32,
    bs: Option<String>,
    read_pct: Option<f64>,
    runs: &[Measured],
    sources: Vec<String>,
    steady: Steady,
) -> SweepPoint {
    let n = runs.len().max(1) as f64;
    let iops_runs: Vec<f64> = runs.iter().map(|r| r.total.iops).collect();
    let iops = iops_runs.iter().sum::<f64>() / n;
    let mut merged = LatencyHistogram::new();
    let mut all_hist = true;
    for r in runs {
        match &r.total.histogram {
            Some(h) => merged += &LatencyHistogram::from_sparse(h),
            None => all_hist = false,
        }
    }
    let latency_ns = if all_hist && !merged.is_empty() {
        merged.summary()
    } else if let [one] = runs {
        // One run: nothing to combine.
        one.total.latency_ns
    } else {
        // No histograms to merge: keep only what can be combined honestly (the mean).
        let means: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.total.latency_ns.mean)
            .collect();
        LatencySummary {
            mean: (!means.is_empty()).then(|| means.iter().sum::<f64>() / means.len() as f64),
            ..Default::default()
        }
    };
    // Pooled over the repeats (root mean square), as a percent; null unless every run has one.
    let pooled = |f: fn(&[Interval]) -> Option<f64>| {
        let v: Vec<f64> = runs.iter().filter_map(|r| f(r.intervals)).collect();
        (!v.is_empty() && v.len() == runs.len())
            .then(|| (v.iter().map(|c| c * c).sum::<f64>() / v.len() as f64).sqrt() * 100.0)
    };
    SweepPoint {
        qd,
        bs,
        read_pct,
        runs: runs.len(),
        iops,
        iops_runs,
        bytes_per_sec: runs.iter().map(|r| r.total.bytes_per_sec).sum::<f64>() / n,
        outstanding_mean: iops * latency_ns.mean.unwrap_or(0.0) / 1e9,
        interval_cv_pct: pooled(cv_of),
        interval_se_pct: pooled(se_of),
        latency_ns,
        steady,
        sources,
        noisy_runs: runs.iter().filter(|r| r.noisy).count(),
    }
}

/// The knee inputs of the points of one series, sorted by depth.
pub fn knee_inputs(points: &[&SweepPoint]) -> Vec<KneeInput> {
    let mut v: Vec<KneeInput> = points
        .iter()
        .map(|p| KneeInput {
            qd: p.qd,
            iops_runs: p.iops_runs.clone(),
            latency_mean_ns: p.latency_ns.mean,
            latency_p50_ns: p.latency_ns.p50.map(|v| v as f64),
            latency_p90_ns: p.latency_ns.p90.map(|v| v as f64),
            latency_p99_ns: p.latency_ns.p99.map(|v| v as f64),
            interval_cv: p.interval_cv_pct.map(|v| v / 100.0),
            run_se: p.interval_se_pct.map(|v| v / 100.0),
            noisy_runs: p.noisy_runs,
            run_at: Vec::new(),
        })
        .collect();
    v.sort_by_key(|k| k.qd);
    v
}

/// [`knee_inputs`] with each run's place in the session (its index in `sequence`, warm-up
/// runs counted: a drift follows every run started), so the knee can estimate a drift from
/// the repeats' order. A point whose kept runs do not match the sequence gets no places.
pub fn knee_inputs_in(points: &[&SweepPoint], sequence: &[SweepRun]) -> Vec<KneeInput> {
    let mut v: Vec<(KneeInput, &SweepPoint)> = points
        .iter()
        .map(|p| (knee_inputs(&[p]).remove(0), *p))
        .collect();
    for (k, p) in &mut v {
        let at: Vec<(f64, f64)> = sequence
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                r.discarded.is_none()
                    && !r.check
                    && r.qd == p.qd
                    && r.bs == p.bs
                    && r.read_pct == p.read_pct
            })
            .map(|(i, r)| (i as f64, r.iops))
            .collect();
        let same = at.len() == k.iops_runs.len()
            && at
                .iter()
                .zip(&k.iops_runs)
                .all(|(a, b)| (a.1 - b).abs() <= 1e-6 * b.abs().max(1.0));
        if same {
            k.run_at = at.into_iter().map(|a| a.0).collect();
        }
    }
    let mut v: Vec<KneeInput> = v.into_iter().map(|x| x.0).collect();
    v.sort_by_key(|k| k.qd);
    v
}

/// The drift check of a sweep of one run per depth: its first point's run and the same
/// point measured again after the last, with their places in the session (None without a
/// kept check run, or when that point has more than its one run).
pub fn drift_check(points: &[SweepPoint], sequence: &[SweepRun]) -> Option<DriftCheck> {
    let kept = |r: &&SweepRun| r.discarded.is_none() && r.iops > 0.0;
    let (i1, again) = sequence
        .iter()
        .enumerate()
        .find(|(_, r)| r.check && kept(r))?;
    let same = |r: &SweepRun| r.qd == again.qd && r.bs == again.bs && r.read_pct == again.read_pct;
    let (i0, first) = sequence
        .iter()
        .enumerate()
        .find(|(_, r)| !r.check && kept(r) && same(r))?;
    let point = points
        .iter()
        .find(|p| p.qd == first.qd && p.bs == first.bs && p.read_pct == first.read_pct)?;
    (point.iops_runs.len() == 1 && i1 > i0).then(|| DriftCheck {
        qd: first.qd,
        first_at: i0 as f64,
        first_iops: first.iops,
        again_at: i1 as f64,
        again_iops: again.iops,
        run_se: point.interval_se_pct.map(|v| v / 100.0),
    })
}

/// Groups points into (bs, read_pct) series in first-seen order.
pub fn series(points: &[SweepPoint]) -> Vec<(Option<String>, Option<f64>, Vec<&SweepPoint>)> {
    let mut out: Vec<(Option<String>, Option<f64>, Vec<&SweepPoint>)> = Vec::new();
    for p in points {
        match out
            .iter_mut()
            .find(|(b, r, _)| *b == p.bs && *r == p.read_pct)
        {
            Some(s) => s.2.push(p),
            None => out.push((p.bs.clone(), p.read_pct, vec![p])),
        }
    }
    out
}

/// Fills `knee`, `series` and (given a depth) `production` from the points.
pub fn analyse(s: &mut Sweep, production_qd: Option<f64>) {
    let opts = KneeOptions {
        fraction: s.options.knee_fraction,
        latency_target: s.options.latency_target,
    };
    let mut knees = Vec::new();
    // A drift is the session's: the one check speaks for every series.
    let check = drift_check(&s.points, &s.sequence);
    for (i, (bs, rp, pts)) in series(&s.points).into_iter().enumerate() {
        let inputs = knee_inputs_in(&pts, &s.sequence);
        knees.push((
            SeriesKnee {
                bs,
                read_pct: rp,
                knee: knee::find_knee_checked(
                    &inputs,
                    &opts,
                    0x6b6e_6565 + i as u64,
                    check.as_ref(),
                ),
            },
            inputs,
        ));
    }
    s.knee = knees.first().and_then(|k| k.0.knee.clone());
    s.production = match (production_qd, knees.first()) {
        (Some(q), Some((SeriesKnee { knee: Some(k), .. }, inputs))) => {
            Some(knee::place_production(inputs, k, q))
        }
        _ => None,
    };
    s.series = knees.into_iter().map(|k| k.0).collect();
}

/// Depths `--refine` should add to each (bs, read_pct) series: geometric midpoints around
/// what its rules named, not yet measured.
pub fn refine_depths(s: &Sweep) -> Vec<(Option<String>, Option<f64>, Vec<u32>)> {
    series(&s.points)
        .into_iter()
        .zip(&s.series)
        .filter_map(|((bs, rp, pts), sk)| {
            let k = sk.knee.as_ref()?;
            let d = knee::refine_depths(&knee_inputs(&pts), k);
            (!d.is_empty()).then_some((bs, rp, d))
        })
        .collect()
}

/// Orders points by block size, read share (in first-seen order), then depth, so refined
/// points sit among the grid's.
pub fn sort_points(s: &mut Sweep) {
    let order: Vec<(Option<String>, Option<f64>)> = series(&s.points)
        .into_iter()
        .map(|(b, r, _)| (b, r))
        .collect();
    let key = |p: &SweepPoint| {
        order
            .iter()
            .position(|(b, r)| *b == p.bs && *r == p.read_pct)
            .unwrap_or(usize::MAX)
    };
    s.points
        .sort_by(|a, b| key(a).cmp(&key(b)).then(a.qd.cmp(&b.qd)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intervals(iops: &[f64]) -> Vec<Interval> {
        iops.iter()
            .enumerate()
            .map(|(i, &v)| {
                let mut x = Interval {
                    t_s: i as f64 + 1.0,
                    duration_s: 1.0,
                    ..Default::default()
                };
                x.total.iops = v;
                x
            })
            .collect()
    }

    #[test]
    fn drift_needs_three_intervals() {
        // Two intervals always lie on a line: too short to judge, not "0 % drift".
        assert_eq!(drift_of(&intervals(&[100.0, 200.0])), None);
        assert_eq!(drift_of(&intervals(&[100.0])), None);
        assert_eq!(cv_of(&intervals(&[100.0, 200.0])), None);
        // 100, 110, 120: slope 10/s over a 3 s run of mean 110 = 27.3 %.
        let d = drift_of(&intervals(&[100.0, 110.0, 120.0])).unwrap();
        assert!((d - 30.0 / 110.0 * 100.0).abs() < 1e-9, "{d}");
        assert_eq!(drift_of(&intervals(&[50.0, 50.0, 50.0])), Some(0.0));
        // The spread of full intervals; a cut-short last one is left out.
        let mut iv = intervals(&[90.0, 110.0, 90.0, 110.0, 5.0]);
        iv[4].duration_s = 0.1;
        let cv = cv_of(&iv).unwrap();
        assert!((cv - (400.0f64 / 3.0).sqrt() / 100.0).abs() < 1e-9, "{cv}");
    }

    #[test]
    fn the_noise_of_a_runs_mean_allows_for_alike_successive_intervals() {
        // Alternating intervals (lag-1 autocorrelation below 0): taken as independent, so
        // the mean's noise is cv / √n.
        let alt: Vec<f64> = (0..16)
            .map(|i| if i % 2 == 0 { 90.0 } else { 110.0 })
            .collect();
        let iv = intervals(&alt);
        let (cv, se) = (cv_of(&iv).unwrap(), se_of(&iv).unwrap());
        assert!((se - cv / 4.0).abs() < 1e-12, "{se} vs {cv}");
        // Two halves, 90 then 110: the same spread, but successive intervals alike, so they
        // tell little more than two values: the mean's noise is far above cv / √n.
        let halves: Vec<f64> = (0..16).map(|i| if i < 8 { 90.0 } else { 110.0 }).collect();
        let iv = intervals(&halves);
        let (cv, se) = (cv_of(&iv).unwrap(), se_of(&iv).unwrap());
        assert!(se > 2.5 * cv / 4.0, "{se} vs {cv}");
        assert!(se <= cv, "{se} vs {cv}");
        // Identical intervals: no noise; too few: unknown.
        assert_eq!(se_of(&intervals(&[5.0, 5.0, 5.0])), Some(0.0));
        assert_eq!(se_of(&intervals(&[5.0, 6.0])), None);
    }
}
