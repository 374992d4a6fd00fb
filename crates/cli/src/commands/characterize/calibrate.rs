//! `oio characterize … --calibrate TARGET`: the calibration (`oio_lab::calibrate`) run with
//! its runs as notices and its doubts as warnings.

use crate::output::style;
use oio_analysis::characterize::Calibration;
use oio_core::workload::Workload;
use oio_lab::calibrate::{Probe, Said};
use std::path::Path;
use std::time::Duration;

/// Calibrates `workload` on `target` against the capture's device queue and IOPS; each run
/// lasts `time`.
pub fn calibrate(
    workload: &Workload,
    aim_queue: f64,
    aim_iops: f64,
    target: &Path,
    size: Option<u64>,
    time: Duration,
    (allow_overwrite, destroy_data): (bool, bool),
) -> anyhow::Result<Calibration> {
    let probe = Probe {
        workload,
        target,
        size,
        time,
        allow_overwrite,
        destroy_data,
    };
    let cancel = crate::interrupt::cancel_token();
    let mut say = |s: Said<'_>| match s {
        Said::Run(r) => style::print_notice(&format!(
            "calibration: depth {}: device queue {}, {} IOPS{}",
            r.depth,
            r.device_queue.map_or("-".into(), |q| format!("{q:.2}")),
            r.device_iops.map_or("-".into(), |n| format!("{n:.0}")),
            r.disturbed().map_or(String::new(), |d| format!(" ({d})"))
        )),
        Said::Doubt(d) => style::print_warning(&format!("calibration: {d}")),
    };
    Ok(oio_lab::calibrate::calibrate(
        &probe, aim_queue, aim_iops, &cancel, &mut say,
    )?)
}
