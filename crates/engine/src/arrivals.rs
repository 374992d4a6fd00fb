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
    /// Fraction of a ns carried between gaps, so gaps shorter than 1 ns still add up and
    /// rounding never loses time.
    frac: f64,
}

impl Arrivals {
    /// Arrivals for a `share` (0–1] of the stream's rate.
    pub fn new(rate: &Rate, share: f64, seed: u64) -> Arrivals {
        // Durations are bounded by the workload checks; saturate rather than wrap regardless.
        let ns = |d: std::time::Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let burst = match (rate.burst_iops, rate.burst_on, rate.burst_off) {
            (Some(b), Some(on), Some(off)) => Some((b * share, ns(on.0), ns(off.0))),
            _ => None,
        };
        let mut acc = 0;
        let schedule: Vec<(u64, f64)> = rate
            .schedule
            .iter()
            .map(|s| {
                acc = u64::saturating_add(acc, ns(s.duration.0));
                (acc, s.iops * share)
            })
            .collect();
        let period = if !schedule.is_empty() {
            acc
        } else if let Some((_, on, off)) = burst {
            on.saturating_add(off)
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
            frac: 0.0,
        }
    }

    /// The offered rate at `t` and the time it next changes; that time is after `t` unless
    /// `t` is `u64::MAX`.
    pub fn rate_at(&self, t: u64) -> (f64, u64) {
        if self.period == 0 {
            return (self.iops, u64::MAX);
        }
        let base = t - t % self.period;
        let pos = t % self.period;
        if !self.schedule.is_empty() {
            for &(end, iops) in &self.schedule {
                if pos < end {
                    return (iops, base.saturating_add(end));
                }
            }
            return (self.schedule[0].1, base.saturating_add(self.period));
        }
        let Some((b, on, _)) = self.burst else {
            return (self.iops, u64::MAX);
        };
        if pos < on {
            (b, base.saturating_add(on))
        } else {
            (self.iops, base.saturating_add(self.period))
        }
    }

    /// The next intended start time; `u64::MAX` means no more arrivals (a rate so low that
    /// the next one would come after the end of the clock).
    ///
    /// The clock never goes back, and the loop ends: each turn either returns or moves `t` to
    /// the next rate change, which [`rate_at`](Self::rate_at) puts strictly after `t`.
    #[inline]
    pub fn next_arrival(&mut self) -> u64 {
        let mut t = self.t;
        loop {
            if t == u64::MAX {
                break;
            }
            let (r, until) = self.rate_at(t);
            // NaN and negative rates are refused by the workload checks; treat them as idle.
            if r.is_nan() || r <= 0.0 {
                t = until;
                self.frac = 0.0;
                continue;
            }
            let gap = if self.poisson {
                -(1.0 - self.rng.f64()).ln() * 1e9 / r
            } else {
                1e9 / r
            };
            let total = self.frac + gap;
            let whole = total.floor();
            // Compared in f64 so that a gap beyond u64 (a very low rate) cannot wrap.
            if (t as f64) + whole < until as f64 {
                let step = (whole as u64).min(until - t - 1);
                t += step;
                self.frac = total - whole;
                break;
            }
            // Restarting the spacing at a rate change (see the module documentation).
            t = until;
            self.frac = 0.0;
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
    fn the_clock_advances_at_extreme_rates() {
        // 1.5e9 IOPS used to round every gap to 0 ns once t was large: the clock stopped.
        let mut a = Arrivals::new(&rate(1.5e9, Arrival::Constant), 1.0, 1);
        a.t = 10_000_000_000_000;
        let start = a.t;
        let mut last = 0;
        for _ in 0..3_000 {
            last = a.next_arrival();
        }
        assert!(last.abs_diff(start + 2_000) <= 2, "{}", last - start);
        // 1e-11 IOPS: the next arrival is after the end of the clock, and it says so.
        let mut a = Arrivals::new(&rate(1e-11, Arrival::Poisson), 1.0, 1);
        assert_eq!(a.next_arrival(), u64::MAX);
        assert_eq!(a.next_arrival(), u64::MAX);
        // A schedule segment of (nearly) forever does not wrap the period.
        let mut r = rate(0.0, Arrival::Constant);
        r.schedule = vec![
            RateSegment {
                duration: Secs(Duration::MAX),
                iops: 1000.0,
            },
            RateSegment {
                duration: Secs(Duration::from_secs(1)),
                iops: 5.0,
            },
        ];
        let mut a = Arrivals::new(&r, 1.0, 1);
        assert_eq!(a.next_arrival(), 1_000_000);
        assert_eq!(a.next_arrival(), 2_000_000);
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
