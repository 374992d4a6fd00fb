//! How a study's wait profile moved from the baseline to each candidate: each wait bucket's
//! mean share of the candidate's runs, and whether it grew or shrank beyond the runs' spread.
//! One implementation for `oio tpcc study`, `oio sql study` and the HTML report, so the
//! terminal and the page never judge one bucket differently.
//!
//! A run's profile is given as (bucket, share %) pairs — an `oio.tpcc` or `oio.sql` result's
//! bottleneck buckets, or its classes when it has no buckets (SQLite) — so this module needs
//! no result type.

use crate::compare::Comparison;
use std::collections::BTreeMap;
use std::fmt;

/// One run's wait profile: (bucket, share of the profile in percent).
pub type Profile = Vec<(String, f64)>;

/// How a bucket moved from the baseline's runs to a candidate's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shift {
    /// Every candidate run is more than [`MARGIN_POINTS`] above every baseline run.
    Grew,
    /// Every candidate run is more than [`MARGIN_POINTS`] below every baseline run.
    Shrank,
    /// The two sides' runs overlap (or are within the margin).
    Within,
    /// Fewer than two runs on a side: no spread to judge by.
    NotJudged,
}

impl Shift {
    /// The words the study's tables and headlines use.
    pub fn words(self) -> &'static str {
        match self {
            Shift::Grew => "grew",
            Shift::Shrank => "shrank",
            Shift::Within => "within the runs' spread",
            Shift::NotJudged => "one run a side, not judged",
        }
    }

    /// True when the bucket moved beyond the runs' spread.
    pub fn moved(self) -> bool {
        matches!(self, Shift::Grew | Shift::Shrank)
    }
}

impl fmt::Display for Shift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.words())
    }
}

/// Percentage points one side must clear the other by: a sampled share moves by about a point
/// between identical runs, so a smaller gap is not called.
pub const MARGIN_POINTS: f64 = 1.0;

/// The rule in words, for a table's foot.
pub const RULE: &str = "grew/shrank only when every run of one side is more than 1 point beyond every run of the other";

/// How a bucket moved from the baseline's runs (`base`, each run's share) to a candidate's:
/// grew or shrank only when every run of one side is beyond every run of the other.
pub fn moved(base: &[f64], cand: &[f64]) -> Shift {
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if base.len() < 2 || cand.len() < 2 {
        Shift::NotJudged
    } else if min(cand) > max(base) + MARGIN_POINTS {
        Shift::Grew
    } else if max(cand) < min(base) - MARGIN_POINTS {
        Shift::Shrank
    } else {
        Shift::Within
    }
}

/// A bucket's share in each run, percent (0 where a run has no such bucket: it was not seen).
pub fn shares(runs: &[Profile], bucket: &str) -> Vec<f64> {
    runs.iter()
        .map(|r| r.iter().find(|(b, _)| b == bucket).map_or(0.0, |(_, s)| *s))
        .collect()
}

/// Mean of values (0 for none).
pub fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// One bucket of the side-by-side table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The bucket.
    pub bucket: String,
    /// Each candidate's mean share of its runs, percent, baseline first.
    pub means: Vec<f64>,
    /// How it moved for each candidate after the baseline (`shifts[0]` is the second
    /// candidate's).
    pub shifts: Vec<Shift>,
}

/// The buckets of every candidate side by side (`runs`: each candidate's runs, baseline
/// first), the largest change against the baseline first, each judged by [`moved`].
pub fn table(runs: &[Vec<Profile>]) -> Vec<Row> {
    let mut buckets: Vec<&str> = runs
        .iter()
        .flatten()
        .flat_map(|r| r.iter().map(|(b, _)| b.as_str()))
        .collect();
    buckets.sort();
    buckets.dedup();
    let Some(base) = runs.first() else {
        return Vec::new();
    };
    let mut rows: Vec<(f64, Row)> = buckets
        .into_iter()
        .map(|b| {
            let means: Vec<f64> = runs.iter().map(|r| mean(&shares(r, b))).collect();
            let change = means.iter().skip(1).map(|m| (m - means[0]).abs());
            let change = change.fold(0.0, f64::max);
            let shifts = runs
                .iter()
                .skip(1)
                .map(|r| moved(&shares(base, b), &shares(r, b)))
                .collect();
            let row = Row {
                bucket: b.to_string(),
                means,
                shifts,
            };
            (change, row)
        })
        .collect();
    rows.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.bucket.cmp(&b.1.bucket)));
    rows.into_iter().map(|(_, r)| r).collect()
}

/// The waits of a headline: the bucket that shrank most (what the candidate relieved) first,
/// then the one that grew most (where the time went instead; shares add up to 100 %, so one
/// moves with the other); "; no wait bucket moved beyond the runs' spread" when none moved,
/// and nothing without a profile.
pub fn summary(base: &[Profile], cand: &[Profile]) -> String {
    let mut moves: BTreeMap<&str, (f64, f64, Shift)> = BTreeMap::new();
    for (b, _) in base.iter().chain(cand).flatten() {
        let (x, y) = (shares(base, b), shares(cand, b));
        moves.insert(b, (mean(&x), mean(&y), moved(&x, &y)));
    }
    let most = |how: Shift| {
        moves
            .iter()
            .filter(|(_, m)| m.2 == how)
            .max_by(|a, b| (a.1 .1 - a.1 .0).abs().total_cmp(&(b.1 .1 - b.1 .0).abs()))
            .map(|(name, (x, y, how))| format!("{name} waits {x:.1} % → {y:.1} % ({how})"))
    };
    let named: Vec<String> = [most(Shift::Shrank), most(Shift::Grew)]
        .into_iter()
        .flatten()
        .collect();
    if !named.is_empty() {
        format!("; {}", named.join(", "))
    } else if moves.is_empty() {
        String::new()
    } else {
        "; no wait bucket moved beyond the runs' spread".into()
    }
}

/// A candidate as a headline names it.
#[derive(Clone, Debug)]
pub struct Named<'a> {
    /// Its label (its group's label in the comparison).
    pub label: &'a str,
    /// What it is ("synchronous_commit=off", "builtin:last-page-insert-hash").
    pub describe: String,
}

/// "async (synchronous_commit=off) against base (synchronous_commit=on): NOPM +178.9 %
/// [+160.2, +198.0] better; wal_flush waits 62.0 % → 3.1 % (shrank), cpu waits 30.2 % → 85.0 %
/// (grew)": the margin of `metric` (its key in the comparison, and its words) and the waits
/// that moved.
pub fn headline(
    c: &Comparison,
    (key, words): (&str, &str),
    (base_name, cand_name): (&Named, &Named),
    base: &[Profile],
    cand: &[Profile],
) -> String {
    let m = c
        .comparisons
        .iter()
        .find(|x| x.group == cand_name.label)
        .and_then(|x| x.metrics.get(key));
    let margin = match m {
        Some(m) => match (m.margin_pct, m.ci_low_pct, m.ci_high_pct) {
            (Some(p), Some(lo), Some(hi)) => {
                format!("{words} {p:+.1} % [{lo:+.1}, {hi:+.1}] {}", m.outcome)
            }
            (Some(p), _, _) => format!("{words} {p:+.1} % {}", m.outcome),
            _ => format!("{words} {}", m.outcome),
        },
        None => format!("{words} not compared"),
    };
    format!(
        "{} ({}) against {} ({}): {margin}{}",
        cand_name.label,
        cand_name.describe,
        base_name.label,
        base_name.describe,
        summary(base, cand)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(v: &[(&str, f64)]) -> Profile {
        v.iter().map(|(b, s)| (b.to_string(), *s)).collect()
    }

    #[test]
    fn a_bucket_moves_only_beyond_the_runs_spread() {
        assert_eq!(moved(&[60.0, 62.0, 64.0], &[2.0, 3.0, 4.0]), Shift::Shrank);
        assert_eq!(moved(&[2.0, 3.0], &[30.0, 41.0]), Shift::Grew);
        // Overlapping runs: no call, however far apart the means.
        assert_eq!(moved(&[10.0, 20.0], &[15.0, 25.0]), Shift::Within);
        assert_eq!(moved(&[1.0, 90.0], &[50.0, 95.0]), Shift::Within);
        assert_eq!(moved(&[10.0], &[50.0]), Shift::NotJudged);
        assert_eq!(moved(&[10.0, 11.0], &[50.0]), Shift::NotJudged);
        assert_eq!(moved(&[], &[]), Shift::NotJudged);
    }

    #[test]
    fn a_gap_of_one_point_or_less_is_not_a_move() {
        // Apart, but by exactly the margin: not called; just beyond it: called.
        assert_eq!(moved(&[10.0, 11.0], &[12.0, 13.0]), Shift::Within);
        assert_eq!(moved(&[10.0, 11.0], &[12.01, 13.0]), Shift::Grew);
        assert_eq!(moved(&[12.0, 13.0], &[10.0, 11.0]), Shift::Within);
        assert_eq!(moved(&[12.0, 13.0], &[10.0, 10.99]), Shift::Shrank);
        assert_eq!(Shift::Within.words(), "within the runs' spread");
        assert!(Shift::Grew.moved() && Shift::Shrank.moved());
        assert!(!Shift::Within.moved() && !Shift::NotJudged.moved());
    }

    #[test]
    fn a_bucket_missing_from_a_run_counts_as_zero() {
        let base = [p(&[("lock", 40.0)]), p(&[("lock", 42.0)])];
        let cand = [p(&[("cpu", 90.0)]), p(&[("cpu", 88.0), ("lock", 1.0)])];
        assert_eq!(shares(&cand, "lock"), [0.0, 1.0]);
        let rows = table(&[base.to_vec(), cand.to_vec()]);
        // Largest change first: cpu (0 → 89) before lock (41 → 0.5).
        assert_eq!(rows[0].bucket, "cpu");
        assert_eq!(rows[0].means, [0.0, 89.0]);
        assert_eq!(rows[0].shifts, [Shift::Grew]);
        assert_eq!(rows[1].bucket, "lock");
        assert_eq!(rows[1].shifts, [Shift::Shrank]);
        assert!(table(&[]).is_empty());
    }

    #[test]
    fn the_summary_names_the_wait_that_shrank_before_the_one_that_grew() {
        let base = [
            p(&[("cpu", 44.0), ("wal_flush", 41.0), ("data_io", 1.0)]),
            p(&[("cpu", 45.4), ("wal_flush", 41.6), ("data_io", 0.8)]),
        ];
        let cand = [
            p(&[("cpu", 87.0), ("wal_flush", 0.0), ("data_io", 1.6)]),
            p(&[("cpu", 88.4), ("data_io", 1.8)]),
        ];
        assert_eq!(
            summary(&base, &cand),
            "; wal_flush waits 41.3 % → 0.0 % (shrank), cpu waits 44.7 % → 87.7 % (grew)"
        );
        let same = [p(&[("io", 3.0)]), p(&[("io", 3.5)])];
        assert_eq!(
            summary(&same, &same),
            "; no wait bucket moved beyond the runs' spread"
        );
        assert_eq!(summary(&[], &[]), "");
    }
}
