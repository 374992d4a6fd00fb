//! Experiments as plans (`oio_lab`): `oio rerun` repeats a result's plan, Ctrl-C stops
//! `compare --run`, `sweep` and `blend` at once with the finished results and a partial one on
//! disk, and the compare and sweep tables from fixed documents.

use crate::common::{num, oio, run_json, scratch, uses_io_uring};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Run results (JSON files) under `dir`, recursively, sorted.
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(json_files(&p));
            } else if p.extension().is_some_and(|x| x == "json") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn read(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

/// The one result file under `dir/oio-results` whose name contains `part`.
fn only_result(dir: &Path) -> Value {
    let files = json_files(&dir.join("oio-results"));
    assert_eq!(files.len(), 1, "{files:?}");
    read(&files[0])
}

fn counts(v: &Value) -> [f64; 4] {
    [
        num(v, "/summary/read/ios"),
        num(v, "/summary/read/bytes"),
        num(v, "/summary/write/ios"),
        num(v, "/summary/write/bytes"),
    ]
}

#[test]
fn a_seeded_null_run_and_its_rerun_do_the_same_ios() {
    let d = scratch();
    let first = run_json(
        d.path(),
        &[
            "run",
            "--engine",
            "null",
            "--rw",
            "randrw",
            "--bs",
            "4k:50,64k:50",
            "--qd",
            "8",
            "--ios",
            "5000",
            "--time",
            "60s",
            "--ramp",
            "0",
            "--seed",
            "7",
            "--size",
            "16M",
            "t.dat",
        ],
    );
    assert_eq!(first["plan"]["kind"], "run", "{}", first["plan"]);
    assert_eq!(first["plan"]["run"]["seed"], 7);
    let saved = only_result(d.path());
    let again = d.path().join("again");
    let file = json_files(&d.path().join("oio-results")).remove(0);
    let second = run_json(
        d.path(),
        &[
            "rerun",
            file.to_str().unwrap(),
            "--out",
            again.to_str().unwrap(),
        ],
    );
    assert_eq!(counts(&first), counts(&second));
    assert_eq!(counts(&saved), counts(&second));
    assert_eq!(num(&second, "/summary/total/ios"), 5000.0);
    assert_eq!(
        first["plan"], second["plan"],
        "the rerun embeds the same plan"
    );
    assert_eq!(second["options"]["seed"], 7);
    assert_eq!(json_files(&again).len(), 1, "the rerun wrote a new result");
    // A second rerun of the rerun's result: still the same I/Os.
    let third = run_json(
        d.path(),
        &[
            "rerun",
            json_files(&again)[0].to_str().unwrap(),
            "--out",
            "third",
        ],
    );
    assert_eq!(counts(&first), counts(&third));
}

#[test]
fn a_rerun_of_a_real_file_run_runs_the_same_plan() {
    let _uring = uses_io_uring();
    let d = scratch();
    let first = run_json(
        d.path(),
        &[
            "run", "--rw", "randread", "--bs", "4k", "--qd", "4", "--size", "16M", "--time", "1s",
            "--ramp", "0", "real.dat",
        ],
    );
    let file = json_files(&d.path().join("oio-results")).remove(0);
    let second = run_json(
        d.path(),
        &["rerun", file.to_str().unwrap(), "--out", "again"],
    );
    assert_eq!(first["plan"], second["plan"]);
    assert_eq!(first["workload"], second["workload"]);
    assert_eq!(first["options"]["seed"], second["options"]["seed"]);
    assert_eq!(first["targets"][0]["path"], second["targets"][0]["path"]);
    assert_eq!(second["targets"][0]["size_bytes"], 16 << 20);
    assert!(num(&second, "/summary/total/ios") > 0.0);
    assert_eq!(second["stop_reason"], "completed");
}

#[test]
fn a_rerun_of_a_sweep_sweeps_the_same_plan_again() {
    let d = scratch();
    let first = run_json(
        d.path(),
        &[
            "sweep",
            "randread",
            "t.dat",
            "--engine",
            "null",
            "--sim",
            "servers=2,service=1ms",
            "--qd",
            "1,4",
            "--time",
            "1s",
            "--ramp",
            "0",
            "--size",
            "1M",
            "--seed",
            "3",
        ],
    );
    assert_eq!(first["plan"]["kind"], "sweep");
    let doc = json_files(&d.path().join("oio-results"))
        .into_iter()
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("sweep-2")
        })
        .expect("the sweep document");
    let second = run_json(
        d.path(),
        &["rerun", doc.to_str().unwrap(), "--out", "again"],
    );
    assert_eq!(first["plan"], second["plan"]);
    assert_eq!(first["options"], second["options"]);
    assert_eq!(second["points"].as_array().unwrap().len(), 2);
    assert_eq!(second["simulated"], first["simulated"]);
    // Each point's run embeds its own plan: the point's depth and seed.
    let run = read(
        &d.path()
            .join(second["points"][1]["sources"][0].as_str().unwrap()),
    );
    assert_eq!(
        run["plan"]["run"]["workload"]["stream"][0]["outstanding"],
        4
    );
}

#[test]
fn a_blend_printed_as_json_reruns_its_phases() {
    let d = scratch();
    let first = run_json(
        d.path(),
        &[
            "blend",
            "b.dat",
            "--streams",
            "2",
            "--engine",
            "null",
            "--size",
            "4M",
            "--time",
            "1s",
            "--ramp",
            "0",
        ],
    );
    assert_eq!(first["plan"]["kind"], "blend");
    std::fs::write(d.path().join("blend.json"), first.to_string()).unwrap();
    let second = run_json(d.path(), &["rerun", "blend.json", "--out", "again"]);
    assert_eq!(second["schema"], "oio.blend");
    assert_eq!(first["plan"], second["plan"]);
    let phases = second["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 3, "two alone, then together");
    for p in phases {
        assert!(
            p["result_file"].as_str().unwrap().starts_with("again/"),
            "{p}"
        );
    }
}

/// Results written before lab scheduled the engine's own plan (main at ee07ffd, issue 25)
/// still rerun: the same plan, read back from the JSON names they record, runs the same I/Os
/// on the virtual clock. Their recorded target (relative, in a directory of the machine that
/// wrote them) is redirected with --target.
#[test]
fn results_recorded_before_one_plan_per_domain_still_rerun() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/plans-before-issue-25");
    let d = scratch();
    let target = d.path().join("t.dat");
    let target = target.to_str().unwrap();
    // The plan as recorded, but for what a rerun changes: the redirected target.
    let comparable = |plan: &Value| {
        let mut p = plan.clone();
        let run = if p["kind"] == "run" { "run" } else { "base" };
        p[run]["targets"] = Value::Null;
        p
    };

    let old = read(&fixtures.join("run.json"));
    let file = fixtures.join("run.json");
    let again = run_json(
        d.path(),
        &[
            "rerun",
            file.to_str().unwrap(),
            "--target",
            target,
            "--out",
            "run",
        ],
    );
    assert_eq!(comparable(&old["plan"]), comparable(&again["plan"]));
    assert_eq!(again["plan"]["run"]["targets"][0]["paths"][0], target);
    assert_eq!(counts(&old), counts(&again), "the same I/Os");
    assert_eq!(num(&again, "/summary/total/ios"), 7992.0);

    let old = read(&fixtures.join("sweep.json"));
    let file = fixtures.join("sweep.json");
    let again = run_json(
        d.path(),
        &[
            "rerun",
            file.to_str().unwrap(),
            "--target",
            target,
            "--out",
            "sweep",
        ],
    );
    assert_eq!(comparable(&old["plan"]), comparable(&again["plan"]));
    let iops = |v: &Value| -> Vec<f64> {
        v["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["iops"].as_f64().unwrap())
            .collect()
    };
    assert_eq!(iops(&again), vec![999.0, 1998.0]);
    assert_eq!(iops(&old), iops(&again));
}

#[test]
fn rerun_refuses_what_it_cannot_rerun() {
    let d = scratch();
    std::fs::write(
        d.path().join("no-plan.json"),
        r#"{"schema": "oio.run", "schema_version": 1}"#,
    )
    .unwrap();
    std::fs::write(d.path().join("bad.json"), "{\n  \"plan\": ").unwrap();
    std::fs::write(
        d.path().join("odd-plan.json"),
        r#"{"schema": "oio.run", "schema_version": 1, "plan": {"kind": "teleport"}}"#,
    )
    .unwrap();
    // Read by the one document reader: no head is not an oio document at all.
    std::fs::write(
        d.path().join("headless.json"),
        r#"{"plan": {"kind": "run"}}"#,
    )
    .unwrap();
    for (file, expected) in [
        ("no-plan.json", "no plan in this document"),
        ("bad.json", "'bad.json' line 2 column"),
        ("odd-plan.json", "not one this oio can run"),
        (
            "headless.json",
            "no \"schema\" field: expected an oio document",
        ),
        ("missing.json", "missing.json"),
    ] {
        let out = oio()
            .current_dir(d.path())
            .args(["rerun", file])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {err}");
        assert!(err.contains(expected), "{file}: {err}");
    }
    assert!(!d.path().join("oio-results").exists(), "nothing ran");
}

/// Starts `args` in `dir`, sends SIGINT once `ready` runs are saved and the next one has
/// started (its header is on stderr: each run prints one as its workers start), and returns
/// its output and how long it took to stop after the signal. Waiting on these events, not on
/// files appearing, puts the signal inside a run on a busy machine too: right after a result
/// is saved the next run has not started yet, and a stop there leaves no partial run.
fn interrupt(dir: &Path, args: &[&str], ready: usize) -> (Output, Duration) {
    use std::io::BufRead;
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("oio"))
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line.clone());
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let results = dir.join("oio-results");
    let start = Instant::now();
    let mut started = 0;
    while started <= ready || json_files(&results).len() < ready {
        match rx.recv_timeout(Duration::from_secs(60).saturating_sub(start.elapsed())) {
            // The header's second line: "  null engine, submit per_io, O_DIRECT, 0 s ramp + 2 s measured".
            Ok(line) if line.contains(" ramp + ") => started += 1,
            Ok(_) => {}
            Err(e) => panic!("{started} runs started, {ready} expected saved, after 60 s: {e}"),
        }
    }
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let signalled = Instant::now();
    let mut out = child.wait_with_output().unwrap();
    let took = signalled.elapsed();
    out.stderr = reader.join().unwrap().into_bytes();
    (out, took)
}

/// The partial and complete run results under `dir/oio-results`.
fn partial_and_complete(dir: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    json_files(&dir.join("oio-results"))
        .into_iter()
        .filter(|p| read(p)["schema"] == "oio.run")
        .partition(|p| read(p)["partial"] == true)
}

fn check_interrupted(what: &str, dir: &Path, out: &Output, took: Duration) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{what}: {err}");
    // Each run is 2 s long: stopping "at once" is well within one run.
    assert!(
        took < Duration::from_millis(1500),
        "{what}: took {took:?} to stop"
    );
    let (partial, complete) = partial_and_complete(dir);
    assert_eq!(partial.len(), 1, "{what}: one partial result: {partial:?}");
    assert!(!complete.is_empty(), "{what}: the finished runs are kept");
    let p = read(&partial[0]);
    assert_eq!(p["stop_reason"], "interrupted");
    assert!(
        p["plan"]["run"].is_object(),
        "{what}: the partial run has its plan"
    );
}

const NULL_RUN: &str = "--engine null --rw randread --size 4M --time 2s --ramp 0 t.dat";

#[test]
fn ctrl_c_stops_compare_run_at_once_and_draws_no_comparison() {
    let d = scratch();
    let a = format!("{NULL_RUN} --qd 1");
    let b = format!("{NULL_RUN} --qd 4");
    let (out, took) = interrupt(
        d.path(),
        &[
            "compare", "--run", &a, "--run", &b, "--repeat", "3", "--json",
        ],
        1,
    );
    check_interrupted("compare --run", d.path(), &out, took);
    assert!(out.stdout.is_empty(), "no comparison from a partial set");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no comparison drawn"));
}

#[test]
fn ctrl_c_stops_sweep_and_blend_at_once_with_a_partial_result() {
    let d = scratch();
    let (out, took) = interrupt(
        d.path(),
        &[
            "sweep", "randread", "t.dat", "--size", "4M", "--engine", "null", "--qd", "1,2,4",
            "--time", "2s", "--ramp", "0", "--json",
        ],
        1,
    );
    check_interrupted("sweep", d.path(), &out, took);
    assert!(out.stdout.is_empty(), "no sweep document");
    assert!(json_files(&d.path().join("oio-results")).iter().all(|p| !p
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with("sweep-")));

    let d = scratch();
    let (out, took) = interrupt(
        d.path(),
        &[
            "blend",
            "t.dat",
            "--size",
            "4M",
            "--engine",
            "null",
            "--streams",
            "3",
            "--time",
            "2s",
            "--ramp",
            "0",
            "--json",
        ],
        1,
    );
    check_interrupted("blend", d.path(), &out, took);
    assert!(out.stdout.is_empty(), "no blend drawn");
    let (partial, complete) = partial_and_complete(d.path());
    assert!(
        partial.len() + complete.len() < 4,
        "the remaining phases never started"
    );
}

#[test]
fn the_comparison_table_of_fixed_results() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/compare");
    let out = oio()
        .current_dir(&data)
        .args(["compare", "raid5", "raid10", "--label", "raid5,raid10"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    insta::assert_snapshot!(String::from_utf8(out.stdout).unwrap());
}

#[test]
fn the_sweep_table_of_a_fixed_sweep() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sweep-sim8.json");
    let doc: oio_analysis::sweep::Sweep =
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let mut text = Vec::new();
    oio::output::sweep::print_table(&mut text, &doc).unwrap();
    insta::assert_snapshot!(String::from_utf8(text).unwrap());
}

/// A result file never grants a rerun permission to write over data (issue 22: a hand-edited
/// `allow_overwrite=true` overwrote a foreign file; `destroy_data=true` wiped a filesystem):
/// the flags come from rerun's own command line. Targets resolve where the first run ran,
/// not in the rerun's directory, and `--target` redirects them.
#[test]
fn rerun_takes_permissions_from_its_command_line_and_targets_from_the_result() {
    let d = scratch();
    let write = [
        "run",
        "--engine",
        "null",
        "--rw",
        "randwrite",
        "--bs",
        "4k",
        "--size",
        "1M",
        "--time",
        "200ms",
        "--ramp",
        "0s",
        "--seed",
        "3",
        "-q",
        "mine.dat",
    ];
    let out = oio().current_dir(d.path()).args(write).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = json_files(&d.path().join("oio-results")).remove(0);
    // Hand-edit: point the plan at a file oio did not create and grant overwriting.
    let foreign = d.path().join("foreign.dat");
    std::fs::write(&foreign, vec![7u8; 1 << 20]).unwrap();
    let mut v = read(&file);
    v["plan"]["run"]["targets"][0]["paths"][0] = Value::from(foreign.to_str().unwrap());
    v["plan"]["run"]["allow_overwrite"] = Value::Bool(true);
    v["plan"]["run"]["destroy_data"] = Value::Bool(true);
    let evil = d.path().join("evil.json");
    std::fs::write(&evil, serde_json::to_string(&v).unwrap()).unwrap();
    let o = oio()
        .current_dir(d.path())
        .args(["rerun", evil.to_str().unwrap(), "--out", "again"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("--allow-overwrite"), "{err}");
    assert!(
        err.contains("foreign.dat"),
        "the rerun names its target: {err}"
    );
    assert_eq!(
        std::fs::read(&foreign).unwrap(),
        vec![7u8; 1 << 20],
        "untouched"
    );

    // From another directory the rerun uses the file the result names and creates nothing.
    let elsewhere = d.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let again = run_json(
        &elsewhere,
        &["rerun", file.to_str().unwrap(), "--out", "res"],
    );
    assert!(!elsewhere.join("mine.dat").exists(), "no new file here");
    let used = again["targets"][0]["path"].as_str().unwrap().to_string();
    assert_eq!(Path::new(&used), d.path().join("mine.dat"));

    // --target redirects; a plan written before the directory was recorded, with a relative
    // target that is not here, is refused rather than creating a file.
    let redirected = run_json(
        &elsewhere,
        &[
            "rerun",
            file.to_str().unwrap(),
            "--out",
            "res",
            "--target",
            "new.dat",
        ],
    );
    assert_eq!(redirected["targets"][0]["path"], "new.dat");
    assert!(elsewhere.join("new.dat").exists());
    let mut old = read(&file);
    old["plan"]["run"].as_object_mut().unwrap().remove("cwd");
    std::fs::write(
        elsewhere.join("old.json"),
        serde_json::to_string(&old).unwrap(),
    )
    .unwrap();
    let o = oio()
        .current_dir(&elsewhere)
        .args(["rerun", "old.json", "--out", "res", "--target", "a=b"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("records no target 'a'"));
    let o = oio()
        .current_dir(&elsewhere)
        .args(["rerun", "old.json", "--out", "res"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("relative target 'mine.dat'"), "{err}");
    assert!(!elsewhere.join("mine.dat").exists());
}

/// A hand-edited result whose plan has an empty target list (issue 22 item 15: a worker
/// panicked "empty range", yet the rerun exited 0 with a result saved as completed with no
/// I/O): refused before anything runs, saying what is missing, and no result is saved.
#[test]
fn rerun_of_a_plan_with_no_target_paths_is_refused_before_it_runs() {
    let d = scratch();
    let out = oio()
        .current_dir(d.path())
        .args([
            "run", "--engine", "null", "--rw", "randread", "--size", "1M", "--time", "200ms",
            "--ramp", "0s", "-q", "t.dat",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = json_files(&d.path().join("oio-results")).remove(0);
    let mut v = read(&file);
    v["plan"]["run"]["targets"][0]["paths"] = Value::Array(vec![]);
    let edited = d.path().join("edited.json");
    std::fs::write(&edited, serde_json::to_string(&v).unwrap()).unwrap();
    let o = oio()
        .current_dir(d.path())
        .args(["rerun", edited.to_str().unwrap(), "--out", "again"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the plan's target list is empty: give at least one file or device"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(json_files(&d.path().join("again")).is_empty(), "no result");
}
