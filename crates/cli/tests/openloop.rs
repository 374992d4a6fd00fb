use crate::common::{
    is_root, missing, num, oio, run_json, scratch, sparse_image, uses_io_uring, LoopDevice,
};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

#[test]
fn an_offered_rate_is_achieved_within_one_percent_on_a_real_file() {
    // Alone among the io_uring tests, so other tests' I/O does not stall the disk under it.
    let _uring = crate::common::IO_URING
        .write()
        .unwrap_or_else(|e| e.into_inner());
    let d = scratch();
    let v = run_json(
        d.path(),
        &[
            "run", "--rw", "randread", "--bs", "4k", "--rate", "10000", "--time", "3s", "--ramp",
            "500ms", "--size", "64M", "--seed", "4", "r.dat",
        ],
    );
    let offered = num(&v, "/summary/offered_iops");
    let achieved = num(&v, "/summary/total/iops");
    assert!((offered / 10_000.0 - 1.0).abs() < 0.01, "offered {offered}");
    assert!(
        (achieved / 10_000.0 - 1.0).abs() < 0.01,
        "achieved {achieved}"
    );
    for iv in v["intervals"].as_array().unwrap() {
        let a = num(iv, "/total/iops");
        assert!((a / 10_000.0 - 1.0).abs() < 0.05, "interval {iv}");
        assert!(iv["offered_iops"].is_number());
    }
    // Both views of latency are there; response time is never below service time.
    let resp = num(&v, "/summary/read/latency_ns/p50");
    let svc = num(&v, "/summary/read/service_latency_ns/p50");
    assert!(svc > 0.0 && resp >= svc, "{resp} {svc}");
}

#[test]
fn a_burst_schedule_is_followed_interval_by_interval() {
    let d = scratch();
    let v = run_json(
        d.path(),
        &[
            "run",
            "--engine",
            "null",
            // The virtual clock: the schedule is the model's exactly, whatever the host's
            // load (on the real clock a busy CI host let 66 I/Os of a burst slip into the
            // next interval).
            "--sim",
            "servers=64,service=100us,clock=virtual",
            "--rw",
            "randread",
            "--rate",
            "1000",
            "--burst",
            "5000,1s,2s",
            "--time",
            "6s",
            "--ramp",
            "0",
            "--size",
            "4M",
            "b.dat",
        ],
    );
    let got: Vec<f64> = v["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| num(i, "/total/iops"))
        .collect();
    let want = [5000.0, 1000.0, 1000.0, 5000.0, 1000.0, 1000.0];
    assert_eq!(got.len(), want.len(), "{got:?}");
    // Exact but for an arrival on an interval's edge (the first burst's last falls at 1 s).
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= 1.0, "{got:?}");
    }
}

/// Freezes and thaws a filesystem; thaws on drop.
pub(crate) struct Frozen<'a>(pub(crate) &'a Path);
impl Drop for Frozen<'_> {
    fn drop(&mut self) {
        let _ = Command::new("fsfreeze")
            .arg("-u")
            .arg(self.0)
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// A loop-mounted ext4 filesystem, thawed and unmounted on drop (then the device detaches).
pub(crate) struct Mounted {
    pub(crate) dir: std::path::PathBuf,
    _dev: LoopDevice,
}
impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("fsfreeze")
            .arg("-u")
            .arg(&self.dir)
            .stderr(std::process::Stdio::null())
            .status();
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}

fn mount_ext4(dir: &Path) -> Option<Mounted> {
    mount_ext4_at(dir, &dir.join("mnt"), 128 << 20)
}

/// An ext4 filesystem of `size` bytes in a sparse image under `dir`, mounted at `mnt`.
pub(crate) fn mount_ext4_at(dir: &Path, mnt: &Path, size: u64) -> Option<Mounted> {
    let img = sparse_image(&dir.join("fs.img"), size);
    if !Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .arg(&img)
        .status()
        .ok()?
        .success()
    {
        return None;
    }
    let dev = LoopDevice::attach(&img)?;
    std::fs::create_dir_all(mnt).ok()?;
    if !Command::new("mount")
        .arg(&dev.dev)
        .arg(mnt)
        .status()
        .ok()?
        .success()
    {
        return None;
    }
    Some(Mounted {
        dir: mnt.to_path_buf(),
        _dev: dev,
    })
}

/// Runs `cmd` while freezing `fs` for `stall` after `delay`; returns its stdout.
fn with_stall(mut cmd: Command, fs: &Path, delay: Duration, stall: Duration) -> Vec<u8> {
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(delay);
    {
        assert!(Command::new("fsfreeze")
            .arg("-f")
            .arg(fs)
            .status()
            .unwrap()
            .success());
        let _thaw = Frozen(fs);
        std::thread::sleep(stall);
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn a_stall_shows_in_response_time_but_not_in_service_time() {
    let _uring = uses_io_uring();
    if !is_root() || Command::new("fsfreeze").arg("--version").output().is_err() {
        missing("needs root, loop devices and fsfreeze");
        return;
    }
    let d = scratch();
    let Some(fs) = mount_ext4(d.path()) else {
        missing("could not mount a loop ext4 filesystem");
        return;
    };
    let target = fs.dir.join("t.dat");
    // Create the file first so the stall falls inside the measured run.
    let out = oio()
        .args([
            "run",
            "--rw",
            "randwrite",
            "--time",
            "100ms",
            "--ramp",
            "0",
            "--size",
            "16M",
        ])
        .arg(&target)
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let bin = assert_cmd::cargo::cargo_bin("oio");
    let mut cmd = Command::new(bin);
    cmd.current_dir(d.path())
        .args([
            "run",
            "--rw",
            "randwrite",
            "--bs",
            "4k",
            "--rate",
            "2000",
            "--qd",
            "4",
            "--time",
            "4s",
            "--ramp",
            "0",
            "--json",
        ])
        .arg(&target);
    let stdout = with_stall(
        cmd,
        &fs.dir,
        Duration::from_millis(1500),
        Duration::from_secs(1),
    );
    let v: Value = serde_json::from_slice(&stdout).unwrap();
    let resp_p99 = num(&v, "/summary/write/latency_ns/p99");
    let resp_max = num(&v, "/summary/write/latency_ns/max");
    let svc_p99 = num(&v, "/summary/write/service_latency_ns/p99");
    assert!(
        resp_max > 0.8e9,
        "the 1 s stall is in the response time: max {resp_max}"
    );
    assert!(
        resp_p99 > 0.5e9,
        "a quarter of the arrivals waited: p99 {resp_p99}"
    );
    assert!(
        svc_p99 < resp_p99 / 5.0,
        "service p99 {svc_p99} vs response p99 {resp_p99}"
    );
    assert!(num(&v, "/summary/backlog_max") > 1000.0);

    // fio on the same kind of run reports latency from submission, so the stall mostly vanishes.
    if Command::new("fio").arg("--version").output().is_ok() {
        let mut fio = Command::new("fio");
        fio.args([
            "--name=stall",
            "--rw=randwrite",
            "--bs=4k",
            "--rate_iops=2000",
            "--iodepth=4",
            "--ioengine=io_uring",
            "--direct=1",
            "--time_based",
            "--runtime=4",
            "--size=16M",
            "--lat_percentiles=1",
            "--output-format=json",
        ])
        .arg(format!("--filename={}", target.display()));
        let out = with_stall(
            fio,
            &fs.dir,
            Duration::from_millis(1500),
            Duration::from_secs(1),
        );
        let j: Value = serde_json::from_slice(&out).unwrap();
        let fio_p99 = num(&j["jobs"][0]["write"]["lat_ns"]["percentile"], "/99.000000");
        eprintln!("stall of 1 s at 2000 IOPS offered: oio response p99 {:.0} ms, oio service p99 {:.1} ms, fio lat p99 {:.1} ms", resp_p99 / 1e6, svc_p99 / 1e6, fio_p99 / 1e6);
        assert!(
            fio_p99 < resp_p99 / 5.0,
            "fio p99 {fio_p99} hides the stall that oio's response p99 {resp_p99} shows"
        );
    }
}

#[test]
fn an_open_loop_reports_oios_own_lag_beside_response_and_service() {
    let d = scratch();
    let args = [
        "run",
        "--engine",
        "null",
        "--rw",
        "randread",
        "--rate",
        "2000",
        "--arrival",
        "poisson",
        "--time",
        "2s",
        "--ramp",
        "0",
        "--size",
        "1M",
        "l.dat",
    ];
    let v = run_json(d.path(), &args);
    let ios = num(&v, "/summary/total/ios");
    assert!(ios > 0.0);
    // Its percentiles and its histogram, one sample per measured I/O.
    for p in ["p50", "p90", "p99", "p999", "max"] {
        let lag = num(&v, &format!("/summary/total/lag_ns/{p}"));
        let resp = num(&v, &format!("/summary/total/latency_ns/{p}"));
        // The lag is part of each I/O's response time, so never above it at any quantile.
        assert!(lag <= resp, "{p}: lag {lag} > response {resp}");
    }
    assert_eq!(num(&v, "/summary/total/lag_histogram/count"), ios);
    assert_eq!(num(&v, "/summary/read/lag_histogram/count"), ios);
    // Per interval too (percentiles; histograms stay in the summary).
    for iv in v["intervals"].as_array().unwrap() {
        assert!(iv["total"]["lag_ns"]["p99"].is_number(), "{iv}");
        assert!(iv["total"]["lag_histogram"].is_null(), "{iv}");
    }
    // The table has a ·lag row under the read row and says what it is.
    let out = oio().current_dir(d.path()).args(args).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().any(|l| l.trim_start().starts_with("read·lag")),
        "{text}"
    );
    assert!(text.contains("oio's lag"), "{text}");

    // On the virtual clock oio is never late: exactly 0, and nothing to warn about.
    let v = run_json(
        d.path(),
        &[
            "run",
            "--engine",
            "null",
            "--sim",
            "servers=8,service=1ms,clock=virtual",
            "--rw",
            "randread",
            "--rate",
            "4500",
            "--arrival",
            "poisson",
            "--time",
            "2s",
            "--size",
            "1M",
            "l.dat",
        ],
    );
    assert_eq!(num(&v, "/summary/total/lag_ns/p99"), 0.0);
    assert_eq!(num(&v, "/summary/total/lag_ns/max"), 0.0);
    let warnings = v["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .all(|w| !w.as_str().unwrap().contains("lag")),
        "{warnings:?}"
    );
    // A closed loop has no lag.
    let v = run_json(
        d.path(),
        &[
            "run", "--engine", "null", "--rw", "randread", "--time", "200ms", "--ramp", "0",
            "--size", "1M", "l.dat",
        ],
    );
    assert!(v["summary"]["total"]["lag_ns"].is_null());
}

/// An open loop whose arrivals come closer than its spin threshold (30 µs) only polls the ring
/// between them: on io_uring with DEFER_TASKRUN the completions were never run, every slot
/// stayed busy and the run measured 0 IOPS at 50,000 offered on a loop device that serves 150k.
#[test]
fn a_fast_open_loop_on_io_uring_reaps_its_completions() {
    if !crate::common::can_use_loop_devices("a fast open loop on a loop device") {
        return;
    }
    let _uring = uses_io_uring();
    let mem = tempfile::tempdir_in("/dev/shm").unwrap();
    let img = sparse_image(&mem.path().join("img"), 64 << 20);
    let Some(lo) = LoopDevice::attach(&img) else {
        return;
    };
    let dir = scratch();
    let dev = lo.dev.display().to_string();
    let run = |extra: &[&str]| -> Value {
        let mut args = vec![
            "run",
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--time",
            "1s",
            "--ramp",
            "0s",
            &dev,
            "--destroy-data",
        ];
        args.extend_from_slice(extra);
        run_json(dir.path(), &args)
    };
    // What the device serves closed loop here, just before and just after the open run (a
    // busy host serves less, and its load changes): the open loop must reach half of the
    // lesser. A busy host can starve the generator in one try; the stall (0 IOPS, every slot
    // busy) fails every try.
    let rate: f64 = 40_000.0;
    let mut tries = Vec::new();
    for _ in 0..3 {
        let before = num(&run(&["--qd", "8"]), "/summary/total/iops");
        let achieved = num(
            &run(&["--qd", "32", "--rate", "40000"]),
            "/summary/total/iops",
        );
        let after = num(&run(&["--qd", "8"]), "/summary/total/iops");
        let closed = before.min(after);
        tries.push(format!(
            "offered {rate}, achieved {achieved} IOPS; closed loop {before} before, {after} after"
        ));
        if achieved >= 0.5 * rate.min(closed) {
            return;
        }
    }
    panic!("{}", tries.join("\n"));
}
