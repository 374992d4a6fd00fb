//! `oio tpcc` on the terminal and on disk: progress bars, the build, run, series and check
//! summaries, and the run's observer, which saves each result the moment it exists.

use crate::output::style;
use crate::results::{result_file_name, write_file_atomic, write_json_atomic};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use oio_core::units::{format_bytes, format_count};
use oio_telemetry::diskstats::mean_interval;
use oio_tpcc::check::{CheckReport, Status};
use oio_tpcc::error::ObserverError;
use oio_tpcc::result::Series;
use oio_tpcc::{BuildReport, DeviceObserver, Mode, RunObserver, RunProgress, TpccResult};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A progress bar on stderr (hidden when stderr is not a terminal).
pub fn bar(template: &str) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr_with_hz(4));
    pb.set_style(ProgressStyle::with_template(template).expect("valid template"));
    pb
}

/// The CLI's view of `oio tpcc run`: a progress bar per step; each step's result saved at once
/// in `out` and printed; the series (a sequence) rewritten in place after every step.
pub struct RunSink {
    out: PathBuf,
    json: bool,
    /// Per run, in order: its worker count's runs so far and in all (for "run 3/4").
    runs: Vec<(u32, u32)>,
    device: Option<oio_tpcc::device::Diskstats>,
    /// Warnings found before the run (where the device is), put first in every result.
    pre_warnings: Vec<String>,
    bar: Option<ProgressBar>,
    series_file: Option<PathBuf>,
    /// The database, to read its settings after each step (None: not parsed, not read).
    db: Option<oio_tpcc::DbUrl>,
    /// Each finished run of a sequence by its file name, for where scaling stops.
    kept: Vec<(String, TpccResult)>,
}

impl RunSink {
    /// A sink saving into `out` the runs of `plan`.
    pub fn new(
        out: &Path,
        json: bool,
        plan: &oio_tpcc::TpccRunPlan,
        device: Option<oio_tpcc::device::Diskstats>,
        pre_warnings: Vec<String>,
    ) -> RunSink {
        let order = plan.runs();
        let runs = order
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                let before = order[..k].iter().filter(|&&j| j == i).count() as u32;
                (before + 1, plan.repeat)
            })
            .collect();
        RunSink {
            out: out.to_path_buf(),
            json,
            runs,
            device,
            pre_warnings,
            bar: None,
            series_file: None,
            db: plan.db.parse().ok(),
            kept: Vec::new(),
        }
    }

    /// The file name a step's result is saved under.
    fn result_name(r: &TpccResult) -> String {
        let label = format!(
            "{}{}-w{}-n{}",
            r.label
                .as_deref()
                .map_or(String::new(), |l| format!("{l}-")),
            r.dialect_name(),
            r.warehouses,
            r.options.workers
        );
        result_file_name("tpcc", &r.envelope.timestamp, &label)
    }

    fn save(&mut self, r: &TpccResult) -> anyhow::Result<PathBuf> {
        let name = Self::result_name(r);
        let saved = write_json_atomic(&self.out, &name, r)?;
        if self.json {
            // A sequence prints its series instead.
            if self.runs.len() == 1 {
                crate::output::print_json(r)?;
            }
        } else if !style::quiet() {
            write_run_summary(&mut crate::output::terminal::stdout(), r)?;
        }
        for w in &r.envelope.warnings {
            style::print_warning(w);
        }
        style::print_saved("result", &saved, self.json);
        Ok(saved)
    }

    /// Prints the series (its table, or JSON with `--json`) and where it was saved.
    pub fn finish(&self, series: Option<&Series>) -> anyhow::Result<()> {
        let (Some(s), Some(path)) = (series, &self.series_file) else {
            return Ok(());
        };
        if self.json {
            crate::output::print_json(s)?;
        } else if !style::quiet() {
            let mut out = crate::output::terminal::stdout();
            if s.repeat > 1 {
                let order: Vec<String> = s.runs.iter().map(|r| r.workers.to_string()).collect();
                writeln!(
                    out,
                    "{} runs of each worker count, {} ({}): NOPM and TPM are the medians of a count's runs, latencies from their merged histograms",
                    s.repeat,
                    s.order.as_deref().unwrap_or("in order"),
                    order.join(" ")
                )?;
            }
            writeln!(
                out,
                "workers        NOPM         TPM  efficiency  new_order p90/p99   payment p90/p99{}",
                if s.repeat > 1 { "  NOPM of each run" } else { "" }
            )?;
            for p in &s.steps {
                let lat = |k: &str| {
                    p.latency_ns.get(k).map_or("-".to_string(), |(p90, p99)| {
                        format!("{}/{}", ns_u(*p90), ns_u(*p99))
                    })
                };
                let each: Vec<String> = p.nopm_runs.iter().map(|n| format_count(*n)).collect();
                writeln!(
                    out,
                    "{:>7} {:>11} {:>11}  {:>10}  {:>17} {:>17}{}",
                    p.workers,
                    format_count(p.nopm),
                    format_count(p.tpm),
                    p.efficiency_pct
                        .map(|e| format!("{e:.0} %"))
                        .unwrap_or_else(|| "-".into()),
                    lat("new_order"),
                    lat("payment"),
                    if s.repeat > 1 {
                        format!("  {}", each.join(", "))
                    } else {
                        String::new()
                    }
                )?;
            }
            let found = oio_report::scaling::of_series(s, |file| {
                self.kept.iter().find(|(f, _)| f == file).map(|(_, r)| r)
            });
            if let Some(sc) = found {
                writeln!(out, "{}", sc.summary)?;
                for e in sc.evidence.iter().skip(1) {
                    writeln!(out, "  - {e}")?;
                }
            }
        }
        style::print_saved("series", path, self.json);
        Ok(())
    }
}

impl RunObserver for RunSink {
    fn progress(&mut self, p: &RunProgress) {
        let Some(pb) = &self.bar else { return };
        pb.set_length(p.phase_s.ceil() as u64);
        pb.set_position(p.elapsed_s as u64);
        pb.set_message(if p.phase == "ramp" {
            "ramp".to_string()
        } else {
            format!(
                "measure  NOPM {:>9}  TPM {:>9}",
                format_count(p.nopm),
                format_count(p.tpm_client)
            )
        });
    }

    fn step_starting(&mut self, index: usize, workers: u32) {
        if self.runs.len() > 1 {
            let repeat = match self.runs.get(index) {
                Some(&(k, n)) if n > 1 => format!(", run {k}/{n} of this count"),
                _ => String::new(),
            };
            style::print_notice(&format!(
                "run {}/{}: {workers} worker(s){repeat}",
                index + 1,
                self.runs.len()
            ));
        }
        self.bar = Some(bar("{msg} {wide_bar} {pos}/{len} s"));
    }

    fn device(&mut self) -> Option<&mut dyn DeviceObserver> {
        self.device.as_mut().map(|d| d as &mut dyn DeviceObserver)
    }

    fn step_finished(&mut self, r: &mut TpccResult) -> Result<String, ObserverError> {
        if let Some(pb) = self.bar.take() {
            pb.finish_and_clear();
        }
        r.envelope.command = std::env::args().collect();
        if let Some(db) = &self.db {
            r.settings = Some(crate::server_settings::capture(
                db,
                r.options.sqlite_sync,
                &r.options.timeouts,
            ));
        }
        r.envelope
            .warnings
            .splice(0..0, self.pre_warnings.iter().cloned());
        let saved = self
            .save(r)
            .map_err(|e| ObserverError::result(Some(self.out.join(Self::result_name(r))), e))?;
        let file = saved
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        if self.runs.len() > 1 {
            self.kept.push((file.clone(), r.clone()));
        }
        Ok(file)
    }

    fn series_updated(&mut self, s: &Series) -> Result<(), ObserverError> {
        let (r, path) = match &self.series_file {
            // Rewritten in place (by rename), so the file always holds every finished step.
            Some(path) => (
                serde_json::to_vec_pretty(s)
                    .map_err(anyhow::Error::from)
                    .and_then(|mut v| {
                        v.push(b'\n');
                        write_file_atomic(path, &v)
                    }),
                Some(path.clone()),
            ),
            None => {
                let label = format!(
                    "{}{}-w{}-series",
                    s.label
                        .as_deref()
                        .map_or(String::new(), |l| format!("{l}-")),
                    s.dialect.name(),
                    s.warehouses
                );
                let name = result_file_name("tpcc-series", &s.envelope.timestamp, &label);
                let path = self.out.join(&name);
                let r = write_json_atomic(&self.out, &name, s).map(|p| {
                    self.series_file = Some(p);
                });
                (r, Some(path))
            }
        };
        r.map_err(|e| ObserverError::series(path, e))
    }
}

/// A latency in ns as µs or ms, whichever reads best.
pub(crate) fn ns(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(n) if n >= 10_000_000.0 => format!("{:.1} ms", n / 1e6),
        Some(n) if n >= 1_000_000.0 => format!("{:.2} ms", n / 1e6),
        Some(n) => format!("{:.0} µs", n / 1e3),
    }
}

pub(crate) fn ns_u(v: Option<u64>) -> String {
    ns(v.map(|n| n as f64))
}

/// The build's summary.
pub fn write_build_summary(
    out: &mut dyn Write,
    r: &BuildReport,
    db: &str,
    workers: u32,
) -> std::io::Result<()> {
    writeln!(
        out,
        "{}built{} {} warehouse(s) in {} ({}) in {:.1} s with {} workers",
        style::HEAD,
        style::HEAD.render_reset(),
        r.options.warehouses,
        r.db,
        r.engine_version.split(" on ").next().unwrap_or(""),
        r.total_s,
        workers
    )?;
    writeln!(
        out,
        "  load      {:>8.1} s   {} rows/s, {}/s of row data ({} rows)",
        r.load_s,
        format_count(r.load_rows_per_s),
        format_bytes(r.load_bytes_per_s),
        format_count(r.rows_total as f64)
    )?;
    writeln!(out, "  indexes   {:>8.1} s", r.index_s)?;
    writeln!(out, "  analyze   {:>8.1} s", r.analyze_s)?;
    writeln!(
        out,
        "  on disk   {} ({} per warehouse)",
        format_bytes(r.size_on_disk_bytes as f64),
        format_bytes(r.bytes_per_warehouse as f64)
    )?;
    writeln!(out, "next: oio tpcc run --db {db} --workers N")
}

/// One run's summary: headline, per-type table, waits, device, driver CPU.
pub fn write_run_summary(out: &mut dyn Write, r: &TpccResult) -> std::io::Result<()> {
    let (h, hr) = (style::HEAD, style::HEAD.render_reset());
    let s = &r.summary;
    writeln!(
        out,
        "{h}TPROC-C-like{hr}{} on {} ({}), {} warehouse(s), {} workers, {} mode, {:.0} s measured after {:.0} s ramp{}",
        r.label.as_deref().map_or(String::new(), |l| format!(" '{l}'")),
        r.db,
        r.engine_version.split(" on ").next().unwrap_or(""),
        r.warehouses,
        r.options.workers,
        match r.options.mode {
            Mode::Client => "client",
            Mode::Server => "server",
        },
        r.duration_s,
        r.options.ramp_s,
        if r.envelope.partial { " (PARTIAL)" } else { "" }
    )?;
    writeln!(
        out,
        "  {h}NOPM {:.0}{hr}   TPM {:.0} ({})   NOPM/TPM {} (mix implies {:.3}{})",
        s.nopm,
        s.tpm,
        s.tpm_source,
        s.nopm_tpm_ratio.map_or("-".into(), |v| format!("{v:.3}")),
        s.expected_ratio,
        if s.ratio_ok { "" } else { ", DRIFTED" }
    )?;
    if let Some(e) = s.efficiency_pct {
        let scale = r.options.pace_scale;
        if scale == 1.0 {
            writeln!(out, "  efficiency {e:.1} % of 12.86 NOPM per warehouse")?;
        } else {
            writeln!(
                out,
                "  efficiency {e:.1} % of {:.2} NOPM per warehouse (12.86 ÷ --pace-scale {scale})",
                12.86 / scale
            )?;
        }
    }
    if let Some(t) = &r.terminals {
        writeln!(
            out,
            "  terminals {} ({:.1} per warehouse) on {} connection(s): at most {:.0} NOPM, {} reached; waited for a connection {:.2} s in all, {} of {} started over 10 ms late (max {})",
            t.terminals,
            t.per_warehouse,
            t.connections,
            t.bound_nopm,
            t.efficiency_pct.map_or("-".into(), |e| format!("{e:.1} %")),
            t.late_s,
            t.late_starts,
            t.started,
            ns_u(Some(t.late_max_ns))
        )?;
    }
    writeln!(
        out,
        "\n  {:<13} {:>9} {:>7} {:>7} {:>6} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "transaction",
        "committed",
        "rolled",
        "retried",
        "failed",
        "mix%",
        "p50",
        "p90",
        "p95",
        "p99",
        "max"
    )?;
    for (name, t) in &r.transactions {
        let l = &t.latency_ns;
        writeln!(
            out,
            "  {:<13} {:>9} {:>7} {:>7} {:>6} {:>6.1} {:>9} {:>9} {:>9} {:>9} {:>9}{}",
            name,
            t.committed,
            t.rolled_back,
            t.retried,
            t.failed,
            t.share_pct,
            ns_u(l.p50),
            ns_u(l.p90),
            ns_u(l.p95),
            ns_u(l.p99),
            ns_u(l.max),
            if t.p90_within_limit == Some(false) {
                "  p90 over limit"
            } else {
                ""
            }
        )?;
    }
    write_waits(out, &r.waits)?;
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

/// The database's waits over the window.
pub(crate) fn write_waits(
    out: &mut dyn Write,
    w: &oio_tpcc::waits::WaitProfile,
) -> std::io::Result<()> {
    if !w.buckets.is_empty() {
        writeln!(
            out,
            "\n  waits ({}, {} rounds every {:.0} ms): average active sessions",
            w.source,
            w.rounds,
            w.sample_interval_ms.unwrap_or(0.0)
        )?;
        for b in &w.buckets {
            writeln!(
                out,
                "    {:<22} {:>6.2}  {:>5.1} %",
                b.name, b.aas, b.share_pct
            )?;
        }
        let top: Vec<String> = w
            .top_events
            .iter()
            .take(5)
            .map(|e| {
                if e.event.is_empty() {
                    format!("{} {:.0}%", e.class, e.share_pct)
                } else {
                    format!("{}:{} {:.0}%", e.class, e.event, e.share_pct)
                }
            })
            .collect();
        writeln!(out, "    top events: {}", top.join(", "))?;
    }
    if let Some(sq) = &w.sqlite {
        writeln!(
            out,
            "\n  SQLite waits (worker-seconds of {:.0}): writer queue {:.2} s, commit/fsync {:.2} s (mean {}), checkpoints {:.2} s ({} pages, {}, of {} pages written to the WAL)",
            sq.worker_s,
            sq.writer_wait_s,
            sq.commit_s,
            ns(sq.commit_mean_ns),
            sq.checkpoint_s,
            sq.checkpoint_pages,
            format_bytes(sq.checkpoint_bytes as f64),
            sq.wal_frames
        )?;
    }
    Ok(())
}

/// The device under the database during the window, time-weighted.
pub(crate) fn write_device(
    out: &mut dyn Write,
    device: Option<&oio_core::observation::Observation>,
) -> std::io::Result<()> {
    if let Some(o) = device {
        for d in &o.devices {
            let Some(m) = mean_interval(&d.intervals) else {
                continue;
            };
            let num = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.1}"));
            writeln!(
                out,
                "\n  device {} during the window ({:.0} s, time-weighted): {} reads/s, {} writes/s, {} written/s, queue {}, write latency {}",
                d.name,
                m.duration_s,
                num(m.read.iops),
                num(m.write.iops),
                m.write.bytes_per_sec.map_or("-".into(), format_bytes),
                num(m.queue_mean),
                ns(m.write.latency_mean_ns),
            )?;
        }
    }
    Ok(())
}

/// The consistency check's report.
pub fn write_check(out: &mut dyn Write, report: &CheckReport) -> std::io::Result<()> {
    writeln!(
        out,
        "consistency of {} ({} warehouse(s)), clause 3.3.2:",
        report.db, report.warehouses
    )?;
    for c in &report.conditions {
        let status = match c.status {
            Status::Pass => "pass".to_string(),
            Status::Fail => format!("FAIL ({} rows)", c.violations),
            Status::NotApplicable => "n/a".to_string(),
        };
        writeln!(out, "  {:>2}. {:<14} {}", c.number, status, c.title)?;
        for e in &c.examples {
            writeln!(out, "        {e}")?;
        }
        if let Some(n) = &c.note {
            writeln!(out, "        ({n})")?;
        }
    }
    writeln!(
        out,
        "{}",
        if report.passed {
            "all applicable conditions hold"
        } else {
            "some conditions FAIL"
        }
    )
}
