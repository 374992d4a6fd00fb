//! `oio export WORKLOAD --to fio|diskspd|vdbench`: job files for other load generators.

use anyhow::Context;
use oio_core::units::{parse_duration, parse_size};
use oio_core::workload::Workload;
use oio_report::export::{to_diskspd, to_fio, to_vdbench, ExportOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The tools oio writes jobs for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Tool {
    /// A fio job file.
    Fio,
    /// A diskspd command line (Windows).
    Diskspd,
    /// A vdbench parameter file.
    Vdbench,
}

/// Arguments of `oio export`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Workload file (TOML) or built-in profile name.
    #[arg(value_name = "WORKLOAD")]
    pub workload: String,

    /// The tool to write for.
    #[arg(long, value_enum, value_name = "TOOL")]
    pub to: Tool,

    /// Target file or device the job uses.
    #[arg(long, default_value = "oio-test.dat", value_name = "PATH")]
    pub target: String,

    /// Size of the target file.
    #[arg(long, default_value = "1g", value_name = "SIZE")]
    pub size: String,

    /// Measured run time.
    #[arg(long, default_value = "60s", value_name = "TIME")]
    pub time: String,

    /// Warm-up before measuring.
    #[arg(long, default_value = "0s", value_name = "TIME")]
    pub ramp: String,

    /// Use the page cache (default: direct I/O).
    #[arg(long)]
    pub buffered: bool,

    /// fio I/O engine.
    #[arg(long, default_value = "libaio", value_name = "ENGINE")]
    pub ioengine: String,

    /// Write here instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Writes the job.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let w = load_workload(&args.workload)?;
    let opts = ExportOptions {
        target: args.target.clone(),
        size_bytes: parse_size(&args.size)?,
        runtime_s: parse_duration(&args.time)?.as_secs().max(1),
        ramp_s: parse_duration(&args.ramp)?.as_secs(),
        direct: !args.buffered,
        fio_ioengine: args.ioengine.clone(),
    };
    let text = match args.to {
        Tool::Fio => to_fio(&w, &opts)?,
        Tool::Diskspd => to_diskspd(&w, &opts)?,
        Tool::Vdbench => to_vdbench(&w, &opts)?,
    };
    match &args.output {
        Some(p) => crate::results::write_file_atomic(p, text.as_bytes())?,
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(ExitCode::SUCCESS)
}

/// A workload file, or a built-in profile when no such file exists.
fn load_workload(spec: &str) -> anyhow::Result<Workload> {
    let p = Path::new(spec);
    if p.exists() {
        return Ok(Workload::from_file(p)?);
    }
    oio_core::profiles::profile(spec).with_context(|| {
        format!(
            "no workload file '{spec}' and no built-in profile of that name (profiles: {})",
            oio_core::profiles::names().collect::<Vec<_>>().join(", ")
        )
    })
}
