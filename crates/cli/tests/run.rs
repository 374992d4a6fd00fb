use crate::common::{missing, num, oio, run_json, scratch, uses_io_uring};
use serde_json::Value;
use std::time::Duration;

fn schema_validator() -> jsonschema::Validator {
    let text = include_str!("../../../schema/run.schema.json");
    let schema: Value = serde_json::from_str(text).unwrap();
    crate::schemas::validator_for(&schema).expect("the schema compiles")
}

pub(crate) fn assert_valid(v: &Value) {
    let validator = schema_validator();
    let errors: Vec<String> = validator
        .iter_errors(v)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "result does not match schema/run.schema.json: {errors:#?}"
    );
}

#[test]
fn null_engine_honours_read_share_and_size_mix() {
    let d = scratch();
    let v = run_json(
        d.path(),
        &[
            "run",
            "--engine",
            "null",
            "--rw",
            "randrw",
            "--read-pct",
            "70",
            "--read-bs",
            "64k:68,8k:32",
            "--write-bs",
            "64k:83,512:17",
            "--qd",
            "16",
            "--ios",
            "200000",
            "--time",
            "60s",
            "--ramp",
            "0",
            "--seed",
            "3",
            "--size",
            "8M",
            "t.dat",
        ],
    );
    let reads = num(&v, "/summary/read/ios");
    let writes = num(&v, "/summary/write/ios");
    assert_eq!(reads + writes, 200_000.0, "every I/O counted once");
    let read_share = reads / (reads + writes);
    assert!((read_share - 0.70).abs() < 0.005, "read share {read_share}");
    // Mean sizes pin down the mix: 0.68·64k + 0.32·8k and 0.83·64k + 0.17·512.
    let want_r = 0.68 * 65536.0 + 0.32 * 8192.0;
    let want_w = 0.83 * 65536.0 + 0.17 * 512.0;
    let mean_r = num(&v, "/summary/read/mean_io_bytes");
    let mean_w = num(&v, "/summary/write/mean_io_bytes");
    assert!(
        (mean_r / want_r - 1.0).abs() < 0.01,
        "read mean {mean_r} vs {want_r}"
    );
    assert!(
        (mean_w / want_w - 1.0).abs() < 0.01,
        "write mean {mean_w} vs {want_w}"
    );
    assert_eq!(v["engine"]["name"], "null");
    assert_valid(&v);
}

#[test]
fn every_engine_does_the_same_ios_for_the_same_seed() {
    let _uring = uses_io_uring();
    let d = scratch();
    let mut seen = Vec::new();
    for engine in ["null", "sync", "io_uring"] {
        let v = run_json(
            d.path(),
            &[
                "run",
                "--engine",
                engine,
                "--rw",
                "randrw",
                "--bs",
                "4k:50,16k:50",
                "--qd",
                "8",
                "--ios",
                "3000",
                "--time",
                "60s",
                "--ramp",
                "0",
                "--seed",
                "11",
                "--size",
                "16M",
                "--buffered",
                "same.dat",
            ],
        );
        assert_eq!(v["engine"]["name"], engine);
        assert_eq!(num(&v, "/errors/count"), 0.0, "{engine}: {}", v["errors"]);
        seen.push((
            engine,
            num(&v, "/summary/read/ios"),
            num(&v, "/summary/read/bytes"),
            num(&v, "/summary/write/ios"),
            num(&v, "/summary/write/bytes"),
        ));
    }
    let first = seen[0];
    for s in &seen[1..] {
        assert_eq!(
            (s.1, s.2, s.3, s.4),
            (first.1, first.2, first.3, first.4),
            "{} vs {}",
            s.0,
            first.0
        );
    }
    assert_eq!(first.1 + first.3, 3000.0);
}

#[test]
fn io_uring_reports_its_features_and_real_latency() {
    let _uring = uses_io_uring();
    let d = scratch();
    let v = run_json(
        d.path(),
        &[
            "run", "--engine", "io_uring", "--rw", "randread", "--bs", "4k", "--qd", "4", "--time",
            "1s", "--ramp", "0", "--size", "8M", "--seed", "1", "r.dat",
        ],
    );
    let features: Vec<&str> = v["engine"]["features"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        features.iter().any(|f| f.starts_with("sq_entries=")),
        "{features:?}"
    );
    assert!(num(&v, "/summary/read/iops") > 0.0);
    let p50 = num(&v, "/summary/read/latency_ns/p50");
    let p99 = num(&v, "/summary/read/latency_ns/p99");
    let max = num(&v, "/summary/read/latency_ns/max");
    assert!(p50 > 0.0 && p50 <= p99 && p99 <= max);
    // The reads went to the device: O_DIRECT on a file oio created and filled.
    assert_eq!(v["options"]["direct"], true);
    assert_eq!(v["targets"][0]["created_by_oio"], true);
    assert!(v["targets"][0]["filesystem"]["type"].is_string());
}

#[test]
fn intervals_cover_the_measured_time_and_add_up() {
    let d = scratch();
    let v = run_json(
        d.path(),
        &[
            "run", "--engine", "null", "--rw", "randread", "--qd", "4", "--time", "3s", "--ramp",
            "500ms", "--size", "4M", "--seed", "5", "i.dat",
        ],
    );
    let intervals = v["intervals"].as_array().unwrap();
    assert_eq!(intervals.len(), 3, "one interval per second");
    let mut sum = 0.0;
    for (i, iv) in intervals.iter().enumerate() {
        assert!((num(iv, "/t_s") - (i + 1) as f64).abs() < 1e-6);
        assert!((num(iv, "/duration_s") - 1.0).abs() < 1e-6);
        assert!(num(iv, "/total/iops") > 0.0);
        assert!(num(iv, "/total/latency_ns/p99") > 0.0);
        sum += num(iv, "/total/ios");
    }
    assert_eq!(sum, num(&v, "/summary/total/ios"));
    assert!((num(&v, "/duration_s") - 3.0).abs() < 1e-6);
    // The contract paths exist.
    for p in [
        "/summary/total/iops",
        "/summary/read/iops",
        "/summary/write/iops",
        "/summary/read/bytes_per_sec",
        "/summary/write/bytes_per_sec",
        "/summary/total/bytes_per_sec",
        "/summary/total/outstanding_mean",
    ] {
        assert!(v.pointer(p).is_some_and(Value::is_number), "{p}");
    }
    for dir in ["read", "write", "total"] {
        for f in ["mean", "p50", "p90", "p99", "p999", "max"] {
            assert!(
                v.pointer(&format!("/summary/{dir}/latency_ns/{f}"))
                    .is_some(),
                "{dir} {f}"
            );
        }
    }
    // A read-only run has no write latency: null, not zero.
    assert!(v["summary"]["write"]["latency_ns"]["p99"].is_null());
    assert_valid(&v);
}

#[test]
fn the_result_file_is_written_atomically_and_matches_stdout() {
    let d = scratch();
    let v = run_json(
        d.path(),
        &[
            "run", "--engine", "null", "--rw", "randread", "--time", "1s", "--ramp", "0", "--size",
            "4M", "--out", "res", "f.dat",
        ],
    );
    let files: Vec<_> = std::fs::read_dir(d.path().join("res"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(files.len(), 1, "one result, no temporary left: {files:?}");
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("run-") && name.ends_with(".json"),
        "{name}"
    );
    let saved: Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    assert_eq!(saved, v);
    assert_eq!(v["schema"], "oio.run");
    assert_eq!(v["schema_version"], 1);
}

#[test]
fn the_default_run_uses_the_oltp_profile_on_a_file_here() {
    let _uring = uses_io_uring();
    let d = scratch();
    let out = oio()
        .current_dir(d.path())
        .args(["run", "--time", "1s", "--ramp", "0", "--size", "8M"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("oltp-data"), "{text}");
    assert!(text.contains("IOPS") && text.contains("p99"), "{text}");
    assert!(text.contains("Little's law"), "{text}");
    assert!(d.path().join("oio-testfile").exists());
    assert_eq!(
        std::fs::metadata(d.path().join("oio-testfile"))
            .unwrap()
            .len(),
        8 << 20
    );
    // One result (a recording of the device beside it only with --record-device).
    let names: Vec<String> = std::fs::read_dir(d.path().join("oio-results"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

#[test]
fn ctrl_c_stops_cleanly_with_a_valid_partial_result() {
    let d = scratch();
    let bin = assert_cmd::cargo::cargo_bin("oio");
    let child = std::process::Command::new(bin)
        .current_dir(d.path())
        .env("NO_COLOR", "1")
        .args([
            "run", "--engine", "null", "--rw", "randread", "--time", "60s", "--ramp", "0",
            "--size", "4M", "--json", "c.dat",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("a JSON result on stdout");
    assert_eq!(v["partial"], true);
    assert_eq!(v["stop_reason"], "interrupted");
    let secs = num(&v, "/duration_s");
    assert!(secs > 1.0 && secs < 30.0, "{secs}");
    assert!(num(&v, "/summary/total/ios") > 0.0);
    assert_valid(&v);
    assert_eq!(
        std::fs::read_dir(d.path().join("oio-results"))
            .unwrap()
            .count(),
        1
    );
}

#[test]
fn bad_flags_are_refused_with_the_expected_form() {
    let d = scratch();
    let out = oio()
        .current_dir(d.path())
        .args(["run", "--bs", "4q", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("4q") && err.contains("expected"), "{err}");
    let out = oio()
        .current_dir(d.path())
        .args(["run", "--rw", "randread", "--read-pct", "30", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("randrw"));
    assert!(
        !d.path().join("x").exists(),
        "nothing created on a usage error"
    );
    assert!(!d.path().join("oio-results").exists());
}

/// Runs oio with `args` in `dir`, its process refused io_uring as a kernel that disables it
/// does (`io_uring_setup` fails with EPERM), by a seccomp filter on that process alone: the
/// machine's io_uring (`kernel.io_uring_disabled`, other tests, other programs) is left as
/// it is.
fn without_io_uring(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("oio"));
    cmd.current_dir(dir).args(args).env("NO_COLOR", "1").env(
        "XDG_STATE_HOME",
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("oio-state"),
    );
    // Load the syscall number; io_uring_setup (425 on every architecture) gets EPERM, any
    // other is allowed.
    const PROGRAM: [libc::sock_filter; 4] = [
        libc::sock_filter {
            code: 0x20,
            jt: 0,
            jf: 0,
            k: 0,
        },
        libc::sock_filter {
            code: 0x15,
            jt: 0,
            jf: 1,
            k: libc::SYS_io_uring_setup as u32,
        },
        libc::sock_filter {
            code: 0x06,
            jt: 0,
            jf: 0,
            k: 0x0005_0000 | libc::EPERM as u32,
        },
        libc::sock_filter {
            code: 0x06,
            jt: 0,
            jf: 0,
            k: 0x7fff_0000,
        },
    ];
    // SAFETY: between fork and exec the closure only makes two prctl system calls on data
    // that lives in the binary (no allocation, no lock).
    unsafe {
        cmd.pre_exec(|| {
            let prog = libc::sock_fprog {
                len: PROGRAM.len() as u16,
                filter: PROGRAM.as_ptr() as *mut libc::sock_filter,
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &prog as *const libc::sock_fprog,
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
        .output()
        .unwrap()
    }
}

#[test]
fn auto_falls_back_to_sync_when_the_kernel_refuses_io_uring() {
    let d = scratch();
    let out = without_io_uring(
        d.path(),
        &[
            "run", "--rw", "randread", "--qd", "4", "--time", "300ms", "--ramp", "0", "--size",
            "4M", "a.dat", "--json",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["engine"]["name"], "sync");
    let notice = v["engine"]["notice"].as_str().unwrap_or_default();
    assert!(notice.contains("io_uring is unavailable"), "{notice}");
    assert!(num(&v, "/summary/read/ios") > 0.0);
    // Forcing io_uring fails with a message that names it.
    let out = without_io_uring(
        d.path(),
        &[
            "run", "--engine", "io_uring", "--rw", "randread", "--time", "300ms", "--ramp", "0",
            "a.dat",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("io_uring"));
}

/// Issue 10: one submission per I/O is the default with O_DIRECT (it matched fio on a virtio
/// disk where a batch per call did not); `--submit batch` is offered, and the result says
/// which one ran. Issue 27: `--submit auto` (the default) batches buffered I/O served from
/// the page cache, where the CPU is the limit, and says so with its effect on latency.
#[test]
fn the_submission_style_is_chosen_and_recorded() {
    let _uring = uses_io_uring();
    let d = scratch();
    let base = [
        "run", "--engine", "io_uring", "--rw", "randread", "--qd", "8", "--time", "300ms",
        "--ramp", "0", "--size", "4M", "a.dat",
    ];
    let v = run_json(d.path(), &base);
    assert_valid(&v);
    assert_eq!(v["options"]["submit"], "per_io");
    let why = v["options"]["submit_auto"].as_str().unwrap();
    assert!(
        why.starts_with("--submit auto chose per_io: O_DIRECT"),
        "{why}"
    );
    let features = v["engine"]["features"].to_string();
    assert!(features.contains("submit=per_io"), "{features}");
    let mut args = base.to_vec();
    args.extend(["--submit", "batch"]);
    let v = run_json(d.path(), &args);
    assert_eq!(v["options"]["submit"], "batch");
    assert!(
        v["options"].get("submit_auto").is_none(),
        "a mode given is not explained"
    );
    assert!(num(&v, "/summary/read/ios") > 0.0);
    // Buffered: batched unless the file is on tmpfs (whose reads the kernel hands to its
    // worker threads whatever the batching); the reason is in the warnings too.
    let mut args = base.to_vec();
    args.push("--buffered");
    let v = run_json(d.path(), &args);
    assert_valid(&v);
    let shmem = v["targets"][0]["filesystem"]["fs_type"] == "tmpfs";
    let want = if shmem { "per_io" } else { "batch" };
    assert_eq!(v["options"]["submit"], want);
    let why = v["options"]["submit_auto"].as_str().unwrap();
    assert!(
        why.starts_with(&format!("--submit auto chose {want}")),
        "{why}"
    );
    if !shmem {
        assert!(why.contains("latency"), "{why}");
    }
    let warnings = v["warnings"].to_string();
    assert!(warnings.contains("--submit auto chose"), "{warnings}");
}

/// Issue 27: reads served from the page cache never wait for a device; the result says the
/// CPU was the limit, with how busy the workers were (on a CPU, or waiting for one, which a
/// busy host does not change).
#[test]
fn a_run_the_cpu_limits_says_so() {
    let _uring = uses_io_uring();
    let d = scratch();
    let v = run_json(
        d.path(),
        &[
            "run",
            "--engine",
            "io_uring",
            "--rw",
            "randread",
            "--qd",
            "16",
            "--time",
            "1s",
            "--ramp",
            "200ms",
            "--size",
            "8M",
            "--buffered",
            "--submit",
            "batch",
            "a.dat",
        ],
    );
    assert_valid(&v);
    let busy = num(&v, "/cpu/workers_busy");
    assert!((0.0..=1.0).contains(&busy), "{busy}");
    assert_eq!(v["cpu"]["cpu_bound"], true, "{}", v["cpu"]);
    let warnings = v["warnings"].to_string();
    assert!(
        warnings.contains("the CPU, not the device, was the limit"),
        "{warnings}"
    );
    // The null engine has no device: the flag is for device runs only.
    let v = run_json(
        d.path(),
        &[
            "run", "--engine", "null", "--qd", "16", "--time", "200ms", "--ramp", "0", "--size",
            "8M", "a.dat",
        ],
    );
    assert!(v["cpu"].get("cpu_bound").is_none(), "{}", v["cpu"]);
    assert_eq!(v["options"]["submit"], "batch");
}

/// Issue 10: a run on tmpfs says that its numbers describe memory, in the result and in the
/// header, and the header (effective workload) is printed before the ramp, not after the run.
#[test]
fn a_memory_backed_target_is_named_and_the_header_comes_before_the_ramp() {
    let shm = std::path::Path::new("/dev/shm");
    if !shm.is_dir() {
        missing("/dev/shm (tmpfs) is not mounted");
        return;
    }
    let _uring = uses_io_uring();
    let dir = tempfile::tempdir_in(shm).expect("a directory on tmpfs");
    let out_dir = scratch();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_oio"))
        .env("NO_COLOR", "1")
        .current_dir(out_dir.path())
        .args([
            "run", "--json", "--rw", "randrw", "--bs", "8k", "--qd", "4", "--size", "4M", "--ramp",
            "3s", "--time", "300ms",
        ])
        .arg(dir.path().join("t.dat"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("oio starts");
    // The header's lines arrive while the run is still in its 3 s ramp.
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut header = String::new();
    while !header.contains("s measured") {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut err, &mut line).unwrap() == 0 {
            break;
        }
        header.push_str(&line);
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "the header came only after the run ended:\n{header}"
    );
    assert!(header.contains("50 % reads"), "{header}");
    assert!(header.contains("QD 4"), "{header}");
    assert!(header.contains("tmpfs"), "{header}");
    // Read stdout (the JSON, larger than a pipe's buffer) before the rest of stderr.
    let out = child.wait_with_output().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    assert!(out.status.success(), "{header}{rest}");
    assert!(rest.contains("describe memory"), "{header}{rest}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let warnings = v["warnings"].to_string();
    assert!(
        warnings.contains("tmpfs") && warnings.contains("describe memory"),
        "{warnings}"
    );
}

/// Issue 9: a series with one record per interval is bounded: a year at 1 ms intervals is
/// refused before anything is created, naming the flag that fixes it and the interval that
/// would fit (issue 22: by the memory budget, no longer a count of intervals).
#[test]
fn a_series_too_long_for_memory_is_refused_before_the_run() {
    let d = scratch();
    let out = oio()
        .current_dir(d.path())
        .args([
            "run",
            "--engine",
            "null",
            "--time",
            "1y",
            "--interval",
            "1ms",
            "--size",
            "4M",
            "t.dat",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    // The interval offered depends on the host's memory (1m here, with 21 GiB available).
    assert!(
        err.contains("--interval 1ms for 1year keeps 31,557,600,001 intervals")
            && err.contains("use --interval ")
            && err.contains(" or longer"),
        "{err}"
    );
    assert!(!d.path().join("t.dat").exists());
}
