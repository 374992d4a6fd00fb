//! `oio sql run` on the terminal and on disk: the progress bar, each step's result saved the
//! moment it exists and its summary, and the scaling table of a worker sequence.

use crate::output::style;
use crate::output::tpcc::{bar, ns, ns_u, write_device, write_waits};
use crate::results::write_json_atomic;
use indicatif::ProgressBar;
use oio_sql::{Progress, SqlObserver, SqlResult};
use oio_tpcc::DeviceObserver;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The CLI's view of a run: a progress bar, the device recorder, and the saving of results.
pub struct Sink {
    json: bool,
    device: Option<oio_tpcc::device::Diskstats>,
    /// Warnings found before the run (where the device is), put first in every result.
    pre_warnings: Vec<String>,
    bar: Option<ProgressBar>,
    /// One line a run (a study's runs) instead of the whole summary.
    compact: bool,
}

impl Sink {
    /// A sink printing as `json` asks, recording `device` during each window.
    pub fn new(
        json: bool,
        device: Option<oio_tpcc::device::Diskstats>,
        pre_warnings: Vec<String>,
        compact: bool,
    ) -> Sink {
        Sink {
            json,
            device,
            pre_warnings,
            bar: None,
            compact,
        }
    }

    /// Prints no result as it ends (a sequence under --json prints them all at its end, as
    /// one array).
    pub fn hold_json(&mut self) {
        self.compact = true;
    }

    /// Saves a finished step into `dir`, prints it, and says where it is.
    pub fn finished(&mut self, mut r: SqlResult, dir: &Path) -> anyhow::Result<PathBuf> {
        if let Some(pb) = self.bar.take() {
            pb.finish_and_clear();
        }
        r.envelope.command = std::env::args().collect();
        r.envelope
            .warnings
            .splice(0..0, self.pre_warnings.iter().cloned());
        let label = format!(
            "{}{}-n{}",
            r.envelope
                .label
                .as_deref()
                .map_or(String::new(), |l| format!("{l}-")),
            r.dialect.name(),
            r.options.workers
        );
        let name = oio_lab::sink::result_file_name("sql", &r.envelope.timestamp, &label);
        let saved = write_json_atomic(dir, &name, &r)?;
        if self.json && !self.compact {
            crate::output::print_json(&r)?;
        } else if self.compact && !style::quiet() && !self.json {
            write_line(&mut crate::output::terminal::stdout(), &r)?;
        } else if !style::quiet() {
            write_summary(&mut crate::output::terminal::stdout(), &r)?;
        }
        for w in &r.envelope.warnings {
            style::print_warning(w);
        }
        if !self.compact {
            style::print_saved("result", &saved, self.json);
        }
        Ok(saved)
    }
}

/// One run in a line: its label, rate, latency and largest wait.
fn write_line(out: &mut dyn Write, r: &SqlResult) -> std::io::Result<()> {
    let mut all = oio_core::histogram::LatencyHistogram::new();
    for t in r.transactions.values() {
        if let Some(s) = &t.histogram_ns {
            all += &oio_core::histogram::LatencyHistogram::from_sparse(s);
        }
    }
    writeln!(
        out,
        "  {}: {:.1} transactions/s, p50 {}, p95 {}, failed {}, largest wait {}{}",
        r.envelope.label.as_deref().unwrap_or("-"),
        r.summary.tps,
        ns_u(all.quantile(0.5)),
        ns_u(all.quantile(0.95)),
        r.summary.failed,
        r.waits.buckets.first().map_or("-".to_string(), |b| format!(
            "{} ({:.0} %)",
            b.name, b.share_pct
        )),
        if r.envelope.partial { " (PARTIAL)" } else { "" }
    )
}

impl SqlObserver for Sink {
    fn progress(&mut self, p: &Progress) {
        let pb = self
            .bar
            .get_or_insert_with(|| bar("{msg} {wide_bar} {pos}/{len} s"));
        pb.set_length(p.phase_s.ceil() as u64);
        pb.set_position(p.elapsed_s as u64);
        pb.set_message(if p.phase == "measure" {
            format!("measure  {:>9.1} tps", p.tps)
        } else {
            p.phase.to_string()
        });
    }

    fn device(&mut self) -> Option<&mut dyn DeviceObserver> {
        self.device.as_mut().map(|d| d as &mut dyn DeviceObserver)
    }
}

/// One step's summary: the headline, each transaction's figures, waits, device, CPU.
pub fn write_summary(out: &mut dyn Write, r: &SqlResult) -> std::io::Result<()> {
    let (h, hr) = (style::HEAD, style::HEAD.render_reset());
    let s = &r.summary;
    let o = &r.options;
    writeln!(
        out,
        "{h}SQL script{hr}{} on {} ({}), {} workers, {}, {:.0} s measured after {:.0} s ramp{}",
        r.envelope
            .label
            .as_deref()
            .map_or(String::new(), |l| format!(" '{l}'")),
        r.db,
        r.engine_version.split(" on ").next().unwrap_or(""),
        o.workers,
        o.rate_tps.map_or("closed loop".to_string(), |t| format!(
            "open loop at {t} transactions/s"
        )),
        r.duration_s,
        o.ramp_s,
        if r.envelope.partial { " (PARTIAL)" } else { "" }
    )?;
    writeln!(
        out,
        "  {h}{:.1} transactions/s{hr}   committed {}   failed {}   retried {}   statements {}",
        s.tps, s.committed, s.failed, s.retries, s.statements
    )?;
    if let Some(l) = &s.late {
        writeln!(
            out,
            "  open loop: {} started over 1 ms late (latest {}), {} scheduled never started",
            l.late,
            ns_u(Some(l.max_ns)),
            l.not_started
        )?;
    }
    writeln!(
        out,
        "\n  {:<20} {:>9} {:>7} {:>6} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "transaction", "committed", "retried", "failed", "mix%", "p50", "p90", "p95", "p99", "max"
    )?;
    for (name, t) in &r.transactions {
        let l = &t.latency_ns;
        writeln!(
            out,
            "  {:<20} {:>9} {:>7} {:>6} {:>6.1} {:>9} {:>9} {:>9} {:>9} {:>9}",
            name,
            t.committed,
            t.retried,
            t.failed,
            t.share_pct,
            ns_u(l.p50),
            ns_u(l.p90),
            ns_u(l.p95),
            ns_u(l.p99),
            ns_u(l.max),
        )?;
    }
    write_waits(out, &r.waits)?;
    for n in &r.waits.notes {
        writeln!(out, "  waits: {n}")?;
    }
    write_device(out, r.device.as_ref())?;
    writeln!(
        out,
        "\n  driver CPU {:.2} cores busy, {} per transaction{}",
        r.cpu.cores_busy,
        ns(r.cpu.ns_per_txn),
        if r.cpu.includes_database {
            " (includes the in-process SQLite engine)"
        } else {
            " (the oio process: workers and samplers; not the database server)"
        }
    )
}

/// A worker sequence: per count its runs' throughput (each run shown), efficiency against the
/// first count, latency and the largest wait bucket; then where scaling stops and which wait
/// grew across the stop (`oio_analysis::scaling`, the rule TPC-C ladders use).
pub fn write_scaling(out: &mut dyn Write, results: &[SqlResult]) -> std::io::Result<()> {
    let (h, hr) = (style::HEAD, style::HEAD.render_reset());
    let mut counts: Vec<u32> = results.iter().map(|r| r.options.workers).collect();
    counts.sort_unstable();
    counts.dedup();
    writeln!(out, "\n{h}scaling{hr}")?;
    writeln!(
        out,
        "  {:>7} {:>12} {:>11} {:>9} {:>9}  runs (transactions/s); largest wait (avg active sessions)",
        "workers", "tps", "per worker", "p50", "p95"
    )?;
    let mut steps = Vec::new();
    let mut base = None;
    for &w in &counts {
        let runs: Vec<&SqlResult> = results.iter().filter(|r| r.options.workers == w).collect();
        let mut tps: Vec<f64> = runs.iter().map(|r| r.summary.tps).collect();
        tps.sort_by(f64::total_cmp);
        let median = tps[tps.len() / 2];
        let per = median / f64::from(w.max(1));
        let base_per = *base.get_or_insert(per);
        let eff = if base_per > 0.0 {
            format!(" ({:.0} %)", 100.0 * per / base_per)
        } else {
            String::new()
        };
        let mut all = oio_core::histogram::LatencyHistogram::new();
        let mut waits: std::collections::BTreeMap<String, f64> = Default::default();
        for r in &runs {
            for t in r.transactions.values() {
                if let Some(s) = &t.histogram_ns {
                    all += &oio_core::histogram::LatencyHistogram::from_sparse(s);
                }
            }
            for b in wait_groups(&r.waits) {
                *waits.entry(b.name.clone()).or_default() += b.share_pct / runs.len() as f64;
            }
        }
        let top = runs[0].waits.buckets.first().map_or("-".to_string(), |b| {
            format!("{} {:.2} ({:.0} %)", b.name, b.aas, b.share_pct)
        });
        writeln!(
            out,
            "  {:>7} {:>12.1} {:>11}{} {:>9} {:>9}  {}; {}",
            w,
            median,
            format!("{per:.1}"),
            eff,
            ns_u(all.quantile(0.5)),
            ns_u(all.quantile(0.95)),
            tps.iter()
                .map(|t| format!("{t:.0}"))
                .collect::<Vec<_>>()
                .join(" "),
            top
        )?;
        steps.push(oio_analysis::scaling::StepFacts {
            workers: w,
            nopm: median,
            nopm_runs: tps,
            waits,
            host_busy_pct: None,
            steal_pct_max: None,
        });
    }
    if let Some(v) =
        oio_analysis::scaling::scaling(&steps, oio_analysis::scaling::DEFAULT_THRESHOLD_PCT)
    {
        writeln!(out, "{}", v.summary)?;
        for e in v.evidence.iter().skip(1) {
            writeln!(out, "  - {e}")?;
        }
    }
    Ok(())
}

/// A profile's wait groups: the bottleneck buckets, or the classes where there are none.
fn wait_groups(w: &oio_tpcc::waits::WaitProfile) -> &[oio_tpcc::waits::WaitShare] {
    if w.buckets.is_empty() {
        &w.classes
    } else {
        &w.buckets
    }
}
