//! Snapshots of the terminal summary (`write_summary`) of deterministic results: runs on the
//! simulated device's virtual clock, whose numbers are the model's exactly. What depends on
//! the host (target path and device, CPU time, the memory-backing note) is pinned before
//! rendering.

use crate::common::scratch;
use oio::output::header::write_header;
use oio::output::summary::write_summary;
use oio_core::result::RunResult;
use oio_core::workload::Workload;
use oio_core::Cancel;
use oio_engine::plan::{RunPlan, TargetBinding};
use oio_engine::runner::Quiet;
use oio_engine::{EngineKind, Start, SubmitMode, TargetOptions};
use std::time::Duration;

fn simulated(workload: &str, sim: &str) -> RunResult {
    let d = scratch();
    let plan = RunPlan {
        workload: Workload::from_toml(workload, "test").unwrap(),
        bindings: vec![TargetBinding {
            role: String::new(),
            paths: vec![d.path().join("t.dat")],
        }],
        target_options: TargetOptions {
            write: false,
            direct: true,
            size: Some(1 << 20),
            allow_overwrite: false,
            destroy_data: false,
            fill_seed: 0,
            wait: false,
        },
        engine: EngineKind::Null,
        submit: SubmitMode::PerIo,
        time: Duration::from_secs(2),
        ramp: Duration::from_millis(500),
        interval: Duration::from_secs(1),
        seed: 1,
        latency_tracking: true,
        io_limit: None,
        verify: false,
        track_order: false,
        sim: Some(sim.parse().unwrap()),
        lat_log: None,
        hdr_log: None,
        memory_limit: None,
    };
    let mut r = oio_engine::run(&plan, &mut Quiet, &Cancel::new()).unwrap();
    let dir = d.path().display().to_string();
    r.envelope.warnings.retain(|w| !w.contains(&dir));
    for t in &mut r.targets {
        t.path = "/data/t.dat".into();
        t.device = None;
        t.filesystem = None;
    }
    r.cpu.user_s = 0.25;
    r.cpu.system_s = 0.05;
    r.cpu.cores_busy = 0.12;
    r.cpu.ns_per_io = Some(3750.0);
    r.cpu.workers_busy = Some(0.4);
    r
}

fn render(r: &RunResult) -> String {
    oio::output::style::set_quiet(false);
    let mut out = Vec::new();
    write_summary(&mut out, r, Some("oio-results/run.json")).unwrap();
    anstream::adapter::strip_str(&String::from_utf8(out).unwrap()).to_string()
}

#[test]
fn closed_loop_summary() {
    let r = simulated(
        "name = \"oltp-sim\"\n[[stream]]\nbs = \"8k\"\nread_pct = 70\noutstanding = 16\n",
        "servers=8,service=500us,clock=virtual",
    );
    insta::assert_snapshot!("summary-closed-loop", render(&r));
}

#[test]
fn open_loop_summary() {
    let r = simulated(
        "name = \"log-sim\"\n[[stream]]\nbs = \"4k\"\nread_pct = 0\nrandom_pct = 0\nrate = 2000\noutstanding = 8\n",
        "servers=1,service=250us,clock=virtual",
    );
    insta::assert_snapshot!("summary-open-loop", render(&r));
}

#[test]
fn header_of_a_virtual_clock_run() {
    let r = simulated(
        "name = \"oltp-sim\"\n[[stream]]\nbs = \"8k\"\nread_pct = 70\noutstanding = 16\n",
        "servers=8,service=500us,clock=virtual",
    );
    let start = Start {
        engine: "null",
        submit: SubmitMode::PerIo,
        direct: true,
        ramp: Duration::from_millis(500),
        time: Duration::from_secs(2),
        io_limit: None,
        workload: &r.workload,
        targets: &r.targets,
        warnings: &[],
        virtual_clock: true,
        began: std::time::UNIX_EPOCH,
    };
    let mut out = Vec::new();
    write_header(&mut out, &start).unwrap();
    let text = anstream::adapter::strip_str(&String::from_utf8(out).unwrap()).to_string();
    insta::assert_snapshot!("header-virtual-clock", text);
}
