//! `oio blend`: the I/O blender (seed 001). N sequential streams run one at a time, then all
//! together; the table shows how throughput and sequentiality change when regular streams
//! are mixed on one target.

use crate::commands::run::{EngineArg, DEFAULT_SIZE, DEFAULT_TARGET};
use crate::output::live::LiveLine;
use crate::output::style::HEAD;
use crate::results::{result_file_name, write_json_atomic};
use anyhow::bail;
use clap::ValueEnum;
use oio_core::result::RunResult;
use oio_core::units::{format_bytes, format_count, format_ns};
use oio_core::workload::{Extent, Percent, Region, Stream, Workload};
use oio_core::SizeMix;
use oio_engine::{RunPlan, TargetBinding, TargetOptions};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `oio blend`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// File or block device (default ./oio-testfile, created).
    #[arg(value_name = "TARGET")]
    pub target: Option<PathBuf>,

    /// Sequential streams, each in its own slice of the target.
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub streams: u32,

    /// Direction of the streams.
    #[arg(long, value_enum, default_value_t = BlendDir::Read, value_name = "DIR")]
    pub rw: BlendDir,

    /// I/O size of every stream.
    #[arg(long, default_value = "64k", value_name = "MIX")]
    pub bs: SizeMix,

    /// Outstanding I/Os per stream.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub qd: u32,

    /// Measured time of each phase.
    #[arg(long, default_value = "5s", value_name = "DURATION", value_parser = crate::cli::duration_arg)]
    pub time: Duration,

    /// Warm-up of each phase.
    #[arg(long, default_value = "1s", value_name = "DURATION", value_parser = crate::cli::duration_arg)]
    pub ramp: Duration,

    /// Size of the file to create or of the part to use. Default: the whole of an existing
    /// file or device; 1G for ./oio-testfile.
    #[arg(long, value_name = "SIZE", value_parser = crate::cli::size_arg)]
    pub size: Option<u64>,

    /// I/O engine.
    #[arg(long, value_enum, default_value_t = EngineArg::Auto, value_name = "ENGINE")]
    pub engine: EngineArg,

    /// Go through the page cache instead of O_DIRECT.
    #[arg(long)]
    pub buffered: bool,

    /// Allow writing to a file or device oio did not create.
    #[arg(long)]
    pub allow_overwrite: bool,

    /// Directory for the result files.
    #[arg(long, default_value = "oio-results", value_name = "DIR")]
    pub out: PathBuf,

    /// Print the blend as JSON on stdout.
    #[arg(long)]
    pub json: bool,

    /// Random-number seed for offsets and data (the same number repeats the same I/O).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub seed: u64,
}

/// Direction of blended streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BlendDir {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
}

/// One phase of the blend.
#[derive(Debug, Serialize)]
pub struct Phase {
    /// "stream 2 alone" or "all 4 together".
    pub name: String,
    /// Streams running.
    pub streams: Vec<String>,
    /// I/Os per second.
    pub iops: f64,
    /// Bytes per second.
    pub bytes_per_sec: f64,
    /// Median latency, ns.
    pub latency_p50_ns: Option<u64>,
    /// 99th percentile latency, ns.
    pub latency_p99_ns: Option<u64>,
    /// Share of I/Os that continued where the previous one on the target ended.
    pub sequential_pct: f64,
    /// Share within 128 KiB of it.
    pub near_sequential_pct: f64,
    /// The phase's full result.
    pub result_file: String,
}

/// The blend document (`--json`).
#[derive(Debug, Serialize)]
pub struct Blend {
    /// Schema `oio.blend`, version, oio version, timestamp, command line, host.
    #[serde(flatten)]
    pub envelope: oio_core::Envelope,
    /// Target path.
    pub target: String,
    /// What the sequentiality is measured from.
    pub basis: String,
    /// The phases: each stream alone, then all together.
    pub phases: Vec<Phase>,
}

fn stream(i: u32, n: u32, a: &Args) -> Stream {
    let share = 100.0 / n as f64;
    Stream {
        name: format!("seq-{}", i + 1),
        target: None,
        read_pct: Percent(if a.rw == BlendDir::Read { 100.0 } else { 0.0 }),
        bs: Some(a.bs.clone()),
        read_bs: None,
        write_bs: None,
        random_pct: Percent(0.0),
        align: None,
        region: Region {
            offset: Extent::Percent(share * i as f64),
            length: Extent::Percent(share),
        },
        outstanding: Some(a.qd),
        workers: 1,
        stripe: None,
        compress_pct: None,
        dedupe_pct: None,
        rate: None,
        distribution: None,
        fdatasync: None,
    }
}

/// Runs the phases.
pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    if a.streams < 2 || a.streams > 64 {
        bail!("--streams {}: the blender needs 2 to 64 streams", a.streams);
    }
    if a.qd == 0 {
        bail!("--qd must be at least 1");
    }
    let default = a.target.is_none();
    let target = a
        .target
        .clone()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_TARGET));
    let all: Vec<Stream> = (0..a.streams).map(|i| stream(i, a.streams, &a)).collect();
    let mut phases_streams: Vec<(String, Vec<Stream>)> = all
        .iter()
        .map(|s| (format!("{} alone", s.name), vec![s.clone()]))
        .collect();
    phases_streams.push((format!("all {} together", a.streams), all.clone()));
    crate::results::check_destination(&a.out, "--out DIR")?;
    let stop = crate::interrupt::stop_flag();

    let mut phases = Vec::new();
    let mut basis = String::new();
    for (name, streams) in phases_streams {
        let workload = Workload {
            name: format!("blend-{}", name.replace(' ', "-")),
            description: format!("oio blend: {name}"),
            streams,
        };
        let plan = RunPlan {
            workload,
            bindings: vec![TargetBinding {
                role: String::new(),
                paths: vec![target.clone()],
            }],
            target_options: TargetOptions {
                write: false,
                direct: !a.buffered,
                size: a.size.or(default.then_some(DEFAULT_SIZE)),
                allow_overwrite: a.allow_overwrite,
                destroy_data: false,
                fill_seed: 0,
            },
            engine: a.engine.into(),
            submit: oio_engine::SubmitMode::default(),
            time: a.time,
            ramp: a.ramp,
            interval: Duration::from_secs(1),
            seed: a.seed,
            latency_tracking: true,
            io_limit: None,
            verify: false,
            track_order: true,
            lat_log: None,
            sim: None,
        };
        let mut live = LiveLine::new();
        let r = oio_engine::run(&plan, &mut live, stop.clone());
        live.finish();
        let mut r: RunResult = r?;
        r.envelope.command = std::env::args().collect();
        let file = write_json_atomic(
            &a.out,
            &result_file_name("run", &r.envelope.timestamp, &r.workload.name),
            &r,
        )?;
        let order = r.access_order.clone().unwrap_or_default();
        basis = order.basis.clone();
        phases.push(Phase {
            name,
            streams: r.streams.iter().map(|s| s.name.clone()).collect(),
            iops: r.summary.total.iops,
            bytes_per_sec: r.summary.total.bytes_per_sec,
            latency_p50_ns: r.summary.total.latency_ns.p50,
            latency_p99_ns: r.summary.total.latency_ns.p99,
            sequential_pct: order.sequential_pct,
            near_sequential_pct: order.near_sequential_pct,
            result_file: file.display().to_string(),
        });
        if stop.load(std::sync::atomic::Ordering::SeqCst) {
            // An interrupted phase compares nothing: no conclusions from it.
            crate::output::style::print_notice(&format!(
                "interrupted during \"{}\"; the phases' results are in {}; no blend drawn",
                phases.last().map(|p| p.name.as_str()).unwrap_or_default(),
                a.out.display()
            ));
            return Ok(ExitCode::from(crate::interrupt::EXIT_INTERRUPTED));
        }
    }
    let doc = Blend {
        envelope: oio_core::Envelope {
            command: std::env::args().collect(),
            host: Some(oio_core::host::HostInfo::detect()),
            ..oio_core::Envelope::new(
                oio_core::document::Kind::Blend.schema(),
                oio_core::document::Kind::Blend.version(),
            )
        },
        target: target.display().to_string(),
        basis,
        phases,
    };
    if a.json {
        crate::output::print_json(&doc)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = anstream::stdout().lock();
    writeln!(
        out,
        "{HEAD}I/O blender{HEAD:#}: {} sequential {} streams of {} at QD {} each on {}",
        a.streams,
        if a.rw == BlendDir::Read {
            "read"
        } else {
            "write"
        },
        a.bs,
        a.qd,
        doc.target
    )?;
    writeln!(
        out,
        "{HEAD}{:<18} {:>10} {:>11} {:>10} {:>10} {:>12} {:>12}{HEAD:#}",
        "phase", "IOPS", "MiB/s", "p50", "p99", "sequential", "within 128k"
    )?;
    for p in &doc.phases {
        writeln!(
            out,
            "{:<18} {:>10} {:>11.1} {:>10} {:>10} {:>11.1}% {:>11.1}%",
            p.name,
            format_count(p.iops),
            p.bytes_per_sec / (1024.0 * 1024.0),
            p.latency_p50_ns
                .map(|v| format_ns(v as f64))
                .unwrap_or("-".into()),
            p.latency_p99_ns
                .map(|v| format_ns(v as f64))
                .unwrap_or("-".into()),
            p.sequential_pct,
            p.near_sequential_pct
        )?;
    }
    let alone: f64 = doc.phases[..doc.phases.len() - 1]
        .iter()
        .map(|p| p.bytes_per_sec)
        .sum::<f64>()
        / (doc.phases.len() - 1) as f64;
    let together = doc.phases.last().expect("at least 3 phases");
    writeln!(
        out,
        "\ntogether: {}/s in total vs {}/s for one stream alone; the target saw {:.1} % sequential I/O instead of ~100 %",
        format_bytes(together.bytes_per_sec),
        format_bytes(alone),
        together.sequential_pct
    )?;
    writeln!(out, "sequentiality is measured from {}", doc.basis)?;
    Ok(ExitCode::SUCCESS)
}
