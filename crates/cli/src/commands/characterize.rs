//! `oio characterize FILE...`: from telemetry to a workload file, with the assumptions said.

use anyhow::{bail, Context};
use oio_analysis::characterize::{characterize, Characterization, DirProfile, Options};
use oio_core::units::{format_bytes, parse_duration, parse_duration_in, MAX_DURATION};
use oio_telemetry::{parse_files, ParseOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `oio characterize`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Telemetry files: perfmon CSV, iostat -x text or JSON, /proc/diskstats snapshots, blkparse
    /// text, fio JSON or logs, or an observation from `oio record`.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Device or perfmon instance to characterize (a unique part of the name is enough).
    #[arg(long, value_name = "NAME")]
    pub device: Option<String>,

    /// The busy filter: use only intervals whose mean queue length is above N (the busy
    /// periods, where the workload's shape shows); 0 uses every interval with I/O.
    #[arg(long, default_value_t = 2.0, value_name = "N")]
    pub busy_queue: f64,

    /// Keep the largest size buckets until they cover this percentage of I/Os.
    #[arg(long, default_value_t = 80.0, value_name = "PCT")]
    pub cover: f64,

    /// Start of the time range, from the start of the capture (90s, 10m, 1h).
    #[arg(long, value_name = "TIME")]
    pub from: Option<String>,

    /// End of the time range, from the start of the capture.
    #[arg(long, value_name = "TIME")]
    pub to: Option<String>,

    /// Characterize only this period (1-based) of the periods detected.
    #[arg(long, value_name = "N")]
    pub period: Option<usize>,

    /// Write one workload per detected period (FILE-p1.toml, FILE-p2.toml...); needs -o.
    #[arg(long, requires = "output")]
    pub split: bool,

    /// Interval length for sources without timestamps (iostat without -t).
    #[arg(long, value_name = "TIME")]
    pub interval: Option<String>,

    /// Keep the first iostat report (captures made with `iostat -y`).
    #[arg(long)]
    pub keep_first: bool,

    /// Perfmon: read counter names in this display language (de, fr-FR, ja...) instead of the
    /// one detected from the disk object names.
    #[arg(long, value_name = "TAG")]
    pub locale: Option<String>,

    /// Perfmon: decimal separator of the values (default: a comma in a value is a decimal comma).
    #[arg(long, value_name = "point|comma", value_parser = ["point", "comma"])]
    pub decimal: Option<String>,

    /// Perfmon: order of day, month and year in the time column (default: the locale's).
    #[arg(long, value_name = "mdy|dmy|ymd", value_parser = ["mdy", "dmy", "ymd"])]
    pub date_order: Option<String>,

    /// Name of the workload (default: from the device name).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,

    /// Write the workload file here (TOML, runs with `oio run -w FILE`).
    #[arg(short, long, value_name = "WORKLOAD.toml")]
    pub output: Option<PathBuf>,

    /// Print the characterization as JSON on stdout instead of the summary.
    #[arg(long)]
    pub json: bool,
}

/// Characterizes the files.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // Below 1 ms no telemetry source has resolution; traces are further bounded by the
    // number of intervals they make.
    let interval = args
        .interval
        .as_deref()
        .map(|s| parse_duration_in(s, Duration::from_millis(1), MAX_DURATION))
        .transpose()
        .context("--interval")?;
    if !(0.0..=100.0).contains(&args.cover) || args.cover == 0.0 {
        bail!("--cover {} must be above 0 and at most 100", args.cover);
    }
    if !(args.busy_queue.is_finite() && args.busy_queue >= 0.0) {
        bail!(
            "--busy-queue {}: expected a queue length of 0 or more",
            args.busy_queue
        );
    }
    if args.period == Some(0) {
        bail!("--period 0: periods are numbered from 1");
    }
    let popts = ParseOptions {
        interval_s: interval.map(|d| d.as_secs_f64()),
        keep_first_iostat_report: args.keep_first,
        perfmon: oio_telemetry::perfmon::PerfmonOptions {
            locale: args.locale.clone(),
            decimal_comma: args.decimal.as_deref().map(|d| d == "comma"),
            date_order: args
                .date_order
                .as_deref()
                .and_then(oio_telemetry::perfmon_locale::DateOrder::parse),
        },
    };
    let paths: Vec<&Path> = args.files.iter().map(PathBuf::as_path).collect();
    let mut obs = parse_files(&paths, &popts)?;
    // A saved observation (`oio record -o`) names no files of its own: name the ones given, so
    // the summary and the workload's description say where the numbers came from.
    if obs.source.files.iter().all(|f| f.is_empty()) {
        obs.source.files = args.files.iter().map(|f| f.display().to_string()).collect();
    }
    let secs = |flag: &str, s: &Option<String>| -> anyhow::Result<Option<f64>> {
        Ok(s.as_deref()
            .map(parse_duration)
            .transpose()
            .context(flag.to_string())?
            .map(|d| d.as_secs_f64()))
    };
    let opts = Options {
        device: args.device.clone(),
        busy_queue: args.busy_queue,
        cover_pct: args.cover,
        from_s: secs("--from", &args.from)?,
        to_s: secs("--to", &args.to)?,
        period: args.period,
        name: args.name.clone(),
        ..Options::default()
    };
    let c = characterize(&obs, &opts)?;
    let mut written = Vec::new();
    if let Some(out) = &args.output {
        if args.split && c.periods.len() > 1 {
            for k in 1..=c.periods.len() {
                let pc = characterize(
                    &obs,
                    &Options {
                        period: Some(k),
                        name: Some(format!("{}-p{k}", c.workload.name)),
                        ..opts.clone()
                    },
                )
                .with_context(|| format!("characterizing period {k}"))?;
                let stem = out
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let path = out.with_file_name(format!("{stem}-p{k}.toml"));
                crate::results::write_file_atomic(&path, pc.workload.to_toml().as_bytes())?;
                written.push(path.display().to_string());
            }
        } else {
            crate::results::write_file_atomic(out, c.workload.to_toml().as_bytes())?;
            written.push(out.display().to_string());
        }
    }
    if args.json {
        crate::output::print_json(&c)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    let read_as: Vec<&str> = [&obs.source.encoding, &obs.source.locale]
        .into_iter()
        .flatten()
        .map(String::as_str)
        .collect();
    let read_as = read_as.join(", locale ");
    write_summary(
        &mut out,
        &c,
        (!read_as.is_empty()).then_some(read_as.as_str()),
    )?;
    if written.is_empty() {
        writeln!(
            out,
            "\n# workload (save it with -o FILE, run it with `oio run -w FILE`):"
        )?;
        out.write_all(c.workload.to_toml().as_bytes())?;
    } else {
        writeln!(out, "\nworkload written to {}", written.join(", "))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A size for the summary table, in the one style the whole table uses (`49.5 KiB`, `512 B`).
fn size_text(bytes: u64) -> String {
    format_bytes(bytes as f64)
}

fn sizes(p: &DirProfile) -> String {
    if p.sizes.is_empty() {
        return "-".into();
    }
    p.sizes
        .iter()
        .map(|s| format!("{} {}%", size_text(s.bytes), s.pct))
        .collect::<Vec<_>>()
        .join(", ")
}

fn write_summary(
    out: &mut dyn Write,
    c: &Characterization,
    encoding: Option<&str>,
) -> std::io::Result<()> {
    writeln!(
        out,
        "{} ({}{}), device {}: {} of {} intervals used ({:.0} s), method: {}",
        c.files.join(", "),
        c.source,
        encoding.map(|e| format!(", {e}")).unwrap_or_default(),
        c.device,
        c.intervals_used,
        c.intervals_total,
        c.seconds_used,
        c.method.replace('_', " ")
    )?;
    writeln!(
        out,
        "\nreads  {:>5.1} %   writes {:>5.1} %",
        c.read_pct,
        100.0 - c.read_pct
    )?;
    writeln!(
        out,
        "{:<6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>12}  sizes (cover {} % of I/Os)",
        "", "IOPS mean", "p90", "peak", "MiB/s mean", "mean size", "latency ms", c.cover_pct
    )?;
    for (name, p) in [("read", &c.read), ("write", &c.write), ("total", &c.total)] {
        writeln!(
            out,
            "{:<6} {:>10.1} {:>10.1} {:>10.1} {:>10.2} {:>10} {:>12}  {}",
            name,
            p.iops.mean,
            p.iops.p90,
            p.iops.peak,
            p.mib_per_sec.mean,
            p.mean_bytes
                .map_or("-".into(), |b| size_text((b / 512.0).round() as u64 * 512)),
            p.latency_mean_ns
                .map_or("-".into(), |l| format!("{:.2}", l / 1e6)),
            if name == "total" {
                String::new()
            } else {
                format!("{} ({}% covered)", sizes(p), p.sizes_cover_pct)
            }
        )?;
    }
    let o = &c.outstanding;
    write!(
        out,
        "\noutstanding I/O: mean {:.1}, p90 {:.1}, peak {:.1} (from {})",
        o.mean,
        o.p90,
        o.peak,
        o.source.replace('_', " ")
    )?;
    match o.little_mean {
        Some(l) => writeln!(out, "; Little's law (IOPS x latency): {l:.1}")?,
        None => writeln!(out)?,
    }
    writeln!(
        out,
        "burstiness: peak/mean IOPS {:.2}, interval CV {}",
        c.burstiness.iops_peak_to_mean,
        c.burstiness
            .iops_cv
            .map_or("-".into(), |v| format!("{v:.2}"))
    )?;
    if let Some(a) = &c.access {
        writeln!(
            out,
            "access: {:.1} % random, busiest 10 % of 1 MiB regions get {:.1} % of I/Os, span {}",
            a.random_pct,
            a.hottest_10pct_share,
            oio_core::units::format_bytes(a.span_bytes as f64)
        )?;
    }
    if c.periods.len() > 1 {
        writeln!(out, "\nthe workload changes shape: {} periods (characterize one with --period N, or all with --split)", c.periods.len())?;
        for (k, p) in c.periods.iter().enumerate() {
            writeln!(
                out,
                "  {}: {:>7.0}-{:<7.0} s  {:>9.1} IOPS  {:>8.2} MiB/s  reads {:>5.1} %  read size {:>9}  queue {}",
                k + 1,
                p.from_s,
                p.to_s,
                p.iops_mean,
                p.mib_per_sec_mean,
                p.read_pct,
                p.read_mean_bytes.map_or("-".into(), |b| size_text((b / 512.0).round() as u64 * 512)),
                p.outstanding_mean.map_or("-".into(), |q| format!("{q:.1}"))
            )?;
        }
    }
    if !c.assumptions.is_empty() {
        writeln!(out, "\nassumptions:")?;
        for a in &c.assumptions {
            writeln!(out, "  - {a}")?;
        }
    }
    if !c.envelope.warnings.is_empty() {
        writeln!(out, "warnings:")?;
        for w in &c.envelope.warnings {
            writeln!(out, "  - {w}")?;
        }
    }
    Ok(())
}
