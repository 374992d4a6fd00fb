//! Calibration (`oio characterize … --calibrate TARGET`): what counters cannot say, found by running. The
//! application's outstanding I/O is not the device's queue, so the characterized workload runs
//! on the target in a few short runs while oio records the target's device, and the depth is
//! moved until the device's queue is the capture's (proportionally: depth × aimed queue /
//! measured queue). When at that depth the device does more I/O than the capture did, the
//! capture was not closed loop at that depth: the capture's IOPS become the offered rate, the
//! depth its cap, and one more run checks it.

use crate::error::{LabError, Result};
use crate::RunSettings;
use oio_analysis::capture_check;
use oio_analysis::characterize::{Calibration, CalibrationRun};
use oio_core::workload::{Rate, Workload};
use oio_core::Cancel;
use oio_engine::runner::Quiet;
use std::path::Path;
use std::time::Duration;

/// What a calibration runs, and where.
#[derive(Clone, Copy, Debug)]
pub struct Probe<'a> {
    /// The characterized workload.
    pub workload: &'a Workload,
    /// The file or device it runs on.
    pub target: &'a Path,
    /// Size of the file to create or of the part to use.
    pub size: Option<u64>,
    /// Each run's measured time.
    pub time: Duration,
    /// Writing to files and devices oio did not create is allowed.
    pub allow_overwrite: bool,
    /// Writing to partitioned, mounted or signed devices is allowed.
    pub destroy_data: bool,
}

/// What a calibration says as it goes: each run, and each doubt about the answer.
pub enum Said<'a> {
    /// A run finished.
    Run(&'a CalibrationRun),
    /// Something besides the target may have moved the answer.
    Doubt(&'a str),
}

/// Most calibration runs.
const MAX_RUNS: usize = 6;
/// Close enough: the queue within 10 % (or 0.3) of the capture's.
fn close(q: f64, aim: f64) -> bool {
    (q - aim).abs() <= (aim * 0.10).max(0.3)
}

/// Calibrates the probe's workload on its target against the capture's device queue and
/// IOPS, saying each run and each doubt through `say`.
pub fn calibrate(
    probe: &Probe<'_>,
    aim_queue: f64,
    aim_iops: f64,
    cancel: &Cancel,
    say: &mut dyn FnMut(Said<'_>),
) -> Result<Calibration> {
    let target = probe.target;
    let devices = oio_telemetry::diskstats::block_devices(&[target.display().to_string()]);
    if devices.is_empty() {
        return Err(LabError::Invalid(format!(
            "--calibrate {}: no block device under it to record (a file on tmpfs or overlay has none)",
            target.display()
        )));
    }
    let time = probe.time;
    let measure = |depth: u32, rate: Option<f64>| measure(probe, depth, rate, &devices, cancel);
    let mut runs = search(aim_queue, &mut |d| {
        let r = measure(d, None)?;
        say(Said::Run(&r));
        Ok(r)
    })?;
    let best = nearest(&runs, aim_queue)?;
    let mut how = format!(
        "the depth was moved until the device's queue on {} was the capture's {aim_queue:.2} (depth × aim / measured, {} runs of {} s): depth {} gave {:.2}",
        target.display(),
        runs.len(),
        time.as_secs_f64(),
        best.depth,
        best.device_queue.unwrap_or(0.0)
    );
    let mut doubts = Vec::new();
    if !close(best.device_queue.unwrap_or(0.0), aim_queue) {
        doubts.push(format!(
            "no depth brought the device's queue within 10 % of the capture's {aim_queue:.2}: the nearest, depth {}, gave {:.2}; the depth written is that nearest one, check it",
            best.depth,
            best.device_queue.unwrap_or(0.0)
        ));
    }
    // The probe once more at the depth chosen: a target judged by one run is judged by
    // whatever else happened in it.
    let again = measure(best.depth, None)?;
    say(Said::Run(&again));
    how += &format!(
        "; run again at depth {} it gave {}",
        again.depth,
        gave(&again)
    );
    let unsteady = did_not_repeat(&best, &again);
    let repeated = unsteady.is_none();
    doubts.extend(unsteady);
    let disturbed: Vec<String> = [&best, &again]
        .iter()
        .filter_map(|r| r.disturbed())
        .collect();
    runs.push(again);
    let mut rate = None;
    let iops = best.device_iops.unwrap_or(0.0);
    if iops > aim_iops * 1.10 {
        // Faster than the capture at its queue: the capture was paced, not closed loop.
        let r = measure(best.depth.max(1) * 4, Some(aim_iops))?;
        say(Said::Run(&r));
        how += &format!(
            "; at that depth the device did {iops:.0} IOPS against the capture's {aim_iops:.0}, so the capture's IOPS are the offered rate (depth cap {}), which gave {}",
            r.depth,
            gave(&r)
        );
        rate = Some(aim_iops);
        runs.push(r);
    } else if iops < aim_iops * 0.90 {
        // Slower than the capture: the target's fault only when nothing else explains it.
        let why = match (disturbed.first(), repeated) {
            (Some(d), _) => format!("which cannot be laid on the target: {d}"),
            (None, false) => "which cannot be laid on the target: its probe did not repeat".into(),
            (None, true) => "this target is slower than the captured one at that queue (the probe repeated, on a quiet host, with the device's I/O oio's own)".into(),
        };
        how += &format!(
            "; at that queue the device did {iops:.0} IOPS against the capture's {aim_iops:.0}, {why}"
        );
    }
    if let Some(d) = disturbed.first() {
        doubts.push(format!(
            "the calibration measured more than the target: {d}"
        ));
    }
    for d in &doubts {
        say(Said::Doubt(d));
        how += &format!("; {d}");
    }
    Ok(Calibration {
        target: target.display().to_string(),
        aim_queue,
        aim_iops,
        depth: runs
            .last()
            .filter(|_| rate.is_some())
            .map_or(best.depth, |r| r.depth),
        rate,
        runs,
        how,
    })
}

/// The depth moved until the device's queue is `aim_queue` (depth × aim / measured, never
/// back to a depth already run), at most [`MAX_RUNS`] runs of `run`.
fn search(
    aim_queue: f64,
    run: &mut dyn FnMut(u32) -> Result<CalibrationRun>,
) -> Result<Vec<CalibrationRun>> {
    let mut runs: Vec<CalibrationRun> = Vec::new();
    let mut depth = aim_queue.round().clamp(1.0, 4096.0) as u32;
    for _ in 0..MAX_RUNS {
        let r = run(depth)?;
        let q = r.device_queue.unwrap_or(0.0);
        runs.push(r);
        if close(q, aim_queue) || q <= 0.0 {
            break;
        }
        let next = ((depth as f64) * aim_queue / q).round().clamp(1.0, 4096.0) as u32;
        // Always move, and never back to a depth already run.
        let next = if next == depth {
            if q < aim_queue {
                depth + 1
            } else {
                depth.saturating_sub(1).max(1)
            }
        } else {
            next
        };
        if runs.iter().any(|r| r.depth == next) {
            break;
        }
        depth = next;
    }
    Ok(runs)
}

/// The run whose device queue came nearest `aim_queue`.
fn nearest(runs: &[CalibrationRun], aim_queue: f64) -> Result<CalibrationRun> {
    runs.iter()
        .min_by(|a, b| {
            let d = |r: &CalibrationRun| (r.device_queue.unwrap_or(0.0) - aim_queue).abs();
            d(a).total_cmp(&d(b))
        })
        .cloned()
        .ok_or_else(|| LabError::Invalid("no calibration run".into()))
}

/// The doubt when the chosen depth's probe, run again, gave other figures.
fn did_not_repeat(first: &CalibrationRun, again: &CalibrationRun) -> Option<String> {
    let unsteady = apart(first.device_iops, again.device_iops)
        || apart(first.device_queue, again.device_queue);
    unsteady.then(|| {
        format!(
            "the probe did not repeat at depth {} ({:.0} then {:.0} IOPS, queue {:.2} then {:.2}): the host or the device changed between runs, so the depth is uncertain",
            first.depth,
            first.device_iops.unwrap_or(0.0),
            again.device_iops.unwrap_or(0.0),
            first.device_queue.unwrap_or(0.0),
            again.device_queue.unwrap_or(0.0)
        )
    })
}

/// "queue 4.31 and 5230 IOPS": what a run gave.
fn gave(r: &CalibrationRun) -> String {
    format!(
        "queue {:.2} and {:.0} IOPS",
        r.device_queue.unwrap_or(0.0),
        r.device_iops.unwrap_or(0.0)
    )
}

/// Two figures of one probe more than 15 % apart.
fn apart(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) if a > 0.0 && b > 0.0 => (a / b).max(b / a) > 1.15,
        _ => false,
    }
}

/// One short run at `depth` (and `rate`) while the device is recorded.
fn measure(
    probe: &Probe<'_>,
    depth: u32,
    rate: Option<f64>,
    devices: &[String],
    cancel: &Cancel,
) -> Result<CalibrationRun> {
    let mut w = probe.workload.clone();
    for s in &mut w.streams {
        s.outstanding = Some(depth);
        s.rate = rate.map(|iops| Rate {
            iops,
            ..Rate::default()
        });
    }
    let config = RunSettings {
        targets: vec![probe.target.to_path_buf()],
        size: probe.size.or((!probe.target.exists()).then_some(1 << 30)),
        allow_overwrite: probe.allow_overwrite,
        destroy_data: probe.destroy_data,
        time: probe.time,
        ramp: Duration::from_millis(500),
        seed: Some(1),
        ..RunSettings::default()
    }
    .config_of(w)?;
    let recording = |e: oio_telemetry::TelemetryError| {
        LabError::Invalid(format!("recording the target's device: {e}"))
    };
    let rec = oio_telemetry::DiskstatsRecorder::start(devices, Duration::from_millis(250))
        .map_err(recording)?;
    let r = oio_engine::run(&config.plan, &mut Quiet, cancel);
    let obs = rec.stop().map_err(recording)?;
    let r =
        r.map_err(|e| LabError::from(e).context(format!("calibration run at depth {depth}")))?;
    let sig = obs
        .devices
        .iter()
        .filter_map(|d| capture_check::signature(&d.intervals))
        .max_by(|a, b| a.iops.unwrap_or(0.0).total_cmp(&b.iops.unwrap_or(0.0)));
    Ok(CalibrationRun {
        depth,
        rate,
        device_queue: sig.as_ref().and_then(|s| s.queue),
        device_iops: sig.and_then(|s| s.iops),
        own_iops: Some(r.summary.total.iops),
        host_noise: r
            .host_noise
            .as_ref()
            .filter(|n| n.noisy)
            .and_then(|n| n.reason.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(depth: u32, queue: f64, iops: f64) -> CalibrationRun {
        CalibrationRun {
            depth,
            device_queue: Some(queue),
            device_iops: Some(iops),
            own_iops: Some(iops),
            ..Default::default()
        }
    }

    /// A device whose queue is half the depth (the rest waits in the application's layers):
    /// the search doubles the depth once and stops within 10 % of the aim.
    #[test]
    fn the_search_moves_the_depth_by_the_queue_it_measured() {
        let mut seen = Vec::new();
        let runs = search(4.0, &mut |d| {
            seen.push(d);
            Ok(run(d, d as f64 / 2.0, 1000.0))
        })
        .unwrap();
        assert_eq!(seen, [4, 8]);
        assert_eq!(nearest(&runs, 4.0).unwrap().depth, 8);
        // A queue that never moves: the search stops where it would go back.
        let runs = search(4.0, &mut |d| Ok(run(d, 1.0, 1000.0))).unwrap();
        assert!(runs.len() <= MAX_RUNS, "{runs:?}");
    }

    /// The probe run again: within 15 % it repeated; beyond, the doubt names both figures.
    #[test]
    fn a_probe_that_does_not_repeat_is_a_doubt() {
        assert_eq!(
            did_not_repeat(&run(8, 4.0, 1000.0), &run(8, 4.1, 1100.0)),
            None
        );
        let d = did_not_repeat(&run(8, 4.0, 1000.0), &run(8, 4.0, 1300.0)).unwrap();
        assert!(d.contains("(1000 then 1300 IOPS"), "{d}");
    }
}
