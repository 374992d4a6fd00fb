//! The flag groups that define a workload and a run, flattened into every command that runs
//! one (`run`, `sweep`, `compare --run`, `blend`): the same flag means the same thing, with
//! the same help, everywhere. Each group turns into the typed settings of `oio_lab`; nothing
//! here builds or re-parses an argument vector.

use clap::{Parser, ValueEnum};
use oio_core::SizeMix;
pub use oio_lab::WorkloadFlags;
use oio_lab::{Pattern, RunSettings, WorkloadOverrides, WorkloadSource};
use std::path::PathBuf;

/// Access patterns for inline workloads (fio's names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RwArg {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    Randread,
    /// Random writes.
    Randwrite,
    /// Random reads and writes (--read-pct, default 50).
    Randrw,
    /// Sequential reads and writes (--read-pct, default 50).
    Rw,
}

impl From<RwArg> for Pattern {
    fn from(r: RwArg) -> Pattern {
        match r {
            RwArg::Read => Pattern::Read,
            RwArg::Write => Pattern::Write,
            RwArg::Randread => Pattern::Randread,
            RwArg::Randwrite => Pattern::Randwrite,
            RwArg::Randrw => Pattern::Randrw,
            RwArg::Rw => Pattern::Rw,
        }
    }
}

/// Runs per point of a sweep (`oio sweep`, `oio fleet sweep`).
#[derive(Clone, Debug, clap::Args)]
pub struct RepeatArgs {
    /// Runs per point, run in rounds across all points.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub repeat: u32,
}

/// The X %-of-peak knee rule's share (`oio sweep`, `oio fleet sweep`).
#[derive(Clone, Debug, clap::Args)]
pub struct KneeArgs {
    /// Share of peak IOPS for the X %-of-peak rule, percent.
    #[arg(long, value_name = "PCT", default_value_t = 90.0)]
    pub knee_pct: f64,
}

/// Arrival spacing on the command line.
/// Order of repeats across the points of a sweep: each round runs every point once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RoundOrderArg {
    /// 1 2 4, 4 2 1, 1 2 4, … (every other round reversed, so a drift hits every point alike).
    Counterbalanced,
    /// 1 2 4, 1 2 4, … (each round in the same order: the last point takes any drift).
    Interleaved,
    /// Each round in a random order (reproducible with --seed).
    Shuffled,
}

impl From<RoundOrderArg> for oio_lab::Order {
    fn from(o: RoundOrderArg) -> Self {
        match o {
            RoundOrderArg::Counterbalanced => oio_lab::Order::Counterbalanced,
            RoundOrderArg::Interleaved => oio_lab::Order::Interleaved,
            RoundOrderArg::Shuffled => oio_lab::Order::Shuffled,
        }
    }
}

pub use oio_lab::workload::parse::secs as parse_secs;

/// A `--label`: a name of 1 to `oio_tpcc::plan::MAX_LABEL` printable characters, the rule
/// `oio tpcc run --label` follows.
pub fn parse_label(s: &str) -> Result<String, String> {
    let max = oio_tpcc::plan::MAX_LABEL;
    if s.trim().is_empty() || s.chars().count() > max || s.chars().any(char::is_control) {
        return Err(format!(
            "'{}': expected a name of 1 to {max} printable characters",
            s.escape_debug()
        ));
    }
    Ok(s.to_string())
}

pub use oio_lab::workload::parse::pct as parse_pct;

/// Where the workload comes from.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct SourceArgs {
    /// Workload file (TOML; see `oio profiles oltp-data` for the format).
    #[arg(short = 'w', long, value_name = "FILE", conflicts_with_all = ["profile", "rw"])]
    pub workload: Option<PathBuf>,

    /// Built-in profile (`oio profiles` lists them). Default: oltp-data.
    #[arg(short = 'p', long, value_name = "NAME", conflicts_with = "rw")]
    pub profile: Option<String>,

    /// Inline workload: the access pattern.
    #[arg(long, value_enum, value_name = "PATTERN")]
    pub rw: Option<RwArg>,
}

impl SourceArgs {
    /// The source these flags name (the default profile when none).
    pub fn source(&self) -> WorkloadSource {
        if let Some(p) = &self.workload {
            WorkloadSource::File(p.clone())
        } else if let Some(rw) = self.rw {
            WorkloadSource::Pattern(rw.into())
        } else if let Some(p) = &self.profile {
            WorkloadSource::Profile(p.clone())
        } else {
            WorkloadSource::default()
        }
    }
}

/// Size, read share and depth of one run (a sweep takes lists of the same flags).
#[derive(Clone, Debug, Default, clap::Args)]
pub struct ShapeArgs {
    /// I/O size or mix by count, e.g. 4k or 64k:68,8k:32 (both directions). Default: the
    /// profile's or workload file's sizes; 4k with --rw.
    #[arg(long, value_name = "MIX")]
    pub bs: Option<SizeMix>,

    /// Share of reads in percent. Default: the profile's or workload file's; 50 with --rw
    /// randrw/rw.
    #[arg(long, value_name = "PCT", value_parser = parse_pct)]
    pub read_pct: Option<f64>,

    /// Outstanding I/Os (queue depth) per stream, in total over its workers. Default: the
    /// profile's or workload file's depth (oltp-data: 32); 32 with --rw. With --rate it is
    /// instead the cap on I/Os in flight (default: the profile's depth; 1024 with --rw).
    #[arg(long, value_name = "N")]
    pub qd: Option<u32>,
}

impl ShapeArgs {
    /// The typed overrides of this shape and the other workload flags.
    pub fn overrides(&self, flags: &WorkloadFlags) -> WorkloadOverrides {
        WorkloadOverrides {
            bs: self.bs.clone(),
            read_pct: self.read_pct,
            qd: self.qd,
            flags: flags.clone(),
        }
    }
}

pub use oio_lab::{MemoryLimit as MemoryLimitArg, WaitFlag as WaitArg};

/// One run's flags: what `oio run` takes besides its own, and what each `compare --run`
/// string is parsed against.
#[derive(Clone, Debug, clap::Args)]
pub struct RunFlags {
    /// Where the workload comes from.
    #[command(flatten)]
    pub source: SourceArgs,
    /// Size, read share, depth.
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// The other workload flags.
    #[command(flatten)]
    pub workload: WorkloadFlags,
    /// Targets and how the run goes.
    #[command(flatten)]
    pub settings: RunSettings,
}

impl RunFlags {
    /// The run these flags describe.
    pub fn config(&self) -> anyhow::Result<oio_lab::RunConfig> {
        Ok(self
            .settings
            .config(&self.source.source(), &self.shape.overrides(&self.workload))?)
    }
}

/// A `compare --run` string, parsed by clap against the same flags as `oio run`.
#[derive(Debug, Parser)]
#[command(name = "oio run", no_binary_name = true)]
struct RunLine {
    #[command(flatten)]
    flags: RunFlags,
}

/// Parses one configuration string of `oio compare --run`.
pub fn parse_run_line(line: &str) -> anyhow::Result<RunFlags> {
    let words = split_words(line)?;
    RunLine::try_parse_from(words)
        .map(|l| l.flags)
        .map_err(|e| anyhow::anyhow!("{}", e.render().to_string().trim_end()))
}

/// The long names of `oio run`'s workload flags (source, shape and the rest): what an
/// inventory's workload group may set, by construction.
pub fn workload_flag_names() -> Vec<String> {
    use clap::Args;
    let cmd = clap::Command::new("group");
    let cmd = WorkloadFlags::augment_args(ShapeArgs::augment_args(SourceArgs::augment_args(cmd)));
    cmd.get_arguments()
        .filter_map(|a| a.get_long())
        .filter(|l| !["workload", "profile"].contains(l))
        .map(str::to_string)
        .collect()
}

/// Parses workload words (an inventory group's, as `--qd 16 --rw randread`) as `oio run`
/// takes them.
pub fn parse_run_words(words: Vec<String>) -> anyhow::Result<RunFlags> {
    RunLine::try_parse_from(words)
        .map(|l| l.flags)
        .map_err(|e| anyhow::anyhow!("{}", e.render().to_string().trim_end()))
}

/// A sweep's `--with` string: workload flags for every point (the same flags the sweep
/// takes directly) and a seed.
#[derive(Debug, Parser)]
#[command(name = "oio sweep --with", no_binary_name = true)]
pub struct WithLine {
    /// The workload flags.
    #[command(flatten)]
    pub workload: WorkloadFlags,
    /// Seed of the first run.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}

/// Parses a sweep's `--with` string.
pub fn parse_with(line: &str) -> anyhow::Result<WithLine> {
    WithLine::try_parse_from(split_words(line)?)
        .map_err(|e| anyhow::anyhow!("--with '{line}': {}", e.render().to_string().trim_end()))
}

/// Splits a command line into words: whitespace separates, single and double quotes group.
pub fn split_words(s: &str) -> anyhow::Result<Vec<String>> {
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
        anyhow::bail!("unclosed quote in '{s}'");
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
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
    fn a_run_line_parses_against_the_run_flags() {
        let f = parse_run_line("--engine null --qd 8 --rw randread t.dat").unwrap();
        assert_eq!(f.shape.qd, Some(8));
        assert_eq!(f.settings.engine, oio_engine::EngineKind::Null);
        assert_eq!(f.settings.targets, vec![PathBuf::from("t.dat")]);
        let e = parse_run_line("--nope").unwrap_err().to_string();
        assert!(e.contains("--nope"), "{e}");
    }

    /// What lab's experiments start from is what `oio run` with no flag gives.
    #[test]
    fn the_run_settings_defaults_are_the_command_lines() {
        let parsed = parse_run_line("").unwrap().settings;
        assert_eq!(
            format!("{parsed:?}"),
            format!("{:?}", RunSettings::default())
        );
    }
}
