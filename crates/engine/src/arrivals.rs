//! Arrival times for open-loop streams: when each I/O is *meant* to start.
//!
//! Latency in open loop is measured from these intended times, so a stall that delays
//! submission is counted (no coordinated omission). Rates can be constant, on/off bursts, or a
//! schedule of segments (a characterized time series replayed); spacing is even or
//! exponential (Poisson). Restarting the spacing at a rate change is exact for Poisson
//! (memoryless) and off by less than one gap for even spacing.

use oio_core::workload::{Arrival, Rate};

/// Generates intended start times in ns since the run's epoch.
pub struct Arrivals {
    rng: fastrand::Rng,
    poisson: bool,
    iops: f64,
    burst: Option<(f64, u64, u64)>,
    schedule: Vec<(u64, f64)>,
    period: u64,
    t: u64,
}

impl Arrivals {
    /// Arrivals for a `share` (0–1] of the stream's rate.
    pub fn new(rate: &Rate, share: f64, seed: u64) -> Arrivals {
        let ns = |d: std::time::Duration| d.as_nanos() as u64;
        let burst = match (rate.burst_iops, rate.burst_on, rate.burst_off) {
            (Some(b), Some(on), Some(off)) => Some((b * share, ns(on.0), ns(off.0))),
            _ => None,
        };
        let mut acc = 0;
        let schedule: Vec<(u64, f64)> = rate
            .schedule
            .iter()
            .map(|s| {
                acc += ns(s.duration.0);
                (acc, s.iops * share)
            })
            .collect();
        let period = if !schedule.is_empty() {
            acc
        } else if let Some((_, on, off)) = burst {
            on + off
        } else {
            0
        };
        Arrivals {
            rng: fastrand::Rng::with_seed(seed),
            poisson: rate.arrival == Arrival::Poisson,
            iops: rate.iops * share,
            burst,
            schedule,
            period,
            t: 0,
        }
    }

    /// The offered rate at `t` and the time it next changes.
    pub fn rate_at(&self, t: u64) -> (f64, u64) {
        if self.period == 0 {
            return (self.iops, u64::MAX);
        }
        let base = t - t % self.period;
        let pos = t % self.period;
        if !self.schedule.is_empty() {
            for &(end, iops) in &self.schedule {
                if pos < end {
                    return (iops, base + end);
                }
            }
            return (self.schedule[0].1, base + self.period);
        }
        let (b, on, _) = self
            .burst
            .expect("a period without a schedule means bursts");
        if pos < on {
            (b, base + on)
        } else {
            (self.iops, base + self.period)
        }
    }

    /// The next intended start time.
    #[inline]
    pub fn next_arrival(&mut self) -> u64 {
        let mut t = self.t;
        loop {
            let (r, until) = self.rate_at(t);
            if r <= 0.0 {
                t = until;
                continue;
            }
            let gap = if self.poisson {
                -(1.0 - self.rng.f64()).ln() * 1e9 / r
            } else {
                1e9 / r
            };
            let next = t as f64 + gap;
            if next < until as f64 {
                t = next as u64;
                break;
            }
            t = until;
        }
        self.t = t;
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oio_core::units::Secs;
    use oio_core::workload::RateSegment;
    use std::time::Duration;

    fn rate(iops: f64, arrival: Arrival) -> Rate {
        Rate {
            iops,
            arrival,
            burst_iops: None,
            burst_on: None,
            burst_off: None,
            schedule: vec![],
        }
    }

    #[test]
    fn constant_arrivals_are_evenly_spaced() {
        let mut a = Arrivals::new(&rate(10_000.0, Arrival::Constant), 1.0, 1);
        let ts: Vec<u64> = (0..10_000).map(|_| a.next_arrival()).collect();
        assert!(ts.windows(2).all(|w| (w[1] - w[0]).abs_diff(100_000) <= 1));
        assert!((ts[9_999] as f64 - 1e9).abs() < 10_000.0);
    }

    #[test]
    fn poisson_inter_arrivals_pass_a_kolmogorov_smirnov_test() {
        let lambda = 10_000.0;
        let mut a = Arrivals::new(&rate(lambda, Arrival::Poisson), 1.0, 7);
        let mut prev = 0;
        let mut gaps: Vec<f64> = (0..20_000)
            .map(|_| {
                let t = a.next_arrival();
                let g = (t - prev) as f64 / 1e9;
                prev = t;
                g
            })
            .collect();
        gaps.sort_by(f64::total_cmp);
        let n = gaps.len() as f64;
        let d = gaps
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let cdf = 1.0 - (-lambda * g).exp();
                (cdf - i as f64 / n)
                    .abs()
                    .max(((i + 1) as f64 / n - cdf).abs())
            })
            .fold(0.0, f64::max);
        // Critical value at alpha = 0.01 is 1.63 / sqrt(n).
        assert!(d < 1.63 / n.sqrt(), "KS D = {d}");
        // And it is not constant spacing in disguise: the gaps' coefficient of variation ~ 1.
        let mean = gaps.iter().sum::<f64>() / n;
        let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n).sqrt();
        assert!((sd / mean - 1.0).abs() < 0.05);
    }

    #[test]
    fn bursts_follow_the_on_off_pattern() {
        let mut r = rate(1_000.0, Arrival::Constant);
        r.burst_iops = Some(5_000.0);
        r.burst_on = Some(Secs(Duration::from_secs(1)));
        r.burst_off = Some(Secs(Duration::from_secs(2)));
        let mut a = Arrivals::new(&r, 1.0, 1);
        let mut per_sec = [0u32; 6];
        loop {
            let t = a.next_arrival();
            if t >= 6_000_000_000 {
                break;
            }
            per_sec[(t / 1_000_000_000) as usize] += 1;
        }
        for (s, want) in [5000, 1000, 1000, 5000, 1000, 1000].iter().enumerate() {
            assert!(per_sec[s].abs_diff(*want) <= 2, "second {s}: {per_sec:?}");
        }
    }

    #[test]
    fn a_schedule_is_replayed_segment_by_segment_and_shared() {
        let mut r = rate(0.0, Arrival::Constant);
        r.schedule = vec![
            RateSegment {
                duration: Secs(Duration::from_secs(1)),
                iops: 2_000.0,
            },
            RateSegment {
                duration: Secs(Duration::from_secs(1)),
                iops: 0.0,
            },
            RateSegment {
                duration: Secs(Duration::from_secs(1)),
                iops: 8_000.0,
            },
        ];
        // Half of the stream's rate (one of two workers).
        let mut a = Arrivals::new(&r, 0.5, 1);
        let mut per_sec = [0u32; 3];
        loop {
            let t = a.next_arrival();
            if t >= 3_000_000_000 {
                break;
            }
            per_sec[(t / 1_000_000_000) as usize] += 1;
        }
        assert!(
            per_sec[0].abs_diff(1000) <= 1 && per_sec[1] == 0 && per_sec[2].abs_diff(4000) <= 1,
            "{per_sec:?}"
        );
    }
}
