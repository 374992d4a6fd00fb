//! `oio record`, `characterize`, `export` and `import` end to end, against the real tools:
//! sysstat's iostat and fio (installed by scripts/test), on a loop device so that no other I/O
//! of the machine disturbs the comparison.

use crate::common::{have, missing, oio, scratch, sparse_image, LoopDevice};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../telemetry/tests/fixtures")
        .join(name)
}

fn ok_json(args: &[&str], dir: &Path) -> Value {
    let out = oio().current_dir(dir).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "oio {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn f(v: &Value, p: &str) -> f64 {
    v.pointer(p)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("no number at {p} in {v}"))
}

fn within(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

/// Sums of one device's intervals: (reads, writes, read bytes, write bytes, queue × s, s).
fn totals(obs: &oio_core::observation::Observation, dev: &str) -> [f64; 6] {
    let d = obs
        .device(dev)
        .unwrap_or_else(|| panic!("no {dev} in {:?}", obs.devices));
    let mut t = [0.0; 6];
    for i in &d.intervals {
        let s = i.duration_s;
        t[0] += i.read.iops.unwrap_or(0.0) * s;
        t[1] += i.write.iops.unwrap_or(0.0) * s;
        t[2] += i.read.bytes_per_sec.unwrap_or(0.0) * s;
        t[3] += i.write.bytes_per_sec.unwrap_or(0.0) * s;
        t[4] += i.queue_mean.unwrap_or(0.0) * s;
        t[5] += s;
    }
    t
}

/// `oio record` and `iostat -x` watch the same loop device while fio runs a known mix:
/// the two agree with each other, and characterizing either gives fio's read share and sizes.
#[test]
fn record_matches_iostat_and_fio() {
    if !(have("fio") && have("iostat")) {
        missing("needs fio and iostat (scripts/test installs them)");
        return;
    }
    let dir = scratch();
    let Some(lo) = LoopDevice::attach(&sparse_image(&dir.path().join("rec.img"), 256 << 20)) else {
        return;
    };
    let fio_json = dir.path().join("fio.json");
    // fio first; the recorders start once it runs steadily and stop before it ends.
    let mut fio = Command::new("fio")
        .args([
            "--name=mix",
            &format!("--filename={}", lo.dev.display()),
            "--rw=randrw",
            "--rwmixread=70",
            "--bssplit=4k/50:64k/50,16k/100",
            "--norandommap=1",
            "--direct=1",
            "--ioengine=libaio",
            "--iodepth=8",
            "--time_based",
            "--runtime=9",
            "--output-format=json",
        ])
        .arg(format!("--output={}", fio_json.display()))
        .stdout(Stdio::null())
        .spawn()
        .expect("fio starts");
    std::thread::sleep(Duration::from_millis(1200));
    let iostat_txt = dir.path().join("iostat.txt");
    let iostat = Command::new("iostat")
        .args(["-x", "-t", "-y", "1", "6", lo.name()])
        .env("S_TIME_FORMAT", "ISO")
        .stdout(std::fs::File::create(&iostat_txt).unwrap())
        .spawn()
        .expect("iostat starts");
    let rec_json = dir.path().join("record.json");
    let rec = oio()
        .current_dir(dir.path())
        .args([
            "record",
            lo.name(),
            "--interval",
            "1s",
            "--duration",
            "6s",
            "-q",
            "-o",
        ])
        .arg(&rec_json)
        .output()
        .unwrap();
    assert!(
        rec.status.success(),
        "{}",
        String::from_utf8_lossy(&rec.stderr)
    );
    assert!(iostat.wait_with_output().unwrap().status.success());
    assert!(fio.wait().unwrap().success());

    let rec_obs = oio_telemetry::parse_file(&rec_json, &Default::default()).unwrap();
    let io_obs = oio_telemetry::parse_file(
        &iostat_txt,
        &oio_telemetry::ParseOptions {
            keep_first_iostat_report: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(rec_obs.envelope.schema, "oio.observation");
    let a = totals(&rec_obs, lo.name());
    let b = totals(&io_obs, lo.name());
    eprintln!("oio record: {a:?}\niostat -x:  {b:?}");
    assert!(a[5] >= 5.5 && b[5] >= 5.5, "both cover ~6 s: {a:?} {b:?}");
    // Same device, same 6 s, sampled a few ms apart: totals agree within a few percent.
    for k in [0, 1, 2, 3] {
        assert!(
            within(a[k], b[k], 0.06),
            "field {k}: record {} vs iostat {}",
            a[k],
            b[k]
        );
    }
    let (qa, qb) = (a[4] / a[5], b[4] / b[5]);
    assert!(within(qa, qb, 0.15), "aqu-sz record {qa} vs iostat {qb}");

    // Characterize both: they agree with each other and with fio's own report.
    let fio_v: Value = serde_json::from_str(&std::fs::read_to_string(&fio_json).unwrap()).unwrap();
    let job = &fio_v["jobs"][0];
    let fio_read_pct = f(job, "/read/total_ios") * 100.0
        / (f(job, "/read/total_ios") + f(job, "/write/total_ios"));
    let fio_rsize = f(job, "/read/io_bytes") / f(job, "/read/total_ios");
    let fio_wsize = f(job, "/write/io_bytes") / f(job, "/write/total_ios");
    for (src, extra) in [(&rec_json, vec![]), (&iostat_txt, vec!["--keep-first"])] {
        let mut args = vec![
            "characterize",
            src.to_str().unwrap(),
            "--device",
            lo.name(),
            "--busy-queue",
            "0",
            "--json",
        ];
        args.extend(extra);
        let c = ok_json(&args, dir.path());
        eprintln!(
            "{}: read_pct {} read {} write {} (fio: {fio_read_pct:.1} {fio_rsize:.0} {fio_wsize:.0})",
            src.display(),
            f(&c, "/read_pct"),
            f(&c, "/read/mean_bytes"),
            f(&c, "/write/mean_bytes")
        );
        assert!((f(&c, "/read_pct") - fio_read_pct).abs() <= 2.0, "{c}");
        assert!(within(f(&c, "/read/mean_bytes"), fio_rsize, 0.10));
        assert!(within(f(&c, "/write/mean_bytes"), fio_wsize, 0.10));
        assert!(
            f(&c, "/outstanding/mean") > 1.0 && f(&c, "/outstanding/mean") <= 8.5,
            "{c}"
        );
        assert_eq!(c["method"], "interval_means");
    }
}

/// A workload exported to fio runs in fio, and fio measures the read share and sizes asked for.
#[test]
fn fio_export_runs_in_fio_with_the_workload_mix() {
    if !have("fio") {
        missing("needs fio (scripts/test installs it)");
        return;
    }
    let dir = scratch();
    let wl = dir.path().join("mix.toml");
    std::fs::write(
        &wl,
        "name = \"tempdb-like\"\n[[stream]]\nread_pct = 40\nread_bs = \"64k:68,8k:32\"\nwrite_bs = \"64k:83,4k:17\"\noutstanding = 16\nworkers = 2\n",
    )
    .unwrap();
    let job = dir.path().join("mix.fio");
    let out = oio()
        .current_dir(dir.path())
        .args([
            "export", "mix.toml", "--to", "fio", "--target", "data.bin", "--size", "64m", "--time",
            "3s", "-o", "mix.fio",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&job).unwrap();
    assert!(text.contains("bssplit=64k/68:8k/32,64k/83:4k/17"), "{text}");
    let run = Command::new("fio")
        .current_dir(dir.path())
        .args(["mix.fio", "--output-format=json", "--output=fio.json"])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "fio failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    // fio's result, read through `oio import`.
    let r = ok_json(&["import", "fio.json", "--json"], dir.path());
    let reads = f(&r, "/summary/read/ios");
    let writes = f(&r, "/summary/write/ios");
    let read_pct = reads * 100.0 / (reads + writes);
    let rsize = f(&r, "/summary/read/mean_io_bytes");
    let wsize = f(&r, "/summary/write/mean_io_bytes");
    let want_r = 0.68 * 65536.0 + 0.32 * 8192.0;
    let want_w = 0.83 * 65536.0 + 0.17 * 4096.0;
    eprintln!("fio measured: {reads} reads, {writes} writes, read {read_pct:.2} %, sizes {rsize:.0} / {wsize:.0} (want 40 %, {want_r:.0} / {want_w:.0})");
    assert!(reads + writes > 500.0, "too few I/Os to judge");
    assert!((read_pct - 40.0).abs() <= 2.0, "read % {read_pct}");
    assert!(within(rsize, want_r, 0.10), "read size {rsize}");
    assert!(within(wsize, want_w, 0.10), "write size {wsize}");
    // The two fio jobs (numjobs=2) carry the configured outstanding I/O.
    assert_eq!(r["workload"]["stream"][0]["outstanding"], 16);
}

#[test]
fn characterize_writes_a_workload_oio_accepts() {
    let dir = scratch();
    let out = oio()
        .current_dir(dir.path())
        .args(["characterize"])
        .arg(fixture("iostat_10_x_t_ampm_old_header.txt"))
        .args(["--device", "sda", "--busy-queue", "0.5", "-o", "w.toml"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("assumptions:") && stdout.contains("interval means"),
        "{stdout}"
    );
    let w = oio_core::workload::Workload::from_file(&dir.path().join("w.toml")).unwrap();
    // 100 reads/s of 8k and 50 writes/s of 64k (queue 2.5), then 200 reads/s of 8k (queue 1).
    let s = &w.streams[0];
    assert_eq!(s.read_mix().unwrap().to_string(), "8k");
    assert_eq!(s.write_mix().unwrap().to_string(), "64k");
    assert!((s.read_pct.0 - 85.7).abs() < 0.1, "{}", s.read_pct);
    assert_eq!(s.outstanding, Some(2));
    let c = ok_json(
        &[
            "characterize",
            fixture("iostat_10_x_t_ampm_old_header.txt")
                .to_str()
                .unwrap(),
            "--device",
            "sda",
            "--json",
        ],
        dir.path(),
    );
    assert_eq!(c["schema"], "oio.characterization");
    assert_eq!(
        f(&c, "/intervals_used"),
        1.0,
        "busy filter (queue > 2) keeps one interval"
    );
    assert_eq!(f(&c, "/outstanding/mean"), 2.5);
    assert_eq!(f(&c, "/read/sizes/0/bytes"), 8192.0);
    assert_eq!(f(&c, "/read/sizes/0/pct"), 100.0);
    assert_eq!(f(&c, "/read/iops/mean"), 100.0);
    assert_eq!(f(&c, "/write/mean_bytes"), 65536.0);
}

#[test]
fn characterize_errors_name_file_and_line_and_exit_2() {
    let out = oio()
        .arg("characterize")
        .arg(fixture("perfmon_bad_number.csv"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("perfmon_bad_number.csv:4:") && err.contains("expected a number"),
        "{err}"
    );
    let out = oio()
        .arg("characterize")
        .arg(fixture("perfmon_relog_bom_crlf_zone_parens_gaps.csv"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--device"));
}

#[test]
fn export_to_diskspd_and_vdbench_and_profiles() {
    let dir = scratch();
    for (tool, want) in [
        (
            "diskspd",
            "diskspd.exe -c1G -d60 -W0 -r -b64K -w98 -t1 -o600",
        ),
        ("vdbench", "xfersize=(65536,68,8192,32)"),
    ] {
        let out = oio()
            .current_dir(dir.path())
            .args(["export", "tempdb", "--to", tool])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(want), "{tool}: {text}");
    }
    let out = oio()
        .current_dir(dir.path())
        .args(["export", "nope.toml", "--to", "fio"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn import_writes_an_oio_result_beside_the_input() {
    let dir = scratch();
    let src = dir.path().join("run.json");
    std::fs::copy(fixture("fio_3_33_jsonplus_randrw70_bssplit.json"), &src).unwrap();
    let out = oio()
        .current_dir(dir.path())
        .args(["import", "run.json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("run.oio.json")).unwrap())
            .unwrap();
    assert_eq!(r["schema"], "oio.run");
    assert_eq!(r["schema_version"], 1);
    assert!(f(&r, "/summary/read/latency_ns/p99") > 0.0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("imported from fio-3.33"));
}

#[test]
fn record_without_a_device_lists_them() {
    let out = oio()
        .args(["record", "no-such-disk", "--duration", "1s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no device 'no-such-disk'"), "{err}");
}

/// `-q` before or after the command: no live table and no summary, only the path of the
/// saved recording on stdout, and the file is written.
#[test]
fn record_quiet_prints_only_where_the_recording_went() {
    let dir = scratch();
    let disk = std::fs::read_to_string("/proc/diskstats")
        .ok()
        .and_then(|t| {
            t.lines()
                .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
                .find(|n| Path::new("/sys/block").join(n).exists())
        });
    let Some(disk) = disk else {
        return missing("a whole disk in /proc/diskstats");
    };
    for (i, quiet_first) in [true, false].into_iter().enumerate() {
        let file = format!("rec-{i}.json");
        let mut args = vec!["record", &disk, "--interval", "200ms", "--duration", "1s"];
        args.extend(["-o", &file]);
        if quiet_first {
            args.insert(0, "-q");
        } else {
            args.push("-q");
        }
        let out = oio().current_dir(dir.path()).args(&args).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{file}\n"));
        assert!(
            out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let obs: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join(&file)).unwrap())
                .unwrap();
        assert_eq!(obs["devices"][0]["name"], disk.as_str());
        assert!(!obs["devices"][0]["intervals"]
            .as_array()
            .unwrap()
            .is_empty());
    }
}
