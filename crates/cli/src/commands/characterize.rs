//! `oio characterize FILE...`: from telemetry to a workload file, with the assumptions said.

use anyhow::{bail, Context};
use oio_analysis::characterize::{characterize, Options};
use oio_core::units::{parse_duration, parse_duration_in, MAX_DURATION};
use oio_telemetry::{parse_files, ParseOptions};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

mod calibrate;

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

    /// Find the depth (and, if needed, the rate) that reproduces the capture's device queue and
    /// IOPS on this file or device, in a few short runs while its device is recorded.
    #[arg(long, value_name = "TARGET")]
    pub calibrate: Option<PathBuf>,

    /// With --calibrate: length of each run.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = crate::values::duration_arg)]
    pub calibrate_time: Duration,

    /// With --calibrate: size of the file to create, or the part of the target to use
    /// (default 1G for a new file).
    #[arg(long, value_name = "SIZE", value_parser = crate::values::size_arg)]
    pub size: Option<u64>,

    /// With --calibrate: allow writing to a file or device oio did not create.
    #[arg(long)]
    pub allow_overwrite: bool,

    /// With --calibrate: allow writing to a partitioned, mounted or signed block device.
    #[arg(long)]
    pub destroy_data: bool,
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
    let mut c = characterize(&obs, &opts)?;
    if let Some(target) = &args.calibrate {
        if args.split {
            bail!("--calibrate calibrates one workload: drop --split (or give --period)");
        }
        // Aimed at the capture's device signature, as `oio compare CAPTURE REPLAY` sees it.
        let dev = oio_analysis::characterize::pick_device(&obs, args.device.as_deref())?;
        let sig = oio_analysis::capture_check::signature(&dev.intervals)
            .context("--calibrate: the capture has no interval with I/O")?;
        let cal = calibrate::calibrate(
            &c.workload,
            sig.queue
                .context("--calibrate: the capture has no queue length to aim at")?,
            sig.iops.unwrap_or(0.0),
            target,
            args.size,
            args.calibrate_time,
            (args.allow_overwrite, args.destroy_data),
        )?;
        // The depth is no longer the device's queue taken as is: that assumption goes.
        if let Some(i) = c
            .assumptions
            .iter()
            .position(|a| a.contains("is the device's queue"))
        {
            let gone = c.assumptions.remove(i);
            c.workload.description = c
                .workload
                .description
                .replace(&format!(" Assumption: {gone}."), "");
        }
        let s = &mut c.workload.streams[0];
        s.outstanding = Some(cal.depth);
        s.rate = cal.rate.map(|iops| oio_core::workload::Rate {
            iops,
            ..Default::default()
        });
        let said = format!(
            "calibrated: depth {}{} ({})",
            cal.depth,
            cal.rate
                .map_or(String::new(), |r| format!(", rate {r:.0}/s")),
            cal.how
        );
        c.workload.description.push_str(&format!(" {said}."));
        c.assumptions.push(said);
        c.calibration = Some(cal);
    }
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
    crate::output::characterize::write(
        &mut crate::output::terminal::stdout(),
        &c,
        &obs.source,
        &written,
    )?;
    Ok(ExitCode::SUCCESS)
}
