//! `oio blend`: the I/O blender (seed 001). N sequential streams run one at a time, then all
//! together; the table shows how throughput and sequentiality change when regular streams
//! are mixed on one target. The phases are `oio_lab::blend`.

use crate::experiment::{execute_labelled, present};
use clap::ValueEnum;
use oio_core::SizeMix;
use oio_lab::blend::{BlendPlan, BlendSpec};
use oio_lab::Plan;
use oio_lab::RunSettings;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `oio blend`.
#[derive(Debug, clap::Args)]
#[command(
    mut_arg("time", |a| a.default_value("5s")),
    mut_arg("ramp", |a| a.default_value("1s")),
    mut_arg("seed", |a| a.default_value("1"))
)]
pub struct Args {
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

    /// The target (one file or device), how to open it, and how each phase runs.
    #[command(flatten)]
    pub settings: RunSettings,

    /// Directory for the result files.
    #[arg(long, default_value = "oio-results", value_name = "DIR")]
    pub out: PathBuf,

    /// A name for this blend, recorded in each phase's result and put in their file names:
    /// `report` and `diagnose` name the runs by it.
    #[arg(long, value_name = "NAME", value_parser = crate::args::parse_label)]
    pub label: Option<String>,

    /// Print the blend as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Direction of blended streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BlendDir {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
}

/// Runs the phases.
pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let s = &a.settings;
    let spec = BlendSpec {
        streams: a.streams,
        write: a.rw == BlendDir::Write,
        bs: a.bs.clone(),
        qd: a.qd,
    };
    let plan = Plan::Blend(BlendPlan::new(spec, s)?);
    crate::results::check_destination(&a.out, "--out DIR")?;
    let outcome = execute_labelled(&plan, &a.out, true, a.label.as_deref())?;
    present(&plan, &outcome, &a.out, a.json, &Default::default())
}
