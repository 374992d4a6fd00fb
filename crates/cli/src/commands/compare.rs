//! `oio compare`: is configuration B better than A, by how much, and is the difference real?
//!
//! Two ways in: groups of existing results (`oio compare raid5/ raid10/`, each a directory or a
//! file of oio or fio results), or `--run 'ARGS' --run 'ARGS'`, which runs the configurations
//! itself, interleaved A B A B … so slow drift (a filling SSD, a warming cache, a neighbour's
//! backup) hits every configuration alike instead of biasing the one that ran last. The
//! statistics live in `oio_analysis::compare`; this file only gathers runs and prints.
//!
//! Also home of `oio run --repeat N` (the same runner, one configuration).

use super::report::{load_inputs, Input};
use super::run;
use crate::output::live::LiveLine;
use crate::output::style;
use crate::results::{result_file_name, write_json_atomic};
use anyhow::{bail, Context};
use clap::Parser;
use oio_analysis::compare::{self, Group, Options};
use oio_analysis::stats;
use oio_core::histogram::LatencyHistogram;
use oio_core::result::RunResult;
use oio_core::units::{format_bytes, format_count, format_ns};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;

/// Arguments of `oio compare`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  oio compare raid5/ raid10/                      each directory: repeated runs of one configuration
  oio compare base.json tuned-*.json              a file per group
  oio compare --run '--rw randread --qd 32 /mnt/a/t.dat' --run '--rw randread --qd 32 /mnt/b/t.dat' --repeat 5
  oio compare a/ b/ --json | jq .metrics.iops.margin_pct

Margins are (B / A - 1) x 100 per metric; the interval is a bootstrap over runs and the test a
Mann-Whitney rank test on per-run values. Significant = test p < alpha and interval excludes 0.")]
pub struct Args {
    /// Groups: result files or directories of them (oio or fio JSON), baseline first.
    #[arg(value_name = "GROUP")]
    pub groups: Vec<PathBuf>,

    /// Run a configuration (`oio run` arguments in one string); give it once per configuration.
    #[arg(
        long = "run",
        value_name = "ARGS",
        conflicts_with = "groups",
        allow_hyphen_values = true
    )]
    pub runs: Vec<String>,

    /// Runs per configuration with --run.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,

    /// Order of runs with --run: interleaved A B A B …, or shuffled within each round.
    #[arg(long, value_enum, default_value_t = Order::Interleaved, value_name = "ORDER")]
    pub order: Order,

    /// Names of the groups, in order (default: the paths, or A, B, … with --run).
    #[arg(long = "label", value_name = "NAME")]
    pub labels: Vec<String>,

    /// Confidence level of the intervals, percent.
    #[arg(long, value_name = "PCT", default_value_t = 95.0)]
    pub confidence: f64,

    /// Bootstrap resamples.
    #[arg(long, value_name = "N", default_value_t = stats::DEFAULT_RESAMPLES)]
    pub resamples: usize,

    /// Seed of the bootstrap (fixed by default: the same inputs print the same numbers).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,

    /// Directory for the results of --run (one subdirectory per group).
    #[arg(long, value_name = "DIR", default_value = "oio-results")]
    pub out: PathBuf,

    /// Print the comparison as JSON on stdout (schema oio.compare).
    #[arg(long)]
    pub json: bool,
}

/// Order of runs in `--run` mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Order {
    /// A B A B … (each round in the same order).
    Interleaved,
    /// Each round in a random order (seeded by --seed).
    Shuffled,
}

/// `oio run` arguments parsed from a string or an argument vector.
#[derive(Debug, Parser)]
#[command(name = "oio run", no_binary_name = true)]
struct RunLine {
    #[command(flatten)]
    args: run::Args,
}

/// Parses `oio run` arguments (without the program name).
pub(crate) fn parse_run_args<I, S>(argv: I) -> anyhow::Result<run::Args>
where
    I: IntoIterator<Item = S>,
    S: Into<std::ffi::OsString> + Clone,
{
    RunLine::try_parse_from(argv)
        .map(|l| l.args)
        .map_err(|e| anyhow::anyhow!("{}", e.render().to_string().trim_end()))
}

/// Splits a command line into words: whitespace separates, single and double quotes group.
pub(crate) fn split_words(s: &str) -> anyhow::Result<Vec<String>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in s.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            None => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        bail!("unclosed quote in '{s}'");
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

/// Runs one plan to completion and writes its result into `dir`.
fn run_once(plan: &oio_engine::RunPlan, dir: &Path) -> anyhow::Result<(RunResult, PathBuf)> {
    let stop = run::stop_flag();
    let mut live = LiveLine::new();
    let result = oio_engine::run(plan, &mut live, stop.clone());
    live.finish();
    let mut result = result?;
    result.command = std::env::args().collect();
    let name = result_file_name("run", &result.timestamp, &result.workload.name);
    let path = write_json_atomic(dir, &name, &result)?;
    if stop.load(Ordering::SeqCst) {
        bail!(
            "interrupted; the partial result is in {} and earlier runs are kept",
            path.display()
        );
    }
    Ok((result, path))
}

fn run_line(i: usize, n: usize, label: &str, r: &RunResult, path: &Path) -> String {
    let t = &r.summary.total;
    format!(
        "{label}run {i}/{n}: {} IOPS  {}/s  mean {}  p99 {}  -> {}",
        format_count(t.iops),
        format_bytes(t.bytes_per_sec),
        t.latency_ns.mean.map(format_ns).unwrap_or("-".into()),
        t.latency_ns
            .p99
            .map(|v| format_ns(v as f64))
            .unwrap_or("-".into()),
        path.display()
    )
}

/// `oio run --repeat N`: N runs of one configuration, then statistics over runs.
pub fn run_repeated(args: run::Args) -> anyhow::Result<ExitCode> {
    let n = args.repeat as usize;
    let mut plan = args.plan()?;
    let base_seed = plan.seed;
    let mut results = Vec::new();
    for i in 0..n {
        // Different offsets per run, reproducible from the recorded seeds.
        plan.seed = base_seed.wrapping_add(i as u64);
        let (r, path) = run_once(&plan, &args.out)?;
        style::print_notice(&run_line(i + 1, n, "", &r, &path));
        results.push(r);
    }
    if args.json {
        crate::output::print_json(&results)?;
    } else {
        let mut out = anstream::stdout().lock();
        write_repeat_summary(&mut out, &results)?;
        writeln!(
            out,
            "\nresults in {}; compare configurations with `oio compare DIR_A DIR_B`",
            args.out.display()
        )?;
    }
    let errors: u64 = results.iter().map(|r| r.errors.count).sum();
    Ok(if errors > 0 {
        ExitCode::from(crate::EXIT_CHECK_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

/// Statistics over repeated runs of one configuration.
fn write_repeat_summary(out: &mut dyn Write, rs: &[RunResult]) -> std::io::Result<()> {
    let n = rs.len();
    let iops: Vec<f64> = rs.iter().map(|r| r.summary.total.iops).collect();
    let mean = iops.iter().sum::<f64>() / n as f64;
    let ci = stats::bootstrap_two_sample(n, 2, 0.95, stats::DEFAULT_RESAMPLES, 1, |ia, _| {
        stats::mean_at(&iops, ia)
    });
    let sd = oio_analysis::summary_stats::stdev(&iops);
    write!(out, "\nover {n} runs: IOPS mean {}", format_count(mean))?;
    if let Some(c) = ci {
        write!(
            out,
            " [{}, {}] (95 % bootstrap over runs)",
            format_count(c.low),
            format_count(c.high)
        )?;
    }
    if let Some(sd) = sd {
        write!(out, ", run-to-run cv {:.1} %", 100.0 * sd / mean.max(1e-9))?;
    }
    writeln!(out)?;
    let mut merged = LatencyHistogram::new();
    let mut all = true;
    for r in rs {
        match &r.summary.total.histogram {
            Some(h) => merged += &LatencyHistogram::from_sparse(h),
            None => all = false,
        }
    }
    let p99s: Vec<u64> = rs
        .iter()
        .filter_map(|r| r.summary.total.latency_ns.p99)
        .collect();
    if all && !merged.is_empty() {
        let s = merged.summary();
        writeln!(
            out,
            "latency over all runs (histograms merged): mean {}  p50 {}  p99 {}  p99.9 {}",
            s.mean.map(format_ns).unwrap_or("-".into()),
            s.p50.map(|v| format_ns(v as f64)).unwrap_or("-".into()),
            s.p99.map(|v| format_ns(v as f64)).unwrap_or("-".into()),
            s.p999.map(|v| format_ns(v as f64)).unwrap_or("-".into()),
        )?;
    }
    if let (Some(lo), Some(hi)) = (p99s.iter().min(), p99s.iter().max()) {
        writeln!(
            out,
            "per-run p99 from {} to {}",
            format_ns(*lo as f64),
            format_ns(*hi as f64)
        )?;
    }
    Ok(())
}

fn options(args: &Args) -> anyhow::Result<Options> {
    if !(50.0..100.0).contains(&args.confidence) {
        bail!(
            "--confidence {}: expected a percentage from 50 to 99.9",
            args.confidence
        );
    }
    let d = Options::default();
    Ok(Options {
        confidence: args.confidence / 100.0,
        alpha: 0.05,
        resamples: args.resamples.max(100),
        seed: args.seed.unwrap_or(d.seed),
    })
}

/// Loads each group's runs (oio or fio results; other documents are an error here).
fn load_groups(args: &Args) -> anyhow::Result<Vec<Group>> {
    let mut groups = Vec::new();
    for (i, path) in args.groups.iter().enumerate() {
        let inputs = load_inputs(std::slice::from_ref(path))?;
        let mut runs = Vec::new();
        let mut sources = Vec::new();
        for input in inputs {
            match input {
                Input::Run { result, path } => {
                    runs.push(*result);
                    sources.push(path.display().to_string());
                }
                other => style::print_notice(&format!(
                    "{}: a {} document, not a run result; skipped",
                    other.path().display(),
                    other.kind()
                )),
            }
        }
        if runs.is_empty() {
            bail!(
                "'{}' holds no run results (expected oio run JSON or fio JSON files)",
                path.display()
            );
        }
        groups.push(Group {
            label: args
                .labels
                .get(i)
                .cloned()
                .unwrap_or_else(|| path.display().to_string()),
            sources,
            runs,
        });
    }
    Ok(groups)
}

/// Runs the `--run` configurations interleaved and returns them as groups.
fn run_groups(args: &Args) -> anyhow::Result<Vec<Group>> {
    let mut plans = Vec::new();
    let mut labels = Vec::new();
    for (i, line) in args.runs.iter().enumerate() {
        let words = split_words(line)?;
        let a = parse_run_args(&words).with_context(|| format!("--run '{line}'"))?;
        plans.push(a.plan().with_context(|| format!("--run '{line}'"))?);
        let label = args
            .labels
            .get(i)
            .cloned()
            .unwrap_or_else(|| ((b'A' + (i % 26) as u8) as char).to_string());
        labels.push(label);
    }
    let mut groups: Vec<Group> = labels
        .iter()
        .map(|l| Group {
            label: l.clone(),
            sources: vec![],
            runs: vec![],
        })
        .collect();
    let n = args.repeat as usize;
    let mut rng = stats::SeededRng::new(args.seed.unwrap_or(0x5eed));
    let mut sequence = Vec::new();
    for round in 0..n {
        let mut order: Vec<usize> = (0..plans.len()).collect();
        if args.order == Order::Shuffled {
            for i in (1..order.len()).rev() {
                order.swap(i, rng.below(i + 1));
            }
        }
        for g in order {
            let mut plan = plans[g].clone();
            plan.seed = plan.seed.wrapping_add(round as u64);
            let dir = args.out.join(sanitize(&labels[g]));
            let (r, path) = run_once(&plan, &dir)?;
            let prefix = format!("{}: ", labels[g]);
            style::print_notice(&run_line(round + 1, n, &prefix, &r, &path));
            sequence.push(labels[g].clone());
            groups[g].sources.push(path.display().to_string());
            groups[g].runs.push(r);
        }
    }
    style::print_notice(&format!("run order: {}", sequence.join(" ")));
    Ok(groups)
}

fn sanitize(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Runs `oio compare`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let o = options(&args)?;
    let groups = if !args.runs.is_empty() {
        if args.runs.len() < 2 {
            bail!("--run needs at least two configurations (give --run twice)");
        }
        run_groups(&args)?
    } else {
        if args.groups.len() < 2 {
            bail!("compare needs at least two groups (files or directories), or --run twice");
        }
        load_groups(&args)?
    };
    let c = compare::compare(&groups, &o);
    if args.json {
        crate::output::print_json(&c)?;
        for w in &c.warnings {
            style::print_warning(w);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = anstream::stdout().lock();
    write_comparison(&mut out, &c)?;
    Ok(ExitCode::SUCCESS)
}

/// The comparison as a terminal table plus verdicts.
fn write_comparison(out: &mut dyn Write, c: &compare::Comparison) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<24} {:>4} {:>12} {:>12} {:>12} {:>12}",
        "group", "runs", "IOPS", "MiB/s", "mean lat", "p99 lat"
    )?;
    for g in &c.groups {
        let v = |k: &str| g.values.get(k).copied().flatten();
        writeln!(
            out,
            "{:<24} {:>4} {:>12} {:>12} {:>12} {:>12}",
            truncate(&g.label, 24),
            g.n,
            v("iops").map(format_count).unwrap_or("-".into()),
            v("bytes_per_sec")
                .map(|b| format!("{:.1}", b / (1024.0 * 1024.0)))
                .unwrap_or("-".into()),
            v("latency_mean").map(format_ns).unwrap_or("-".into()),
            v("latency_p99").map(format_ns).unwrap_or("-".into()),
        )?;
    }
    writeln!(
        out,
        "\nagainst {} (margin = group / baseline - 1):",
        c.baseline
    )?;
    for v in &c.verdicts {
        writeln!(out, "  {v}")?;
    }
    writeln!(out, "\nhow:")?;
    for m in &c.methods {
        writeln!(out, "  - {m}")?;
    }
    for w in &c.warnings {
        writeln!(out, "warning: {w}")?;
    }
    Ok(())
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let tail: String = s
            .chars()
            .rev()
            .take(n - 1)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        format!("…{tail}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_like_a_shell() {
        assert_eq!(
            split_words(" --rw randread  --bs '64k:68,8k:32' \"/tmp/a b\" ").unwrap(),
            vec!["--rw", "randread", "--bs", "64k:68,8k:32", "/tmp/a b"]
        );
        assert!(split_words("--rw 'x").is_err());
    }

    #[test]
    fn run_args_parse_from_words() {
        let a = parse_run_args(["--engine", "null", "--qd", "8"]).unwrap();
        assert_eq!(a.qd, Some(8));
        assert!(parse_run_args(["--nope"]).is_err());
    }
}
