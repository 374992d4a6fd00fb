//! Arrival times for open-loop streams: when each I/O is *meant* to start.
//!
//! Latency in open loop is measured from these intended times, so a stall that delays
//! submission is counted (no coordinated omission). Rates can be constant, on/off bursts, or a
//! schedule of segments (a characterized time series replayed); spacing is even or
//! exponential (Poisson).
//!
//! The next arrival comes when the expected number of arrivals since the last one (the
//! integral of the rate over time) reaches 1 (even spacing) or an exponential draw (Poisson:
//! the time-rescaling of a Poisson process, exact across rate changes). That work carries over
//! a rate change, so a burst or segment shorter than one gap still adds its share instead of
//! being lost, and whole periods that hold less than the work left are skipped at once: the
//! time to find the next arrival does not depend on how far away it is.

use oio_core::workload::{Arrival, Rate};

/// Generates intended start times in ns since the run's epoch.
pub struct Arrivals {
    rng: fastrand::Rng,
    poisson: bool,
    iops: f64,
    burst: Option<(f64, u64, u64)>,
    schedule: Vec<(u64, f64)>,
    period: u64,
    /// Expected arrivals in one period (the integral of the rate over it).
    per_period: f64,
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
        // NaN and negative rates are refused by the workload checks; count them as idle.
        let live = |r: f64| if r > 0.0 { r } else { 0.0 };
        let per_period = if !schedule.is_empty() {
            let mut start = 0;
            let mut sum = 0.0;
            for &(end, iops) in &schedule {
                sum += live(iops) * (end - start) as f64 / 1e9;
                start = end;
            }
            sum
        } else if let Some((b, on, off)) = burst {
            (live(b) * on as f64 + live(rate.iops * share) * off as f64) / 1e9
        } else {
            0.0
        };
        Arrivals {
            rng: fastrand::Rng::with_seed(seed),
            poisson: rate.arrival == Arrival::Poisson,
            iops: rate.iops * share,
            burst,
            schedule,
            period,
            per_period,
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
    /// The clock never goes back, and the loop ends: each turn either returns, moves `t` to
    /// the next rate change (which [`rate_at`](Self::rate_at) puts strictly after `t`), or
    /// skips the whole periods the work left does not fit in, so it takes at most a few
    /// turns per segment of one period.
    #[inline]
    pub fn next_arrival(&mut self) -> u64 {
        // The work to the next arrival, in expected arrivals.
        let mut need = if self.poisson {
            // 1 - u lies in (0, 1], so the logarithm is finite.
            -(1.0 - self.rng.f64()).ln()
        } else {
            1.0
        };
        let mut t = self.t;
        let mut frac = self.frac;
        while t != u64::MAX {
            let (r, until) = self.rate_at(t);
            // NaN and negative rates are refused by the workload checks; treat them as idle.
            if r > 0.0 {
                let total = frac + need * 1e9 / r;
                let whole = total.floor();
                // Compared in f64 so that a gap beyond u64 (a very low rate) cannot wrap.
                if (t as f64) + whole < until as f64 {
                    t += (whole as u64).min(until - t - 1);
                    self.t = t;
                    self.frac = total - whole;
                    return t;
                }
                // The segment ends first: it does its part of the work.
                need = (need - ((until - t) as f64 - frac) * r / 1e9).max(0.0);
            }
            t = until;
            frac = 0.0;
            if self.period > 0 && t.is_multiple_of(self.period) {
                t = self.skip_periods(t, &mut need);
            }
        }
        self.t = u64::MAX;
        self.frac = 0.0;
        u64::MAX
    }

    /// At the start of a period: skips the whole periods that hold less work than `need`
    /// (all of them when no period holds any), so a burst that holds a fraction of an
    /// arrival costs a few turns, not one per period.
    fn skip_periods(&self, t: u64, need: &mut f64) -> u64 {
        if self.per_period <= 0.0 {
            return u64::MAX;
        }
        if *need <= self.per_period {
            return t;
        }
        // Land in the period where the work runs out (ceil - 1 whole periods before it).
        let k = ((*need / self.per_period).ceil() - 1.0).max(0.0);
        *need -= k * self.per_period;
        let skip = k * self.period as f64;
        if (t as f64) + skip >= u64::MAX as f64 {
            return u64::MAX;
        }
        t + skip as u64
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
    fn a_burst_shorter_than_one_gap_adds_its_share_and_returns() {
        // Issue 22: 100/s with bursts of 500/s for 1 ms every 2 ms: a burst holds half an
        // arrival, the pause a tenth. The spacing used to restart at every change, so no
        // arrival ever fitted and the search never returned. Over a period 0.6 arrivals are
        // due: 300/s, evenly spaced by 1/0.6 periods.
        let mut r = rate(100.0, Arrival::Constant);
        r.burst_iops = Some(500.0);
        r.burst_on = Some(Secs(Duration::from_millis(1)));
        r.burst_off = Some(Secs(Duration::from_millis(1)));
        let mut a = Arrivals::new(&r, 1.0, 1);
        let ts: Vec<u64> = (0..3_000).map(|_| a.next_arrival()).collect();
        assert!(ts.windows(2).all(|w| w[1] > w[0]), "the clock moves on");
        let last = ts[2_999] as f64 / 1e9;
        assert!(
            (last - 10.0).abs() < 0.01,
            "3000 arrivals at 300/s: {last} s"
        );
        // Poisson over the same pattern keeps the mean rate: 30 000 expected in 100 s, a
        // standard deviation of 173.
        r.arrival = Arrival::Poisson;
        let mut a = Arrivals::new(&r, 1.0, 9);
        let n = std::iter::repeat_with(|| a.next_arrival())
            .take_while(|&t| t < 100_000_000_000)
            .count();
        assert!(n.abs_diff(30_000) < 700, "{n}");
    }

    #[test]
    fn far_arrivals_are_found_at_once_and_an_idle_pattern_has_none() {
        // A burst of 1e-3/s for 1 µs in a 2 µs period, 1e-3/s between: one arrival per
        // 1000 s is 5e8 periods away; whole periods are skipped, not walked.
        let mut r = rate(1e-3, Arrival::Constant);
        r.burst_iops = Some(1e-3);
        r.burst_on = Some(Secs(Duration::from_micros(1)));
        r.burst_off = Some(Secs(Duration::from_micros(1)));
        let mut a = Arrivals::new(&r, 1.0, 1);
        let t0 = std::time::Instant::now();
        let t = a.next_arrival();
        assert!(t0.elapsed() < Duration::from_secs(1));
        assert!(t.abs_diff(1_000_000_000_000) <= 2_000, "{t}");
        // Every segment at 0: no arrival ever.
        let mut r = rate(0.0, Arrival::Poisson);
        r.schedule = vec![
            RateSegment {
                duration: Secs(Duration::from_millis(1)),
                iops: 0.0,
            },
            RateSegment {
                duration: Secs(Duration::from_millis(1)),
                iops: 0.0,
            },
        ];
        let mut a = Arrivals::new(&r, 1.0, 1);
        assert_eq!(a.next_arrival(), u64::MAX);
        assert_eq!(a.next_arrival(), u64::MAX);
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
