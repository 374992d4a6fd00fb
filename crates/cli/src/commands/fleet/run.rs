//! `oio fleet run|check`: one workload on many hosts, started together.

use super::HostArgs;
use crate::output::style;
use crate::results::{check_destination, result_file_name};
use oio_engine::RunPlan;
use oio_fleet::controller::{self, HostJob};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Hosts, launcher, and `oio run`'s workload flags.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  oio fleet run --hosts db1,db2,db3 --rw randread --bs 8k --qd 32 --time 60s /data/oio.dat --size 10G
  oio fleet run --inventory lab.toml -p oltp-data --time 5m
  oio fleet run --hosts pod-0,pod-1 --launcher 'kubectl exec -i {host} -- oio agent --stdio' ...
  oio fleet check --hosts db1,db2 /data/oio.dat --size 10G")]
pub struct FleetArgs {
    /// Hosts and how to reach them.
    #[command(flatten)]
    pub host: HostArgs,

    /// The workload, as `oio run` takes it (targets are paths on each host).
    #[command(flatten)]
    pub run: crate::args::RunFlags,

    /// Directory for the per-host and merged result files.
    #[arg(long, value_name = "DIR", default_value = "oio-results")]
    pub out: PathBuf,

    /// Print the merged result as JSON on stdout (and nothing else there).
    #[arg(long)]
    pub json: bool,

    /// A name for this measurement, recorded in every host's result and the merged (sweep,
    /// scale) documents, e.g. the setting under test.
    #[arg(long, value_name = "NAME", value_parser = crate::args::parse_label)]
    pub label: Option<String>,

    /// Serve the live figures (per host and merged IOPS, I/O counters, latency histograms) in
    /// Prometheus' text format at http://ADDR/metrics while the run lasts, e.g. 127.0.0.1:9464
    /// (run, sweep and scale).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// With --metrics: keep serving the final figures this long after the run ends, so a
    /// scraper gets the last interval too (Ctrl-C ends the wait).
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = crate::values::duration_arg, requires = "metrics")]
    pub metrics_linger: std::time::Duration,
}

/// `oio fleet run`: the fleet's arguments and what `oio run` takes besides its workload.
#[derive(Debug, clap::Args)]
pub struct FleetRunArgs {
    /// Hosts, the workload and where results go.
    #[command(flatten)]
    pub fleet: FleetArgs,

    /// Run N times, one fleet run after another (each its own folder of per-host and merged
    /// results), and summarize the merged figures over runs; with --json, an array.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub repeat: u32,

    /// Save the hosts' devices beside the merged result as MERGED.device.json, one device per
    /// host named HOST:DEVICE, as `oio run --record-device` saves its own (every agent records
    /// its targets' devices over the window; this writes them as an observation for `oio
    /// compare CAPTURE RESULT`, `characterize` and `report`).
    #[arg(long)]
    pub record_device: bool,
}

fn jobs(a: &FleetArgs) -> anyhow::Result<(RunPlan, Vec<HostJob>)> {
    let plan = a.run.config()?.plan;
    let jobs = super::io_jobs(&a.host, &plan, Some(&a.run))?;
    Ok((plan, jobs))
}

pub(super) fn fleet_run(r: FleetRunArgs) -> anyhow::Result<ExitCode> {
    let a = &r.fleet;
    let (plan, jobs) = jobs(a)?;
    check_destination(&a.out, "--out DIR")?;
    let cancel = oio_core::Cancel::from_flag(crate::interrupt::stop_flag());
    let name = controller::workload_name(&plan.workload.name, &jobs);
    if !style::quiet() {
        let _ = writeln!(
            crate::output::terminal::stderr(),
            "oio fleet: {} on {} hosts ({})",
            name,
            jobs.len(),
            jobs.iter()
                .map(|j| j.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let metrics = super::metrics(&a.metrics, a.metrics_linger)?;
    let mut docs = Vec::new();
    let mut code = ExitCode::SUCCESS;
    for i in 1..=r.repeat {
        if r.repeat > 1 && !style::quiet() {
            let _ = writeln!(
                crate::output::terminal::stderr(),
                "oio fleet: run {i}/{}",
                r.repeat
            );
        }
        let (doc, exit) = one_run(
            a,
            &plan,
            &jobs,
            &name,
            &cancel,
            metrics.as_ref(),
            (i, r.repeat),
            r.record_device,
        )?;
        docs.push(doc);
        if exit != ExitCode::SUCCESS {
            // Interrupted or partial: the runs after it would not be the same experiment.
            code = exit;
            break;
        }
    }
    if a.json {
        match docs.as_slice() {
            [one] if r.repeat == 1 => crate::output::print_json(one)?,
            all => crate::output::print_json(all)?,
        }
    } else if docs.len() > 1 && !style::quiet() {
        let totals: Vec<_> = docs.iter().map(|d| &d.summary.total).collect();
        let mut out = crate::output::terminal::stdout();
        let _ = writeln!(out, "merged over the fleet, per run:");
        crate::output::repeat::write_totals_summary(&mut out, &totals)?;
    }
    // Saved and printed first: the endpoint lingers (--metrics-linger) after everything else.
    drop(metrics);
    Ok(code)
}

/// One fleet run of `plan` on `jobs`, saved (run `i` of `n` in a folder of its own), its
/// table and warnings printed; the merged document and the exit code it alone would give.
#[allow(clippy::too_many_arguments)]
fn one_run(
    a: &FleetArgs,
    plan: &RunPlan,
    jobs: &[HostJob],
    name: &str,
    cancel: &oio_core::Cancel,
    metrics: Option<&crate::output::metrics::Metrics>,
    (i, n): (u32, u32),
    record_device: bool,
) -> anyhow::Result<(oio_fleet::merge::FleetResult, ExitCode)> {
    let live = crate::output::fleet::FleetLive::new();
    let run = controller::run_with_progress(jobs, &a.host.options(), cancel, &mut |p| {
        live.update(p);
        if let Some(m) = metrics {
            m.update(p);
        }
    });
    live.finish();
    let run = run?;

    let stamp = oio_core::host::now_rfc3339();
    let label = match n {
        1 => name.to_string(),
        _ => format!("{name}-run{i}"),
    };
    let dir = a
        .out
        .join(result_file_name("fleet", &stamp, &label).trim_end_matches(".json"));
    let (doc, merged) = super::save_io(&dir, &run, plan, a.label.as_deref())?;
    if record_device {
        save_devices(&doc, &merged, a.json)?;
    }

    if !a.json && !style::quiet() {
        crate::output::fleet::print_table(&doc);
    }
    for l in &doc.lost {
        style::print_warning(&oio_core::text::printable(l));
    }
    // What the hosts themselves warned about, each once with the hosts that said it.
    for w in
        doc.envelope.warnings.iter().filter(|w| {
            (w.starts_with("host ") || w.starts_with("hosts ")) && !doc.lost.contains(w)
        })
    {
        style::print_warning(&oio_core::text::printable(w));
    }
    style::print_saved("result", &merged, a.json);
    let code = if run.interrupted {
        ExitCode::from(crate::interrupt::EXIT_INTERRUPTED)
    } else if doc.envelope.partial {
        ExitCode::from(crate::EXIT_CHECK_FAILED)
    } else {
        ExitCode::SUCCESS
    };
    Ok((doc, code))
}

/// Every host's devices over the window as one observation beside the merged result (`HOST:DEVICE`
/// per device), or a warning when no host recorded one.
fn save_devices(
    doc: &oio_fleet::merge::FleetResult,
    merged: &std::path::Path,
    json: bool,
) -> anyhow::Result<()> {
    let Some(obs) = oio_fleet::merge::devices(doc) else {
        style::print_warning("no host recorded a device (the null engine, or targets on no block device): no device file saved");
        return Ok(());
    };
    let path = crate::device_recording::device_recording_of(merged);
    let mut bytes = serde_json::to_vec_pretty(&obs)?;
    bytes.push(b'\n');
    crate::results::write_file_atomic(&path, &bytes)?;
    style::print_saved("devices", &path, json);
    Ok(())
}

pub(super) fn fleet_check(a: FleetArgs) -> anyhow::Result<ExitCode> {
    if a.metrics.is_some() {
        anyhow::bail!("--metrics: `oio fleet check` runs no workload; give it to `oio fleet run`, `oio fleet sweep` or `oio fleet scale`");
    }
    if a.label.is_some() {
        anyhow::bail!("--label: `oio fleet check` writes no result to name; give it to `oio fleet run`, `sweep` or `scale`");
    }
    let (_, jobs) = jobs(&a)?;
    let cancel = oio_core::Cancel::from_flag(crate::interrupt::stop_flag());
    let out = controller::check(&jobs, &a.host.options(), &cancel);
    if a.json {
        crate::output::print_json(&out)?;
    } else {
        crate::output::fleet::print_check(&out);
    }
    let bad = out.iter().filter(|h| !h.ok()).count();
    if bad > 0 {
        style::print_warning(&format!("{bad} of {} hosts failed the check", out.len()));
        return Ok(ExitCode::from(crate::EXIT_CHECK_FAILED));
    }
    Ok(ExitCode::SUCCESS)
}
