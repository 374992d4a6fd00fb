//! `oio fleet scale`: a host ladder — the same plan on 1, 2, 4, … N hosts (the first hosts of
//! the list or inventory), each step a fleet run with its own merged result; the scaling
//! efficiency of each step against the first, and the step where it falls below a threshold,
//! or "undecided" where the steps' noise is larger than the difference.

use super::FleetArgs;
use crate::output::style;
use crate::results::{check_destination, result_file_name, write_json_atomic};
use oio_fleet::controller;
use oio_fleet::scale::{self, Ladder, Step};
use std::process::ExitCode;

/// Schema name of the ladder document (`scale.json`).
pub const SCALE_SCHEMA: &str = "oio.fleet.scale";

/// Arguments of `oio fleet scale`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  oio fleet scale --hosts db1,db2,db3,db4 --rw randread --bs 8k --time 30s /data/oio.dat --size 10G
  oio fleet scale --inventory lab.toml -p oltp-data --steps 1,2,3,4 --threshold 0.9")]
pub struct ScaleArgs {
    /// Hosts, launcher, the workload and where results go (as `oio fleet run`).
    #[command(flatten)]
    pub fleet: FleetArgs,
    /// Hosts in each step, increasing (the first hosts listed). Default: 1, 2, 4, … and all.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub steps: Option<Vec<usize>>,
    /// The scaling efficiency (per-host rate against the first step's, 1.0 linear) whose
    /// crossing is named.
    #[arg(long, value_name = "FRACTION", default_value = "0.8")]
    pub threshold: f64,
}

/// The ladder document: the steps and the verdict.
#[derive(Debug, serde::Serialize)]
struct ScaleDoc<'a> {
    #[serde(flatten)]
    envelope: oio_core::document::Envelope,
    workload: String,
    #[serde(flatten)]
    ladder: &'a Ladder,
}

/// 1, 2, 4, … below `n`, and `n`.
fn default_steps(n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = std::iter::successors(Some(1usize), |k| k.checked_mul(2))
        .take_while(|k| *k < n)
        .collect();
    v.push(n);
    v
}

/// Runs `oio fleet scale`.
pub fn run(s: ScaleArgs) -> anyhow::Result<ExitCode> {
    let a = &s.fleet;
    if !(s.threshold > 0.0 && s.threshold.is_finite()) {
        anyhow::bail!("--threshold: a positive efficiency, e.g. 0.8");
    }
    check_destination(&a.out, "--out DIR")?;
    let plan = a.run.config()?.plan;
    let all = super::io_jobs(&a.host, &plan, Some(&a.run))?;
    let steps = s.steps.clone().unwrap_or_else(|| default_steps(all.len()));
    if steps.is_empty()
        || steps.windows(2).any(|w| w[0] >= w[1])
        || steps[0] == 0
        || steps[steps.len() - 1] > all.len()
    {
        anyhow::bail!(
            "--steps: increasing host counts from 1 to the {} hosts given, e.g. 1,2,4",
            all.len()
        );
    }
    let cancel = oio_core::Cancel::from_flag(crate::interrupt::stop_flag());
    let stamp = oio_core::host::now_rfc3339();
    let dir = a.out.join(
        result_file_name("fleet-scale", &stamp, &plan.workload.name).trim_end_matches(".json"),
    );
    let metrics = super::run::metrics(&a.metrics)?;
    let mut done = Vec::new();
    let mut envelope = oio_core::document::Envelope::new(SCALE_SCHEMA, 1);
    envelope.command = std::env::args().collect();
    envelope.label = a.label.clone();
    envelope.host = Some(oio_core::host::HostInfo::detect());
    let mut interrupted = false;
    for &k in &steps {
        let jobs = &all[..k];
        if !style::quiet() {
            eprintln!("oio fleet scale: {k} host{}", if k == 1 { "" } else { "s" });
        }
        let live = crate::output::fleet::FleetLive::new();
        let run = controller::run_with_progress(jobs, &a.host.options(), &cancel, &mut |p| {
            live.update(p);
            if let Some(m) = &metrics {
                m.update(p);
            }
        });
        live.finish();
        let run = run?;
        let (doc, merged) = super::save_io(
            &dir.join(format!("hosts{k}")),
            &run,
            &plan,
            a.label.as_deref(),
        )?;
        done.push(step(k, &doc, &merged.display().to_string()));
        for l in &doc.lost {
            style::print_warning(l);
        }
        if run.interrupted || doc.envelope.partial {
            // A step with a host missing is not comparable: the ladder ends there.
            interrupted = run.interrupted;
            envelope.stopped(doc.envelope.stop_reason);
            break;
        }
    }
    let ladder = scale::ladder(done, s.threshold);
    envelope.warnings.push(
        "each step is one fleet run on the first hosts listed; efficiency = (merged rate ÷ hosts) ÷ the first step's; its margin is two standard errors of the two steps' rates (from their full-length intervals, taken as independent)".into(),
    );
    let doc = ScaleDoc {
        envelope,
        workload: plan.workload.name.clone(),
        ladder: &ladder,
    };
    let path = write_json_atomic(&dir, "scale.json", &doc)?;
    if a.json {
        crate::output::print_json(&doc)?;
    } else if !style::quiet() {
        crate::output::fleet::print_scale(&ladder);
    }
    style::print_saved("result", &path, a.json);
    Ok(match (interrupted, doc.envelope.partial) {
        (true, _) => ExitCode::from(crate::interrupt::EXIT_INTERRUPTED),
        (_, true) => ExitCode::from(crate::EXIT_CHECK_FAILED),
        _ => ExitCode::SUCCESS,
    })
}

/// One step from its merged result: the rates of the intervals every host delivered in full
/// (a short last interval or one with a host missing is not the step's rate).
fn step(hosts: usize, doc: &oio_fleet::merge::FleetResult, file: &str) -> Step {
    let longest = doc
        .intervals
        .iter()
        .map(|i| i.duration_s)
        .fold(0.0, f64::max);
    let interval_rates = doc
        .intervals
        .iter()
        .zip(&doc.hosts_per_interval)
        .filter(|(i, &n)| n == hosts && i.duration_s >= 0.99 * longest)
        .map(|(i, _)| i.total.iops)
        .collect();
    Step {
        hosts,
        rate: doc.summary.total.iops,
        interval_rates,
        p99_ns: doc.summary.total.latency_ns.p99,
        result_file: file.to_string(),
        complete: !doc.envelope.partial,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn default_steps_double_up_to_every_host() {
        assert_eq!(super::default_steps(1), [1]);
        assert_eq!(super::default_steps(4), [1, 2, 4]);
        assert_eq!(super::default_steps(6), [1, 2, 4, 6]);
    }
}
