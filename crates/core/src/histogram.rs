//! Latency histograms: fixed memory, log-linear, mergeable.
//!
//! Built on `hdrhistogram` with 2 significant digits: every value is kept within 1/128
//! (0.78 %) of its true value, from 1 ns to one hour, in about 45 KiB whatever the number of
//! samples (allocated at the first sample: an empty histogram costs a few bytes, so the
//! per-interval accumulators of directions a run never uses cost nothing to create, send and
//! merge). Exact count, sum, min and max are kept beside the buckets, so the mean is exact and
//! percentiles are clamped to what was really observed. Histograms from workers, intervals,
//! runs and hosts merge with `+=`; percentiles are always read from a merged histogram, never
//! averaged.

use serde::{Deserialize, Serialize};
use std::ops::AddAssign;

/// Significant decimal digits of the buckets (relative error ≤ 1/128).
pub const SIGNIFICANT_DIGITS: u8 = 2;
/// Largest value the histogram holds without clamping: one hour in ns.
pub const HIGHEST_NS: u64 = 3_600_000_000_000;

/// Bits of the sub-buckets hdrhistogram uses for [`SIGNIFICANT_DIGITS`]: the smallest power of
/// two ≥ 2 × 10^digits (256 for 2 digits), so each power-of-two range of values above 256 ns is
/// split into 128 buckets of equal width.
const SUB_BUCKET_BITS: u32 = (2 * 10u64.pow(SIGNIFICANT_DIGITS as u32))
    .next_power_of_two()
    .trailing_zeros();

/// Width in ns of the bucket that holds `ns`: latencies this close may share a bucket, so the
/// percentiles of a [`LatencyHistogram`] cannot tell them apart. 1 ns below 256 ns, then
/// 2^(k − 7) ns for values in [2^k, 2^(k+1)): between 1/256 and 1/128 of the value.
pub fn bucket_width(ns: u64) -> u64 {
    let bits = 64 - ns.leading_zeros();
    1 << bits.saturating_sub(SUB_BUCKET_BITS)
}

/// A latency histogram in nanoseconds.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    /// The buckets; None until the first sample.
    hist: Option<hdrhistogram::Histogram<u64>>,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        LatencyHistogram {
            hist: None,
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// Bytes the buckets of a histogram with samples take (the same for every one: their
    /// number is fixed by the bounds), beside the struct itself.
    pub fn dense_bytes() -> u64 {
        static BYTES: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        *BYTES.get_or_init(|| (dense().distinct_values() * std::mem::size_of::<u64>()) as u64)
    }

    /// The buckets, allocated at first use.
    #[inline]
    fn buckets(&mut self) -> &mut hdrhistogram::Histogram<u64> {
        self.hist.get_or_insert_with(dense)
    }

    /// Records one latency in ns (values above one hour are counted as one hour in the buckets;
    /// the exact maximum is still kept).
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.record_n(ns, 1);
    }

    /// Records `n` samples of the same latency.
    #[inline]
    pub fn record_n(&mut self, ns: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.buckets().saturating_record_n(ns.max(1), n);
        // Saturating: counts come from files too (fio json+ bins), and must not wrap.
        self.count = self.count.saturating_add(n);
        self.sum = self.sum.saturating_add(ns as u128 * n as u128);
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Exact mean in ns, or None when empty.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64)
    }

    /// Exact sum of all samples in ns.
    pub fn sum(&self) -> u128 {
        self.sum
    }

    /// The value at quantile `q` (0–1), clamped to the observed min and max; None when empty.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let v = self
            .hist
            .as_ref()
            .map_or(self.min, |h| h.value_at_quantile(q));
        Some(v.clamp(self.min, self.max))
    }

    /// Exact minimum, None when empty.
    pub fn min(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min)
    }

    /// Exact maximum, None when empty.
    pub fn max(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }

    /// Empties the histogram, keeping its memory.
    pub fn clear(&mut self) {
        if let Some(h) = &mut self.hist {
            h.reset();
        }
        self.count = 0;
        self.sum = 0;
        self.min = u64::MAX;
        self.max = 0;
    }

    /// The standard summary.
    pub fn summary(&self) -> LatencySummary {
        let sd = (self.count > 1)
            .then(|| self.hist.as_ref().map(|h| h.stdev()))
            .flatten();
        LatencySummary {
            min: self.min(),
            mean: self.mean(),
            stdev: sd,
            p50: self.quantile(0.50),
            p90: self.quantile(0.90),
            p95: self.quantile(0.95),
            p99: self.quantile(0.99),
            p999: self.quantile(0.999),
            max: self.max(),
        }
    }

    /// The sparse form written into result files.
    pub fn to_sparse(&self) -> SparseHistogram {
        SparseHistogram {
            unit: "ns".into(),
            significant_digits: SIGNIFICANT_DIGITS,
            count: self.count,
            sum: self.sum as f64,
            min: self.min(),
            max: self.max(),
            buckets: self
                .hist
                .iter()
                .flat_map(|h| h.iter_recorded())
                .map(|v| [v.value_iterated_to(), v.count_at_value()])
                .collect(),
        }
    }

    /// Rebuilds a histogram from its sparse form (for merging results across runs).
    pub fn from_sparse(s: &SparseHistogram) -> Self {
        let mut h = LatencyHistogram::new();
        for [v, c] in &s.buckets {
            h.buckets().saturating_record_n((*v).max(1), *c);
        }
        h.count = s.count;
        h.sum = s.sum as u128;
        h.min = s.min.unwrap_or(u64::MAX);
        h.max = s.max.unwrap_or(0);
        // A hand-edited or corrupt document can say anything: extremes that contradict each
        // other (or are missing beside samples) are taken from the buckets instead, so
        // quantiles stay within a valid range.
        if h.count > 0 && h.min > h.max {
            let b = h.hist.as_ref();
            h.min = b.map_or(0, |b| b.min_nz());
            h.max = b.map_or(h.min, |b| b.max()).max(h.min);
        }
        h
    }
}

impl AddAssign<&LatencyHistogram> for LatencyHistogram {
    fn add_assign(&mut self, other: &LatencyHistogram) {
        if other.count == 0 {
            return;
        }
        if let Some(o) = &other.hist {
            self.buckets()
                .add(o)
                .expect("histograms with the same bounds always merge");
        }
        self.count = self.count.saturating_add(other.count);
        self.sum = self.sum.saturating_add(other.sum);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }
}

/// Buckets of the histogram's bounds, empty.
fn dense() -> hdrhistogram::Histogram<u64> {
    hdrhistogram::Histogram::new_with_bounds(1, HIGHEST_NS, SIGNIFICANT_DIGITS)
        .expect("static histogram bounds are valid")
}

/// Latency percentiles in ns; fields are null when no I/O was measured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Fastest I/O.
    pub min: Option<u64>,
    /// Exact arithmetic mean.
    pub mean: Option<f64>,
    /// Standard deviation (from the buckets).
    pub stdev: Option<f64>,
    /// Median.
    pub p50: Option<u64>,
    /// 90th percentile.
    pub p90: Option<u64>,
    /// 95th percentile.
    pub p95: Option<u64>,
    /// 99th percentile.
    pub p99: Option<u64>,
    /// 99.9th percentile.
    pub p999: Option<u64>,
    /// Slowest I/O.
    pub max: Option<u64>,
}

/// A histogram as stored in result files: `[value_ns, count]` for every non-empty bucket,
/// where `value_ns` is the bucket's highest value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SparseHistogram {
    /// Always "ns".
    pub unit: String,
    /// Bucket precision in significant decimal digits.
    pub significant_digits: u8,
    /// Number of samples.
    pub count: u64,
    /// Exact sum of the samples.
    pub sum: f64,
    /// Exact minimum.
    pub min: Option<u64>,
    /// Exact maximum.
    pub max: Option<u64>,
    /// Non-empty buckets (at most [`MAX_SPARSE_BUCKETS`]).
    #[serde(deserialize_with = "bounded_buckets")]
    pub buckets: Vec<[u64; 2]>,
}

/// Most buckets a histogram in a document may list. oio's histograms have about 3,500
/// buckets in all; a document listing far more was not written by oio, and reading it would
/// cost time and memory for nothing (a million-bucket histogram made `compare` crawl).
pub const MAX_SPARSE_BUCKETS: usize = 1 << 16;

/// Reads the bucket list, refusing it past [`MAX_SPARSE_BUCKETS`] as it is read.
fn bounded_buckets<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<[u64; 2]>, D::Error> {
    struct Buckets;
    impl<'de> serde::de::Visitor<'de> for Buckets {
        type Value = Vec<[u64; 2]>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(
                f,
                "a list of at most {MAX_SPARSE_BUCKETS} [value_ns, count] buckets"
            )
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
            while let Some(b) = seq.next_element::<[u64; 2]>()? {
                if out.len() == MAX_SPARSE_BUCKETS {
                    return Err(serde::de::Error::custom(format!(
                        "a histogram with more than {MAX_SPARSE_BUCKETS} buckets: not one oio wrote (its histograms have about 3,500)"
                    )));
                }
                out.push(b);
            }
            Ok(out)
        }
    }
    d.deserialize_seq(Buckets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sparse_form_with_contradicting_extremes_reads_them_from_its_buckets() {
        let mut h = LatencyHistogram::new();
        for v in [1_000, 2_000, 50_000] {
            h.record(v);
        }
        let mut s = h.to_sparse();
        (s.min, s.max) = (Some(u64::MAX), Some(9_000_000_000));
        let back = LatencyHistogram::from_sparse(&s);
        let (lo, hi) = (back.min().unwrap(), back.max().unwrap());
        assert!(lo <= 1_000 && hi >= 50_000 && lo <= hi, "{lo}..{hi}");
        assert_eq!(back.quantile(0.5), h.quantile(0.5));
        s.min = None;
        assert!(LatencyHistogram::from_sparse(&s).quantile(0.99).is_some());
    }

    #[test]
    fn relative_error_is_within_one_percent() {
        let mut h = LatencyHistogram::new();
        // A value per decade position; each single-sample quantile must be within 1 %.
        for v in [
            1u64,
            7,
            93,
            1_234,
            56_789,
            987_654,
            12_345_678,
            3_000_000_000,
        ] {
            h.clear();
            h.record(v);
            h.record(v);
            let q = h.hist.as_ref().unwrap().value_at_quantile(0.5) as f64;
            assert!((q - v as f64).abs() / v as f64 <= 0.01, "{v} -> {q}");
        }
    }

    #[test]
    fn bucket_width_is_hdrhistograms_equivalent_range() {
        let h = dense();
        let mut v = 1u64;
        while v < HIGHEST_NS {
            for x in [v, v + 1, v * 3 / 2, 2 * v - 1] {
                let want = h.highest_equivalent(x) - h.lowest_equivalent(x) + 1;
                assert_eq!(bucket_width(x), want, "at {x} ns");
            }
            v *= 2;
        }
        assert_eq!(bucket_width(255), 1);
        assert_eq!(bucket_width(256), 2);
        // One bucket is at most 1/128 of the value.
        assert_eq!(
            bucket_width(1 << 20) as f64 / (1u64 << 20) as f64,
            1.0 / 128.0
        );
    }

    #[test]
    fn a_sparse_form_with_more_buckets_than_any_histogram_is_refused() {
        let b: Vec<String> = (0..=MAX_SPARSE_BUCKETS)
            .map(|i| format!("[{},1]", i + 1))
            .collect();
        let json = format!(
            r#"{{"unit":"ns","significant_digits":2,"count":1,"sum":1,"min":1,"max":1,"buckets":[{}]}}"#,
            b.join(",")
        );
        let e = serde_json::from_str::<SparseHistogram>(&json).unwrap_err();
        assert!(e.to_string().contains("more than 65536 buckets"), "{e}");
        // A real histogram's every bucket fits well within the bound.
        let mut h = LatencyHistogram::new();
        let mut v = 1u64;
        while v < HIGHEST_NS {
            h.record(v);
            v = v + v / 200 + 1;
        }
        let all = h.to_sparse();
        assert!(
            all.buckets.len() < MAX_SPARSE_BUCKETS / 8,
            "{}",
            all.buckets.len()
        );
        let back: SparseHistogram =
            serde_json::from_str(&serde_json::to_string(&all).unwrap()).unwrap();
        assert_eq!(back, all);
    }

    #[test]
    fn buckets_are_allocated_at_the_first_sample_only() {
        let mut a = LatencyHistogram::new();
        let b = LatencyHistogram::new();
        a += &b;
        a.clear();
        assert!(a.hist.is_none() && a.summary() == LatencySummary::default());
        assert!(a.to_sparse().buckets.is_empty());
        a.record(1000);
        assert!(a.hist.is_some());
        let mut c = LatencyHistogram::new();
        c += &a;
        assert_eq!((c.count(), c.quantile(0.5)), (1, Some(1000)));
        // 2 significant digits from 1 ns to an hour: a few thousand 8-byte counters.
        let bytes = LatencyHistogram::dense_bytes();
        assert!((20_000..64_000).contains(&bytes), "{bytes}");
    }

    #[test]
    fn percentiles_of_a_uniform_distribution() {
        let mut h = LatencyHistogram::new();
        for v in 1..=100_000u64 {
            h.record(v * 10);
        }
        let s = h.summary();
        let near = |got: Option<u64>, want: f64| {
            let g = got.unwrap() as f64;
            assert!((g - want).abs() / want < 0.01, "{g} vs {want}");
        };
        near(s.p50, 500_000.0);
        near(s.p90, 900_000.0);
        near(s.p99, 990_000.0);
        assert_eq!(s.min, Some(10));
        assert_eq!(s.max, Some(1_000_000));
        assert!((s.mean.unwrap() - 500_005.0).abs() < 1e-6);
    }

    #[test]
    fn merge_equals_recording_everything_in_one() {
        let mut a = LatencyHistogram::new();
        let mut b = LatencyHistogram::new();
        let mut all = LatencyHistogram::new();
        for v in 0..5000u64 {
            let x = (v * 7919) % 100_000 + 100;
            if v % 3 == 0 {
                a.record(x)
            } else {
                b.record(x)
            }
            all.record(x);
        }
        a += &b;
        assert_eq!(a.summary(), all.summary());
    }

    #[test]
    fn sparse_round_trip_and_empty_summary() {
        let mut h = LatencyHistogram::new();
        for v in [100u64, 200, 200, 5_000_000] {
            h.record(v);
        }
        let back = LatencyHistogram::from_sparse(&h.to_sparse());
        assert_eq!(back.summary(), h.summary());
        assert_eq!(LatencyHistogram::new().summary().p99, None);
    }

    #[test]
    fn percentiles_never_exceed_the_observed_max() {
        let mut h = LatencyHistogram::new();
        h.record(1_000_003);
        assert_eq!(h.quantile(0.999), Some(1_000_003));
    }
}
