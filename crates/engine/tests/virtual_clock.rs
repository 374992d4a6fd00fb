//! Runs on the simulated device with a virtual clock: the numbers are the model's, exactly,
//! and no test sleeps for the simulated time.

use oio_core::histogram::LatencyHistogram;
use oio_core::result::{DirStats, RunResult};
use oio_core::workload::Workload;
use oio_core::Cancel;
use oio_engine::plan::{RunPlan, TargetBinding};
use oio_engine::runner::Quiet;
use oio_engine::{EngineKind, SubmitMode, TargetOptions};
use std::time::{Duration, Instant};

const MS: u64 = 1_000_000;

fn plan(dir: &tempfile::TempDir, workload: &str, sim: &str, time: Duration) -> RunPlan {
    RunPlan {
        workload: Workload::from_toml(workload, "test").unwrap(),
        bindings: vec![TargetBinding {
            role: String::new(),
            paths: vec![dir.path().join("t")],
        }],
        target_options: TargetOptions {
            write: false,
            direct: false,
            size: Some(1 << 20),
            allow_overwrite: false,
            destroy_data: false,
            fill_seed: 0,
            wait: false,
        },
        engine: EngineKind::Null,
        submit: SubmitMode::PerIo,
        time,
        ramp: Duration::from_millis(100),
        interval: Duration::from_secs(1),
        seed: 42,
        latency_tracking: true,
        io_limit: None,
        verify: false,
        track_order: false,
        sim: Some(sim.parse().unwrap()),
        lat_log: None,
        hdr_log: None,
        memory_limit: None,
    }
}

fn run(plan: &RunPlan) -> RunResult {
    oio_engine::run(plan, &mut Quiet, &Cancel::new()).unwrap()
}

/// The summary a histogram of `n` I/Os all of `ns` gives: the percentiles are exact up to
/// the histogram's bucket (about 1 %), the same bucket whatever recorded them.
fn all_at(ns: u64, n: u64) -> oio_core::histogram::LatencySummary {
    let mut h = LatencyHistogram::new();
    h.record_n(ns, n);
    h.summary()
}

fn closed(qd: u32) -> String {
    format!("name = \"sim\"\n[[stream]]\nbs = \"4k\"\nread_pct = 100\noutstanding = {qd}\n")
}

#[test]
fn a_closed_loop_on_fixed_service_gives_the_model_exactly() {
    let dir = tempfile::tempdir().unwrap();
    // 4 servers of 1 ms at 8 outstanding: 4000 IOPS, every I/O waits one service behind
    // another, so every latency is 2 ms; Little's law gives back the 8.
    let p = plan(
        &dir,
        &closed(8),
        "servers=4,service=1ms,clock=virtual",
        Duration::from_secs(1),
    );
    let t0 = Instant::now();
    let r = run(&p);
    assert!(
        t0.elapsed() < Duration::from_secs(1),
        "simulated time is not waited for"
    );
    assert_eq!(r.envelope.stop_reason, oio_core::StopReason::Completed);
    assert_eq!(r.duration_s, 1.0);
    let t = &r.summary.total;
    assert_eq!(t.ios, 4000);
    assert_eq!(t.iops, 4000.0);
    assert_eq!(t.bytes, 4000 * 4096);
    assert_eq!(t.latency_ns.mean, Some(2e6));
    assert_eq!(t.latency_ns.min, Some(2 * MS));
    assert_eq!(t.latency_ns, all_at(2 * MS, 4000));
    assert_eq!(t.outstanding_mean, 8.0);
    // One interval of exactly the measured second.
    assert_eq!(r.intervals.len(), 1);
    assert_eq!(r.intervals[0].total.ios, 4000);
    assert_eq!(r.intervals[0].duration_s, 1.0);
    // The result says the clock was virtual.
    assert!(r.engine.features.iter().any(|f| f == "virtual_clock"));
    assert!(
        r.envelope
            .warnings
            .iter()
            .any(|w| w.contains("virtual clock")),
        "{:?}",
        r.envelope.warnings
    );
}

#[test]
fn below_the_server_count_latency_is_the_service_time() {
    let dir = tempfile::tempdir().unwrap();
    let p = plan(
        &dir,
        &closed(3),
        "servers=4,service=250us,clock=virtual",
        Duration::from_secs(2),
    );
    let r = run(&p);
    let t = &r.summary.total;
    // 3 in flight, each 250 µs: 12 000 IOPS.
    assert_eq!(t.ios, 24_000);
    assert_eq!(t.iops, 12_000.0);
    assert_eq!(t.latency_ns, all_at(250_000, 24_000));
    assert_eq!(t.outstanding_mean, 3.0);
    assert_eq!(r.intervals.len(), 2);
}

fn stats_eq(a: &DirStats, b: &DirStats) {
    assert_eq!(a.ios, b.ios);
    assert_eq!(a.bytes, b.bytes);
    assert_eq!(a.latency_ns, b.latency_ns);
}

#[test]
fn exponential_service_is_repeatable_and_keeps_littles_law() {
    let dir = tempfile::tempdir().unwrap();
    let p = plan(
        &dir,
        &closed(16),
        "servers=4,service=1ms,dist=exp,clock=virtual",
        Duration::from_secs(10),
    );
    let a = run(&p);
    let b = run(&p);
    // The same seed on the virtual clock: the same run, I/O for I/O.
    stats_eq(&a.summary.total, &b.summary.total);
    let t = &a.summary.total;
    // 4 servers always busy: 4000 IOPS, within the noise of 40 000 exponential draws.
    assert!((t.iops / 4000.0 - 1.0).abs() < 0.02, "{}", t.iops);
    // Little's law: 16 outstanding = IOPS × mean latency, up to the I/Os that straddle the
    // edges of the measured 10 s (16 × 4 ms / 10 s < 1 %).
    let mean = t.latency_ns.mean.unwrap() / 1e9;
    let little = t.iops * mean;
    // The same product, up to the last bit of its rounding (the order of the multiplications).
    assert!(
        (t.outstanding_mean - little).abs() <= 1e-12 * little,
        "{} vs {little}",
        t.outstanding_mean
    );
    assert!((little / 16.0 - 1.0).abs() < 0.01, "{little}");
    // FIFO behind 4 servers at 16 deep: 4 ms mean.
    assert!((mean / 0.004 - 1.0).abs() < 0.02, "{mean}");
}

#[test]
fn an_open_loop_at_half_capacity_waits_for_nothing_but_service() {
    let dir = tempfile::tempdir().unwrap();
    let w =
        "name = \"open\"\n[[stream]]\nbs = \"4k\"\nread_pct = 100\nrate = 2000\noutstanding = 16\n";
    let p = plan(
        &dir,
        w,
        "servers=4,service=1ms,clock=virtual",
        Duration::from_secs(1),
    );
    let r = run(&p);
    let t = &r.summary.total;
    assert_eq!(t.ios, 2000);
    assert_eq!(t.iops, 2000.0);
    assert_eq!(r.summary.offered_iops, Some(2000.0));
    assert_eq!(r.summary.backlog_max, Some(0));
    // Response time (from arrival) equals service time: no queueing at half the capacity.
    assert_eq!(t.latency_ns, all_at(MS, 2000));
    assert_eq!(t.service_latency_ns, Some(all_at(MS, 2000)));
    // And oio was never late.
    assert_eq!(t.lag_ns, Some(all_at(0, 2000)));
    // Little's law: 2000/s × 1 ms = 2 in flight on average.
    assert_eq!(t.outstanding_mean, 2.0);
}

#[test]
fn an_open_loop_over_capacity_queues_as_the_model_says() {
    let dir = tempfile::tempdir().unwrap();
    // One server of 1 ms offered 1500/s: it serves 1000/s, the backlog grows by 500/s.
    let w =
        "name = \"open\"\n[[stream]]\nbs = \"4k\"\nread_pct = 100\nrate = 1500\noutstanding = 1\n";
    let p = plan(
        &dir,
        w,
        "servers=1,service=1ms,clock=virtual",
        Duration::from_secs(1),
    );
    let r = run(&p);
    let t = &r.summary.total;
    assert_eq!(t.ios, 1000);
    assert_eq!(t.service_latency_ns, Some(all_at(MS, 1000)));
    // Every I/O went the instant its slot came free: the wait in the backlog is the
    // device's, and none of it is counted as oio's lag.
    assert_eq!(t.lag_ns, Some(all_at(0, 1000)));
    assert_eq!(r.summary.lag_warning(), None);
    assert!(r.envelope.warnings.iter().all(|w| !w.contains("lag")));
    // Response times grow: the last I/Os waited about a third of the elapsed 1.1 s.
    let max = t.latency_ns.max.unwrap();
    assert!(max > 300 * MS && max < 400 * MS, "{max}");
    assert!(r.summary.backlog_max.unwrap() > 400);
}

#[test]
fn on_the_virtual_clock_the_generator_is_never_late() {
    let dir = tempfile::tempdir().unwrap();
    // Poisson at 4500/s: about 40 of the 9000 gaps in 2 s are under 1 µs (a wait clamped to
    // 1 µs used to overshoot them). Two workers share the rate and the clock; 8 servers of
    // 1 ms at 56 % load, 64 slots each, so no arrival waits for a slot.
    let w = "name = \"open\"\n[[stream]]\nbs = \"4k\"\nread_pct = 70\noutstanding = 64\nworkers = 2\n[stream.rate]\niops = 4500\narrival = \"poisson\"\n";
    let p = plan(
        &dir,
        w,
        "servers=8,service=1ms,dist=exp,clock=virtual",
        Duration::from_secs(2),
    );
    let r = run(&p);
    assert_eq!(r.summary.backlog_max, Some(0));
    for d in [&r.summary.read, &r.summary.write, &r.summary.total] {
        assert!(d.ios > 0);
        // Exactly 0 for every I/O, the histogram holding one sample per I/O.
        assert_eq!(d.lag_ns, Some(all_at(0, d.ios)));
        assert_eq!(d.lag_histogram.as_ref().unwrap().count, d.ios);
        // Lag 0 and no backlog: the response time is the service time, I/O for I/O.
        assert_eq!(Some(d.latency_ns), d.service_latency_ns);
    }
    assert_eq!(r.intervals.len(), 2);
    for iv in &r.intervals {
        assert_eq!(iv.total.lag_ns, Some(all_at(0, iv.total.ios)));
    }
    assert_eq!(r.summary.lag_warning(), None);
    // A closed loop has no lag to report.
    let c = run(&plan(
        &dir,
        &closed(4),
        "servers=4,service=1ms,clock=virtual",
        Duration::from_secs(1),
    ));
    assert_eq!(c.summary.total.lag_ns, None);
    assert!(c.summary.total.lag_histogram.is_none());
}

#[test]
fn a_cancelled_run_on_the_real_clock_stops_at_once_with_a_partial_result() {
    let dir = tempfile::tempdir().unwrap();
    // A simulated hour on the real clock would take an hour; cancelled first, it stops at once.
    let p = plan(
        &dir,
        &closed(4),
        "servers=4,service=1ms",
        Duration::from_secs(3600),
    );
    let cancel = Cancel::new();
    let c2 = cancel.clone();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        c2.cancel();
    });
    let t0 = Instant::now();
    let r = oio_engine::run(&p, &mut Quiet, &cancel).unwrap();
    stopper.join().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(10));
    assert_eq!(r.envelope.stop_reason, oio_core::StopReason::Interrupted);
    assert!(r.envelope.partial);
}

#[test]
fn several_workers_share_one_virtual_clock() {
    let dir = tempfile::tempdir().unwrap();
    // Two streams (two threads) of 2 outstanding on 4 servers: nobody queues.
    let w = "name = \"two\"\n[[stream]]\nname = \"a\"\nbs = \"4k\"\nread_pct = 100\noutstanding = 2\n[[stream]]\nname = \"b\"\nbs = \"4k\"\nread_pct = 100\noutstanding = 2\n";
    let p = plan(
        &dir,
        w,
        "servers=4,service=1ms,clock=virtual",
        Duration::from_secs(1),
    );
    let r = run(&p);
    let t = &r.summary.total;
    assert_eq!(t.ios, 4000);
    assert_eq!(t.latency_ns, all_at(MS, 4000));
    for s in &r.streams {
        assert_eq!(s.summary.total.ios, 2000, "{}", s.name);
    }
}

#[test]
fn a_cancelled_run_on_the_virtual_clock_stops_too() {
    let dir = tempfile::tempdir().unwrap();
    // A simulated hour of 1 µs I/Os is billions of events: far more CPU than the test waits.
    let mut p = plan(
        &dir,
        &closed(1),
        "servers=1,service=1us,clock=virtual",
        Duration::from_secs(3600),
    );
    p.ramp = Duration::ZERO;
    let cancel = Cancel::new();
    let c2 = cancel.clone();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        c2.cancel();
    });
    let r = oio_engine::run(&p, &mut Quiet, &cancel).unwrap();
    stopper.join().unwrap();
    assert_eq!(r.envelope.stop_reason, oio_core::StopReason::Interrupted);
    // What was measured before the stop is still exact.
    let t = &r.summary.total;
    assert!(t.ios > 0);
    assert_eq!(t.latency_ns, all_at(1_000, t.ios));
}
