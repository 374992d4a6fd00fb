//! The host's noise (issue 21): busy neighbours make a real-clock run noisy, in its result, its
//! warnings and its terminal summary; a run on the virtual clock never is.
//!
//! Nothing here is derived from timing but that the neighbours ran: their CPU time grew.

use crate::common::{oio, run_json, scratch};
use oio_core::cpu::{HostCpuTimes, ProcessCpu};
use oio_core::result::others_cores_limit;
use serde_json::Value;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Busy loops (`yes > /dev/null`), killed and reaped when dropped, however the test ends.
struct BusyLoops(Vec<Child>);

impl BusyLoops {
    fn start(n: usize) -> BusyLoops {
        let loops = (0..n)
            .map(|_| {
                Command::new("yes")
                    .stdout(Stdio::null())
                    .spawn()
                    .expect("yes runs")
            })
            .collect();
        BusyLoops(loops)
    }

    /// Their CPU time, all together.
    fn cpu(&self) -> Duration {
        self.0
            .iter()
            .map(|c| ProcessCpu::of_pid(c.id()).expect("the loop lives").total())
            .sum()
    }

    /// Waits until every loop has been charged CPU time (they are running, not starting).
    fn wait_running(&self) {
        let t = Instant::now();
        while !self
            .0
            .iter()
            .all(|c| ProcessCpu::of_pid(c.id()).is_some_and(|p| p.total() > Duration::ZERO))
        {
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "the busy loops got no CPU in 60 s"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for BusyLoops {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn a_run_beside_busy_processes_is_noisy_and_a_virtual_clock_run_is_not() {
    // Enough loops to pass the flag on this host: 2 on a 2-CPU host (half a core is the
    // limit there), a quarter of the CPUs and one more on a bigger one.
    let cpus = HostCpuTimes::now().expect("/proc/stat").cpus;
    let n = (others_cores_limit(cpus).floor() as usize + 1).max(2);
    let loops = BusyLoops::start(n);
    loops.wait_running();
    let d = scratch();
    let before = loops.cpu();
    // The simulated device on the real clock: oio itself barely uses the CPU.
    let out = oio()
        .current_dir(d.path())
        .args([
            "run",
            "--engine",
            "null",
            "--sim",
            "servers=1,service=1ms",
            "--ramp",
            "0",
            "--time",
            "2s",
            "--interval",
            "250ms",
            "--size",
            "1M",
            "--out",
            "res",
            "t.dat",
        ])
        .output()
        .unwrap();
    let ran = loops.cpu() - before;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        ran > Duration::ZERO,
        "the busy loops did not run during the run"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let path = text
        .lines()
        .find_map(|l| l.strip_prefix("result: "))
        .unwrap_or_else(|| panic!("no result path: {text}"));
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join(path.trim())).unwrap())
            .unwrap();
    crate::run::assert_valid(&r);
    let noise = &r["host_noise"];
    assert_eq!(noise["noisy"], true, "{noise:#}");
    assert_eq!(noise["host_cpus"], cpus);
    assert_eq!(noise["others_cores_limit"], others_cores_limit(cpus));
    // Every interval of 250 ms (25 ticks at 100 Hz) has its figure.
    let intervals = r["intervals"].as_array().unwrap();
    let measured: Vec<&Value> = intervals.iter().map(|i| &i["host_cpu"]).collect();
    assert!(measured.iter().all(|h| h.is_object()), "{measured:?}");
    assert_eq!(noise["intervals"], intervals.len());
    let flagged = measured.iter().filter(|h| h["flagged"] == true).count();
    assert_eq!(noise["flagged"], flagged);
    assert!(flagged * 10 >= intervals.len(), "{noise:#}");
    for h in &measured {
        let sum: f64 = [
            "user_pct",
            "system_pct",
            "irq_pct",
            "iowait_pct",
            "steal_pct",
            "idle_pct",
        ]
        .iter()
        .map(|k| h[*k].as_f64().unwrap())
        .sum();
        assert!((sum - 100.0).abs() < 1e-6, "{h}");
    }
    // The sentence: in the result, in its warnings and on the terminal.
    let reason = noise["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("host: other processes used ")
            && reason.ends_with(&format!(
                "enough to matter in {flagged} of {} intervals: the numbers may carry a neighbour's noise",
                intervals.len()
            )),
        "{reason}"
    );
    assert!(r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w == reason));
    assert!(text.contains(reason), "{text}");

    // The virtual clock, with the same neighbours: recorded, never noisy, and why.
    let v = run_json(
        d.path(),
        &[
            "run",
            "--engine",
            "null",
            "--sim",
            "servers=8,service=1ms,clock=virtual",
            "--time",
            "2s",
            "--interval",
            "250ms",
            "--size",
            "1M",
            "t.dat",
        ],
    );
    assert!(loops.cpu() > before + ran, "the busy loops stopped");
    let noise = &v["host_noise"];
    assert_eq!(noise["noisy"], false, "{noise:#}");
    assert!(
        noise["reason"]
            .as_str()
            .unwrap()
            .starts_with("time was simulated (virtual clock)"),
        "{noise:#}"
    );
    // An interval takes microseconds of real time: no per-interval figure.
    assert_eq!(noise["intervals"], 0);
    assert!(v["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i.get("host_cpu").is_none()));
    assert!(!v["warnings"].to_string().contains("host: other processes"));
}
