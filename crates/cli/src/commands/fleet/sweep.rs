//! `oio fleet sweep`: a ladder of queue depths, each a fleet run on every host started
//! together; a sweep document (`oio.sweep`) of the merged points, with the knee by the same
//! rules as `oio sweep`.

use super::FleetArgs;
use crate::output::style;
use crate::results::{check_destination, result_file_name, write_json_atomic};
use oio_analysis::sweep::{
    self, Steady, Sweep, SweepOptions, SweepPoint, SweepRun, SCHEMA, SCHEMA_VERSION,
};
use oio_core::document::Envelope;
use oio_core::result::Interval;
use oio_fleet::controller;
use std::process::ExitCode;

/// Arguments of `oio fleet sweep`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  oio fleet sweep --hosts db1,db2,db3 --rw randread --bs 8k --time 30s /data/oio.dat --size 10G
  oio fleet sweep --inventory lab.toml -p oltp-data --sweep-qd 1,4,16,64,256")]
pub struct SweepArgs {
    /// Hosts, launcher, the workload and where results go (as `oio fleet run`).
    #[command(flatten)]
    pub fleet: FleetArgs,
    /// Queue depths per host, one fleet run each, in this order.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "1,2,4,8,16,32,64"
    )]
    pub sweep_qd: Vec<u32>,
}

/// Runs `oio fleet sweep`.
pub fn run(s: SweepArgs) -> anyhow::Result<ExitCode> {
    let a = &s.fleet;
    if s.sweep_qd.is_empty() || s.sweep_qd.contains(&0) {
        anyhow::bail!("--sweep-qd: every depth must be at least 1 (for example 1,4,16,64)");
    }
    check_destination(&a.out, "--out DIR")?;
    let cancel = oio_core::Cancel::from_flag(crate::interrupt::stop_flag());
    let first = a.run.config()?.plan;
    let stamp = oio_core::host::now_rfc3339();
    let dir = a.out.join(
        result_file_name("fleet-sweep", &stamp, &first.workload.name).trim_end_matches(".json"),
    );
    let mut envelope = Envelope::new(SCHEMA, SCHEMA_VERSION);
    envelope.command = std::env::args().collect();
    envelope.host = Some(oio_core::host::HostInfo::detect());
    let (mut points, mut sequence) = (Vec::new(), Vec::new());
    let mut interrupted = false;
    // One endpoint for the whole ladder: counters run on across depths, the interval restarts.
    let metrics = super::run::metrics(&a.metrics)?;
    for &qd in &s.sweep_qd {
        let mut o = a.run.workload.overrides(&a.run.shape);
        o.qd = Some(qd);
        let plan = crate::args::settings(&a.run.target, &a.run.exec)
            .config(&a.run.source.source(), &o)?
            .plan;
        let jobs = super::io_jobs(&a.host, &plan, None)?;
        if !style::quiet() {
            eprintln!("oio fleet sweep: qd {qd} on {} hosts", jobs.len());
        }
        let live = crate::output::fleet::FleetLive::new();
        let run = controller::run_with_progress(&jobs, &a.host.options(), &cancel, &mut |p| {
            live.update(p);
            if let Some(m) = &metrics {
                m.update(p);
            }
        });
        live.finish();
        let run = run?;
        let (doc, merged) = super::save_io(&dir.join(format!("qd{qd}")), &run, &plan)?;
        let p = point(qd, &doc, &merged.display().to_string());
        sequence.push(SweepRun {
            qd,
            bs: None,
            read_pct: None,
            round: 1,
            seed: plan.seed,
            iops: p.iops,
            drift_pct: p.steady.drift_pct,
            discarded: None,
            source: p.sources.first().cloned(),
        });
        points.push(p);
        for l in &doc.lost {
            style::print_warning(l);
        }
        if run.interrupted || doc.envelope.partial {
            // A point with a host missing is not comparable with the others: stop here.
            interrupted = run.interrupted;
            envelope.stopped(doc.envelope.stop_reason);
            break;
        }
    }
    let mut sweep = Sweep {
        envelope,
        workload: first.workload.name.clone(),
        targets: first
            .bindings
            .iter()
            .flat_map(|b| b.paths.iter().map(|p| p.display().to_string()))
            .collect(),
        engine: first.engine.name().to_string(),
        simulated: None,
        options: SweepOptions {
            qd: s.sweep_qd.clone(),
            time_s: first.time.as_secs_f64(),
            ramp_s: first.ramp.as_secs_f64(),
            repeat: 1,
            steady_max_runs: 1,
            knee_fraction: 0.9,
            order: Some("as_given".into()),
            ..SweepOptions::default()
        },
        sequence,
        points,
        knee: None,
        series: Vec::new(),
        production: None,
    };
    sweep.envelope.warnings.push(
        "each point is one fleet run: its IOPS are the hosts' summed, its latencies come from their summed histograms; per-host results sit beside each point's merged.json".into(),
    );
    oio_analysis::sweep::analyse(&mut sweep, None);
    let path = write_json_atomic(&dir, "sweep.json", &sweep)?;
    if a.json {
        crate::output::print_json(&sweep)?;
    } else if !style::quiet() {
        crate::output::fleet::print_sweep(&sweep);
    }
    style::print_saved("result", &path, a.json);
    Ok(match (interrupted, sweep.envelope.partial) {
        (true, _) => ExitCode::from(crate::interrupt::EXIT_INTERRUPTED),
        (_, true) => ExitCode::from(crate::EXIT_CHECK_FAILED),
        _ => ExitCode::SUCCESS,
    })
}

/// One sweep point from a merged fleet result: one run, its noise from the intervals every
/// host delivered (a partial interval — a host missing — is not the fleet's IOPS), built by
/// the same function as `oio sweep`'s points.
fn point(qd: u32, doc: &oio_fleet::merge::FleetResult, file: &str) -> SweepPoint {
    let hosts = doc.hosts.len();
    let complete: Vec<Interval> = doc
        .intervals
        .iter()
        .zip(&doc.hosts_per_interval)
        .filter(|(_, &n)| n == hosts)
        .map(|(i, _)| i.clone())
        .collect();
    let run = sweep::Measured {
        total: &doc.summary.total,
        intervals: &complete,
        // The merged document does not carry the hosts' noise; each host's result does.
        noisy: false,
    };
    sweep::point_of(
        qd,
        None,
        None,
        &[run],
        vec![file.to_string()],
        Steady {
            reached: None,
            drift_pct: sweep::drift_of(&complete),
            runs_made: 1,
        },
    )
}
