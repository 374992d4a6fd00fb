//! Issue 42: what oio hands to fio is the same workload. Each built-in profile and a set of
//! mixed open- and closed-loop workloads is run by oio, exported to fio, run by fio on a file,
//! imported back and compared with `oio compare`; a fio job imported into oio is run by both
//! the other way. Per stream: the read share within 2 points of the workload's, sizes exact,
//! and for open loop the achieved rate within 3 % of the offered (both tools, so of each
//! other too). All workloads run one after another in one test (two at once would take each
//! other's CPU and so their rates), then the table of both tools' figures is printed and
//! every miss reported together.

use crate::common::{have, missing, oio, run_json, scratch};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

/// Seconds each tool runs a workload with an offered rate (the rate is checked) and one
/// without (only the mix and sizes are).
const OPEN_S: u64 = 3;
const CLOSED_S: u64 = 2;
/// Target file size: small, for a CI-sized test. The files are in memory (tmpfs, buffered
/// I/O in both tools): on a disk shared with other work, whether 20,000 IOPS are carried is
/// the neighbours' doing, and the test is of the tools, not of the disk.
const SIZE: &str = "32m";

/// A directory in memory (tmpfs), else the usual scratch directory.
fn memory_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::tempdir_in(shm) {
            return d;
        }
    }
    scratch()
}

/// Mixed workloads: the issue's 5,000-IOPS 70/30 stream (Poisson, and evenly spaced), a blender of an open-loop
/// Poisson stream, a closed-loop sequential writer and a rate schedule, and open loop with
/// workers, a region and a size mix.
const MIXED: &[(&str, &str)] = &[
    (
        "mix5000",
        r#"name = "mix5000"
[[stream]]
name = "data"
read_pct = 70
bs = "8k"
rate = { iops = 5000, arrival = "poisson" }
"#,
    ),
    (
        "mix5000-even",
        r#"name = "mix5000-even"
[[stream]]
name = "data"
read_pct = 70
bs = "8k"
rate = 5000
"#,
    ),
    (
        "blender",
        r#"name = "blender"
[[stream]]
name = "oltp"
read_pct = 70
bs = "8k"
rate = 3000
[[stream]]
name = "log"
read_pct = 0
bs = "64k"
random_pct = 0
outstanding = 2
think_time = "1ms"
[[stream]]
name = "report"
read_pct = 100
read_bs = "64k"
[stream.rate]
schedule = [ { for = "1s", iops = 500 }, { for = "1s", iops = 2000 } ]
"#,
    ),
    (
        "workers-region",
        r#"name = "workers-region"
[[stream]]
name = "app"
read_pct = 60
read_bs = "4k:50,16k:50"
write_bs = "8k"
workers = 2
region = { offset = "25%", length = "8m" }
rate = 4000
[[stream]]
name = "scan"
read_pct = 100
read_bs = "128k"
random_pct = 0
outstanding = 4
think_time = "1ms"
"#,
    ),
];

/// A fio job a storage team might hand over: imported into oio, run by both.
const FIO_JOB: &str = "; a storage team's job
[global]
filename=fio-data.bin
size=32m
ioengine=libaio
direct=0
time_based=1
runtime=3
norandommap=1
randrepeat=0
group_reporting=1

[oltp]
rw=randrw
rwmixread=70
bssplit=4k/50:16k/50,8k/100
iodepth=64
rate_iops=2800,1200

[seqlog]
new_group
rw=write
bs=32k
iodepth=2
thinktime=1000
";

/// One stream's figures from a result: name, IOPS, read share %, read and write I/Os, mean
/// size of reads and writes (bytes), and the size mixes the result's workload records.
#[derive(Debug, Clone)]
struct Figures {
    iops: f64,
    read_pct: f64,
    ios: u64,
    mean_read: f64,
    mean_write: f64,
    read_mix: Option<String>,
    write_mix: Option<String>,
}

fn streams_of(result: &Value) -> Vec<(String, Figures)> {
    let specs = result["workload"]["stream"]
        .as_array()
        .expect("workload streams");
    result["streams"]
        .as_array()
        .expect("stream summaries")
        .iter()
        .map(|s| {
            let name = s["name"].as_str().unwrap().to_string();
            let sum = &s["summary"];
            let r = sum["read"]["ios"].as_u64().unwrap_or(0);
            let w = sum["write"]["ios"].as_u64().unwrap_or(0);
            let spec = specs
                .iter()
                .find(|x| x["name"].as_str() == Some(&name))
                .unwrap_or_else(|| panic!("no workload stream {name} in {result}"));
            let mix = |k: &str| {
                spec.get(k)
                    .or_else(|| spec.get("bs"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            };
            let mean = |d: &str| sum[d]["mean_io_bytes"].as_f64().unwrap_or(0.0);
            (
                name,
                Figures {
                    iops: sum["total"]["iops"].as_f64().unwrap(),
                    read_pct: r as f64 * 100.0 / (r + w).max(1) as f64,
                    ios: r + w,
                    mean_read: mean("read"),
                    mean_write: mean("write"),
                    read_mix: mix("read_bs"),
                    write_mix: mix("write_bs"),
                },
            )
        })
        .collect()
}

/// What the workload asks of one stream: read share, and the mean offered rate over `secs`
/// (None in closed loop).
fn asked(workload: &Value, stream: &str, secs: f64) -> (f64, Option<f64>) {
    let s = workload["stream"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"].as_str() == Some(stream))
        .unwrap();
    let read = s["read_pct"].as_f64().unwrap();
    let Some(rate) = s.get("rate") else {
        return (read, None);
    };
    // The offered I/Os over the run, integrated over bursts or the schedule (each repeats).
    let base = rate["iops"].as_f64().unwrap_or(0.0);
    let mut segments: Vec<(f64, f64)> = Vec::new();
    if let Some(sched) = rate.get("schedule").and_then(Value::as_array) {
        for g in sched {
            let d = g["for"].as_str().unwrap();
            let secs = oio_core::units::parse_duration(d).unwrap().as_secs_f64();
            segments.push((secs, g["iops"].as_f64().unwrap()));
        }
    } else if let Some(b) = rate.get("burst_iops").and_then(Value::as_f64) {
        let on = oio_core::units::parse_duration(rate["burst_on"].as_str().unwrap()).unwrap();
        let off = oio_core::units::parse_duration(rate["burst_off"].as_str().unwrap()).unwrap();
        segments = vec![(on.as_secs_f64(), b), (off.as_secs_f64(), base)];
    } else {
        return (read, Some(base));
    }
    let (mut t, mut ios) = (0.0, 0.0);
    'run: loop {
        for &(len, iops) in &segments {
            let step = len.min(secs - t);
            ios += step * iops;
            t += step;
            if t >= secs {
                break 'run;
            }
        }
    }
    (read, Some(ios / secs))
}

fn fio(dir: &Path, job: &str, out: &str) {
    // As the exported file says: the file laid out first, as oio fills its own before it
    // measures (laid out inside the run, one of a stream's two workers ran 1.3 s of 3 s).
    let o = Command::new("fio")
        .current_dir(dir)
        .args(["--create_only=1", job])
        .output()
        .expect("fio runs");
    assert!(o.status.success(), "fio --create_only=1 {job}: {o:?}");
    let o = Command::new("fio")
        .current_dir(dir)
        .args([job, "--output-format=json+", &format!("--output={out}")])
        .output()
        .expect("fio runs");
    assert!(
        o.status.success(),
        "fio {job}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn oio_ok(dir: &Path, args: &[&str]) -> String {
    let o = oio().current_dir(dir).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "oio {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

/// The case: the workload (a built-in profile's name or a file in `dir`), and the fio job
/// to run (exported from it, or the original for a job imported from fio).
struct Case {
    label: String,
    workload: String,
    fio_job: String,
    secs: u64,
}

/// Runs one case: oio's result and fio's (imported), compared by `oio compare`.
fn run_case(dir: &Path, c: &Case) -> (Value, Value) {
    let secs = c.secs.to_string() + "s";
    let oio_json = dir.join(format!("{}.oio-run.json", c.label));
    let w = if dir.join(&c.workload).exists() {
        vec!["-w", c.workload.as_str()]
    } else {
        vec!["-p", c.workload.as_str()]
    };
    let target = format!("{}.oio-data.bin", c.label);
    let mut args = vec!["run"];
    args.extend(&w);
    args.extend([
        "--time",
        &secs,
        "--ramp",
        "0s",
        "--size",
        SIZE,
        "--buffered",
        "--out",
        "oio-results",
    ]);
    args.push(&target);
    let ours = run_json(dir, &args);
    std::fs::write(&oio_json, serde_json::to_vec(&ours).unwrap()).unwrap();
    let oio_path = oio_json.to_str().unwrap().to_string();
    let fio_json = format!("{}.fio.json", c.label);
    fio(dir, &c.fio_job, &fio_json);
    let imported = format!("{}.fio.oio.json", c.label);
    oio_ok(dir, &["import", &fio_json, "-o", &imported]);
    let theirs = read_json(&dir.join(&imported));
    // `oio compare` reads fio's run as an oio run of the same shape: its totals are the files'.
    let cmp = run_json(dir, &["compare", &oio_path, &imported]);
    let groups = cmp["groups"].as_array().unwrap();
    for (g, r) in groups.iter().zip([&ours, &theirs]) {
        let want = r["summary"]["total"]["iops"].as_f64().unwrap();
        let got = g["values"]["iops"].as_f64().unwrap();
        assert!((got - want).abs() <= want * 1e-9, "compare {got} vs {want}");
    }
    // The data files are in memory: gone before the next case.
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.file_name().to_string_lossy().ends_with("data.bin") {
            let _ = std::fs::remove_file(e.path());
        }
    }
    (ours, theirs)
}

#[test]
fn exports_to_fio_run_the_same_workload_and_fio_jobs_come_back() {
    if !have("fio") {
        missing("fio (apt-get install -y fio)");
        return;
    }
    let d = memory_dir();
    let dir = d.path();
    let mut cases = Vec::new();
    for name in oio_core::profiles::names() {
        cases.push((name.to_string(), name.to_string()));
    }
    for (name, toml) in MIXED {
        std::fs::write(dir.join(format!("{name}.toml")), toml).unwrap();
        cases.push((name.to_string(), format!("{name}.toml")));
    }
    let mut runs: Vec<Case> = Vec::new();
    for (label, workload) in cases {
        let open = {
            let w = if workload.ends_with(".toml") {
                oio_core::workload::Workload::from_file(&dir.join(&workload)).unwrap()
            } else {
                oio_core::profiles::profile(&workload).unwrap()
            };
            w.streams.iter().any(|s| s.rate.is_some())
        };
        let secs = if open { OPEN_S } else { CLOSED_S };
        let job = format!("{label}.fio");
        oio_ok(
            dir,
            &[
                "export",
                &workload,
                "--to",
                "fio",
                "--target",
                &format!("{label}.fio-data.bin"),
                "--size",
                SIZE,
                "--time",
                &format!("{secs}s"),
                "--buffered",
                "-o",
                &job,
            ],
        );
        runs.push(Case {
            label,
            workload,
            fio_job: job,
            secs,
        });
    }
    // The other way: a fio job imported into oio, and run by both.
    std::fs::write(dir.join("team.fio"), FIO_JOB).unwrap();
    oio_ok(dir, &["import", "team.fio", "-o", "team.toml"]);
    runs.push(Case {
        label: "from-fio".into(),
        workload: "team.toml".into(),
        fio_job: "team.fio".into(),
        secs: OPEN_S,
    });

    let mut table = String::from(
        "workload          stream      oio IOPS  fio IOPS  offered  oio rd%  fio rd%  oio size r/w      fio size r/w\n",
    );
    let mut misses = Vec::new();
    for c in &runs {
        let (ours, theirs) = run_case(dir, c);
        let a = streams_of(&ours);
        let b = streams_of(&theirs);
        assert_eq!(
            a.iter().map(|x| &x.0).collect::<Vec<_>>(),
            b.iter().map(|x| &x.0).collect::<Vec<_>>(),
            "{}: one fio record per stream, named after it",
            c.label
        );
        for ((name, o), (_, f)) in a.iter().zip(&b) {
            let (want_read, offered) = asked(&ours["workload"], name, c.secs as f64);
            let _ = writeln!(
                table,
                "{:<17} {:<10} {:>9.0} {:>9.0} {:>8} {:>8.1} {:>8.1}  {:>7.0}/{:<7.0}  {:>7.0}/{:<7.0}",
                c.label,
                name,
                o.iops,
                f.iops,
                offered.map_or("closed".into(), |r| format!("{r:.0}")),
                o.read_pct,
                f.read_pct,
                o.mean_read,
                o.mean_write,
                f.mean_read,
                f.mean_write
            );
            let at = format!("{} / {name}", c.label);
            // Read share: each I/O's direction is a draw in both tools, so the share's standard
            // deviation is sqrt(p(1-p)/n); 2 points is the issue's bound, the sd says how many
            // deviations that is here.
            for (tool, x) in [("oio", o), ("fio", f)] {
                let p = want_read / 100.0;
                let sd = (p * (1.0 - p) / x.ios.max(1) as f64).sqrt() * 100.0;
                if (x.read_pct - want_read).abs() > 2.0 {
                    misses.push(format!(
                        "{at}: {tool} read {:.2} % of {} I/Os, asked {want_read} % (± 2 points; binomial sd {sd:.2} points)",
                        x.read_pct, x.ios
                    ));
                }
            }
            // Sizes: the same mixes per direction with I/O, and single sizes to the byte.
            for (dir_name, share, om, fm, omean, fmean) in [
                (
                    "read",
                    want_read,
                    &o.read_mix,
                    &f.read_mix,
                    o.mean_read,
                    f.mean_read,
                ),
                (
                    "write",
                    100.0 - want_read,
                    &o.write_mix,
                    &f.write_mix,
                    o.mean_write,
                    f.mean_write,
                ),
            ] {
                if share <= 0.0 {
                    continue;
                }
                let norm = |m: &Option<String>| {
                    m.as_deref()
                        .map(|t| t.parse::<oio_core::sizemix::SizeMix>().unwrap())
                };
                if norm(om) != norm(fm) {
                    misses.push(format!("{at}: {dir_name} sizes: oio {om:?}, fio {fm:?}"));
                }
                let single = norm(om).is_some_and(|m| m.fractions().len() == 1);
                if single && omean > 0.0 && fmean > 0.0 && omean != fmean {
                    misses.push(format!(
                        "{at}: {dir_name} mean size oio {omean} B, fio {fmean} B"
                    ));
                }
            }
            // Open loop: both carried the offered rate (3 %), so they match each other.
            if let Some(r) = offered {
                for (tool, x) in [("oio", o), ("fio", f)] {
                    if (x.iops - r).abs() > 0.03 * r {
                        misses.push(format!(
                            "{at}: {tool} achieved {:.0} IOPS of {r:.0} offered (± 3 %){}",
                            x.iops,
                            if x.iops < r {
                                ": below the offered rate; a host too busy to carry it shows in the oio run's lag and host-noise notes"
                            } else {
                                ""
                            }
                        ));
                    }
                }
                if (o.iops - f.iops).abs() > 0.03 * r {
                    misses.push(format!(
                        "{at}: oio {:.0} vs fio {:.0} IOPS (± 3 % of {r:.0})",
                        o.iops, f.iops
                    ));
                }
            }
        }
    }
    eprintln!("round trip, oio vs fio (rates in IOPS, read share %, mean size in bytes):\n{table}");
    assert!(
        misses.is_empty(),
        "{} misses:\n{}\n{table}",
        misses.len(),
        misses.join("\n")
    );
}

#[test]
fn the_exported_5000_iops_70_30_stream_says_what_maps() {
    let d = scratch();
    std::fs::write(d.path().join("mix.toml"), MIXED[0].1).unwrap();
    let job = oio_ok(
        d.path(),
        &["export", "mix.toml", "--to", "fio", "--time", "5s"],
    );
    assert!(job.contains("\nrate_iops=3500,1500\n"), "{job}");
    assert!(job.contains("\nrate_process=poisson\n"), "{job}");
    assert!(job.contains("; fidelity: exact: read_pct,"), "{job}");
    // The same words for every tool.
    for tool in ["diskspd", "vdbench"] {
        let out = oio_ok(d.path(), &["export", "mix.toml", "--to", tool]);
        assert!(out.contains("fidelity: exact: "), "{tool}: {out}");
    }
    let v = oio_ok(d.path(), &["export", "mix.toml", "--to", "vdbench"]);
    assert!(
        v.contains("not honoured by vdbench: rate (iorate=max)"),
        "{v}"
    );
}
