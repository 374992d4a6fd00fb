//! Change points in a multivariate series: where a workload changes shape.
//!
//! Binary segmentation on the sum of squared deviations from segment means. Each feature is
//! scaled by its noise level, estimated from first differences with the largest dropped (so
//! the level shifts we are looking for do not count as noise), so a split must explain more than noise: it is kept when it lowers the
//! cost by more than `penalty × features × ln(n)`. Segments are at least `min_len` long.

use crate::summary_stats::{mean, quantile};

/// Segment boundaries: `[0, b1, b2, ..., n]` (indices into the series).
pub fn segment(
    features: &[Vec<f64>],
    min_len: usize,
    max_segments: usize,
    penalty: f64,
) -> Vec<usize> {
    let n = features.first().map_or(0, Vec::len);
    if n == 0 {
        return vec![0, 0];
    }
    let scaled: Vec<Vec<f64>> = features.iter().filter_map(|f| scale(f)).collect();
    let mut bounds = vec![0, n];
    if scaled.is_empty() || max_segments < 2 {
        return bounds;
    }
    let min_len = min_len.max(2);
    let threshold = penalty * scaled.len() as f64 * (n as f64).ln().max(1.0);
    loop {
        if bounds.len() > max_segments {
            break;
        }
        // The best split over all current segments.
        let mut best: Option<(f64, usize)> = None;
        for w in bounds.windows(2) {
            if let Some((gain, at)) = best_split(&scaled, w[0], w[1], min_len) {
                if best.is_none_or(|(g, _)| gain > g) {
                    best = Some((gain, at));
                }
            }
        }
        match best {
            Some((gain, at)) if gain > threshold => {
                bounds.push(at);
                bounds.sort_unstable();
            }
            _ => break,
        }
    }
    bounds
}

/// The feature divided by its noise; `None` for a constant feature.
fn scale(f: &[f64]) -> Option<Vec<f64>> {
    // Noise from squared first differences, dropping the largest 10 % (the level shifts).
    // A median would follow the quietest regime and make every noisy one look like changes.
    let mut d2: Vec<f64> = f.windows(2).map(|w| (w[1] - w[0]).powi(2) / 2.0).collect();
    d2.sort_by(f64::total_cmp);
    let keep = (d2.len() * 9).div_ceil(10);
    let noise = mean(&d2[..keep]).unwrap_or(0.0).sqrt();
    let range = quantile(f, 1.0)? - quantile(f, 0.0)?;
    if range <= 0.0 {
        return None;
    }
    // Perfectly clean steps have no noise: floor it at a small share of the range.
    let s = noise.max(range * 0.02);
    Some(f.iter().map(|v| v / s).collect())
}

/// Best split of `[a, b)` and the cost it saves.
fn best_split(fs: &[Vec<f64>], a: usize, b: usize, min_len: usize) -> Option<(f64, usize)> {
    if b - a < 2 * min_len {
        return None;
    }
    // Prefix sums make each candidate O(features).
    let prefix: Vec<(Vec<f64>, Vec<f64>)> = fs
        .iter()
        .map(|f| {
            let mut s = vec![0.0; b - a + 1];
            let mut s2 = vec![0.0; b - a + 1];
            for i in a..b {
                s[i - a + 1] = s[i - a] + f[i];
                s2[i - a + 1] = s2[i - a] + f[i] * f[i];
            }
            (s, s2)
        })
        .collect();
    let cost = |l: usize, r: usize| -> f64 {
        prefix
            .iter()
            .map(|(s, s2)| {
                let n = (r - l) as f64;
                let sum = s[r] - s[l];
                (s2[r] - s2[l]) - sum * sum / n
            })
            .sum()
    };
    let whole = cost(0, b - a);
    let mut best: Option<(f64, usize)> = None;
    for k in min_len..=(b - a - min_len) {
        let gain = whole - cost(0, k) - cost(k, b - a);
        if best.is_none_or(|(g, _)| gain > g) {
            best = Some((gain, a + k));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noisy(levels: &[(usize, f64)], seed: u64) -> Vec<f64> {
        let mut x = seed;
        let mut v = Vec::new();
        for &(n, level) in levels {
            for _ in 0..n {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let u = (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                v.push(level + u * 0.4);
            }
        }
        v
    }

    #[test]
    fn finds_a_level_shift_and_nothing_in_noise() {
        let f = noisy(&[(40, 1.0), (60, 3.0)], 1);
        assert_eq!(segment(&[f], 3, 6, 4.0), vec![0, 40, 100]);
        let flat = noisy(&[(100, 1.0)], 2);
        assert_eq!(segment(&[flat], 3, 6, 4.0), vec![0, 100]);
    }

    #[test]
    fn three_regimes_over_two_features() {
        let a = noisy(&[(30, 1.0), (30, 1.0), (40, 2.0)], 3);
        let b = noisy(&[(30, 0.0), (30, 5.0), (40, 5.0)], 4);
        assert_eq!(segment(&[a, b], 3, 6, 4.0), vec![0, 30, 60, 100]);
    }
}
