//! `oio sweep`: run a workload at a ladder of queue depths (optionally a grid of block sizes
//! and read shares), each point with its ramp, repeated, optionally until steady state, and
//! report the knee by stated rules (`oio_analysis::knee`): power, saturation, X % of the peak
//! and an optional latency target, all of them, with the flags they raise. `--refine` measures
//! geometric midpoints around the depths the rules named, then reports again.
//! `--sim` runs the points against a simulated device (the null engine with a service model),
//! whose knee is known in advance.
//!
//! Each point is an ordinary `oio run` (its arguments are built as a command line and parsed
//! by the same parser), so every point's result file is a normal run result that `oio report`
//! and `oio compare` read. The sweep document (`oio.sweep`) lists them in `points[].sources`.

use super::compare::{parse_run_args, split_words};
use crate::output::live::LiveLine;
use crate::output::style;
use crate::results::{result_file_name, write_json_atomic};
use anyhow::{bail, Context};
use oio_analysis::knee::{Knee, LatencyTarget, RuleDepth};
use oio_analysis::sweep::{self, Steady, Sweep, SweepOptions, SweepPoint};
use oio_core::units::{format_bytes, format_count, format_ns};
use oio_engine::engines::null::SimDevice;
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
  oio sweep randread ./t.dat --latency-target p99=2ms --refine
  oio sweep randread --engine null --sim servers=8,service=1ms,dist=exp --time 1s --ramp 0s

Knee rules, all reported (the headline knee is the first that names a depth of
saturation, X % of the peak, power):
  power        the depth with the most IOPS ÷ mean latency (Kleinrock's power)
  saturation   the smallest depth from which no deeper point gains IOPS faster than
               depth^0.2 (doubling adds < 15 %) or beyond the noise, while mean latency
               grows at least as depth^0.8: queueing, not work
  X % of peak  the smallest depth reaching --knee-pct (90) % of the plateau (the median
               IOPS from the saturation depth on) or, without one, of the highest point
  latency      with --latency-target p99=2ms: the deepest depth before the first that
               misses it (also mean, p50, p90)
Flags: peak at the deepest depth (still rising: extend --qd), points more than 3 × the
noise below both neighbours (outliers, left out of the rules), one run per depth (the
spread of each run's intervals stands in for the noise; --repeat N measures it).

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

    /// Block sizes to sweep (a grid with --read-pct), e.g. 4k,64k. Default: the workload's
    /// sizes (4k for a pattern).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub bs: Vec<String>,

    /// Read shares to sweep, percent, e.g. 100,70,0. Default: the workload's (50 for the
    /// patterns randrw and rw).
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

    /// Share of peak IOPS for the X %-of-peak rule, percent.
    #[arg(long, value_name = "PCT", default_value_t = 90.0)]
    pub knee_pct: f64,

    /// Also report the deepest depth meeting a latency target: STAT=DURATION with STAT
    /// mean, p50, p90 or p99, e.g. p99=2ms (fio's latency_target idea).
    #[arg(long, value_name = "STAT=DURATION")]
    pub latency_target: Option<LatencyTarget>,

    /// After the grid, measure the geometric midpoints between grid depths around the depths
    /// the rules named, then report again.
    #[arg(long)]
    pub refine: bool,

    /// Run against a simulated device (implies --engine null): k servers and a service time,
    /// e.g. servers=8,service=1ms,dist=exp (fixed, exp, lognormal[,sigma=S]); '+' adds a
    /// slower tier behind a fast one (a second plateau).
    #[arg(long, value_name = "MODEL", value_parser = sim_model)]
    pub sim: Option<String>,

    /// Production outstanding I/O (e.g. from `oio characterize`): where it lies against the knee.
    #[arg(long, value_name = "N")]
    pub production_qd: Option<f64>,

    /// Size of the file to create, or the part of the device to use. Default: the whole of an
    /// existing file or device; 1G for ./oio-testfile.
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

/// Checks a `--sim` model and keeps its text, which is handed on to every point's run.
fn sim_model(s: &str) -> Result<String, String> {
    s.parse::<SimDevice>().map_err(|e| e.to_string())?;
    Ok(s.to_string())
}

/// The engine of every point: a simulated device needs the null engine.
fn engine_of(a: &Args) -> String {
    if a.sim.is_some() && a.engine == "auto" {
        "null".into()
    } else {
        a.engine.clone()
    }
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
        ("--engine", &engine_of(a)),
    ] {
        v.extend([k.to_string(), val.clone()]);
    }
    if let Some(m) = &a.sim {
        v.extend(["--sim".into(), m.clone()]);
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

/// What stays the same for every point of a sweep.
struct Ctx<'a> {
    args: &'a Args,
    base: Vec<String>,
    runs_dir: PathBuf,
    seed: u64,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    total: usize,
    done: usize,
    engine: String,
    warnings: Vec<String>,
}

impl Ctx<'_> {
    /// Runs one point: its repeats, each until steady state when asked.
    fn measure(
        &mut self,
        qd: u32,
        bs: &Option<String>,
        rp: Option<f64>,
    ) -> anyhow::Result<SweepPoint> {
        let args = self.args;
        let mut argv = self.base.clone();
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
        let mut drifts = Vec::new();
        let mut reached_all = true;
        let mut too_short = false;
        let label = format!(
            "qd {qd}{}{}",
            bs.as_ref().map(|b| format!(" bs {b}")).unwrap_or_default(),
            rp.map(|r| format!(" read {r}%")).unwrap_or_default()
        );
        for rep in 0..args.repeat {
            let mut tries = 0;
            loop {
                tries += 1;
                steady.runs_made += 1;
                plan.seed = self.seed.wrapping_add(u64::from(rep) * 1000 + tries);
                let mut live = LiveLine::new();
                let r = oio_engine::run(&plan, &mut live, self.stop.clone());
                live.finish();
                let mut r = r.with_context(|| format!("sweep point qd {qd}"))?;
                r.envelope.command = std::env::args().collect();
                if self.stop.load(Ordering::SeqCst) {
                    bail!(
                        "interrupted; finished points are in {}",
                        self.runs_dir.display()
                    );
                }
                let drift = sweep::drift_pct(&r);
                // Too short to judge: rerunning would not tell more, so the run is kept.
                too_short |= drift.is_none();
                let ok = match (args.steady, drift) {
                    (Some(b), Some(d)) => d <= b,
                    _ => true,
                };
                if ok || tries >= u64::from(args.steady_max_runs) {
                    if !ok {
                        reached_all = false;
                    }
                    drifts.push(drift);
                    self.engine = r.engine.name.clone();
                    let name = result_file_name(
                        "run",
                        &r.envelope.timestamp,
                        &format!("{}-qd{qd}", r.workload.name),
                    );
                    let path = write_json_atomic(&self.runs_dir, &name, &r)?;
                    sources.push(path.display().to_string());
                    self.done += 1;
                    style::print_notice(&format!(
                        "[{}/{}] {label}: {} IOPS, p99 {}{}",
                        self.done,
                        self.total,
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
        // The largest drift, or none when any run was too short to judge.
        steady.drift_pct = drifts
            .iter()
            .copied()
            .collect::<Option<Vec<f64>>>()
            .map(|d| d.into_iter().fold(0.0, f64::max));
        steady.reached = match args.steady {
            Some(_) if too_short => None,
            Some(_) => Some(reached_all),
            None => None,
        };
        if args.steady.is_some() && too_short {
            self.warnings.push(format!(
                "{label}: steady state too short to judge (a run had fewer than {} intervals; lengthen --time or shorten --interval)",
                sweep::MIN_INTERVALS
            ));
        }
        if steady.reached == Some(false) {
            self.warnings.push(format!(
                "{label}: steady state (drift <= {} %) not reached in {} runs",
                args.steady.unwrap_or_default(),
                args.steady_max_runs
            ));
        }
        Ok(sweep::point(qd, bs.clone(), rp, &runs, sources, steady))
    }
}

/// Runs `oio sweep`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.qd.is_empty() || args.qd.contains(&0) {
        bail!("--qd: expected a list of depths of at least 1, e.g. 1,2,4,8");
    }
    if !(1.0..=100.0).contains(&args.knee_pct) {
        bail!("--knee-pct {}: expected 1 to 100", args.knee_pct);
    }
    if args.sim.is_some() && engine_of(&args) != "null" {
        bail!("--sim simulates a device behind the null engine: drop --engine {} or use --engine null", args.engine);
    }
    let mut qds = args.qd.clone();
    qds.sort_unstable();
    qds.dedup();
    let stamp = oio_core::host::now_compact();
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
    crate::results::check_destination(&args.out, "--out DIR")?;
    let mut ctx = Ctx {
        args: &args,
        base,
        runs_dir,
        seed: first_plan.seed,
        stop: super::run::stop_flag(),
        total: bss.len() * rps.len() * qds.len() * args.repeat as usize,
        done: 0,
        engine: String::new(),
        warnings: Vec::new(),
    };
    let mut points = Vec::new();
    for bs in &bss {
        for rp in &rps {
            for &qd in &qds {
                points.push(ctx.measure(qd, bs, *rp)?);
            }
        }
    }
    let simulated = args
        .sim
        .as_deref()
        .and_then(|m| m.parse::<SimDevice>().ok())
        .map(|d| d.to_string());
    let mut doc = Sweep {
        envelope: oio_core::Envelope::new(sweep::SCHEMA, sweep::SCHEMA_VERSION),
        workload: first_plan.workload.name.clone(),
        targets: first_plan
            .bindings
            .iter()
            .flat_map(|b| b.paths.iter().map(|p| p.display().to_string()))
            .collect(),
        engine: String::new(),
        simulated,
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
            latency_target: args.latency_target,
            refined_qd: Vec::new(),
        },
        points,
        knee: None,
        series: Vec::new(),
        production: None,
    };
    sweep::analyse(&mut doc, args.production_qd);
    if args.refine {
        let extra = sweep::refine_depths(&doc);
        ctx.total += extra.iter().map(|e| e.2.len()).sum::<usize>() * args.repeat as usize;
        for (bs, rp, qds) in extra {
            for qd in qds {
                doc.points.push(ctx.measure(qd, &bs, rp)?);
                if !doc.options.refined_qd.contains(&qd) {
                    doc.options.refined_qd.push(qd);
                }
            }
        }
        doc.options.refined_qd.sort_unstable();
        sweep::sort_points(&mut doc);
        sweep::analyse(&mut doc, args.production_qd);
    }
    doc.engine = ctx.engine;
    doc.envelope.warnings = ctx.warnings;
    if let Some(m) = &doc.simulated {
        doc.envelope.warnings.push(format!(
            "simulated device ({m}): no I/O reached any device; the points describe the model (plus oio's own overhead)"
        ));
    }
    if args.repeat < 2 {
        doc.envelope.warnings.push(
            "one run per point: the knee's uncertainty is only the grid spacing (use --repeat 3 or more)"
                .into(),
        );
    }
    let name = result_file_name("sweep", &doc.envelope.timestamp, &doc.workload);
    let saved = write_json_atomic(&args.out, &name, &doc)?;
    if args.json {
        crate::output::print_json(&doc)?;
        style::print_notice(&format!("sweep: {}", saved.display()));
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = anstream::stdout().lock();
    print_table(&mut out, &doc)?;
    writeln!(out, "\nsweep: {}", saved.display())?;
    Ok(ExitCode::SUCCESS)
}

/// The rules (and flags) that name this point of a series, for the table's last column.
fn marks(k: Option<&Knee>, qd: u32, fraction: f64) -> String {
    let Some(k) = k else {
        return String::new();
    };
    let mut m = Vec::new();
    if k.qd == qd {
        m.push("KNEE".to_string());
    }
    let named = |r: &RuleDepth| r.qd == Some(qd);
    if named(&k.rules.power) {
        m.push("power".into());
    }
    if named(&k.rules.saturation) {
        m.push("saturation".into());
    }
    if named(&k.rules.pct_of_peak) {
        m.push(format!("{:.0}%-of-peak", fraction * 100.0));
    }
    if k.rules.latency_target.as_ref().is_some_and(named) {
        m.push("latency-target".into());
    }
    for f in &k.flags {
        if f.qd == Some(qd) {
            m.push(f.kind.replace('_', "-"));
        }
    }
    m.join(" ")
}

fn print_table(out: &mut impl Write, doc: &Sweep) -> anyhow::Result<()> {
    writeln!(
        out,
        "{:>5} {:>8} {:>6} {:>12} {:>12} {:>10} {:>10} {:>10} {:>8} {:>9}  rules and flags",
        "qd", "bs", "read%", "IOPS", "throughput", "mean", "p50", "p99", "oio", "drift"
    )?;
    let groups = sweep::series(&doc.points);
    for p in &doc.points {
        let knee = groups
            .iter()
            .position(|(b, r, _)| *b == p.bs && *r == p.read_pct)
            .and_then(|i| doc.series.get(i))
            .and_then(|s| s.knee.as_ref());
        writeln!(
            out,
            "{:>5} {:>8} {:>6} {:>12} {:>12} {:>10} {:>10} {:>10} {:>8.1} {:>9}  {}",
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
            p.outstanding_mean,
            p.steady
                .drift_pct
                .map(|d| format!("{d:.1} %"))
                .unwrap_or("too short".into()),
            marks(knee, p.qd, doc.options.knee_fraction)
        )?;
    }
    if doc.points.iter().any(|p| p.steady.drift_pct.is_none()) {
        writeln!(
            out,
            "drift: IOPS change over a run; \"too short\" = fewer than {} intervals, too short to judge",
            sweep::MIN_INTERVALS
        )?;
    }
    for (i, s) in doc.series.iter().enumerate() {
        let Some(k) = &s.knee else {
            if i == 0 {
                writeln!(out, "\nno knee: no point completed any I/O")?;
            }
            continue;
        };
        if doc.series.len() > 1 {
            writeln!(
                out,
                "\nbs {} read {}:",
                s.bs.as_deref().unwrap_or("-"),
                s.read_pct
                    .map(|v| format!("{v:.0} %"))
                    .unwrap_or("-".into())
            )?;
        } else {
            writeln!(out)?;
        }
        writeln!(out, "{}", k.summary)?;
        let mut rules = vec![
            ("power", &k.rules.power),
            ("saturation", &k.rules.saturation),
            ("X % of peak", &k.rules.pct_of_peak),
        ];
        if let Some(r) = &k.rules.latency_target {
            rules.push(("latency target", r));
        }
        for (name, r) in rules {
            let at = match (r.qd, r.iops) {
                (Some(q), Some(x)) => format!(
                    "qd {q}: {} IOPS, mean {}, p99 {}",
                    format_count(x),
                    r.latency_ns.mean.map(format_ns).unwrap_or("-".into()),
                    r.latency_ns.p99.map(format_ns).unwrap_or("-".into())
                ),
                _ => "none".into(),
            };
            writeln!(
                out,
                "  {name:<15} {at}  ({}){}",
                r.rule,
                r.note
                    .as_ref()
                    .map(|n| format!("; {n}"))
                    .unwrap_or_default()
            )?;
        }
        for f in &k.flags {
            writeln!(out, "  flag: {}", f.message)?;
        }
        if i == 0 {
            writeln!(out, "rule: {}", k.rule)?;
        }
    }
    if let Some(p) = &doc.production {
        writeln!(out, "{}", p.summary)?;
    }
    for w in &doc.envelope.warnings {
        writeln!(out, "warning: {w}")?;
    }
    Ok(())
}
