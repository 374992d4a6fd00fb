//! `oio sweep`: run a workload at a ladder of queue depths (optionally a grid of block sizes
//! and read shares), each point with its ramp, repeated, optionally until steady state, and
//! report the knee by a stated rule (`oio_analysis::knee`).
//!
//! Each point is an ordinary `oio run` (its arguments are built as a command line and parsed
//! by the same parser), so every point's result file is a normal run result that `oio report`
//! and `oio compare` read. The sweep document (`oio.sweep`) lists them in `points[].sources`.

use super::compare::{parse_run_args, split_words};
use crate::output::live::LiveLine;
use crate::output::style;
use crate::results::{result_file_name, write_json_atomic};
use anyhow::{bail, Context};
use oio_analysis::sweep::{self, Steady, Sweep, SweepOptions};
use oio_core::units::{format_bytes, format_count, format_ns};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

/// Arguments of `oio sweep`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  oio sweep randread ./t.dat --size 1G --qd 1,2,4,8,16,32,64
  oio sweep oltp-data /mnt/san/t.dat --size 10G --repeat 3 --steady 10
  oio sweep randrw ./t.dat --size 1G --bs 4k,64k --read-pct 100,70,0 --qd 1,4,16,64
  oio sweep workload.toml ./t.dat --production-qd 24      (where does production sit?)

WORKLOAD is a workload file, a built-in profile (oio profiles) or a pattern (randread, randrw…).")]
pub struct Args {
    /// Workload file, profile name, or access pattern (read, write, randread, randwrite, randrw, rw).
    #[arg(value_name = "WORKLOAD")]
    pub workload: String,

    /// Files or block devices (default ./oio-testfile).
    #[arg(value_name = "TARGET")]
    pub targets: Vec<PathBuf>,

    /// Queue depths to sweep.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "1,2,4,8,16,32,64,128,256"
    )]
    pub qd: Vec<u32>,

    /// Block sizes to sweep (a grid with --read-pct), e.g. 4k,64k.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub bs: Vec<String>,

    /// Read shares to sweep, percent, e.g. 100,70,0.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub read_pct: Vec<f64>,

    /// Measured time per run.
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    pub time: String,

    /// Warm-up before each run.
    #[arg(long, value_name = "DURATION", default_value = "2s")]
    pub ramp: String,

    /// Interval of each run's time series.
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    pub interval: String,

    /// Runs per point.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,

    /// Steady state: rerun (counting the run as warm-up) while IOPS drift over a run exceeds PCT.
    #[arg(long, value_name = "PCT")]
    pub steady: Option<f64>,

    /// Most runs per repeat while waiting for steady state.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub steady_max_runs: u32,

    /// Share of peak IOPS that defines the knee, percent.
    #[arg(long, value_name = "PCT", default_value_t = 90.0)]
    pub knee_pct: f64,

    /// Production outstanding I/O (e.g. from `oio characterize`): where it lies against the knee.
    #[arg(long, value_name = "N")]
    pub production_qd: Option<f64>,

    /// Size of the file to create, or the part of the device to use.
    #[arg(long, value_name = "SIZE")]
    pub size: Option<String>,

    /// I/O engine (auto, io_uring, sync, null).
    #[arg(long, value_name = "ENGINE", default_value = "auto")]
    pub engine: String,

    /// Through the page cache instead of O_DIRECT.
    #[arg(long)]
    pub buffered: bool,

    /// Further `oio run` arguments for every point, in one string (e.g. '--random-pct 50').
    #[arg(long = "with", value_name = "ARGS")]
    pub with: Option<String>,

    /// Directory for the results (each point's runs and the sweep document).
    #[arg(long, value_name = "DIR", default_value = "oio-results")]
    pub out: PathBuf,

    /// Print the sweep as JSON on stdout (schema oio.sweep).
    #[arg(long)]
    pub json: bool,
}

const PATTERNS: [&str; 6] = ["read", "write", "randread", "randwrite", "randrw", "rw"];

fn base_argv(a: &Args, out: &std::path::Path) -> anyhow::Result<Vec<String>> {
    let mut v = Vec::new();
    if std::path::Path::new(&a.workload).is_file() {
        v.extend(["-w".into(), a.workload.clone()]);
    } else if PATTERNS.contains(&a.workload.as_str()) {
        v.extend(["--rw".into(), a.workload.clone()]);
    } else {
        v.extend(["-p".into(), a.workload.clone()]);
    }
    v.extend(a.targets.iter().map(|t| t.display().to_string()));
    for (k, val) in [
        ("--time", &a.time),
        ("--ramp", &a.ramp),
        ("--interval", &a.interval),
        ("--engine", &a.engine),
    ] {
        v.extend([k.to_string(), val.clone()]);
    }
    v.extend(["--out".into(), out.display().to_string()]);
    if let Some(s) = &a.size {
        v.extend(["--size".into(), s.clone()]);
    }
    if a.buffered {
        v.push("--buffered".into());
    }
    if let Some(w) = &a.with {
        v.extend(split_words(w)?);
    }
    Ok(v)
}

/// Runs `oio sweep`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.qd.is_empty() || args.qd.contains(&0) {
        bail!("--qd: expected a list of depths of at least 1, e.g. 1,2,4,8");
    }
    if !(1.0..=100.0).contains(&args.knee_pct) {
        bail!("--knee-pct {}: expected 1 to 100", args.knee_pct);
    }
    let mut qds = args.qd.clone();
    qds.sort_unstable();
    qds.dedup();
    let stamp = super::report::now_compact();
    let runs_dir = args.out.join(format!("sweep-{stamp}"));
    let base = base_argv(&args, &runs_dir)?;
    // Validate once before running anything.
    let first = parse_run_args(&base).context("building the runs of the sweep")?;
    let first_plan = first.plan()?;
    let bss: Vec<Option<String>> = if args.bs.is_empty() {
        vec![None]
    } else {
        args.bs.iter().cloned().map(Some).collect()
    };
    let rps: Vec<Option<f64>> = if args.read_pct.is_empty() {
        vec![None]
    } else {
        args.read_pct.iter().copied().map(Some).collect()
    };
    let total = bss.len() * rps.len() * qds.len() * args.repeat as usize;
    crate::results::check_destination(&args.out, "--out DIR")?;
    let stop = super::run::stop_flag();
    let mut points = Vec::new();
    let mut engine = String::new();
    let mut warnings = Vec::new();
    let mut done = 0;
    for bs in &bss {
        for rp in &rps {
            for &qd in &qds {
                let mut argv = base.clone();
                argv.extend(["--qd".into(), qd.to_string()]);
                if let Some(b) = bs {
                    argv.extend(["--bs".into(), b.clone()]);
                }
                if let Some(r) = rp {
                    argv.extend(["--read-pct".into(), r.to_string()]);
                }
                let ra = parse_run_args(&argv)
                    .with_context(|| format!("point qd {qd} bs {bs:?} read {rp:?}"))?;
                let mut plan = ra.plan()?;
                let mut runs = Vec::new();
                let mut sources = Vec::new();
                let mut steady = Steady::default();
                let mut reached_all = true;
                for rep in 0..args.repeat {
                    let mut tries = 0;
                    loop {
                        tries += 1;
                        steady.runs_made += 1;
                        plan.seed = first_plan.seed.wrapping_add(u64::from(rep) * 1000 + tries);
                        let mut live = LiveLine::new();
                        let r = oio_engine::run(&plan, &mut live, stop.clone());
                        live.finish();
                        let mut r = r.with_context(|| format!("sweep point qd {qd}"))?;
                        r.command = std::env::args().collect();
                        if stop.load(Ordering::SeqCst) {
                            bail!("interrupted; finished points are in {}", runs_dir.display());
                        }
                        let drift = sweep::drift_pct(&r);
                        let ok = args.steady.is_none_or(|b| drift <= b);
                        if ok || tries >= u64::from(args.steady_max_runs) {
                            if !ok {
                                reached_all = false;
                            }
                            steady.drift_pct = steady.drift_pct.max(drift);
                            engine = r.engine.name.clone();
                            let name = result_file_name(
                                "run",
                                &r.timestamp,
                                &format!("{}-qd{qd}", r.workload.name),
                            );
                            let path = write_json_atomic(&runs_dir, &name, &r)?;
                            sources.push(path.display().to_string());
                            done += 1;
                            style::print_notice(&format!(
                                "[{done}/{total}] qd {qd}{}{}: {} IOPS, p99 {}{}",
                                bs.as_ref().map(|b| format!(" bs {b}")).unwrap_or_default(),
                                rp.map(|r| format!(" read {r}%")).unwrap_or_default(),
                                format_count(r.summary.total.iops),
                                r.summary
                                    .total
                                    .latency_ns
                                    .p99
                                    .map(|v| format_ns(v as f64))
                                    .unwrap_or("-".into()),
                                if ok { "" } else { " (not steady)" }
                            ));
                            runs.push(r);
                            break;
                        }
                    }
                }
                steady.reached = args.steady.map(|_| reached_all);
                if steady.reached == Some(false) {
                    warnings.push(format!(
                        "qd {qd}{}: steady state (drift <= {} %) not reached in {} runs",
                        bs.as_ref().map(|b| format!(" bs {b}")).unwrap_or_default(),
                        args.steady.unwrap_or_default(),
                        args.steady_max_runs
                    ));
                }
                points.push(sweep::point(qd, bs.clone(), *rp, &runs, sources, steady));
            }
        }
    }
    let mut doc = Sweep {
        schema: sweep::SCHEMA.into(),
        schema_version: sweep::SCHEMA_VERSION,
        oio_version: env!("CARGO_PKG_VERSION").into(),
        timestamp: super::report::now_rfc3339(),
        workload: first_plan.workload.name.clone(),
        targets: first_plan
            .bindings
            .iter()
            .flat_map(|b| b.paths.iter().map(|p| p.display().to_string()))
            .collect(),
        engine,
        options: SweepOptions {
            qd: qds,
            bs: args.bs.clone(),
            read_pct: args.read_pct.clone(),
            time_s: first_plan.time.as_secs_f64(),
            ramp_s: first_plan.ramp.as_secs_f64(),
            repeat: args.repeat,
            steady_pct: args.steady,
            steady_max_runs: args.steady_max_runs,
            knee_fraction: args.knee_pct / 100.0,
        },
        points,
        knee: None,
        series: Vec::new(),
        production: None,
        warnings,
    };
    if args.repeat < 2 {
        doc.warnings.push(
            "one run per point: the knee's uncertainty is only the grid spacing (use --repeat 3 or more)"
                .into(),
        );
    }
    sweep::analyse(&mut doc, args.production_qd);
    let name = result_file_name("sweep", &doc.timestamp, &doc.workload);
    let saved = write_json_atomic(&args.out, &name, &doc)?;
    if args.json {
        crate::output::print_json(&doc)?;
        style::print_notice(&format!("sweep: {}", saved.display()));
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = anstream::stdout().lock();
    writeln!(
        out,
        "{:>5} {:>8} {:>6} {:>12} {:>12} {:>10} {:>10} {:>10} {:>8}",
        "qd", "bs", "read%", "IOPS", "throughput", "mean", "p50", "p99", "oio"
    )?;
    for p in &doc.points {
        writeln!(
            out,
            "{:>5} {:>8} {:>6} {:>12} {:>12} {:>10} {:>10} {:>10} {:>8.1}",
            p.qd,
            p.bs.as_deref().unwrap_or("-"),
            p.read_pct.map(|v| format!("{v:.0}")).unwrap_or("-".into()),
            format_count(p.iops),
            format!("{}/s", format_bytes(p.bytes_per_sec)),
            p.latency_ns.mean.map(format_ns).unwrap_or("-".into()),
            p.latency_ns
                .p50
                .map(|v| format_ns(v as f64))
                .unwrap_or("-".into()),
            p.latency_ns
                .p99
                .map(|v| format_ns(v as f64))
                .unwrap_or("-".into()),
            p.outstanding_mean
        )?;
    }
    match &doc.knee {
        Some(k) => writeln!(out, "\n{}\nrule: {}", k.summary, k.rule)?,
        None => writeln!(out, "\nno knee: no point completed any I/O")?,
    }
    for s in doc.series.iter().skip(1) {
        if let Some(k) = &s.knee {
            writeln!(
                out,
                "  bs {} read {}: knee at qd {} ({} IOPS)",
                s.bs.as_deref().unwrap_or("-"),
                s.read_pct
                    .map(|v| format!("{v:.0} %"))
                    .unwrap_or("-".into()),
                k.qd,
                format_count(k.iops)
            )?;
        }
    }
    if let Some(p) = &doc.production {
        writeln!(out, "{}", p.summary)?;
    }
    for w in &doc.warnings {
        writeln!(out, "warning: {w}")?;
    }
    writeln!(out, "\nsweep: {}", saved.display())?;
    Ok(ExitCode::SUCCESS)
}
