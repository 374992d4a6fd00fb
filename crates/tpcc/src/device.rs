//! The block device under the database, recorded from /proc/diskstats during each measured
//! window, so a result holds the database's waits and the device's I/O side by side.
//!
//! Used by `oio tpcc run` and by the fleet's agent, which runs the same plan on each host.

use crate::error::DeviceError;
use crate::{DbUrl, DeviceObserver, Timeouts, TpccError};
use oio_core::observation::Observation;
use oio_telemetry::diskstats::DiskstatsRecorder;
use std::time::Duration;

/// Records one block device from /proc/diskstats during each measured window.
pub struct Diskstats {
    device: String,
    interval: Duration,
    rec: Option<DiskstatsRecorder>,
}

impl Diskstats {
    /// A recorder of `device` (a /proc/diskstats name) at `interval`.
    pub fn new(device: String, interval: Duration) -> Diskstats {
        Diskstats {
            device,
            interval,
            rec: None,
        }
    }
}

impl DeviceObserver for Diskstats {
    fn start(&mut self) -> Result<(), DeviceError> {
        let r = DiskstatsRecorder::start(std::slice::from_ref(&self.device), self.interval)?;
        self.rec = Some(r);
        Ok(())
    }
    fn stop(&mut self) -> Result<Observation, DeviceError> {
        Ok(self.rec.take().ok_or(DeviceError::NotStarted)?.stop()?)
    }
}

/// The device to record: `flag` (a name, or `none` for nothing) or else the one holding the
/// database's files, with warnings saying why none is recorded. Fails only when the server
/// does not answer in time: it would not answer the run either.
pub fn locate(
    flag: Option<&str>,
    db: &DbUrl,
    t: &Timeouts,
) -> Result<(Option<String>, Vec<String>), TpccError> {
    let no = |w: String| Ok((None, vec![w]));
    match flag {
        Some("none") => Ok((None, Vec::new())),
        Some(d) => Ok((Some(d.to_string()), Vec::new())),
        None => match crate::dialects::data_location(db, t) {
            Ok(Some(p)) => match oio_telemetry::diskstats::device_of(&p) {
                Some(d) => Ok((Some(d.name), Vec::new())),
                None => no(format!("no block device found under '{}' (overlay or tmpfs?); pass --device NAME to record one", p.display())),
            },
            Ok(None) => no("the database server is not on this machine, so its device is not recorded".into()),
            Err(e @ TpccError::Timeout(_)) => Err(e),
            Err(e) => no(format!("cannot locate the database's files ({e}); pass --device NAME to record a device")),
        },
    }
}
