//! Statistics for "is B really different from A?": a percentile bootstrap for confidence
//! intervals, Welch's t-test on log values, the Mann–Whitney U rank test, and Hochberg's adjustment
//! when many such questions are asked at once (every one at level α would make some "different"
//! by chance).
//!
//! Why these: repeated benchmark runs are few (2 to 10). The rank test assumes no shape but
//! cannot reach p < 0.05 below 4 runs a side, and the percentile bootstrap is too narrow at
//! such counts (it resamples 3 values). So with few runs oio uses Welch's t-test (hyperfine's
//! choice for benchmark runs) on the logarithms of the per-run values, which assumes run-to-run noise is
//! log-normal (multiplicative: "±5 %") and runs are independent, and does not assume equal
//! noise in both groups. With many runs the rank test needs no such assumption.
//! The units of resampling are *runs*, never per-second samples: seconds of one run are
//! autocorrelated and would make every difference look significant.
//!
//! Everything random here takes an explicit seed, so a comparison printed twice is printed the
//! same, and the unit tests check the methods against distributions with known answers
//! (interval coverage, the rank test's false-positive rate).

use statrs::distribution::{ContinuousCDF, StudentsT};

/// The default number of bootstrap resamples.
pub const DEFAULT_RESAMPLES: usize = 2000;

/// A small, fast, seeded generator (SplitMix64), so results are reproducible across platforms
/// and versions of any random crate.
#[derive(Clone, Debug)]
pub struct SeededRng(u64);

impl SeededRng {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Self {
        SeededRng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform index below `n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// A uniform float in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A standard normal draw (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = self.unit().max(f64::MIN_POSITIVE);
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

/// A confidence interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Interval {
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
}

impl Interval {
    /// True when `v` lies inside (bounds included).
    pub fn contains(&self, v: f64) -> bool {
        self.low <= v && v <= self.high
    }
}

/// Percentile bootstrap of a two-sample statistic.
///
/// `stat(a_idx, b_idx)` computes the statistic from resampled run indices of group A
/// (`0..na`) and group B (`0..nb`); each group is resampled with replacement on its own (the
/// groups are independent). Returns the central `level` interval (e.g. 0.95) of the resampled
/// statistics, or `None` when a group has fewer than two runs or the statistic is undefined in
/// more than half of the resamples.
pub fn bootstrap_two_sample<F>(
    na: usize,
    nb: usize,
    level: f64,
    resamples: usize,
    seed: u64,
    mut stat: F,
) -> Option<Interval>
where
    F: FnMut(&[usize], &[usize]) -> Option<f64>,
{
    if na < 2 || nb < 2 || resamples == 0 {
        return None;
    }
    let mut rng = SeededRng::new(seed);
    let mut ia = vec![0usize; na];
    let mut ib = vec![0usize; nb];
    let mut values = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        ia.iter_mut().for_each(|i| *i = rng.below(na));
        ib.iter_mut().for_each(|i| *i = rng.below(nb));
        if let Some(v) = stat(&ia, &ib) {
            if v.is_finite() {
                values.push(v);
            }
        }
    }
    if values.len() * 2 < resamples {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let alpha = (1.0 - level.clamp(0.0, 1.0)) / 2.0;
    Some(Interval {
        low: order_stat(&values, alpha),
        high: order_stat(&values, 1.0 - alpha),
    })
}

/// The `q` quantile of sorted values, interpolated between order statistics.
fn order_stat(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// The result of a Mann–Whitney U (Wilcoxon rank-sum) test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RankTest {
    /// U of the first sample (number of pairs where a > b, ties counting one half).
    pub u: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// True when the p-value is from the exact distribution of U (small samples, no ties);
    /// false when from the normal approximation with tie and continuity corrections.
    pub exact: bool,
    /// The smallest two-sided p-value possible with these sample sizes: when it is above the
    /// test level, no data could ever be called significant.
    pub min_p_value: f64,
}

/// Largest total sample size for which the exact distribution is computed.
const EXACT_MAX_N: usize = 60;

/// Two-sided Mann–Whitney U test of `a` against `b`. `None` when a sample is empty.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<RankTest> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let mut u = 0.0f64;
    for x in a {
        for y in b {
            u += if x > y {
                1.0
            } else if x == y {
                0.5
            } else {
                0.0
            };
        }
    }
    let ties = has_ties(a, b);
    let min_p_value = (2.0 / binomial(n1 + n2, n1)).min(1.0);
    if !ties && n1 + n2 <= EXACT_MAX_N {
        let dist = u_distribution(n1, n2);
        let total: f64 = dist.iter().sum();
        let k = u.round() as usize;
        let lower: f64 = dist[..=k].iter().sum::<f64>() / total;
        let upper: f64 = dist[k..].iter().sum::<f64>() / total;
        return Some(RankTest {
            u,
            p_value: (2.0 * lower.min(upper)).min(1.0),
            exact: true,
            min_p_value,
        });
    }
    // Normal approximation with the tie correction of the variance.
    let n = (n1 + n2) as f64;
    let mut all: Vec<f64> = a.iter().chain(b).copied().collect();
    all.sort_by(f64::total_cmp);
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        while j + 1 < all.len() && all[j + 1] == all[i] {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        i = j + 1;
    }
    let (f1, f2) = (n1 as f64, n2 as f64);
    let mean = f1 * f2 / 2.0;
    let var = f1 * f2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    let p_value = if var <= 0.0 {
        1.0
    } else {
        let z = ((u - mean).abs() - 0.5).max(0.0) / var.sqrt();
        (2.0 * (1.0 - normal_cdf(z))).min(1.0)
    };
    Some(RankTest {
        u,
        p_value,
        exact: false,
        min_p_value,
    })
}

fn has_ties(a: &[f64], b: &[f64]) -> bool {
    let mut all: Vec<f64> = a.iter().chain(b).copied().collect();
    all.sort_by(f64::total_cmp);
    all.windows(2).any(|w| w[0] == w[1])
}

/// Counts of each value of U (0..=n1·n2) over all arrangements of n1 + n2 distinct values.
fn u_distribution(n1: usize, n2: usize) -> Vec<f64> {
    // f[i][j] = distribution for sizes i, j; recurrence on whether the largest value is from
    // sample 1 (adds j to U) or sample 2.
    let mut prev: Vec<Vec<f64>> = (0..=n2).map(|_| vec![1.0]).collect(); // i = 0
    for i in 1..=n1 {
        let mut cur: Vec<Vec<f64>> = Vec::with_capacity(n2 + 1);
        cur.push(vec![1.0]); // j = 0
        for j in 1..=n2 {
            let mut d = vec![0.0; i * j + 1];
            for (k, c) in prev[j].iter().enumerate() {
                d[k + j] += c;
            }
            for (k, c) in cur[j - 1].iter().enumerate() {
                d[k] += c;
            }
            cur.push(d);
        }
        prev = cur;
    }
    prev.swap_remove(n2)
}

fn binomial(n: usize, k: usize) -> f64 {
    let k = k.min(n - k);
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// The standard normal distribution function (erfc-based, absolute error below 1.2e-7).
pub fn normal_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

fn erfc(x: f64) -> f64 {
    // Chebyshev fit of erfc (Numerical Recipes form); fractional error below 1.2e-7.
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// Welch's t-test of a log ratio between two groups of per-run values: B against A.
///
/// On logs, "B is x % above A" is a difference, and multiplicative noise (the usual kind: a run
/// is "5 % slower") becomes additive, as the t-test wants. The ratio is either of geometric
/// means ([`welch_log`]) or of any group values the caller chose ([`welch_log_ratio`]: `oio
/// compare` tests the ratio it prints, so its margin, interval and direction are of one number).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WelchLog {
    /// ln(B / A) of the tested ratio.
    pub log_ratio: f64,
    /// Standard error of `log_ratio`.
    pub se: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value from Student's t with `df` degrees of freedom.
    pub p_value: f64,
    /// Sample variances of ln a and ln b.
    pub var_log: [f64; 2],
    /// Runs: [a, b].
    pub n: [usize; 2],
}

impl WelchLog {
    /// The `level` interval of the ratio of geometric means, as percent change ((ratio − 1) × 100).
    pub fn interval_pct(&self, level: f64) -> Interval {
        let h = self.half_width(level);
        Interval {
            low: ((self.log_ratio - h).exp() - 1.0) * 100.0,
            high: ((self.log_ratio + h).exp() - 1.0) * 100.0,
        }
    }

    /// Half-width of the `level` interval on the log scale (0 when there is no noise).
    fn half_width(&self, level: f64) -> f64 {
        if self.se == 0.0 {
            return 0.0;
        }
        t_quantile(0.5 + level.clamp(0.0, 0.999_999) / 2.0, self.df) * self.se
    }

    /// The smallest change (percent, in either direction) this noise and these run counts
    /// let the test call significant at `alpha`: differences inside ±this cannot be told
    /// from noise here.
    pub fn detectable_pct(&self, alpha: f64) -> f64 {
        (self.half_width(1.0 - alpha).exp() - 1.0) * 100.0
    }

    /// Runs a side (equal counts) at which a test at `alpha` would detect a true change of
    /// `effect` (a log ratio, either direction) with probability `power`, if the noise stays
    /// as measured; `None` when that needs more than `max` runs (or `effect` is 0). An
    /// estimate: the measured noise is itself uncertain at small n.
    pub fn runs_needed(&self, effect: f64, alpha: f64, power: f64, max: usize) -> Option<usize> {
        let d = effect.abs();
        let [va, vb] = self.var_log;
        if d == 0.0 || !d.is_finite() {
            return None;
        }
        let start = self.n[0].max(self.n[1]).max(2);
        (start..=max).find(|&n| {
            let nf = n as f64;
            let se = ((va + vb) / nf).sqrt();
            if se == 0.0 {
                return true;
            }
            let df = welch_df(va, n, vb, n).unwrap_or(2.0 * (nf - 1.0));
            d / se >= t_quantile(1.0 - alpha / 2.0, df) + t_quantile(power, df)
        })
    }
}

fn welch_df(va: f64, na: usize, vb: f64, nb: usize) -> Option<f64> {
    let (qa, qb) = (va / na as f64, vb / nb as f64);
    let den = qa * qa / (na - 1) as f64 + qb * qb / (nb - 1) as f64;
    (den > 0.0).then(|| (qa + qb).powi(2) / den)
}

/// Welch's t-test of ln b against ln a: the ratio of geometric means. `None` when a side has
/// fewer than two values, a value is not positive and finite (a log needs it), or neither side
/// varies at all (no spread: there is no noise to test a difference against, and a p-value of 0
/// would call a difference between copies of one run certain).
pub fn welch_log(a: &[f64], b: &[f64]) -> Option<WelchLog> {
    let la = logs(a)?;
    let lb = logs(b)?;
    let ratio = mean_var(&lb).0 - mean_var(&la).0;
    welch_log_ratio(ratio, a, b, [0.0, 0.0])
}

/// Welch's t-test of a given log ratio `log_ratio` = ln(B / A) of two group values, its standard
/// error from the run-to-run variance of the logs of the per-run values (the delta method:
/// the log of a group value of n runs varies about as their mean log does, var / n).
/// `var_floor` is the smallest log variance each side can honestly have (values rounded to a
/// histogram bucket vary at least by the rounding); 0 for exact values. `None` as
/// [`welch_log`], or when `log_ratio` is not finite.
pub fn welch_log_ratio(
    log_ratio: f64,
    a: &[f64],
    b: &[f64],
    var_floor: [f64; 2],
) -> Option<WelchLog> {
    let la = logs(a)?;
    let lb = logs(b)?;
    let (na, nb) = (la.len(), lb.len());
    if na < 2 || nb < 2 || !log_ratio.is_finite() {
        return None;
    }
    let va = mean_var(&la).1.max(var_floor[0]);
    let vb = mean_var(&lb).1.max(var_floor[1]);
    let df = welch_df(va, na, vb, nb)?;
    let se = (va / na as f64 + vb / nb as f64).sqrt();
    let p_value = (2.0 * t_sf((log_ratio / se).abs(), df)).min(1.0);
    Some(WelchLog {
        log_ratio,
        se,
        df,
        p_value,
        var_log: [va, vb],
        n: [na, nb],
    })
}

fn logs(x: &[f64]) -> Option<Vec<f64>> {
    x.iter()
        .map(|v| (v.is_finite() && *v > 0.0).then(|| v.ln()))
        .collect()
}

/// Hochberg's step-up adjustment of the p-values of a family of tests: the i-th smallest of m
/// is multiplied by m − i + 1, and each adjusted value is the smallest of those at its rank
/// or above. Rejecting every test whose adjusted p is below α keeps the chance of any false
/// rejection in the family at most α when the tests are independent or positively dependent
/// (Sarkar 1998), as metrics measured on the same runs are: IOPS, MiB/s and mean latency of a
/// closed loop are nearly one test, and Hochberg then calls them together where Holm would
/// divide α by their number. It rejects everything Holm rejects. Same order as `p`; NaN
/// stays NaN and is not counted.
pub fn hochberg(p: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..p.len()).filter(|&i| !p[i].is_nan()).collect();
    order.sort_by(|&x, &y| p[x].total_cmp(&p[y]));
    let m = order.len();
    let mut out = vec![f64::NAN; p.len()];
    let mut running = 1.0f64;
    for (rank, &i) in order.iter().enumerate().rev() {
        running = running.min(((m - rank) as f64 * p[i]).min(1.0));
        out[i] = running;
    }
    out
}

fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    let v = x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, v)
}

fn students_t(df: f64) -> Option<StudentsT> {
    StudentsT::new(0.0, 1.0, df).ok()
}

/// P(T > t) for Student's t with `df` degrees of freedom.
pub fn t_sf(t: f64, df: f64) -> f64 {
    students_t(df).map_or(f64::NAN, |d| d.sf(t))
}

/// The `p` quantile of Student's t with `df` degrees of freedom (`p` in (0, 1)).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    match students_t(df) {
        Some(d) if p > 0.0 && p < 1.0 => d.inverse_cdf(p),
        _ => f64::NAN,
    }
}

/// The mean of repeated runs' values with Student's t interval and the run-to-run cv.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeanInterval {
    /// Mean of the values.
    pub mean: f64,
    /// Lower end of the interval (not below 0: the values are rates).
    pub low: f64,
    /// Upper end of the interval.
    pub high: f64,
    /// Sample standard deviation over the mean, percent.
    pub cv_pct: f64,
}

/// Student's t interval of the mean of `values` at `level` (0.95): with 2 to 5 runs a
/// bootstrap is far too narrow. None with fewer than 2 values.
pub fn mean_t_interval(values: &[f64], level: f64) -> Option<MeanInterval> {
    let n = values.len();
    let sd = crate::summary_stats::stdev(values)?;
    let mean = values.iter().sum::<f64>() / n as f64;
    let h = t_quantile(0.5 + level / 2.0, (n - 1) as f64) * sd / (n as f64).sqrt();
    Some(MeanInterval {
        mean,
        low: (mean - h).max(0.0),
        high: mean + h,
        cv_pct: 100.0 * sd / mean.max(1e-9),
    })
}

/// Arithmetic mean of the values at `idx`.
pub fn mean_at(values: &[f64], idx: &[usize]) -> Option<f64> {
    (!idx.is_empty()).then(|| idx.iter().map(|&i| values[i]).sum::<f64>() / idx.len() as f64)
}

/// Percentile of the histograms at `idx` merged (buckets `[value, count]`, value the bucket's
/// upper bound, as in result files), clamped to the merged minimum and maximum.
pub fn merged_quantile(hists: &[MergeableHist], idx: &[usize], q: f64) -> Option<f64> {
    let mut buckets: Vec<[u64; 2]> = Vec::new();
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    for &i in idx {
        let h = &hists[i];
        buckets.extend_from_slice(&h.buckets);
        lo = lo.min(h.min);
        hi = hi.max(h.max);
    }
    let total: u64 = buckets.iter().map(|b| b[1]).sum();
    if total == 0 {
        return None;
    }
    buckets.sort_unstable_by_key(|b| b[0]);
    let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for [v, c] in buckets {
        seen += c;
        if seen >= rank {
            return Some(v.clamp(lo, hi) as f64);
        }
    }
    Some(hi as f64)
}

/// A run's latency histogram reduced to what merging needs.
#[derive(Clone, Debug, Default)]
pub struct MergeableHist {
    /// `[upper bound ns, count]` per non-empty bucket.
    pub buckets: Vec<[u64; 2]>,
    /// Exact minimum, ns.
    pub min: u64,
    /// Exact maximum, ns.
    pub max: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_t_interval_of_three_runs() {
        // mean 10, sd 1, n 3: half-width t(0.975, 2) = 4.303 × 1 / √3 = 2.484.
        let m = mean_t_interval(&[9.0, 10.0, 11.0], 0.95).unwrap();
        assert!((m.mean - 10.0).abs() < 1e-12);
        assert!((m.high - 12.484).abs() < 1e-3, "{m:?}");
        assert!((m.low - 7.516).abs() < 1e-3, "{m:?}");
        assert!((m.cv_pct - 10.0).abs() < 1e-9);
        assert!(mean_t_interval(&[5.0], 0.95).is_none());
    }

    fn sample(rng: &mut SeededRng, n: usize, mean: f64, sd: f64) -> Vec<f64> {
        (0..n).map(|_| mean + sd * rng.normal()).collect()
    }

    #[test]
    fn exact_u_distribution_matches_hand_counts() {
        // n1 = n2 = 2: U takes 0,1,2,2,3,4 over the 6 arrangements.
        assert_eq!(u_distribution(2, 2), vec![1.0, 1.0, 2.0, 1.0, 1.0]);
        // Sizes 3 and 3: 20 arrangements; the most extreme p is 2/20.
        let t = mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert!(t.exact);
        assert_eq!(t.u, 0.0);
        assert!((t.p_value - 0.1).abs() < 1e-12, "{t:?}");
        assert!((t.min_p_value - 0.1).abs() < 1e-12);
        // n = 4 + 4 can reach 2/70.
        let t = mann_whitney(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]).unwrap();
        assert!((t.p_value - 2.0 / 70.0).abs() < 1e-12);
        // Identical samples in ranks: p = 1.
        let t = mann_whitney(&[1.0, 4.0], &[2.0, 3.0]).unwrap();
        assert!((t.p_value - 1.0).abs() < 1e-12, "{t:?}");
    }

    #[test]
    fn student_t_matches_tables() {
        // Two-sided 5 % critical values from any t table.
        for (df, crit) in [(2.0, 4.302_653), (4.0, 2.776_445), (10.0, 2.228_139)] {
            assert!((t_quantile(0.975, df) - crit).abs() < 1e-5, "df {df}");
            assert!((t_sf(crit, df) - 0.025).abs() < 1e-7, "df {df}");
        }
        assert!(t_quantile(1.0, 3.0).is_nan());
    }

    #[test]
    fn welch_on_logs_matches_an_independent_computation() {
        // Reference: the formulas evaluated separately, the t tail integrated numerically.
        let w = welch_log(&[100.0, 110.0, 95.0], &[150.0, 160.0, 140.0, 155.0]).unwrap();
        assert!((w.log_ratio - 0.397_876_681).abs() < 1e-8, "{w:?}");
        assert!((w.se - 0.051_589_802).abs() < 1e-8);
        assert!((w.df - 3.681_586_382).abs() < 1e-8);
        assert!((w.p_value - 0.002_117_668).abs() < 1e-6, "{w:?}");
        // The interval of the ratio is around exp(log_ratio) and excludes 0 % here.
        let c = w.interval_pct(0.95);
        let mid = (w.log_ratio.exp() - 1.0) * 100.0;
        assert!(c.low > 0.0 && c.low < mid && mid < c.high, "{c:?}");
        // Swapping the groups mirrors the result.
        let v = welch_log(&[150.0, 160.0, 140.0, 155.0], &[100.0, 110.0, 95.0]).unwrap();
        assert!((v.log_ratio + w.log_ratio).abs() < 1e-12 && (v.p_value - w.p_value).abs() < 1e-12);
        // Logs need positive values and two runs a side.
        assert!(welch_log(&[0.0, 1.0], &[1.0, 2.0]).is_none());
        assert!(welch_log(&[1.0], &[1.0, 2.0]).is_none());
        // No noise at all: nothing to test against, whether the values differ or not.
        assert!(welch_log(&[5.0, 5.0], &[5.0, 5.0]).is_none());
        assert!(welch_log(&[5.0, 5.0], &[6.0, 6.0]).is_none());
        // A floor (a histogram's rounding) gives the noise the values cannot show.
        let f = 0.001;
        let w = welch_log_ratio(0.1, &[5.0, 5.0], &[6.0, 6.0], [f, f]).unwrap();
        assert!((w.se - (2.0 * f / 2.0f64).sqrt()).abs() < 1e-12, "{w:?}");
        assert_eq!(w.var_log, [f, f]);
        // The ratio tested is the one given: the interval is centred on it.
        let g =
            welch_log_ratio(0.2, &[100.0, 110.0, 95.0], &[150.0, 160.0, 140.0], [0.0; 2]).unwrap();
        let c = g.interval_pct(0.95);
        let mid = (0.2f64.exp() - 1.0) * 100.0;
        let centre = ((1.0 + c.low / 100.0) * (1.0 + c.high / 100.0)).ln() / 2.0;
        assert!((centre - 0.2).abs() < 1e-12, "{c:?}");
        assert!(c.low < mid && mid < c.high);
    }

    /// Hochberg on known p-values: sorted 0.005, 0.01, 0.03, 0.04 are multiplied by 4, 3, 2,
    /// 1 (0.02, 0.03, 0.06, 0.04), then each takes the smallest at its rank or above (0.06
    /// becomes 0.04). At 0.05 all four are rejected (Holm rejects two); four p of 0.03 (one
    /// effect seen by four tied metrics) are all rejected, where Holm makes them 0.12.
    #[test]
    fn hochberg_adjusts_known_p_values_in_order() {
        let adj = hochberg(&[0.01, 0.04, 0.03, 0.005]);
        let want = [0.03, 0.04, 0.04, 0.02];
        for (a, w) in adj.iter().zip(want) {
            assert!((a - w).abs() < 1e-12, "{adj:?}");
        }
        assert_eq!(hochberg(&[0.03; 4]), vec![0.03; 4]);
        // Only the smallest below α / m: only it is rejected.
        let adj = hochberg(&[0.01, 0.5, 0.6, 0.04]);
        let rejected: Vec<usize> = (0..4).filter(|&i| adj[i] < 0.05).collect();
        assert_eq!(rejected, [0]);
        assert!((adj[0] - 0.04).abs() < 1e-12, "{adj:?}");
        // One test: unchanged; capped at 1; NaN (no test) is not counted in m.
        assert_eq!(hochberg(&[0.03]), vec![0.03]);
        let h = hochberg(&[0.5, f64::NAN, 0.6]);
        assert_eq!(h[0], 0.6);
        assert!(h[1].is_nan());
        assert_eq!(h[2], 0.6);
        let h = hochberg(&[0.02, f64::NAN]);
        assert_eq!(h[0], 0.02);
        assert!(h[1].is_nan());
    }

    #[test]
    fn runs_needed_grows_with_noise_and_shrinks_with_the_difference() {
        let noisy = welch_log(&[100.0, 130.0, 80.0], &[120.0, 150.0, 95.0]).unwrap();
        let quiet = welch_log(&[100.0, 103.0, 98.0], &[120.0, 123.0, 117.0]).unwrap();
        let effect = 0.3f64;
        let n_noisy = noisy.runs_needed(effect, 0.05, 0.8, 50).unwrap();
        let n_quiet = quiet.runs_needed(effect, 0.05, 0.8, 50).unwrap();
        assert!(n_quiet < n_noisy, "{n_quiet} vs {n_noisy}");
        assert!(quiet.detectable_pct(0.05) < noisy.detectable_pct(0.05));
        assert!(noisy.runs_needed(0.2, 0.05, 0.8, 50).unwrap() > n_noisy);
        assert_eq!(noisy.runs_needed(0.05, 0.05, 0.8, 50), None);
        assert_eq!(noisy.runs_needed(0.0, 0.05, 0.8, 50), None);
    }

    #[test]
    fn normal_cdf_known_values() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_cdf(1.959_964) - 0.975).abs() < 1e-6);
        assert!((normal_cdf(-1.644_854) - 0.05).abs() < 1e-6);
    }

    /// Under the null hypothesis (both groups from one distribution) the rank test must call
    /// about 5 % of comparisons significant at level 0.05, both exact and approximate.
    #[test]
    fn rank_test_false_positive_rate_is_near_its_level() {
        let mut rng = SeededRng::new(7);
        for (n, sims) in [(8usize, 600usize), (40, 400)] {
            let mut hits = 0;
            for _ in 0..sims {
                let a = sample(&mut rng, n, 100.0, 10.0);
                let b = sample(&mut rng, n, 100.0, 10.0);
                let t = mann_whitney(&a, &b).unwrap();
                assert_eq!(t.exact, 2 * n <= EXACT_MAX_N);
                if t.p_value < 0.05 {
                    hits += 1;
                }
            }
            let rate = hits as f64 / sims as f64;
            eprintln!("rank test at level 0.05, n = {n} per group: false-positive rate {rate:.3} over {sims} null simulations");
            // Binomial sd at 0.05 is ~0.009 (600) / ~0.011 (400); the exact test is a little
            // conservative by construction (discrete U).
            assert!(
                (0.02..=0.08).contains(&rate),
                "n={n}: false-positive rate {rate}"
            );
        }
    }

    #[test]
    fn rank_test_detects_a_real_shift() {
        let mut rng = SeededRng::new(11);
        let mut hits = 0;
        for _ in 0..200 {
            let a = sample(&mut rng, 10, 100.0, 10.0);
            let b = sample(&mut rng, 10, 120.0, 10.0);
            if mann_whitney(&a, &b).unwrap().p_value < 0.05 {
                hits += 1;
            }
        }
        // Power for a 2-sd shift at n = 10 is about 0.98.
        assert!(hits >= 180, "power {hits}/200");
    }

    /// A 95 % bootstrap interval for the ratio of two means must contain the true ratio in about
    /// 95 % of simulated experiments (the percentile bootstrap runs a little narrow at small n).
    #[test]
    fn bootstrap_ratio_interval_covers_the_true_ratio() {
        let mut rng = SeededRng::new(3);
        let sims = 300;
        let mut covered = 0;
        for s in 0..sims {
            let a = sample(&mut rng, 20, 100.0, 10.0);
            let b = sample(&mut rng, 20, 120.0, 15.0);
            let ci = bootstrap_two_sample(a.len(), b.len(), 0.95, 600, s as u64, |ia, ib| {
                Some(mean_at(&b, ib)? / mean_at(&a, ia)?)
            })
            .unwrap();
            if ci.contains(1.2) {
                covered += 1;
            }
        }
        let coverage = covered as f64 / sims as f64;
        eprintln!("95 % bootstrap interval of a ratio of means, n = 20 per group: coverage {coverage:.3} over {sims} simulations");
        assert!(
            (0.89..=0.99).contains(&coverage),
            "coverage {coverage} of a nominal 95 % interval"
        );
    }

    #[test]
    fn merged_quantile_merges_rather_than_averages() {
        // Run 0: all 100 ns; run 1: all 10_000 ns, ten times as many I/Os. The merged p50 is
        // 10_000; the average of per-run p50s would be 5_050.
        let h0 = MergeableHist {
            buckets: vec![[100, 100]],
            min: 100,
            max: 100,
        };
        let h1 = MergeableHist {
            buckets: vec![[10_000, 1000]],
            min: 10_000,
            max: 10_000,
        };
        let hs = [h0, h1];
        assert_eq!(merged_quantile(&hs, &[0, 1], 0.5), Some(10_000.0));
        assert_eq!(merged_quantile(&hs, &[0, 1], 0.05), Some(100.0));
        assert_eq!(merged_quantile(&hs, &[0, 0], 0.99), Some(100.0));
    }

    #[test]
    fn bootstrap_is_reproducible_and_refuses_single_runs() {
        let a = [1.0, 2.0, 3.0];
        let b = [2.0, 3.0, 4.0];
        let f = |ia: &[usize], ib: &[usize]| Some(mean_at(&b, ib)? - mean_at(&a, ia)?);
        let x = bootstrap_two_sample(3, 3, 0.95, 500, 1, f);
        let y = bootstrap_two_sample(3, 3, 0.95, 500, 1, f);
        assert_eq!(x, y);
        assert!(bootstrap_two_sample(1, 3, 0.95, 500, 1, f).is_none());
    }
}
