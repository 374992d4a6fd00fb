//! Statistics for "is B really different from A?": a percentile bootstrap for confidence
//! intervals and the Mann–Whitney U rank test.
//!
//! Why these two: repeated benchmark runs are few (3 to 10), their distribution is unknown and
//! often skewed (a run that hit a background flush), so oio uses tests that assume no shape.
//! The units of resampling are *runs*, never per-second samples: seconds of one run are
//! autocorrelated and would make every difference look significant.
//!
//! Everything random here takes an explicit seed, so a comparison printed twice is printed the
//! same, and the unit tests check the methods against distributions with known answers
//! (interval coverage, the rank test's false-positive rate).

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
