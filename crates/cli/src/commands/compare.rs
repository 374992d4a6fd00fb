//! `oio compare`: is configuration B better than A, by how much, and is the difference real?
//!
//! Two ways in: groups of existing results (`oio compare raid5/ raid10/`, each a directory or a
//! file of oio or fio results, or of `oio tpcc run` results), or `--run 'ARGS' --run 'ARGS'`, which runs the configurations
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
use oio_analysis::compare::{self, Group, Kind, Options, RunData, TpccFacts, TxnFacts};
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
  oio compare before/ after/ --label before,after  TPC-C results (oio tpcc run): NOPM, TPM, p90/p99
  oio compare a/ b/ --json | jq .metrics.iops.margin_pct

Margins are (B / A - 1) x 100 per metric, on the group values (means; percentiles from merged
histograms). With fewer than 8 runs a side the test is Welch's t-test on the logs of the per-run
values (assumes log-normal run-to-run noise and independent runs) and the interval its interval
of the ratio; with 8 or more a side, a Mann-Whitney rank test with a bootstrap interval over runs.
\"no detectable difference\" only when the interval lies within +/- --equivalence percent.")]
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

    /// Names of the groups, in order: `--label a,b` or `--label a --label b` (default: the
    /// paths, or A, B, … with --run).
    #[arg(long = "label", value_name = "NAME", value_delimiter = ',')]
    pub labels: Vec<String>,

    /// "No detectable difference" needs the whole interval within ± this many percent.
    #[arg(long, value_name = "PCT", default_value_t = 5.0)]
    pub equivalence: f64,

    /// Confidence level of the intervals, percent.
    #[arg(long, value_name = "PCT", default_value_t = 95.0)]
    pub confidence: f64,

    /// Bootstrap resamples.
    #[arg(long, value_name = "N", default_value_t = stats::DEFAULT_RESAMPLES)]
    pub resamples: usize,

    /// Random-number seed of the bootstrap (fixed by default: the same inputs print the same
    /// numbers).
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
    /// Each round in a random order (reproducible with --seed).
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
    let sd = oio_analysis::summary_stats::stdev(&iops);
    write!(out, "\nover {n} runs: IOPS mean {}", format_count(mean))?;
    if let Some(sd) = sd {
        // Student's t interval of the mean: a bootstrap of 2 to 5 values is far too narrow.
        let h = stats::t_quantile(0.975, (n - 1) as f64) * sd / (n as f64).sqrt();
        let cv = 100.0 * sd / mean.max(1e-9);
        write!(
            out,
            " [{}, {}] (95 % t interval over runs), run-to-run cv {cv:.1} %",
            format_count((mean - h).max(0.0)),
            format_count(mean + h),
        )?;
        if cv > oio_analysis::compare::HIGH_CV_PCT {
            write!(
                out,
                " (high: repeats on a quiet system usually agree within a few percent)"
            )?;
        }
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
    if !(args.equivalence > 0.0 && args.equivalence < 100.0) {
        bail!(
            "--equivalence {}: expected a percentage above 0 and below 100",
            args.equivalence
        );
    }
    let d = Options::default();
    Ok(Options {
        confidence: args.confidence / 100.0,
        alpha: 0.05,
        resamples: args.resamples.max(100),
        seed: args.seed.unwrap_or(d.seed),
        equivalence_pct: args.equivalence,
    })
}

/// Checks `--label` against the number of groups: one name each, no name twice.
fn check_labels(labels: &[String], groups: usize) -> anyhow::Result<()> {
    if labels.len() > groups {
        bail!(
            "--label gives {} names ({}) for {groups} groups: give one name per group, in order",
            labels.len(),
            labels.join(", ")
        );
    }
    for (i, l) in labels.iter().enumerate() {
        if l.trim().is_empty() {
            bail!("--label: name {} is empty", i + 1);
        }
        if labels[..i].contains(l) {
            bail!("--label: '{l}' names two groups; give each group its own name");
        }
    }
    Ok(())
}

/// The part of a TPC-C result a comparison needs.
fn tpcc_facts(t: &oio_tpcc::TpccResult) -> TpccFacts {
    let mut workload = format!(
        "tpcc, {} warehouse{}",
        t.warehouses,
        if t.warehouses == 1 { "" } else { "s" }
    );
    if t.options.paced {
        workload.push_str(", paced");
    }
    TpccFacts {
        workload,
        partial: t.envelope.partial,
        nopm: t.summary.nopm,
        tpm: t.summary.tpm,
        tpm_source: t.summary.tpm_source.clone(),
        transactions: t
            .transactions
            .iter()
            .map(|(k, x)| {
                (
                    k.clone(),
                    TxnFacts {
                        p90_us: x.latency_ns.p90.map(|ns| ns as f64 / 1e3),
                        p99_us: x.latency_ns.p99.map(|ns| ns as f64 / 1e3),
                        histogram_ns: x.histogram_ns.clone(),
                    },
                )
            })
            .collect(),
    }
}

/// Loads each group's runs: oio or fio run results, or TPC-C results, never both (the metrics
/// differ). Other documents are skipped with a notice.
fn load_groups(args: &Args) -> anyhow::Result<(Vec<Group>, Kind)> {
    let mut groups = Vec::new();
    let mut kinds: Vec<(Kind, String)> = Vec::new();
    for (i, path) in args.groups.iter().enumerate() {
        let inputs = load_inputs(std::slice::from_ref(path))?;
        let mut runs = Vec::new();
        let mut sources = Vec::new();
        let mut kind: Option<(Kind, String)> = None;
        for input in inputs {
            let (k, data, file) = match input {
                Input::Run { result, path } => (Kind::Run, RunData::from_run(&result), path),
                Input::Doc {
                    schema,
                    value,
                    path,
                } if schema == oio_tpcc::result::TPCC_SCHEMA => {
                    let t: oio_tpcc::TpccResult = oio_tpcc::TpccResult::from_value(value)
                        .with_context(|| {
                            format!("'{}': not a valid oio.tpcc document", path.display())
                        })?;
                    (Kind::Tpcc, RunData::from_tpcc(&tpcc_facts(&t)), path)
                }
                other => {
                    style::print_notice(&format!(
                        "{}: a {} document, not a run or TPC-C result; skipped",
                        other.path().display(),
                        other.kind()
                    ));
                    continue;
                }
            };
            let file = file.display().to_string();
            match &kind {
                Some((first, first_file)) if *first != k => bail!(
                    "'{}' mixes {} ({first_file}) with {} ({file}): put each kind in its own group; runs and TPC-C results cannot be compared with each other",
                    path.display(),
                    first.words(),
                    k.words()
                ),
                Some(_) => {}
                None => kind = Some((k, file.clone())),
            }
            runs.push(data);
            sources.push(file);
        }
        let Some(kind) = kind else {
            bail!(
                "'{}' holds no results to compare (expected oio run JSON, fio JSON or oio tpcc run JSON files)",
                path.display()
            );
        };
        kinds.push((kind.0, path.display().to_string()));
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
    let kind = kinds[0].0;
    if let Some((other, p)) = kinds.iter().find(|(k, _)| *k != kind) {
        bail!(
            "cannot compare {} with {}: '{}' holds the first kind and '{p}' the second; compare I/O runs with I/O runs and TPC-C results with TPC-C results",
            kind.words(),
            other.words(),
            kinds[0].1
        );
    }
    Ok((groups, kind))
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
            groups[g].runs.push(RunData::from_run(&r));
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
    let (groups, kind) = if !args.runs.is_empty() {
        if args.runs.len() < 2 {
            bail!("--run needs at least two configurations (give --run twice)");
        }
        check_labels(&args.labels, args.runs.len())?;
        (run_groups(&args)?, Kind::Run)
    } else {
        if args.groups.len() < 2 {
            bail!("compare needs at least two groups (files or directories), or --run twice");
        }
        check_labels(&args.labels, args.groups.len())?;
        load_groups(&args)?
    };
    let c = compare::compare(&groups, kind, &o);
    if args.json {
        crate::output::print_json(&c)?;
        for w in &c.warnings {
            style::print_warning(w);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = anstream::stdout().lock();
    crate::output::compare::write_comparison(&mut out, &c)?;
    Ok(ExitCode::SUCCESS)
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
