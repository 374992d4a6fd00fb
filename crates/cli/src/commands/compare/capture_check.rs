//! `oio compare CAPTURE REPLAY`: a replay held against the capture it was built from, device
//! counters against device counters (`oio_analysis::capture_check`). The capture is any
//! telemetry oio reads (iostat, perfmon, diskstats, blkparse, an `oio record` observation);
//! the replay is the recording of the target's device that `oio replay` and `oio run` save
//! beside their result (`….device.json`), the result itself (its recording is found beside
//! it), a directory holding one, or any telemetry recorded while the replay ran.

use crate::output::style;
use anyhow::{bail, Context};
use oio_analysis::capture_check::{self, CaptureCheck};
use oio_core::observation::Observation;
use oio_telemetry::{Format, ParseOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// True when `path` is a telemetry file (a capture), not a group of results.
pub fn is_capture(path: &Path) -> bool {
    path.is_file()
        && matches!(
            oio_telemetry::sniff_file(path),
            Ok((Some(f), _)) if f != Format::FioJson
        )
}

use crate::device_recording::device_recording_of;

/// The replay side: a telemetry file, a result with its recording beside it, or a directory
/// with exactly one newest recording.
fn replay_side(path: &Path) -> anyhow::Result<PathBuf> {
    if path.is_dir() {
        let mut found: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("reading {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.to_string_lossy().ends_with(".device.json"))
            .collect();
        found.sort();
        return found.pop().with_context(|| {
            format!(
                "{}: no recording of the device (*.device.json, written by `oio replay` and `oio run` on a real device)",
                path.display()
            )
        });
    }
    if is_capture(path) {
        return Ok(path.to_path_buf());
    }
    let beside = device_recording_of(path);
    if beside.is_file() {
        return Ok(beside);
    }
    bail!(
        "{}: expected the replay's recording of its device: a result of `oio replay` or `oio run` with its .device.json beside it, or telemetry recorded while the replay ran (oio record, iostat -x)",
        path.display()
    )
}

fn busiest(obs: &Observation, path: &Path) -> anyhow::Result<capture_check::Signature> {
    obs.devices
        .iter()
        .filter_map(|d| capture_check::signature(&d.intervals))
        .max_by(|a, b| a.iops.unwrap_or(0.0).total_cmp(&b.iops.unwrap_or(0.0)))
        .with_context(|| format!("{}: no interval with I/O on any device", path.display()))
}

/// Runs the capture comparison.
pub fn run(capture: &Path, replay: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let opts = ParseOptions::default();
    let cap_obs = oio_telemetry::parse_file(capture, &opts)?;
    let rep_path = replay_side(replay)?;
    let rep_obs = oio_telemetry::parse_file(&rep_path, &opts)?;
    let c = capture_check::check(
        &busiest(&cap_obs, capture)?,
        &busiest(&rep_obs, &rep_path)?,
        &capture.display().to_string(),
        &rep_path.display().to_string(),
    );
    if json {
        crate::output::print_json(&c)?;
    } else if !style::quiet() {
        write(&mut crate::output::terminal::stdout(), &c)?;
    }
    Ok(if c.failing.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::EXIT_CHECK_FAILED)
    })
}

fn write(o: &mut impl Write, c: &CaptureCheck) -> std::io::Result<()> {
    writeln!(
        o,
        "capture {} ({} intervals, {:.0} s)",
        c.capture_source, c.capture.intervals, c.capture.seconds
    )?;
    writeln!(
        o,
        "replay  {} ({} intervals, {:.0} s)\n",
        c.replay_source, c.replay.intervals, c.replay.seconds
    )?;
    let head = ["", "capture", "replay", "difference", "%", "tolerance"];
    writeln!(
        o,
        "{:<16} {:>11} {:>11} {:>11} {:>8}  {:<20}",
        head[0], head[1], head[2], head[3], head[4], head[5]
    )?;
    let f = |v: Option<f64>| v.map(|x| format!("{x:.2}")).unwrap_or("-".into());
    for r in &c.rows {
        writeln!(
            o,
            "{:<16} {:>11} {:>11} {:>11} {:>8}  {:<20} {}",
            format!("{} {}", r.name, r.unit).trim_end(),
            f(r.capture),
            f(r.replay),
            r.difference
                .map(|d| format!("{d:+.2}"))
                .unwrap_or("-".into()),
            r.difference_pct
                .map(|d| format!("{d:+.1}"))
                .unwrap_or("-".into()),
            r.tolerance,
            match r.pass {
                Some(true) => "pass",
                Some(false) => "FAIL",
                None => "not compared",
            }
        )?;
    }
    writeln!(o, "\n{}", c.verdict)?;
    for n in &c.notes {
        writeln!(o, "note: {n}")?;
    }
    Ok(())
}
