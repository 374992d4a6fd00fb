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
    let w = &quick(d.path(), &["-w", "readme1.toml"])["workload"]["stream"];
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
    assert!(err.contains("warning: user.fio:13: fdatasync=8"), "{err}");
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
