//! The device under a run: /proc/diskstats of the block devices the targets are on,
//! recorded while the run goes and saved beside its result (`<result>.device.json`), so that
//! `oio compare CAPTURE RESULT` holds what the device did against a capture. `oio replay` and
//! `oio run` record the same way.

use crate::output::style;
use oio_core::observation::Observation;
use oio_engine::engines::EngineKind;
use oio_lab::{Outcome, Plan};
use oio_telemetry::{DiskstatsRecorder, TelemetryError};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A recording under way (or none: a simulated run, no block device, or it could not start).
pub struct Recording(Option<DiskstatsRecorder>);

/// A finished recording, to save beside the run's result.
pub struct Recorded(Option<Result<Observation, TelemetryError>>);

impl Recording {
    /// Starts recording the devices of `targets` every `interval`; none for the null engine.
    /// A recorder that cannot start is said, and the run goes on without it.
    pub fn start(targets: &[String], null_engine: bool, interval: Duration) -> Recording {
        let devices = if null_engine {
            Vec::new()
        } else {
            block_devices(targets)
        };
        if devices.is_empty() {
            return Recording(None);
        }
        match DiskstatsRecorder::start(&devices, interval) {
            Ok(r) => Recording(Some(r)),
            Err(e) => {
                style::print_warning(&format!("the device is not recorded: {e}"));
                Recording(None)
            }
        }
    }

    /// Stops recording (right after the run, before anything is printed).
    pub fn stop(self) -> Recorded {
        Recorded(self.0.map(DiskstatsRecorder::stop))
    }
}

impl Recorded {
    /// Saves the recording beside `result`, returning its path; a failed recording is said.
    /// `keep_empty`: save one without intervals too (a run shorter than one interval).
    pub fn save_beside(self, result: &Path, keep_empty: bool) -> anyhow::Result<Option<PathBuf>> {
        match self.0 {
            Some(Ok(obs)) => {
                if !keep_empty && obs.devices.iter().all(|d| d.intervals.is_empty()) {
                    return Ok(None);
                }
                let path = device_recording_of(result);
                let mut bytes = serde_json::to_vec_pretty(&obs)?;
                bytes.push(b'\n');
                crate::results::write_file_atomic(&path, &bytes)?;
                Ok(Some(path))
            }
            Some(Err(e)) => {
                style::print_warning(&format!("the device recording failed: {e}"));
                Ok(None)
            }
            None => Ok(None),
        }
    }
}

/// Runs `work` (the execution of `plan`) while recording its targets' devices, and saves the
/// recording beside the result when the plan is one run on a real engine. Under `--quiet` the
/// recording's path is not printed: `oio run -q` prints its result's path alone.
pub fn around(
    plan: &Plan,
    json: bool,
    work: impl FnOnce() -> anyhow::Result<Outcome>,
) -> anyhow::Result<Outcome> {
    let Plan::Run { run } = plan else {
        // Repeats and experiments would share one recording across their runs.
        return work();
    };
    let rec = Recording::start(
        &run.plan.target_paths(),
        run.plan.engine == EngineKind::Null,
        run.plan.interval,
    );
    let outcome = work();
    let recorded = rec.stop();
    let outcome = outcome?;
    if let Some(d) = outcome.runs.first() {
        if let Some(path) = recorded.save_beside(&d.path, false)? {
            if !style::quiet() {
                style::print_saved("device recording", &path, json);
            }
        }
    }
    Ok(outcome)
}

/// The recording of the device saved beside `result`.
pub fn device_recording_of(result: &Path) -> PathBuf {
    let stem = result.with_extension("");
    let mut name = stem.into_os_string();
    name.push(".device.json");
    PathBuf::from(name)
}

pub use oio_telemetry::diskstats::block_devices;
