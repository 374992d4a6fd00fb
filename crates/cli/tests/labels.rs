//! `--label` on the commands that write results (issue 23): recorded in each document, put in
//! file names, and the name `compare`, `report` and `diagnose` give the runs.

use crate::common::{json_files, oio, run_json, scratch};
use serde_json::Value;
use std::path::Path;

const SIM: [&str; 8] = [
    "--engine",
    "null",
    "--sim",
    "servers=8,service=1ms,clock=virtual",
    "--time",
    "1s",
    "--ramp",
    "0s",
];

fn stdout_of(dir: &Path, args: &[&str]) -> String {
    let out = oio().current_dir(dir).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "oio {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_labelled_run_and_sweep_are_named_by_their_labels_in_compare_report_and_diagnose() {
    let d = scratch();
    let dir = d.path();
    // A repeated run labelled "before", a sweep labelled "after".
    let mut args = vec!["run", "--rw", "randread", "--qd", "2", "--repeat", "2"];
    args.extend(SIM);
    args.extend(["--out", "before", "--label", "before"]);
    let runs = run_json(dir, &args);
    let runs = runs.as_array().expect("an array with --repeat");
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|r| r["label"] == "before"), "{runs:?}");
    let mut args = vec!["sweep", "randread", "--qd", "1,2"];
    args.extend(SIM);
    args.extend(["--out", "after", "--label", "after"]);
    let sweep = run_json(dir, &args);
    assert_eq!(sweep["label"], "after");

    // Every file holds its label and names it.
    let before = json_files(&dir.join("before"));
    assert_eq!(before.len(), 2);
    let sweep_file = json_files(&dir.join("after"))
        .pop()
        .expect("the sweep document");
    let sweep_runs_dir = dir.join("after").join(
        sweep_file
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .split("-after")
            .next()
            .unwrap(),
    );
    let swept = json_files(&sweep_runs_dir);
    assert_eq!(swept.len(), 2, "one run per depth in {sweep_runs_dir:?}");
    for (f, label) in before
        .iter()
        .map(|f| (f, "before"))
        .chain(swept.iter().map(|f| (f, "after")))
        .chain([(&sweep_file, "after")])
    {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.contains(&format!("-{label}-")), "{name}");
        let v: Value = serde_json::from_slice(&std::fs::read(f).unwrap()).unwrap();
        assert_eq!(v["label"], label, "{name}");
    }

    // compare: the groups are named by the labels their runs carry, the directory beside.
    let swept_rel = sweep_runs_dir.strip_prefix(dir).unwrap().to_str().unwrap();
    let c = stdout_of(dir, &["compare", "before", swept_rel]);
    let head = c.lines().next().unwrap();
    assert!(
        head.starts_with(&format!("after ({swept_rel}) against before (before)")),
        "{c}"
    );
    let table = c.lines().nth(1).unwrap();
    assert!(table.contains("before (before)"), "{c}");

    // report: the run's section is titled by its label, the sweep by its file (which says it).
    stdout_of(dir, &["report", "before", "after", "-o", "r.html"]);
    let html = std::fs::read_to_string(dir.join("r.html")).unwrap();
    assert!(
        html.contains("Repeat group — before (2 runs) · before</h2>"),
        "no labelled section title in the report"
    );
    assert!(
        html.contains("-after-randread"),
        "the sweep's name holds its label"
    );

    // diagnose: one group per label, each named by it.
    let g = run_json(dir, &["diagnose", "before", "after"]);
    let labels: Vec<&str> = g["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["label"].as_str().unwrap())
        .collect();
    assert!(
        labels.iter().any(|l| l.starts_with("before: randread")),
        "{labels:?}"
    );
    assert!(
        labels.iter().any(|l| l.contains("after: randread")),
        "{labels:?}"
    );

    // A rerun keeps the label: it repeats the labelled experiment.
    let again = run_json(
        dir,
        &["rerun", before[0].to_str().unwrap(), "--out", "again"],
    );
    assert_eq!(again["label"], "before");
}

#[test]
fn a_label_must_be_a_printable_name() {
    let d = scratch();
    for bad in ["", " ", "a\tb"] {
        let mut args = vec!["run", "--rw", "randread"];
        args.extend(SIM);
        args.extend(["--out", "o", "--label", bad]);
        let out = oio().current_dir(d.path()).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--label") && err.contains("printable characters"),
            "{err}"
        );
    }
    assert!(!d.path().join("o").exists(), "nothing ran");
}
