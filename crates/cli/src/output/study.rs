//! A study's conclusion on the terminal, for every kind of study (`oio tpcc study`, `oio sql
//! study`): the results directory of each candidate, the wait profiles side by side and how
//! each bucket moved, and one headline per candidate (its margin and the wait shift).

use anyhow::bail;
use oio_analysis::compare::Comparison;
use oio_tpcc::waits::{WaitProfile, WaitShare};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Each candidate's results directory, `OUT/<label's slug>`; labels that give the same
/// directory name are refused, naming both (their results would mix, and the study would
/// compare a candidate with itself). `flag` is the option the labels come from.
pub fn candidate_dirs(out: &Path, labels: &[String], flag: &str) -> anyhow::Result<Vec<PathBuf>> {
    let names: Vec<String> = labels
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let slug = oio_core::text::slug(l, 100);
            if slug.is_empty() {
                format!("candidate{}", i + 1)
            } else {
                slug
            }
        })
        .collect();
    for (i, a) in names.iter().enumerate() {
        if let Some(j) = names[..i].iter().position(|b| b == a) {
            bail!(
                "{flag}: labels '{}' and '{}' both give the results directory '{}' (a label's directory keeps its letters, digits and _, other runs of characters becoming one -): name them apart",
                oio_core::text::printable(&labels[j]),
                oio_core::text::printable(&labels[i]),
                out.join(a).display()
            );
        }
    }
    Ok(names.iter().map(|n| out.join(n)).collect())
}

/// A candidate as the headline names it.
pub struct Named<'a> {
    /// Its label.
    pub label: &'a str,
    /// What it is ("synchronous_commit=off", "builtin:last-page-insert-hash").
    pub describe: String,
}

/// A bucket's share in each run of a candidate, percent (0 where a run has no such bucket).
fn shares(runs: &[&WaitProfile], bucket: &str) -> Vec<f64> {
    runs.iter()
        .map(|r| {
            profile(r)
                .iter()
                .find(|b| b.name == bucket)
                .map_or(0.0, |b| b.share_pct)
        })
        .collect()
}

/// A result's wait groups: the bottleneck buckets, or SQLite's classes (it has no buckets).
fn profile(w: &WaitProfile) -> &[WaitShare] {
    if w.buckets.is_empty() {
        &w.classes
    } else {
        &w.buckets
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// How a bucket moved from the baseline's runs to a candidate's: "grew" or "shrank" only
/// when every run of one side is beyond every run of the other, else "within the runs'
/// spread" (with one run a side: "one run a side, not judged").
pub fn moved(base: &[f64], cand: &[f64]) -> &'static str {
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if base.len() < 2 || cand.len() < 2 {
        "one run a side, not judged"
    } else if min(cand) > max(base) + 1.0 {
        "grew"
    } else if max(cand) < min(base) - 1.0 {
        "shrank"
    } else {
        "within the runs' spread"
    }
}

/// The wait buckets of every candidate side by side (mean of the runs' shares), largest
/// change against the baseline first, each judged against the runs' spread.
pub fn write_waits(
    out: &mut dyn Write,
    labels: &[&str],
    runs: &[Vec<&WaitProfile>],
) -> std::io::Result<()> {
    let mut buckets: Vec<String> = runs
        .iter()
        .flatten()
        .flat_map(|r| profile(r).iter().map(|b| b.name.clone()))
        .collect();
    buckets.sort();
    buckets.dedup();
    let source = runs
        .iter()
        .flatten()
        .map(|r| r.source.clone())
        .next()
        .unwrap_or_default();
    if buckets.is_empty() {
        return writeln!(out, "no wait profile in the results ({source})");
    }
    let change = |b: &str| {
        runs.iter()
            .skip(1)
            .map(|r| (mean(&shares(r, b)) - mean(&shares(&runs[0], b))).abs())
            .fold(0.0, f64::max)
    };
    buckets.sort_by(|a, b| change(b).total_cmp(&change(a)).then(a.cmp(b)));
    writeln!(
        out,
        "waits ({source}), % of the profile, each candidate's mean of its runs' shares:"
    )?;
    writeln!(
        out,
        "  {:<24}{}",
        "bucket",
        labels
            .iter()
            .map(|l| format!("{l:>12}"))
            .collect::<String>()
    )?;
    for b in &buckets {
        write!(out, "  {:<24}", b)?;
        for r in runs {
            write!(out, "{:>12}", format!("{:.1}", mean(&shares(r, b))))?;
        }
        let verdicts: Vec<String> = runs
            .iter()
            .enumerate()
            .skip(1)
            .map(|(i, r)| {
                format!(
                    "{}: {}",
                    labels[i],
                    moved(&shares(&runs[0], b), &shares(r, b))
                )
            })
            .collect();
        writeln!(out, "   {}", verdicts.join(", "))?;
    }
    writeln!(out, "  (grew/shrank only when every run of one side is more than 1 point beyond every run of the other)")
}

/// "async (synchronous_commit=off) against base (synchronous_commit=on): NOPM +178.9 %
/// [+160.2, +198.0] better; wal_flush waits 62.0 % → 3.1 % (shrank), cpu waits 30.2 % → 85.0 %
/// (grew)": the margin of `metric` (its key in the comparison, and its words).
pub fn headline(
    c: &Comparison,
    metric: (&str, &str),
    (base_name, cand_name): (&Named, &Named),
    base: &[&WaitProfile],
    cand: &[&WaitProfile],
) -> String {
    let (key, words) = metric;
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
    let mut moves: BTreeMap<String, (f64, f64, &'static str)> = BTreeMap::new();
    for r in base.iter().chain(cand) {
        for b in profile(r) {
            let (x, y) = (shares(base, &b.name), shares(cand, &b.name));
            moves.insert(b.name.clone(), (mean(&x), mean(&y), moved(&x, &y)));
        }
    }
    let waits = wait_moves(&moves);
    format!(
        "{} ({}) against {} ({}): {margin}{waits}",
        cand_name.label, cand_name.describe, base_name.label, base_name.describe
    )
}

/// The headline's waits: the bucket that shrank most (what the setting relieved) first, then
/// the one that grew most (where the time went instead; shares add up to 100 %, so one moves
/// with the other). `moves`: bucket → (baseline's mean share, candidate's, how it moved).
fn wait_moves(moves: &BTreeMap<String, (f64, f64, &'static str)>) -> String {
    let most = |how: &str| {
        moves
            .iter()
            .filter(|(_, m)| m.2 == how)
            .max_by(|a, b| (a.1 .1 - a.1 .0).abs().total_cmp(&(b.1 .1 - b.1 .0).abs()))
            .map(|(name, (x, y, how))| format!("{name} waits {x:.1} % → {y:.1} % ({how})"))
    };
    let named: Vec<String> = [most("shrank"), most("grew")]
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_headline_names_the_wait_that_shrank_before_the_one_that_grew() {
        let m = |v: &[(&str, f64, f64, &'static str)]| {
            v.iter()
                .map(|(n, x, y, h)| (n.to_string(), (*x, *y, *h)))
                .collect::<BTreeMap<_, _>>()
        };
        assert_eq!(
            wait_moves(&m(&[
                ("cpu", 44.7, 87.7, "grew"),
                ("wal_flush", 41.3, 0.0, "shrank"),
                ("client_round_trips", 11.4, 4.5, "shrank"),
                ("data_io", 0.9, 1.7, "within the runs' spread"),
            ])),
            "; wal_flush waits 41.3 % → 0.0 % (shrank), cpu waits 44.7 % → 87.7 % (grew)"
        );
        assert_eq!(
            wait_moves(&m(&[("lock", 3.0, 41.0, "grew")])),
            "; lock waits 3.0 % → 41.0 % (grew)"
        );
        assert_eq!(
            wait_moves(&m(&[("io", 3.0, 3.5, "within the runs' spread")])),
            "; no wait bucket moved beyond the runs' spread"
        );
        assert_eq!(wait_moves(&BTreeMap::new()), "");
    }

    #[test]
    fn a_bucket_moves_only_beyond_the_runs_spread() {
        assert_eq!(moved(&[60.0, 62.0, 64.0], &[2.0, 3.0, 4.0]), "shrank");
        assert_eq!(moved(&[2.0, 3.0], &[30.0, 41.0]), "grew");
        assert_eq!(
            moved(&[10.0, 20.0], &[15.0, 25.0]),
            "within the runs' spread"
        );
        assert_eq!(moved(&[10.0], &[50.0]), "one run a side, not judged");
    }
}
