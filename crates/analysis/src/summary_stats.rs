//! Small statistics over per-interval values: weighted means, quantiles, coefficient of
//! variation. Quantiles here are of interval values (for example the p90 of per-second IOPS),
//! never of latencies averaged across intervals.

/// Mean of `values` weighted by `weights`; `None` when the weights sum to zero.
pub fn weighted_mean(values: &[f64], weights: &[f64]) -> Option<f64> {
    let w: f64 = weights.iter().sum();
    if w <= 0.0 {
        return None;
    }
    Some(values.iter().zip(weights).map(|(v, w)| v * w).sum::<f64>() / w)
}

/// The `q` quantile (0..=1) with linear interpolation between order statistics (type 7);
/// `None` for no values.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v: Vec<f64> = values.to_vec();
    v.sort_by(f64::total_cmp);
    let pos = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    Some(v[lo] + (v[hi] - v[lo]) * (pos - lo as f64))
}

/// Arithmetic mean; `None` for no values.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Sample standard deviation; `None` for fewer than two values.
pub fn stdev(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let m = mean(values)?;
    Some((values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (values.len() - 1) as f64).sqrt())
}

/// Coefficient of variation (stdev / mean); `None` when the mean is zero.
pub fn cv(values: &[f64]) -> Option<f64> {
    let m = mean(values)?;
    (m != 0.0).then(|| stdev(values).map(|s| s / m)).flatten()
}

/// Median absolute deviation scaled to estimate a normal standard deviation.
pub fn mad_sigma(values: &[f64]) -> Option<f64> {
    let med = quantile(values, 0.5)?;
    let dev: Vec<f64> = values.iter().map(|v| (v - med).abs()).collect();
    Some(quantile(&dev, 0.5)? * 1.4826)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basics() {
        assert_eq!(quantile(&[3.0, 1.0, 2.0, 4.0], 0.5), Some(2.5));
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.9), Some(4.6));
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(weighted_mean(&[1.0, 3.0], &[3.0, 1.0]), Some(1.5));
        assert_eq!(weighted_mean(&[1.0], &[0.0]), None);
        assert!((stdev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap() - 2.138).abs() < 1e-3);
        assert!((cv(&[1.0, 3.0]).unwrap() - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-9);
        assert_eq!(cv(&[0.0, 0.0]), None);
        assert_eq!(mad_sigma(&[1.0, 1.0, 1.0, 100.0]), Some(0.0));
    }
}
