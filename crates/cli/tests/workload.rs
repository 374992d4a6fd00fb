use crate::common::{num, oio, run_json, scratch};

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
