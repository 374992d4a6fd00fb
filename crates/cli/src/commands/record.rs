//! `oio record [DEVICE...]`: sample /proc/diskstats live, show iostat-like numbers per
//! interval, and save the Observation.

use anyhow::{bail, Context};
use oio_core::observation::{DeviceInterval, Observation};
use oio_core::units::parse_duration;
use oio_telemetry::diskstats::{mean_interval, DiskstatsRecorder, Sample};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Arguments of `oio record`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Devices to record, kernel names as in /proc/diskstats (sda, nvme0n1, vda); default: every
    /// whole disk.
    #[arg(value_name = "DEVICE")]
    pub devices: Vec<String>,

    /// Length of each interval (500ms, 1s, 10s).
    #[arg(long, default_value = "1s", value_name = "TIME")]
    pub interval: String,

    /// Stop after this long (default: until Ctrl-C).
    #[arg(long, value_name = "TIME")]
    pub duration: Option<String>,

    /// Save the observation here (default: record-<time>.json in the current directory).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Print the observation as JSON on stdout instead of the tables.
    #[arg(long)]
    pub json: bool,
}

/// Records until the duration ends or Ctrl-C.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let interval = parse_duration(&args.interval)?;
    if interval < Duration::from_millis(100) {
        bail!(
            "--interval {} is too short; use 100ms or more",
            args.interval
        );
    }
    let duration = args.duration.as_deref().map(parse_duration).transpose()?;
    match &args.output {
        Some(p) => crate::results::check_destination(
            p.parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new(".")),
            "-o FILE",
        )?,
        None => crate::results::check_destination(Path::new("."), "-o FILE")?,
    }
    // The global --quiet: no table, no summary; only errors and where the file went.
    let quiet = crate::output::style::quiet();
    let live = !(quiet || args.json);
    let mut header_done = false;
    let recorder =
        DiskstatsRecorder::start_with_observer(&args.devices, interval, move |s: &Sample| {
            if live {
                let mut out = crate::output::terminal::stdout();
                if !header_done {
                    let _ = writeln!(out, "{}", header());
                    header_done = true;
                }
                for (name, iv) in &s.devices {
                    let _ = writeln!(out, "{}", row(&format!("{:.1}", s.t_s), name, iv));
                }
            }
        })
        .context("starting the diskstats recorder")?;
    let stop = crate::interrupt::stop_flag();
    let start = Instant::now();
    while !stop.load(Ordering::SeqCst) && duration.is_none_or(|d| start.elapsed() < d) {
        std::thread::sleep(Duration::from_millis(20));
    }
    if duration.is_none() {
        // Without --duration a signal is the way to end a recording: it finished.
        crate::interrupt::take_cause();
    }
    let obs = recorder.stop().context("recording /proc/diskstats")?;
    let saved = match &args.output {
        Some(p) => {
            crate::results::write_file_atomic(p, &json_bytes(&obs)?)?;
            p.display().to_string()
        }
        None => {
            let name = format!("record-{}.json", file_stamp());
            crate::results::write_json_atomic(Path::new("."), &name, &obs)?
                .display()
                .to_string()
        }
    };
    let mut out = crate::output::terminal::stdout();
    if args.json {
        out.write_all(&json_bytes(&obs)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if quiet {
        writeln!(out, "{saved}")?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(out, "\nmeans over the recording (saved to {saved}):")?;
    writeln!(out, "{}", header())?;
    for d in &obs.devices {
        if let Some(m) = mean_interval(&d.intervals) {
            writeln!(out, "{}", row("mean", &d.name, &m))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn header() -> String {
    format!(
        "{:>7} {:<10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>7} {:>6}",
        "t_s",
        "device",
        "r/s",
        "w/s",
        "rMiB/s",
        "wMiB/s",
        "rsize_kB",
        "wsize_kB",
        "r_await",
        "w_await",
        "aqu-sz",
        "%util"
    )
}

fn row(t: &str, name: &str, iv: &DeviceInterval) -> String {
    let opt = |v: Option<f64>, scale: f64, prec: usize| match v {
        Some(x) => format!("{:.*}", prec, x / scale),
        None => "-".into(),
    };
    format!(
        "{:>7} {:<10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>7} {:>6}",
        t,
        name,
        opt(iv.read.iops, 1.0, 1),
        opt(iv.write.iops, 1.0, 1),
        opt(iv.read.bytes_per_sec, 1_048_576.0, 2),
        opt(iv.write.bytes_per_sec, 1_048_576.0, 2),
        opt(iv.read.mean_io_bytes, 1024.0, 1),
        opt(iv.write.mean_io_bytes, 1024.0, 1),
        opt(iv.read.latency_mean_ns, 1e6, 2),
        opt(iv.write.latency_mean_ns, 1e6, 2),
        opt(iv.queue_mean, 1.0, 2),
        opt(iv.util_pct, 1.0, 1),
    )
}

/// `20261121T135901` for file names.
fn file_stamp() -> String {
    oio_core::host::now_rfc3339()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .take(15)
        .collect()
}

fn json_bytes(obs: &Observation) -> anyhow::Result<Vec<u8>> {
    let mut v = serde_json::to_vec_pretty(obs)?;
    v.push(b'\n');
    Ok(v)
}
