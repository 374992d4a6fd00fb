//! Workload features beyond sizes and load: synchronous writes, syncs by count and by time,
//! think time, zero and fixed write contents, HdrHistogram interval logs; each measured to
//! change what happens, exported to fio and imported back.

use crate::common::{is_root, missing, num, oio, run_json, scratch, sparse_image, LoopDevice};
use std::path::Path;

/// Flush requests the kernel completed for a block device (diskstats' 16th field).
fn flushes(name: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/sys/block/{name}/stat")).ok()?;
    stat.split_whitespace().nth(15)?.parse().ok()
}

/// The simulated device on the virtual clock: one server, exactly 100 µs per I/O.
const SIM: &str = "servers=1,service=100us,dist=fixed,clock=virtual";

fn sim_write(dir: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "run", "--engine", "null", "--sim", SIM, "--rw", "write", "--bs", "4k", "--qd", "1",
        "--size", "16M", "--time", "2s", "--ramp", "0", "t.dat",
    ];
    args.extend_from_slice(extra);
    run_json(dir, &args)
}

#[test]
fn synchronous_writes_make_the_device_flush_on_every_engine() {
    if !is_root() || !Path::new("/dev/loop-control").exists() {
        return missing("root and loop devices for the flush count");
    }
    let d = scratch();
    let Some(lo) = LoopDevice::attach(&sparse_image(&d.path().join("s.img"), 64 << 20)) else {
        return;
    };
    if flushes(lo.name()).is_none() {
        return missing("a kernel that reports flushes in diskstats");
    }
    let _uring = crate::common::uses_io_uring();
    let dev = lo.dev.display().to_string();
    let run = |engine: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            "--rw",
            "write",
            "--bs",
            "4k",
            "--qd",
            "1",
            "--ios",
            "100",
            "--time",
            "60s",
            "--ramp",
            "0",
            "--engine",
            engine,
            "--allow-overwrite",
        ];
        args.extend_from_slice(extra);
        args.push(&dev);
        let before = flushes(lo.name()).unwrap();
        let v = run_json(d.path(), &args);
        let after = flushes(lo.name()).unwrap();
        assert_eq!(num(&v, "/errors/count"), 0.0, "{}", v["errors"]);
        assert_eq!(num(&v, "/summary/write/ios"), 100.0);
        (v, after - before)
    };
    // Plain writes: the device sees no flush at all.
    let (_, plain) = run("sync", &[]);
    assert_eq!(plain, 0, "plain O_DIRECT writes flushed");
    for engine in ["sync", "io_uring"] {
        for how in ["o_dsync", "o_sync", "rwf_dsync"] {
            let (v, n) = run(engine, &["--sync-writes", how]);
            assert!(n >= 100, "{engine} {how}: {n} flushes for 100 writes");
            assert_eq!(v["workload"]["stream"][0]["sync_writes"], how);
            // Durability is in the write itself: no separate sync operation.
            assert!(v["summary"].get("sync").is_none(), "{}", v["summary"]);
            let features = v["engine"]["features"].to_string();
            assert_eq!(
                how == "rwf_dsync",
                features.contains("rwf_dsync"),
                "{engine} {how}: {features}"
            );
            crate::run::assert_valid(&v);
        }
    }
    // fsync every 4 writes: a quarter as many syncs, timed on their own.
    let (v, n) = run("sync", &["--fsync", "4"]);
    assert_eq!(num(&v, "/summary/sync/ios"), 25.0, "{}", v["summary"]);
    assert_eq!(num(&v, "/summary/total/ios"), 100.0);
    assert!(n >= 25, "{n} flushes for 25 fsyncs");
}

#[test]
fn think_time_paces_a_closed_loop_exactly() {
    let d = scratch();
    // 100 µs of service + 400 µs of think per I/O at QD 1: 2000 IOPS on the virtual clock.
    let v = sim_write(d.path(), &["--think-time", "400us"]);
    assert_eq!(num(&v, "/summary/write/iops"), 2000.0, "{}", v["summary"]);
    assert_eq!(num(&v, "/summary/write/latency_ns/p50"), 100_000.0);
    assert_eq!(v["workload"]["stream"][0]["think_time"], "400us");
    // One think per 4 I/Os: 4 I/Os per 800 µs.
    let v = sim_write(d.path(), &["--think-time", "400us", "--think-blocks", "4"]);
    assert_eq!(num(&v, "/summary/write/iops"), 5000.0, "{}", v["summary"]);
    // Without think time the same device does 10 000.
    let v = sim_write(d.path(), &[]);
    assert!(num(&v, "/summary/write/iops") > 9990.0, "{}", v["summary"]);
    // On the real clock (the null engine: no device), QD 1 can never beat 1 / think.
    let v = run_json(
        d.path(),
        &[
            "run",
            "--engine",
            "null",
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--qd",
            "1",
            "--size",
            "16M",
            "--time",
            "1s",
            "--ramp",
            "0",
            "--think-time",
            "2ms",
            "t.dat",
        ],
    );
    let iops = num(&v, "/summary/read/iops");
    assert!(
        iops > 0.0 && iops <= 500.0 * 1.01,
        "{iops} IOPS with 2 ms think"
    );
}

#[test]
fn syncs_by_time_are_timed_on_their_own() {
    let d = scratch();
    // Every 10 ms while writing, for 2 s: one sync per interval after the first.
    let v = sim_write(d.path(), &["--sync-interval", "10ms"]);
    let syncs = num(&v, "/summary/sync/ios");
    assert!((198.0..=200.0).contains(&syncs), "{syncs} syncs");
    assert_eq!(num(&v, "/summary/total/ios"), num(&v, "/summary/write/ios"));
    assert_eq!(v["workload"]["stream"][0]["sync_interval"], "10ms");
    // By count and by time together: whichever comes first.
    let v = sim_write(d.path(), &["--fsync", "500", "--sync-interval", "10ms"]);
    let syncs = num(&v, "/summary/sync/ios");
    let writes = num(&v, "/summary/write/ios");
    assert!(
        syncs >= writes / 500.0 && syncs <= 201.0,
        "{syncs} syncs, {writes} writes"
    );
    // A stream has one sync call.
    let out = oio()
        .current_dir(d.path())
        .args([
            "run",
            "--engine",
            "null",
            "--fsync",
            "1",
            "--fdatasync",
            "1",
            "t.dat",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--fsync"));
}

#[test]
fn zero_and_fixed_patterns_are_what_the_file_holds_afterwards() {
    let d = scratch();
    let write = |pattern: &str| {
        let v = run_json(
            d.path(),
            &[
                "run",
                "--rw",
                "write",
                "--bs",
                "64k",
                "--qd",
                "2",
                "--size",
                "1M",
                "--ios",
                "16",
                "--time",
                "60s",
                "--ramp",
                "0",
                "--engine",
                "sync",
                "--pattern",
                pattern,
                "t.dat",
            ],
        );
        assert_eq!(num(&v, "/summary/write/ios"), 16.0);
        assert_eq!(v["workload"]["stream"][0]["pattern"], pattern);
        crate::run::assert_valid(&v);
        std::fs::read(d.path().join("t.dat")).unwrap()
    };
    // Sixteen sequential 64 KiB writes cover the 1 MiB file once.
    let data = write("fixed:0xdeadbeef01");
    assert_eq!(data.len(), 1 << 20);
    let p = [0xde, 0xad, 0xbe, 0xef, 0x01];
    // The pattern runs from the start of every write (64 KiB is not a multiple of 5).
    for (w, chunk) in data.chunks(64 << 10).enumerate() {
        for (i, b) in chunk.iter().enumerate() {
            assert_eq!(*b, p[i % 5], "write {w}, byte {i}");
        }
    }
    let data = write("zero");
    assert!(data.iter().all(|&b| b == 0), "not all zeros");
}

#[test]
fn the_header_and_summary_name_the_settings() {
    let d = scratch();
    let out = oio()
        .current_dir(d.path())
        .args([
            "run",
            "--engine",
            "null",
            "--rw",
            "randrw",
            "--bs",
            "4k",
            "--qd",
            "2",
            "--size",
            "16M",
            "--ios",
            "2000",
            "--time",
            "60s",
            "--ramp",
            "0",
            "--distribution",
            "zipf:1.2",
            "--fdatasync",
            "8",
            "--sync-interval",
            "10ms",
            "--sync-writes",
            "rwf_dsync",
            "--think-time",
            "20us",
            "--think-blocks",
            "2",
            "--pattern",
            "zero",
            "t.dat",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let settings =
        "access zipf:1.2; fdatasync every 8 writes; fdatasync every 10ms while writing; \
                    synchronous writes (rwf_dsync); think 20us after every 2 I/Os; data zero";
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(stderr.contains(settings), "header:\n{stderr}");
    assert!(stdout.contains(settings), "summary:\n{stdout}");
    assert!(
        stdout.lines().any(|l| l.starts_with("sync ")),
        "no sync row:\n{stdout}"
    );
}

#[test]
fn what_cannot_be_honoured_is_refused_by_name() {
    let d = scratch();
    let refused = |args: &[&str], word: &str| {
        let out = oio().current_dir(d.path()).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} ran");
        assert!(err.contains(word), "{args:?}: {err}");
    };
    refused(
        &[
            "run",
            "--engine",
            "null",
            "--rate",
            "100",
            "--think-time",
            "1ms",
            "t.dat",
        ],
        "think_time",
    );
    refused(
        &[
            "run",
            "--engine",
            "null",
            "--verify",
            "--rw",
            "randrw",
            "--pattern",
            "zero",
            "--size",
            "1M",
            "t.dat",
        ],
        "pattern zero",
    );
    refused(
        &[
            "run",
            "--engine",
            "null",
            "--rw",
            "write",
            "--pattern",
            "zero",
            "--compress-pct",
            "50",
            "t.dat",
        ],
        "pattern zero",
    );
    refused(
        &[
            "run",
            "--engine",
            "null",
            "--pattern",
            "fixed:0xabc",
            "t.dat",
        ],
        "fixed:0xHEX",
    );
    refused(
        &["run", "--engine", "null", "--sync-writes", "fua", "t.dat"],
        "rwf_dsync",
    );
    std::fs::write(
        d.path().join("s.fio"),
        "[j]\nrw=write\nbuffer_pattern=\"abc\"\n",
    )
    .unwrap();
    refused(&["import", "s.fio", "-o", "s.toml"], "buffer_pattern");
}

const FEATURES: &str = r#"name = "feat"

[[stream]]
name = "log"
read_pct = 0
bs = "8k"
random_pct = 0
outstanding = 1
fsync = 4
sync_writes = "o_dsync"
think_time = "250us"
think_blocks = 2
pattern = "fixed:0xdeadbeef"

[[stream]]
name = "zeros"
read_pct = 30
bs = "4k"
outstanding = 4
fdatasync = 16
pattern = "zero"
sync_writes = "o_sync"
"#;

fn export_fio(dir: &Path, workload: &str) -> String {
    let out = oio()
        .current_dir(dir)
        .args(["export", "--to", "fio", "--target", "f.dat", workload])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_features_export_to_fio_that_parses_and_import_back_the_same() {
    let d = scratch();
    std::fs::write(d.path().join("feat.toml"), FEATURES).unwrap();
    let job = export_fio(d.path(), "feat.toml");
    for line in [
        "fsync=4",
        "sync=dsync",
        "thinktime=250",
        "thinktime_blocks=2",
        "buffer_pattern=0xdeadbeef",
        "fdatasync=16",
        "sync=sync",
        "zero_buffers=1",
    ] {
        assert!(job.lines().any(|l| l == line), "{line} missing:\n{job}");
    }
    std::fs::write(d.path().join("feat.fio"), &job).unwrap();
    let out = oio()
        .current_dir(d.path())
        .args(["import", "feat.fio", "-o", "back.toml"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // Nothing of the features was dropped or warned about.
    for word in [
        "fsync",
        "fdatasync",
        "sync=",
        "thinktime",
        "buffer_pattern",
        "zero_buffers",
        "not honoured",
    ] {
        assert!(!err.contains(word), "{word}: {err}");
    }
    let back = std::fs::read_to_string(d.path().join("back.toml")).unwrap();
    for line in [
        "fsync = 4",
        "sync_writes = \"o_dsync\"",
        "think_time = \"250us\"",
        "think_blocks = 2",
        "pattern = \"fixed:0xdeadbeef\"",
        "fdatasync = 16",
        "pattern = \"zero\"",
        "sync_writes = \"o_sync\"",
    ] {
        assert!(back.lines().any(|l| l == line), "{line} missing:\n{back}");
    }
    // Import → export gives the same job: the same workload.
    assert_eq!(export_fio(d.path(), "back.toml"), job);
    // The options oio names but fio cannot express are said in the job, never dropped.
    std::fs::write(
        d.path().join("t.toml"),
        FEATURES
            .replace("fsync = 4", "sync_interval = \"10ms\"")
            .replace("\"o_dsync\"", "\"rwf_dsync\""),
    )
    .unwrap();
    let t = export_fio(d.path(), "t.toml");
    assert!(
        t.contains("fio cannot sync by time") && t.contains("10ms"),
        "{t}"
    );
    assert!(t.contains("RWF_DSYNC"), "{t}");
    std::fs::write(d.path().join("t.fio"), &t).unwrap();
    if !crate::common::have("fio") {
        return missing("fio (scripts/test installs it)");
    }
    for f in ["feat.fio", "t.fio"] {
        let parse = std::process::Command::new("fio")
            .current_dir(d.path())
            .args(["--parse-only", f])
            .output()
            .unwrap();
        assert!(
            parse.status.success(),
            "fio --parse-only {f}: {}{}",
            String::from_utf8_lossy(&parse.stdout),
            String::from_utf8_lossy(&parse.stderr)
        );
    }
}

#[test]
fn the_log_writer_profile_writes_small_sequential_synchronous_commits() {
    let d = scratch();
    let v = run_json(
        d.path(),
        &[
            "run",
            "--profile",
            "log-writer",
            "--engine",
            "sync",
            "--size",
            "16M",
            "--ios",
            "200",
            "--time",
            "60s",
            "--ramp",
            "0",
            "t.dat",
        ],
    );
    assert_eq!(num(&v, "/summary/write/ios"), 200.0);
    assert_eq!(num(&v, "/summary/read/ios"), 0.0);
    assert_eq!(num(&v, "/summary/configured_outstanding"), 1.0);
    assert_eq!(v["workload"]["stream"][0]["sync_writes"], "o_dsync");
    let mean = num(&v, "/summary/write/bytes") / 200.0;
    assert!((4096.0..=65536.0).contains(&mean), "{mean} bytes per write");
}

/// Sums the histogram counts of an HdrHistogram interval log by tag, read with the
/// `hdrhistogram` crate's own reader.
fn hdr_counts(log: &[u8]) -> std::collections::BTreeMap<String, u64> {
    use base64::Engine as _;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;
    let mut counts = std::collections::BTreeMap::new();
    let mut de = Deserializer::new();
    for entry in IntervalLogIterator::new(log) {
        if let LogEntry::Interval(h) = entry.expect("a valid interval log line") {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(h.encoded_histogram())
                .expect("base64");
            let hist: hdrhistogram::Histogram<u64> = de
                .deserialize(&mut std::io::Cursor::new(bytes))
                .expect("a V2 compressed histogram");
            let tag = h.tag().map(|t| t.as_str().to_string()).unwrap_or_default();
            *counts.entry(tag).or_insert(0) += hist.len();
            assert!(h.duration().as_secs_f64() > 0.0);
        }
    }
    counts
}

#[test]
fn the_hdr_log_reads_back_with_the_counts_of_the_result() {
    let d = scratch();
    let v = run_json(
        d.path(),
        &[
            "run",
            "--engine",
            "null",
            "--sim",
            SIM,
            "--rw",
            "randrw",
            "--bs",
            "4k",
            "--qd",
            "1",
            "--size",
            "16M",
            "--time",
            "3s",
            "--ramp",
            "1s",
            "--fdatasync",
            "16",
            "--hdr-log",
            "run.hlog",
            "t.dat",
        ],
    );
    let log = std::fs::read(d.path().join("run.hlog")).unwrap();
    let text = String::from_utf8_lossy(&log);
    for head in [
        "#[StartTime: ",
        "#[BaseTime: ",
        "\"StartTimestamp\",\"Interval_Length\"",
    ] {
        assert!(text.contains(head), "{head} missing:\n{text}");
    }
    // One line per interval and tag: 3 intervals of read, write and sync.
    assert_eq!(
        text.lines().filter(|l| l.starts_with("Tag=")).count(),
        9,
        "{text}"
    );
    let counts = hdr_counts(&log);
    assert_eq!(counts["read"] as f64, num(&v, "/summary/read/ios"));
    assert_eq!(counts["write"] as f64, num(&v, "/summary/write/ios"));
    assert_eq!(counts["sync"] as f64, num(&v, "/summary/sync/ios"));
    assert!(counts["read"] > 1000, "{counts:?}");
    // Never over an existing file, and nothing left behind.
    let out = oio()
        .current_dir(d.path())
        .args([
            "run",
            "--engine",
            "null",
            "--ios",
            "10",
            "--hdr-log",
            "run.hlog",
            "t.dat",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("run.hlog"));
    assert_eq!(std::fs::read(d.path().join("run.hlog")).unwrap(), log);
    let stray: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".oio-hdr"))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
}

/// Bytes a file really occupies (st_blocks × 512).
fn allocated(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).unwrap().blocks() * 512
}

#[test]
fn trims_punch_holes_in_a_file_and_discard_on_a_device() {
    let d = scratch();
    let file = d.path().join("t.dat");
    // oio creates the file fully written.
    run_json(
        d.path(),
        &[
            "run", "--rw", "read", "--bs", "64k", "--size", "4M", "--ios", "1", "--ramp", "0",
            "t.dat",
        ],
    );
    let before = allocated(&file);
    assert!(before >= 4 << 20, "{before}");
    // Half of all operations are trims: one per read.
    let v = run_json(
        d.path(),
        &[
            "run",
            "--rw",
            "randread",
            "--bs",
            "64k",
            "--qd",
            "1",
            "--ios",
            "200",
            "--time",
            "60s",
            "--ramp",
            "0",
            "--engine",
            "sync",
            "--trim-pct",
            "50",
            "t.dat",
        ],
    );
    assert_eq!(num(&v, "/summary/read/ios"), 200.0);
    assert_eq!(num(&v, "/summary/trim/ios"), 200.0, "{}", v["summary"]);
    assert_eq!(num(&v, "/summary/trim/bytes"), 200.0 * 65536.0);
    assert_eq!(
        num(&v, "/summary/total/ios"),
        200.0,
        "trims are not in the total"
    );
    assert!(num(&v, "/summary/trim/latency_ns/p50") > 0.0);
    assert_eq!(num(&v, "/workload/stream/0/trim_pct"), 50.0);
    crate::run::assert_valid(&v);
    let after = allocated(&file);
    assert!(after < before / 2, "allocated {before} -> {after}");
    assert_eq!(
        std::fs::metadata(&file).unwrap().len(),
        4 << 20,
        "KEEP_SIZE"
    );
    // A file oio does not own is trimmed only with the flag writes need.
    std::fs::write(d.path().join("theirs.dat"), vec![1u8; 1 << 20]).unwrap();
    let out = oio()
        .current_dir(d.path())
        .args([
            "run",
            "--rw",
            "read",
            "--bs",
            "4k",
            "--ios",
            "10",
            "--trim-pct",
            "10",
            "theirs.dat",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success(), "trimmed a file oio does not own");
    assert_eq!(
        std::fs::read(d.path().join("theirs.dat")).unwrap(),
        vec![1u8; 1 << 20]
    );

    // A loop device passes BLKDISCARD on as holes in its backing file.
    if !is_root() || !Path::new("/dev/loop-control").exists() {
        return missing("root and loop devices for BLKDISCARD");
    }
    let img = d.path().join("s.img");
    std::fs::write(&img, vec![7u8; 8 << 20]).unwrap();
    let Some(lo) = LoopDevice::attach(&img) else {
        return;
    };
    let before = allocated(&img);
    let dev = lo.dev.display().to_string();
    let v = run_json(
        d.path(),
        &[
            "run",
            "--rw",
            "read",
            "--bs",
            "64k",
            "--qd",
            "1",
            "--ios",
            "64",
            "--time",
            "60s",
            "--ramp",
            "0",
            "--engine",
            "sync",
            "--trim-pct",
            "50",
            "--allow-overwrite",
            &dev,
        ],
    );
    assert_eq!(num(&v, "/summary/trim/ios"), 64.0, "{}", v["summary"]);
    drop(lo);
    let after = allocated(&img);
    assert!(after < before, "backing file allocated {before} -> {after}");
}

#[test]
fn diskspd_and_vdbench_get_what_they_can_express_and_name_the_rest() {
    let d = scratch();
    std::fs::write(
        d.path().join("f.toml"),
        "name = \"f\"\n[[stream]]\nname = \"log\"\nread_pct = 0\nbs = \"8k\"\nrandom_pct = 0\n\
         outstanding = 1\nfsync = 4\nsync_writes = \"o_dsync\"\nthink_time = \"250us\"\n\
         pattern = \"zero\"\ntrim_pct = 10\n",
    )
    .unwrap();
    let export = |tool: &str| {
        let out = oio()
            .current_dir(d.path())
            .args(["export", "--to", tool, "--target", "f.dat", "f.toml"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let ds = export("diskspd");
    let cmd = ds.lines().find(|l| l.starts_with("diskspd.exe")).unwrap();
    assert!(cmd.contains(" -Sh ") && cmd.contains(" -Z "), "{ds}");
    for what in ["fsync = 4", "think_time = 250us", "trim_pct = 10"] {
        assert!(
            ds.lines().any(|l| l.starts_with("REM") && l.contains(what)),
            "{what}:\n{ds}"
        );
    }
    let vd = export("vdbench");
    assert!(vd.contains("openflags=(o_direct,o_dsync)"), "{vd}");
    for what in [
        "fsync = 4",
        "think_time = 250us",
        "pattern = zero",
        "trim_pct = 10",
    ] {
        assert!(
            vd.lines().any(|l| l.starts_with('*') && l.contains(what)),
            "{what}:\n{vd}"
        );
    }
    std::fs::write(d.path().join("f.vdb"), &vd).unwrap();
    let out = oio()
        .current_dir(d.path())
        .args(["import", "f.vdb", "-o", "back.toml"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let back = std::fs::read_to_string(d.path().join("back.toml")).unwrap();
    assert!(back.contains("sync_writes = \"o_dsync\""), "{back}");
}

/// One rule for every per-run log (issue 22 item 18: `--hdr-log` on a full disk gave a note
/// and exit 0, `--lat-log` exit 2 and no result): the log is removed (whole or absent), the
/// run measures on, its result is kept and names the file and why in `output_errors`, and the
/// command exits 2 saying so.
#[test]
fn a_log_that_cannot_be_written_keeps_the_result_names_the_file_and_exits_2() {
    if !is_root() {
        missing("logs on a full filesystem: needs root (mount a tiny tmpfs)");
        return;
    }
    let d = scratch();
    let full = d.path().join("full");
    std::fs::create_dir(&full).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
        .arg(&full)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        missing("mounting a tmpfs");
        return;
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(self.0).status();
        }
    }
    let _u = Unmount(&full);
    // Fill it: a log's first write finds no room.
    let e = std::fs::write(full.join("filler"), vec![1u8; 1 << 20]).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::StorageFull, "{e}");

    for (flag, value, log, what) in [
        (
            "--lat-log",
            "full/run1",
            "full/run1_lat.1.log",
            "latency log",
        ),
        (
            "--hdr-log",
            "full/run1.hlog",
            "full/run1.hlog",
            "HdrHistogram log",
        ),
    ] {
        let out = oio()
            .current_dir(d.path())
            .args([
                "run",
                "--engine",
                "null",
                "--rw",
                "randread",
                "--size",
                "1M",
                "--time",
                "300ms",
                "--interval",
                "100ms",
                "--ramp",
                "0",
                "--json",
                "--out",
                "res",
                flag,
                value,
                "t.dat",
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {err}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{flag}: the result is printed ({e}): {err}"));
        let errors = v["output_errors"].as_array().expect("output_errors");
        assert_eq!(errors.len(), 1, "{flag}: {errors:?}");
        let e = errors[0].as_str().unwrap();
        assert!(
            e.starts_with(&format!("{what} {log}")) && e.contains("No space left on device"),
            "{flag}: {e}"
        );
        assert!(e.contains("kept whole or not at all"), "{flag}: {e}");
        // The numbers are whole.
        assert_eq!(v["stop_reason"], "completed", "{flag}");
        assert!(num(&v, "/summary/total/ios") > 0.0, "{flag}");
        assert!(
            err.contains("error:") && err.contains(log) && err.contains("the result is complete"),
            "{flag}: {err}"
        );
        assert!(
            !d.path().join(log).exists(),
            "{flag}: the broken log is removed"
        );
        let names: Vec<String> = std::fs::read_dir(&full)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["filler"], "{flag}: nothing left beside the filler");
    }
    let saved = std::fs::read_dir(d.path().join("res")).unwrap().count();
    assert_eq!(saved, 2, "both results are saved");
}
