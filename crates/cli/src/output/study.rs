//! A study's conclusion on the terminal, for every kind of study (`oio tpcc study`, `oio sql
//! study`): the results directory of each candidate, the wait profiles side by side and how
//! each bucket moved, and one headline per candidate (its margin and the wait shift).

use anyhow::bail;
use oio_analysis::compare::Comparison;
use oio_analysis::waitshift::{self, Profile};
use oio_tpcc::waits::WaitProfile;
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

/// A candidate as the headline names it (`oio_analysis::waitshift`, shared with the report).
pub use oio_analysis::waitshift::Named;

/// Each run's wait profile as the study sets them side by side (buckets, or SQLite's classes).
pub fn profiles(runs: &[&WaitProfile]) -> Vec<Profile> {
    runs.iter().map(|w| w.shares()).collect()
}

/// The wait buckets of every candidate side by side (mean of the runs' shares), largest
/// change against the baseline first, each judged against the runs' spread
/// (`oio_analysis::waitshift`, the rule the report uses too).
pub fn write_waits(
    out: &mut dyn Write,
    labels: &[&str],
    runs: &[Vec<&WaitProfile>],
) -> std::io::Result<()> {
    let source = runs
        .iter()
        .flatten()
        .map(|r| r.source.clone())
        .next()
        .unwrap_or_default();
    let profiles: Vec<Vec<Profile>> = runs.iter().map(|r| profiles(r)).collect();
    let rows = waitshift::table(&profiles);
    if rows.is_empty() {
        return writeln!(out, "no wait profile in the results ({source})");
    }
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
    for row in &rows {
        write!(out, "  {:<24}", row.bucket)?;
        for m in &row.means {
            write!(out, "{:>12}", format!("{m:.1}"))?;
        }
        let verdicts: Vec<String> = row
            .shifts
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{}: {s}", labels[i + 1]))
            .collect();
        writeln!(out, "   {}", verdicts.join(", "))?;
    }
    writeln!(out, "  ({})", waitshift::RULE)
}

/// "async (synchronous_commit=off) against base (synchronous_commit=on): NOPM +178.9 %
/// [+160.2, +198.0] better; wal_flush waits 62.0 % → 3.1 % (shrank), cpu waits 30.2 % → 85.0 %
/// (grew)": the margin of `metric` (its key in the comparison, and its words).
pub fn headline(
    c: &Comparison,
    metric: (&str, &str),
    names: (&Named, &Named),
    base: &[&WaitProfile],
    cand: &[&WaitProfile],
) -> String {
    waitshift::headline(c, metric, names, &profiles(base), &profiles(cand))
}

/// A study's conclusion on the terminal: compare's table, the waits side by side, one headline
/// per candidate against the first (on `metric`: its key and words), and where the results are.
pub fn write_conclusion(
    out: &mut dyn Write,
    c: &Comparison,
    metric: (&str, &str),
    named: &[Named],
    waits: &[Vec<&WaitProfile>],
    (root, dirs): (&Path, &[PathBuf]),
) -> std::io::Result<()> {
    writeln!(out)?;
    crate::output::compare::write_comparison(out, c)?;
    let labels: Vec<&str> = named.iter().map(|n| n.label).collect();
    writeln!(out)?;
    write_waits(out, &labels, waits)?;
    writeln!(out)?;
    for i in 1..named.len() {
        let h = headline(c, metric, (&named[0], &named[i]), &waits[0], &waits[i]);
        writeln!(out, "{h}")?;
    }
    writeln!(
        out,
        "results: {} (oio compare {} · oio report {})",
        root.display(),
        dirs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(" "),
        root.display()
    )
}
