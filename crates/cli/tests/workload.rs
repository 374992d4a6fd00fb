use crate::common::{num, oio, run_json, scratch, uses_io_uring};

#[test]
fn profiles_are_listed_and_print_as_workload_files() {
    let out = oio().args(["profiles"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for p in [
        "tempdb",
        "log",
        "oltp-data",
        "backup",
        "checkdb",
        "dss-scan",
        "hot-pages",
        "checkpoint",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(p)),
            "{p} missing in:\n{text}"
        );
    }
    let d = scratch();
    let out = oio().args(["profiles", "tempdb"]).output().unwrap();
    std::fs::write(d.path().join("tempdb.toml"), &out.stdout).unwrap();
    // The printed profile runs unchanged as a workload file.
    let v = run_json(
        d.path(),
        &[
            "run",
            "-w",
            "tempdb.toml",
            "--engine",
            "null",
            "--ios",
            "50000",
            "--time",
            "60s",
            "--ramp",
            "0",
            "--size",
            "8M",
            "--seed",
            "2",
            "t.dat",
        ],
    );
    let share = num(&v, "/summary/read/ios") / num(&v, "/summary/total/ios");
    assert!(
        (share - 0.02).abs() < 0.005,
        "tempdb reads are 2 %: {share}"
    );
    assert_eq!(num(&v, "/summary/configured_outstanding"), 600.0);
}

#[test]
fn a_bad_workload_file_names_file_line_and_column() {
    let d = scratch();
    std::fs::write(
        d.path().join("bad.toml"),
        "name = \"bad\"\n[[stream]]\nread_pct = 70\nbs = \"8k\"\noutstanding = \"lots\"\n",
    )
    .unwrap();
    let out = oio()
        .current_dir(d.path())
        .args(["run", "-w", "bad.toml", "t.dat"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml:5:15"), "{err}");
    assert!(err.contains("expected"), "{err}");
    assert!(!d.path().join("t.dat").exists());
}

#[test]
fn overrides_apply_to_a_profile() {
    let d = scratch();
    let v = run_json(
        d.path(),
        &[
            "run",
            "--profile",
            "log",
            "--qd",
            "2",
            "--engine",
            "null",
            "--time",
            "1s",
            "--ramp",
            "0",
            "--size",
            "16M",
            "l.dat",
        ],
    );
    assert_eq!(num(&v, "/summary/configured_outstanding"), 2.0);
    assert_eq!(v["workload"]["stream"][0]["read_bs"], "128k:87,1m:13");
}

/// Runs `args` on the null engine for a few thousand I/Os, in `dir`.
fn quick(dir: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["run", "--engine", "null", "--ios", "3000"];
    all.extend_from_slice(&[
        "--time", "60s", "--ramp", "0", "--size", "8M", "--seed", "3",
    ]);
    all.extend_from_slice(args);
    all.push("t.dat");
    run_json(dir, &all)
}

#[test]
fn every_readme_workload_example_runs() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let blocks: Vec<&str> = readme
        .split("```toml\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        // Workloads have streams; other TOML in the README (a fleet inventory) is not one.
        .filter(|b| b.contains("[[stream]]"))
        .collect();
    assert!(blocks.len() >= 2, "the README has its workload examples");
    let d = scratch();
    for (i, b) in blocks.iter().enumerate() {
        let f = format!("readme{i}.toml");
        std::fs::write(d.path().join(&f), b).unwrap();
        let v = quick(d.path(), &["-w", &f]);
        assert_eq!(
            num(&v, "/summary/total/ios"),
            3000.0,
            "README example {i}:\n{b}"
        );
    }
    // The one with skew, rate = N and a schedule: all three are in the effective workload.
    let v = quick(d.path(), &["-w", "readme1.toml"]);
    crate::run::assert_valid(&v);
    let w = &v["workload"]["stream"];
    assert_eq!(w[0]["distribution"], "zipf:1.2");
    assert_eq!(w[1]["rate"]["iops"], 2000.0);
    assert_eq!(w[2]["rate"]["schedule"][1]["iops"], 3000.0);
}

#[test]
fn distribution_flag_is_honoured_by_every_engine_and_shown_in_the_result() {
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
                "4k",
                "--qd",
                "4",
                "--distribution",
                "zoned:90/10:10/90",
                "--ios",
                "2000",
                "--time",
                "60s",
                "--ramp",
                "0",
                "--seed",
                "5",
                "--size",
                "16M",
                "--buffered",
                "z.dat",
            ],
        );
        assert_eq!(num(&v, "/errors/count"), 0.0, "{engine}: {}", v["errors"]);
        assert_eq!(
            v["workload"]["stream"][0]["distribution"],
            "zoned:90/10:10/90"
        );
        seen.push((num(&v, "/summary/read/ios"), num(&v, "/summary/total/ios")));
    }
    assert!(seen.iter().all(|s| *s == seen[0]), "{seen:?}");
    let out = oio()
        .args([
            "run",
            "--engine",
            "null",
            "--distribution",
            "zipf:-1",
            "x.dat",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("THETA > 0"));
}

#[test]
fn fio_export_then_import_gives_the_same_workload() {
    let d = scratch();
    let text = r#"name = "mixed"
description = "round trip"

[[stream]]
name = "oltp"
read_pct = 70
read_bs = "8k:80,64k:20"
write_bs = "8k"
outstanding = 32
workers = 4
distribution = "zipf:1.2"
compress_pct = 50
fdatasync = 8

[[stream]]
name = "scan"
read_pct = 100
bs = "1m"
random_pct = 0
outstanding = 2
region = { offset = "25%", length = "1g" }

[[stream]]
name = "paced"
read_pct = 30
bs = "4k"
random_pct = 40
outstanding = 8
align = "4k"
distribution = "zoned:60/10:30/20:10/70"
dedupe_pct = 20
[stream.rate]
iops = 3000
arrival = "poisson"
"#;
    std::fs::write(d.path().join("w.toml"), text).unwrap();
    let out = oio()
        .current_dir(d.path())
        .args(["export", "w.toml", "--to", "fio"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(d.path().join("w.fio"), &out.stdout).unwrap();
    let out = oio()
        .current_dir(d.path())
        .args(["import", "w.fio", "-o", "back.toml"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        !err.contains("warning"),
        "an oio export is fully honoured: {err}"
    );
    let parse = |f: &str| oio_core::workload::Workload::from_file(&d.path().join(f)).unwrap();
    assert_eq!(parse("back.toml"), parse("w.toml"));
}

#[test]
fn a_fio_job_file_imports_with_every_unhonoured_option_named() {
    let d = scratch();
    std::fs::write(
        d.path().join("user.fio"),
        "[global]\nioengine=libaio\ndirect=1\nsize=1g\nruntime=30\n\n[db]\nrw=randrw\nrwmixread=70\n\
         bssplit=8k/90:64k/10\niodepth=16\nrandom_distribution=zipf:1.2\nfdatasync=8\nverify=crc32c\n",
    )
    .unwrap();
    let out = oio()
        .current_dir(d.path())
        .args(["import", "user.fio"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning: user.fio:14: verify=crc32c: not honoured"),
        "{err}"
    );
    assert!(
        err.contains("note: user.fio:4: size=1g: the size of the target: run with --size 1g"),
        "{err}"
    );
    std::fs::write(d.path().join("user.toml"), &out.stdout).unwrap();
    let v = quick(d.path(), &["-w", "user.toml"]);
    let share = num(&v, "/summary/read/ios") / num(&v, "/summary/total/ios");
    assert!((share - 0.7).abs() < 0.03, "{share}");
    assert_eq!(v["workload"]["stream"][0]["distribution"], "zipf:1.2");
    assert_eq!(num(&v, "/summary/configured_outstanding"), 16.0);
}

/// (read share, share of 4 KiB I/Os, share of I/Os on the hottest 10 % of 4 KiB blocks,
/// I/Os) from fio-format latency logs: `time, latency, direction, size, offset, ...`.
fn log_shape(files: &[std::path::PathBuf], blocks: usize) -> (f64, f64, f64, usize) {
    let (mut n, mut reads, mut small) = (0usize, 0usize, 0usize);
    let mut hits = vec![0usize; blocks];
    for f in files {
        for line in std::fs::read_to_string(f).unwrap().lines() {
            let v: Vec<u64> = line.split(',').map(|x| x.trim().parse().unwrap()).collect();
            assert!(v.len() >= 5, "{}: {line}", f.display());
            n += 1;
            reads += usize::from(v[2] == 0);
            small += usize::from(v[3] == 4096);
            hits[(v[4] / 4096) as usize] += 1;
        }
    }
    hits.sort_unstable_by(|a, b| b.cmp(a));
    let hot: usize = hits[..blocks / 10].iter().sum();
    let f = |x: usize| x as f64 / n as f64;
    (f(reads), f(small), f(hot), n)
}

#[test]
fn latency_log_is_fios_format_one_file_per_worker_and_never_overwrites() {
    let d = scratch();
    let v = quick(
        d.path(),
        &[
            "--rw",
            "randrw",
            "--bs",
            "4k",
            "--qd",
            "4",
            "--workers",
            "2",
            "--lat-log",
            "x",
        ],
    );
    let files: Vec<_> = (1..=2)
        .map(|n| d.path().join(format!("x_lat.{n}.log")))
        .collect();
    let (reads, small, _, n) = log_shape(&files, 2048);
    assert_eq!(n as f64, num(&v, "/summary/total/ios"));
    assert_eq!(reads, num(&v, "/summary/read/ios") / n as f64);
    assert_eq!(small, 1.0);
    // A second run must not write over the first run's logs.
    let out = oio()
        .current_dir(d.path())
        .args([
            "run",
            "--engine",
            "null",
            "--ios",
            "10",
            "--size",
            "8M",
            "--lat-log",
            "x",
            "t.dat",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("x_lat.1.log"));
    assert_eq!(log_shape(&files, 2048).3, n);
}

#[test]
fn oio_and_fio_run_an_imported_skewed_job_alike() {
    if std::process::Command::new("fio")
        .arg("--version")
        .output()
        .is_err()
    {
        return crate::common::missing("fio");
    }
    let d = scratch();
    let job = "[global]\nioengine=psync\nfilename=f.dat\nsize=64m\nio_size=4g\nnumber_ios=40000\n\
               write_lat_log=fio\nlog_offset=1\nrandrepeat=0\n\n[db]\nrw=randrw\nrwmixread=70\n\
               bssplit=4k/70:16k/30\niodepth=4\nrandom_distribution=zipf:1.2\nfdatasync=8\n";
    std::fs::write(d.path().join("db.fio"), job).unwrap();
    let out = std::process::Command::new("fio")
        .current_dir(d.path())
        .args(["db.fio", "--output-format=json", "--output=fio.json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = oio()
        .current_dir(d.path())
        .args(["import", "db.fio", "-o", "db.toml"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !err.contains("fdatasync"), "{err}");
    let v = run_json(
        d.path(),
        &[
            "run",
            "-w",
            "db.toml",
            "--ios",
            "40000",
            "--time",
            "120s",
            "--ramp",
            "0",
            "--size",
            "64M",
            "--buffered",
            "--engine",
            "sync",
            "--lat-log",
            "oio",
            "t.dat",
        ],
    );
    assert_eq!(num(&v, "/errors/count"), 0.0);
    // fdatasync=8 is honoured: one sync per 8 writes, timed on its own.
    let syncs = num(&v, "/summary/sync/ios");
    let writes = num(&v, "/summary/write/ios");
    assert!((syncs - writes / 8.0).abs() <= 2.0, "{}", v["summary"]);
    assert!(num(&v, "/summary/sync/latency_ns/p50") > 0.0);
    let blocks = 64 << 20 >> 12;
    let fio = log_shape(&[d.path().join("fio_lat.1.log")], blocks);
    let oio = log_shape(&[d.path().join("oio_lat.1.log")], blocks);
    eprintln!("read share, 4k share, hottest-10% share, I/Os: fio {fio:?}, oio {oio:?}");
    assert!(
        (fio.0 - oio.0).abs() < 0.05 * fio.0,
        "read share {fio:?} {oio:?}"
    );
    assert!(
        (fio.1 - oio.1).abs() < 0.05 * fio.1,
        "size mix {fio:?} {oio:?}"
    );
    assert!(
        (fio.2 - oio.2).abs() < 0.05 * fio.2,
        "hot blocks {fio:?} {oio:?}"
    );
}

/// Flush requests the kernel completed for a block device (diskstats' flush count), if it
/// reports them.
fn flushes(name: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/sys/block/{name}/stat")).ok()?;
    stat.split_whitespace().nth(15)?.parse().ok()
}

#[test]
fn fdatasync_is_timed_on_its_own_and_the_device_sees_the_flushes() {
    use crate::common::{is_root, sparse_image, LoopDevice};
    if !is_root() || !std::path::Path::new("/dev/loop-control").exists() {
        return crate::common::missing("root and loop devices for the flush count");
    }
    let d = scratch();
    let Some(lo) = LoopDevice::attach(&sparse_image(&d.path().join("s.img"), 64 << 20)) else {
        return;
    };
    let Some(before) = flushes(lo.name()) else {
        return crate::common::missing("a kernel that reports flushes in diskstats");
    };
    let dev = lo.dev.display().to_string();
    let v = run_json(
        d.path(),
        &[
            "run",
            "--rw",
            "write",
            "--bs",
            "4k",
            "--qd",
            "1",
            "--fdatasync",
            "1",
            "--ios",
            "200",
            "--time",
            "60s",
            "--ramp",
            "0",
            "--engine",
            "sync",
            "--allow-overwrite",
            &dev,
        ],
    );
    let after = flushes(lo.name()).unwrap();
    assert_eq!(num(&v, "/errors/count"), 0.0, "{}", v["errors"]);
    assert_eq!(num(&v, "/summary/write/ios"), 200.0);
    assert_eq!(num(&v, "/summary/sync/ios"), 200.0, "{}", v["summary"]);
    assert_eq!(
        num(&v, "/summary/total/ios"),
        200.0,
        "syncs are not I/Os of the total"
    );
    assert!(num(&v, "/summary/sync/latency_ns/p50") > 0.0);
    assert_eq!(v["workload"]["stream"][0]["fdatasync"], 1);
    crate::run::assert_valid(&v);
    assert!(after >= before + 200, "flushes {before} -> {after}");
    // Without --fdatasync, no syncs and no sync summary.
    let v = run_json(
        d.path(),
        &[
            "run",
            "--rw",
            "write",
            "--bs",
            "4k",
            "--qd",
            "1",
            "--ios",
            "50",
            "--time",
            "60s",
            "--ramp",
            "0",
            "--engine",
            "sync",
            "--allow-overwrite",
            &dev,
        ],
    );
    assert!(v["summary"].get("sync").is_none(), "{}", v["summary"]);
}
