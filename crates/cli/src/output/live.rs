//! The live line on stderr while a run goes on: phase, elapsed/remaining, and the last
//! second's IOPS, MiB/s and p99. Hidden when stderr is not a terminal (indicatif decides).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use oio_core::result::Interval;
use oio_core::units::{format_bytes, format_count, format_ns};
use oio_engine::{RunObserver, Start};
use std::path::Path;
use std::time::Duration;

/// Draws progress for `oio run`.
pub struct LiveLine {
    bar: ProgressBar,
    ramp: Duration,
    time: Duration,
    filling: bool,
    header: bool,
}

impl LiveLine {
    /// A live line on stderr (drawn only on a terminal, never under `--quiet`).
    pub fn new() -> LiveLine {
        let quiet = super::style::quiet();
        let target = if quiet {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr_with_hz(4)
        };
        let bar = ProgressBar::with_draw_target(Some(0), target);
        LiveLine {
            bar,
            ramp: Duration::ZERO,
            time: Duration::ZERO,
            filling: false,
            header: !quiet,
        }
    }

    /// Without the header before the ramp (callers that print their own).
    pub fn without_header(mut self) -> LiveLine {
        self.header = false;
        self
    }

    /// Removes the line.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Default for LiveLine {
    fn default() -> Self {
        Self::new()
    }
}

impl RunObserver for LiveLine {
    fn filling(&mut self, path: &Path, done: u64, total: u64) {
        if !self.filling {
            self.filling = true;
            self.bar.set_length(total);
            self.bar.set_style(
                ProgressStyle::with_template(
                    "{msg} {wide_bar} {bytes}/{total_bytes} ({bytes_per_sec})",
                )
                .expect("valid template"),
            );
            self.bar.set_message(format!(
                "filling {} with incompressible data",
                path.display()
            ));
            self.bar.set_length(total);
        }
        self.bar.set_position(done);
    }

    fn waiting(&mut self, path: &Path, holder: &str) {
        let msg = format!("waiting for {}: {holder} (--wait)", path.display());
        self.bar.suspend(|| super::style::print_notice(&msg));
    }

    fn started(&mut self, s: &Start<'_>) {
        let (engine, ramp, time) = (s.engine, s.ramp, s.time);
        self.ramp = ramp;
        self.time = time;
        if self.header {
            self.bar.suspend(|| {
                let _ = super::header::write_header(&mut crate::output::terminal::stderr(), s);
            });
        }
        self.bar
            .set_style(ProgressStyle::with_template("{msg}").expect("valid template"));
        self.bar.set_message(format!("starting ({engine})"));
        self.bar.set_length(0);
        self.bar.set_position(0);
    }

    fn tick(&mut self, elapsed: Duration, last: Option<&Interval>) {
        let msg = if elapsed < self.ramp {
            format!(
                "ramp {:.0}/{:.0} s (not measured)",
                elapsed.as_secs_f64(),
                self.ramp.as_secs_f64()
            )
        } else {
            let m = (elapsed - self.ramp).min(self.time);
            let mut s = format!(
                "{:>4.0}/{:.0} s  {:.0} s left",
                m.as_secs_f64(),
                self.time.as_secs_f64(),
                (self.time - m).as_secs_f64()
            );
            if let Some(i) = last {
                s.push_str(&format!(
                    "  │ {} IOPS  {}/s  p99 {}  QD {:.1}",
                    format_count(i.total.iops),
                    format_bytes(i.total.bytes_per_sec),
                    i.total
                        .latency_ns
                        .p99
                        .map(|v| format_ns(v as f64))
                        .unwrap_or_else(|| "-".into()),
                    i.total.outstanding_mean
                ));
            }
            s
        };
        self.bar.set_message(msg);
    }
}
