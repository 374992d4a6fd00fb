//! Real inputs: localized perfmon logs, diskspd / IOMeter / vdbench files imported as
//! workloads, and fio per-I/O logs against fio's own JSON.

use crate::common::{missing, oio, scratch};
use oio_analysis::characterize::{characterize, Options};
use oio_telemetry::perfmon_locale::{self as loc, Locale};
use oio_telemetry::{parse_files, ParseOptions};
use std::path::Path;

const COUNTERS: [&str; 9] = [
    "Disk Reads/sec",
    "Disk Writes/sec",
    "Avg. Disk Bytes/Read",
    "Avg. Disk Bytes/Write",
    "Avg. Disk sec/Read",
    "Avg. Disk sec/Write",
    "Avg. Disk Queue Length",
    "Current Disk Queue Length",
    "% Idle Time",
];

/// An English perfmon CSV as relog writes it: two disks, one busy, the other idle, 40
/// samples 15 s apart from 11/23/2026 13:59:30 (so the date has a day above 12).
/// Columns (object, instance, English counter) and rows (sample number, values).
type Capture = (Vec<(String, String, &'static str)>, Vec<(u32, Vec<f64>)>);

fn english_rows() -> Capture {
    let mut cols = Vec::new();
    for inst in ["0 C:", "1 E:"] {
        for c in COUNTERS {
            cols.push(("PhysicalDisk".to_string(), inst.to_string(), c));
        }
    }
    let mut rows = Vec::new();
    for k in 0..40u32 {
        let busy = k % 10 < 7;
        let mut v = Vec::new();
        for disk in 0..2 {
            let (r, w) = if disk == 0 && busy {
                (900.0 + 13.25 * k as f64, 310.5 + 3.75 * k as f64)
            } else {
                (2.5, 1.25)
            };
            let rsize = if k % 3 == 0 { 65536.0 } else { 8192.0 };
            let q = if disk == 0 && busy {
                6.5 + 0.25 * k as f64
            } else {
                0.125
            };
            v.extend([
                r,
                w,
                rsize,
                4096.0,
                0.0045,
                0.00075,
                q,
                q.round(),
                if busy { 12.5 } else { 97.5 },
            ]);
        }
        rows.push((k, v));
    }
    (cols, rows)
}

/// The capture written in `l`'s names, number and date conventions.
pub(crate) fn perfmon_text(l: &Locale, delim: char, quote_values: bool) -> String {
    let (cols, rows) = english_rows();
    let q = |s: &str| format!("\"{s}\"");
    let mut out = String::new();
    let tag = if delim == '\t' { "TSV" } else { "CSV" };
    out.push_str(&q(&format!(
        "(PDH-{tag} 4.0) (W. Europe Standard Time)(-60)"
    )));
    for (obj, inst, c) in &cols {
        let obj = if obj == "PhysicalDisk" {
            l.physical_disk[0]
        } else {
            l.logical_disk[0]
        };
        let counter = loc::name_of(l, loc::counter_of(loc::ENGLISH, c).unwrap());
        out.push(delim);
        out.push_str(&q(&format!("\\\\SQL01\\{obj}({inst})\\{counter}")));
    }
    out.push_str("\r\n");
    for (k, vals) in rows {
        let secs = 13 * 3600 + 59 * 60 + 30 + 15 * k;
        let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
        let date = match l.date_order {
            loc::DateOrder::Mdy => "11/23/2026".to_string(),
            loc::DateOrder::Dmy if l.tag == "de-DE" => "23.11.2026".to_string(),
            loc::DateOrder::Dmy => "23/11/2026".to_string(),
            loc::DateOrder::Ymd => "2026-11-23".to_string(),
        };
        let frac = if l.decimal_comma { ",000" } else { ".000" };
        out.push_str(&q(&format!("{date} {h:02}:{m:02}:{s:02}{frac}")));
        for v in vals {
            out.push(delim);
            if k == 0 {
                // The first sample has no interval before it: perfmon leaves rates empty.
                out.push_str(&q(" "));
                continue;
            }
            let mut t = format!("{v}");
            if l.decimal_comma {
                t = t.replace('.', ",");
            }
            out.push_str(&if quote_values { q(&t) } else { t });
        }
        out.push_str("\r\n");
    }
    out
}

fn utf16le(text: &str) -> Vec<u8> {
    let mut b = vec![0xFF, 0xFE];
    for u in text.encode_utf16() {
        b.extend_from_slice(&u.to_le_bytes());
    }
    b
}

#[test]
fn german_and_french_perfmon_characterize_like_the_english_original() {
    let dir = scratch();
    let de = loc::by_tag("de").unwrap();
    let fr = loc::by_tag("fr").unwrap();
    let en = dir.path().join("en.csv");
    std::fs::write(&en, perfmon_text(loc::ENGLISH, ',', true)).unwrap();
    // German as relog writes it on a German Windows: UTF-16, quoted values with commas.
    let de_path = dir.path().join("de.csv");
    std::fs::write(&de_path, utf16le(&perfmon_text(de, ',', true))).unwrap();
    // French as Performance Monitor's "Save data as" tab separated file.
    let fr_path = dir.path().join("fr.tsv");
    std::fs::write(&fr_path, perfmon_text(fr, '\t', false)).unwrap();

    let opts = Options {
        device: Some("0 C:".into()),
        name: Some("sql01".into()),
        ..Default::default()
    };
    let read = |p: &Path| {
        let obs = parse_files(&[p], &ParseOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let c = characterize(&obs, &opts).unwrap();
        (obs, c)
    };
    let (eo, ec) = read(&en);
    let (dobs, dc) = read(&de_path);
    let (fobs, fc) = read(&fr_path);
    assert!(
        eo.source.locale.as_deref().unwrap().starts_with("en-US"),
        "{:?}",
        eo.source.locale
    );
    let dl = dobs.source.locale.as_deref().unwrap();
    assert!(
        dl.starts_with("de-DE") && dl.contains("decimal comma") && dl.contains("dmy"),
        "{dl}"
    );
    let fl = fobs.source.locale.as_deref().unwrap();
    assert!(
        fl.starts_with("fr-FR") && fl.contains("tab separated"),
        "{fl}"
    );
    assert_eq!(eo.start, dobs.start, "the same instants, in UTC");
    assert_eq!(eo.start, fobs.start);
    assert!(ec.intervals_used > 10, "{ec:?}");
    for c in [&dc, &fc] {
        assert_eq!(c.workload.streams, ec.workload.streams);
        assert_eq!(c.read_pct, ec.read_pct);
        assert_eq!(c.intervals_used, ec.intervals_used);
        assert_eq!(c.outstanding, ec.outstanding);
    }

    // The command says which locale it read, and the flags override detection.
    let out = oio()
        .args(["characterize", "--device", "0 C:"])
        .arg(&de_path)
        .output()
        .unwrap();
    let so = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(so.contains("UTF-16LE, locale de-DE (German"), "{so}");
    let out = oio()
        .args(["characterize", "--decimal", "point", "--device", "0 C:"])
        .arg(&de_path)
        .output()
        .unwrap();
    let se = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{se}");
    assert!(
        se.contains("de.csv:3:") && se.contains("--decimal point"),
        "{se}"
    );
    // Dates forced to month-first: 23 is no month, and the error says where and why.
    let out = oio()
        .args(["characterize", "--date-order", "mdy", "--device", "0 C:"])
        .arg(&fr_path)
        .output()
        .unwrap();
    let se = String::from_utf8_lossy(&out.stderr);
    assert!(se.contains("fr.tsv:2:") && se.contains("mdy order"), "{se}");
}

#[test]
fn every_locale_round_trips_and_blg_says_how_to_convert() {
    let dir = scratch();
    let en =
        oio_telemetry::perfmon::parse("en.csv", &perfmon_text(loc::ENGLISH, ',', true)).unwrap();
    for l in &loc::LOCALES {
        let text = perfmon_text(l, ';', false);
        let obs = oio_telemetry::perfmon::parse(&format!("{}.csv", l.tag), &text)
            .unwrap_or_else(|e| panic!("{}: {e}", l.tag));
        assert!(obs.source.locale.as_deref().unwrap().starts_with(l.tag));
        assert_eq!(obs.devices.len(), 2, "{}", l.tag);
        for (a, b) in obs.devices.iter().zip(&en.devices) {
            assert_eq!(a.intervals, b.intervals, "{}", l.tag);
        }
    }
    let blg = dir.path().join("DataCollector01.blg");
    std::fs::write(&blg, b"\x00\x01binary").unwrap();
    let out = oio().arg("characterize").arg(&blg).output().unwrap();
    let se = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    let want = format!(
        "relog {} -f csv -o {}",
        blg.display(),
        blg.with_extension("csv").display()
    );
    assert!(se.contains(&want), "{se}");
}

/// An IOMeter 1.1 configuration with seed 002's two access specifications.
pub(crate) const ICF: &str = "Version 1.1.0 \r
'TEST SETUP ====================================================================\r
'Test Description\r
\tseed 002\r
'Run Time\r
'\thours      minutes    seconds\r
\t0          5          0\r
'Ramp Up Time (s)\r
\t30\r
'END test setup\r
'ACCESS SPECIFICATIONS =========================================================\r
'Access specification name,default assignment\r
\tTEMPDB,NONE\r
'size,% of size,% reads,% random,delay,burst,align,reply\r
\t65536,34,100,100,0,1,0,0\r
\t8192,16,100,100,0,1,0,0\r
\t65536,42,0,100,0,1,0,0\r
\t512,8,0,100,0,1,0,0\r
'Access specification name,default assignment\r
\tLOGS,NONE\r
'size,% of size,% reads,% random,delay,burst,align,reply\r
\t61440,100,0,0,5,2,0,0\r
'END access specifications\r
'MANAGER LIST ==================================================================\r
'Manager ID, manager name\r
\t1,SQL01\r
'Manager network address\r
\t\r
'Worker\r
\tWorker 1\r
'Worker type\r
\tDISK\r
'Default target settings for worker\r
'Number of outstanding IOs,test connection rate,transactions per connection,use fixed seed,fixed seed value\r
\t16,DISABLED,1,DISABLED,0\r
'Disk maximum size,starting sector,Data pattern\r
\t0,0,0\r
'End default target settings for worker\r
'Assigned access specs\r
\tTEMPDB\r
'End assigned access specs\r
'Target assignments\r
'Target\r
\tE: \"TEMPDB\"\r
'End target\r
'End target assignments\r
'End worker\r
'Worker\r
\tWorker 2\r
'Worker type\r
\tDISK\r
'Default target settings for worker\r
'Number of outstanding IOs,test connection rate,transactions per connection,use fixed seed,fixed seed value\r
\t16,DISABLED,1,DISABLED,0\r
'End default target settings for worker\r
'Assigned access specs\r
\tTEMPDB\r
'End assigned access specs\r
'End worker\r
'End manager\r
'END manager list\r
Version 1.1.0 \r
";

#[test]
fn iometer_icf_with_two_access_specs_imports_exact_percentages() {
    let dir = scratch();
    let icf = dir.path().join("seed002.icf");
    std::fs::write(&icf, ICF).unwrap();
    let out = oio()
        .args(["import", "-o"])
        .arg(dir.path().join("w.toml"))
        .arg(&icf)
        .output()
        .unwrap();
    let se = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{se}");
    let tempdb =
        oio_core::workload::Workload::from_file(&dir.path().join("w-1-TEMPDB.toml")).unwrap();
    let logs = oio_core::workload::Workload::from_file(&dir.path().join("w-2-LOGS.toml")).unwrap();
    let want = oio_core::workload::Workload::from_toml(
        r#"
name = "TEMPDB"
[[stream]]
name = "main"
read_pct = 50
read_bs = "64k:68,8k:32"
write_bs = "64k:84,512:16"
random_pct = 100
outstanding = 32
workers = 2
"#,
        "want",
    )
    .unwrap();
    assert_eq!(tempdb.streams, want.streams);
    assert_eq!(tempdb.name, "TEMPDB");
    let l = &logs.streams[0];
    assert_eq!(
        (l.read_pct.0, l.random_pct.0, l.outstanding),
        (0.0, 0.0, Some(1))
    );
    assert_eq!(l.bs.as_ref().unwrap().to_string(), "60k");
    // IOMeter's transfer delay after each burst is oio's think time.
    assert_eq!(
        (l.think_time.map(|t| t.0.as_millis()), l.think_blocks),
        (Some(5), Some(2))
    );
    // Nothing dropped silently: the unassigned spec, the setup, the targets.
    for w in [
        "'LOGS' is assigned to no worker",
        "test setup (run time, ramp-up, cycling)",
        "targets of the manager list",
    ] {
        assert!(se.contains(w), "{w:?} missing in {se}");
    }
}

fn export_import(profile_toml: &str, tool: &str) -> (oio_core::workload::Workload, String) {
    let dir = scratch();
    let w = dir.path().join("w.toml");
    std::fs::write(&w, profile_toml).unwrap();
    let out = oio()
        .args(["export", "--to", tool])
        .arg(&w)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let job = dir.path().join(match tool {
        "diskspd" => "job.cmd",
        "fio" => "job.fio",
        _ => "job.vdb",
    });
    std::fs::write(&job, &out.stdout).unwrap();
    let out = oio().arg("import").arg(&job).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let back =
        oio_core::workload::Workload::from_toml(&String::from_utf8_lossy(&out.stdout), "import")
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    (back, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn export_then_import_gives_the_same_workload() {
    let oltp = r#"
name = "oltp"
[[stream]]
name = "main"
read_pct = 70
bs = "8k"
random_pct = 100
outstanding = 32
workers = 4
"#;
    let scan = r#"
name = "scan"
[[stream]]
name = "main"
read_pct = 100
bs = "1m"
random_pct = 0
outstanding = 8
"#;
    // A log writer that thinks 5 ms after every 4 writes: diskspd's -j5 -i4.
    let paced = r#"
name = "paced"
[[stream]]
name = "main"
read_pct = 0
bs = "8k"
random_pct = 0
outstanding = 1
think_time = "5ms"
think_blocks = 4
"#;
    for toml in [oltp, scan, paced] {
        let want = oio_core::workload::Workload::from_toml(toml, "want").unwrap();
        let (back, warnings) = export_import(toml, "diskspd");
        assert_eq!(back.streams, want.streams, "diskspd");
        // The run options in the exported command are named, not dropped.
        assert!(warnings.contains("-d60 is a run option"), "{warnings}");
        assert!(warnings.contains("-Sh (caching)"), "{warnings}");
        assert!(
            warnings.contains("target oio-test.dat is not imported"),
            "{warnings}"
        );
    }
    // vdbench keeps size mixes per direction, and several streams by their skew.
    let tempdb = r#"
name = "tempdb"
[[stream]]
name = "main"
read_pct = 2
read_bs = "64k:68,8k:32"
write_bs = "64k:83,512:17"
random_pct = 100
outstanding = 600
"#;
    let two = r#"
name = "two"
[[stream]]
name = "data"
read_pct = 70
bs = "8k"
random_pct = 100
outstanding = 24
[[stream]]
name = "log"
read_pct = 0
bs = "60k"
random_pct = 0
outstanding = 8
"#;
    // fio keeps everything a workload says: size mixes per direction, workers (numjobs,
    // with iodepth per job), several streams (one job each) and skew.
    let skewed = r#"
name = "skewed"
[[stream]]
name = "data"
read_pct = 70
bs = "8k"
random_pct = 100
outstanding = 24
workers = 2
distribution = "zipf:1.2"
[[stream]]
name = "log"
read_pct = 0
bs = "60k"
random_pct = 0
outstanding = 8
"#;
    for toml in [oltp, scan, tempdb, two, skewed] {
        let want = oio_core::workload::Workload::from_toml(toml, "want").unwrap();
        let (back, warnings) = export_import(toml, "fio");
        assert_eq!(back.streams, want.streams, "fio {}", want.name);
        assert_eq!(back.name, want.name);
        assert!(
            warnings.contains("runtime=60: run with --time 60s"),
            "{warnings}"
        );
    }
    for toml in [oltp, scan, tempdb, two] {
        let want = oio_core::workload::Workload::from_toml(toml, "want").unwrap();
        let (mut back, warnings) = export_import(toml, "vdbench");
        let mut want_streams = want.streams.clone();
        // vdbench has one thread count per run: workers are not kept.
        for s in &mut want_streams {
            s.workers = 1;
        }
        if want.streams.len() > 1 {
            // Several streams share one run's integer skews (percent of all I/Os): the read
            // share of a stream comes back within the rounding of its two skews.
            for (b, w) in back.streams.iter_mut().zip(&want_streams) {
                assert!((b.read_pct.0 - w.read_pct.0).abs() < 1.0, "{b:?}");
                b.read_pct = w.read_pct;
            }
        }
        assert_eq!(back.streams, want_streams, "vdbench {}", want.name);
        assert_eq!(back.name, want.name);
        assert!(
            warnings.contains("elapsed=60 is a run option"),
            "{warnings}"
        );
        assert!(
            warnings.contains("lun=oio-test.dat is not imported"),
            "{warnings}"
        );
    }
}

#[test]
fn unknown_options_are_named() {
    let dir = scratch();
    let cmd = dir.path().join("x.cmd");
    std::fs::write(
        &cmd,
        "REM test\r\ndiskspd -b8K -r4K -w30 -t2 -o4 -g500 -Su -c10G D:\\t.dat\r\n",
    )
    .unwrap();
    let out = oio().arg("import").arg(&cmd).output().unwrap();
    let se = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{se}");
    assert!(se.contains("-g500 is not honoured"), "{se}");
    let w = oio_core::workload::Workload::from_toml(&String::from_utf8_lossy(&out.stdout), "x")
        .unwrap();
    let s = &w.streams[0];
    assert_eq!(
        (s.read_pct.0, s.outstanding, s.workers, s.align.map(|a| a.0)),
        (70.0, Some(8), 2, Some(4096))
    );
    let vdb = dir.path().join("x.vdb");
    std::fs::write(&vdb, "sd=sd1,lun=/dev/sdb\nwd=wd1,sd=sd1,xfersize=4k,rdpct=100,seekpct=100,rhpct=50\nrd=run1,wd=wd1,iorate=5000,elapsed=10,threads=4\n").unwrap();
    let out = oio().arg("import").arg(&vdb).output().unwrap();
    let se = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{se}");
    for w in [
        "wd=wd1: rhpct=50 is not honoured",
        "rd=run1: iorate=5000 is not honoured",
        "elapsed=10 is a run option",
        "lun=/dev/sdb is not imported",
    ] {
        assert!(se.contains(w), "{w:?} missing in {se}");
    }
    let w = oio_core::workload::Workload::from_toml(&String::from_utf8_lossy(&out.stdout), "x")
        .unwrap();
    assert_eq!(
        (w.name.as_str(), w.streams[0].outstanding),
        ("run1", Some(4))
    );
    let bad = dir.path().join("bad.icf");
    std::fs::write(&bad, "'Access specification name,default assignment\nA,NONE\n'size,% of size,% reads,% random,delay,burst,align,reply\n4096,100,x,0,0,1,0,0\n").unwrap();
    let out = oio().arg("import").arg(&bad).output().unwrap();
    let se = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(se.contains("bad.icf:4: column 3 (% reads)"), "{se}");
}

/// fio's own mean latency (ns) and Little's-law outstanding I/O, per direction, from its JSON.
fn fio_json_truth(path: &Path) -> ([f64; 2], f64) {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let job = &v["jobs"][0];
    let mut lat = [0.0; 2];
    let mut q = 0.0;
    for (i, d) in ["read", "write"].iter().enumerate() {
        let iops = job[d]["iops"].as_f64().unwrap();
        lat[i] = job[d]["lat_ns"]["mean"].as_f64().unwrap();
        q += iops * lat[i] / 1e9;
    }
    (lat, q)
}

fn run_fio(dir: &Path, name: &str, extra: &[&str]) -> bool {
    let mut args = vec![
        format!("--name={name}"),
        "--filename=fio.dat".into(),
        "--size=64m".into(),
        "--rw=randrw".into(),
        "--rwmixread=70".into(),
        "--bs=4k".into(),
        "--iodepth=15".into(),
        "--ioengine=libaio".into(),
        "--direct=1".into(),
        "--time_based".into(),
        "--runtime=3".into(),
        "--output-format=json".into(),
        format!("--output={name}.json"),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let out = std::process::Command::new("fio")
        .current_dir(dir)
        .args(&args)
        .output();
    match out {
        Ok(o) => {
            assert!(
                o.status.success(),
                "fio: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            true
        }
        Err(_) => false,
    }
}

#[test]
fn fio_logs_characterize_like_fios_json() {
    let dir = scratch();
    let d = dir.path();
    let per_io = ["--write_lat_log=pio", "--log_offset=1"];
    if !run_fio(d, "pio", &per_io) {
        missing("fio (scripts/test installs it)");
        return;
    }
    let windowed = [
        "--write_lat_log=win",
        "--write_iops_log=win",
        "--write_bw_log=win",
        "--log_avg_msec=500",
    ];
    assert!(run_fio(d, "win", &windowed));
    // A sequential 50/50 job of another size, averaged the same way.
    let seq = [
        "--write_lat_log=seq",
        "--write_iops_log=seq",
        "--write_bw_log=seq",
        "--log_avg_msec=500",
        "--rw=rw",
        "--rwmixread=50",
        "--bs=64k",
    ];
    assert!(run_fio(d, "seq", &seq));
    let opts = Options {
        busy_queue: 0.0,
        ..Default::default()
    };
    let cases: [(&str, &[&str]); 5] = [
        (
            "pio",
            &["pio_lat.1.log", "pio_clat.1.log", "pio_slat.1.log"],
        ),
        ("pio", &["pio_clat.1.log", "pio_slat.1.log"]),
        ("win", &["win_lat.1.log", "win_iops.1.log", "win_bw.1.log"]),
        // Averaged clat + slat, without the lat log: their means add up to it.
        (
            "win",
            &[
                "win_clat.1.log",
                "win_slat.1.log",
                "win_iops.1.log",
                "win_bw.1.log",
            ],
        ),
        ("seq", &["seq_lat.1.log", "seq_iops.1.log", "seq_bw.1.log"]),
    ];
    for (job, files) in cases {
        let (lat, q) = fio_json_truth(&d.join(format!("{job}.json")));
        let paths: Vec<std::path::PathBuf> = files.iter().map(|f| d.join(f)).collect();
        let refs: Vec<&Path> = paths.iter().map(|p| p.as_path()).collect();
        let obs = parse_files(&refs, &ParseOptions::default()).unwrap();
        let c = characterize(&obs, &opts).unwrap();
        let what = format!("{files:?}: {c:?}");
        assert!(q > 5.0, "fio kept {q} in flight; expected about 15");
        // Averaged logs say no window's I/O count: each latency window is weighed by the
        // I/Os the iops log gives for its time, which fio's helper thread samples on its own
        // clock. Where a window's latency is far from the rest (fio or the device stalled),
        // neither log says how many I/Os completed in it: oio says the figures are estimates
        // then, and such runs (a neighbour writing on the device) came within 0.80 to 1.77
        // times fio's figures; without a stall within 3 %. Per-I/O logs count every I/O.
        let averaged = job != "pio";
        // A stall, as the test sees it: a window 3 times slower than the median of its
        // direction (the median of the full windows; the last row, fio's final flush of the
        // I/Os in flight at the end, is no stall).
        let stalled = averaged && {
            let name = format!("{job}_lat.1.log");
            let rows = oio_telemetry::fio::parse_log_rows(
                &name,
                &std::fs::read_to_string(d.join(&name)).unwrap(),
            )
            .unwrap();
            [0u8, 1].iter().any(|&dir| {
                let v: Vec<u64> = rows
                    .iter()
                    .filter(|r| r.ddir == dir)
                    .map(|r| r.value)
                    .collect();
                let mut full = v[..v.len().saturating_sub(2)].to_vec();
                full.sort_unstable();
                full.get(full.len() / 2)
                    .is_some_and(|&m| v[..v.len().saturating_sub(1)].iter().any(|&x| x > 3 * m))
            })
        };
        let warned = c.envelope.warnings.iter().any(|w| w.contains("stalled"));
        assert!(!stalled || warned, "a stall the test sees is said: {what}");
        // What the test measured sets the bounds: a stall the run had, as a factor.
        let within = |got: f64, want: f64, tol: f64| {
            if warned {
                got <= 2.0 * want && got >= want / 2.0
            } else {
                (got - want).abs() <= tol * want
            }
        };
        assert!(
            within(c.outstanding.mean, q, 0.10),
            "outstanding {} vs fio's {q} (stall said: {warned}): {what}",
            c.outstanding.mean
        );
        let tol = 0.05;
        if averaged {
            assert!(
                c.envelope
                    .warnings
                    .iter()
                    .any(|w| w.contains("final flush")),
                "the estimated tail is said: {what}"
            );
        }
        for (i, p) in [&c.read, &c.write].iter().enumerate() {
            let ms = p
                .latency_mean_ns
                .unwrap_or_else(|| panic!("no latency: {what}"))
                / 1e6;
            let want = lat[i] / 1e6;
            assert!(
                within(ms, want, tol),
                "{job} direction {i}: {ms} ms vs fio's {want} ms (tolerance {tol}, stall said {warned}): {what}"
            );
        }
        // The workload keeps the measured outstanding I/O, rounded (fio's own can round the
        // other way when it is near a half: within 10 % is the check above).
        assert_eq!(
            c.workload.streams[0].outstanding,
            Some(c.outstanding.mean.round() as u32),
            "{what}"
        );
    }
    // Averaged latency logs alone cannot give I/O counts: the error says what to add.
    let only = d.join("win_lat.1.log");
    let e = parse_files(&[only.as_path()], &ParseOptions::default()).unwrap_err();
    assert!(e.to_string().contains("write_iops_log"), "{e}");
}

/// A diskspd XML profile (the `<Profile>` that `diskspd -X` reads and `-Rxml` echoes) imports
/// to the same streams as the equivalent command lines; run options become notes, what oio
/// does not do is named with its line, and a broken profile is refused with file and line.
#[test]
fn diskspd_xml_profiles_import_like_their_command_lines() {
    let dir = scratch();
    let xml = dir.path().join("profile.xml");
    std::fs::write(
        &xml,
        r#"<?xml version="1.0" encoding="utf-8"?>
<Profile xmlns="http://microsoft.com/diskspd/DiskSpdConfig.xsd">
  <Progress>0</Progress>
  <ResultFormat>xml</ResultFormat>
  <TimeSpans>
    <TimeSpan>
      <CompletionRoutines>false</CompletionRoutines>
      <MeasureLatency>true</MeasureLatency>
      <Duration>60</Duration>
      <Warmup>5</Warmup>
      <Targets>
        <Target>
          <Path>D:\data.dat</Path>
          <BlockSize>8192</BlockSize>
          <Random>4096</Random>
          <WriteRatio>30</WriteRatio>
          <ThreadsPerFile>2</ThreadsPerFile>
          <RequestCount>4</RequestCount>
          <DisableOSCache>true</DisableOSCache>
          <FileSize>10737418240</FileSize>
          <BaseFileOffset>0</BaseFileOffset>
          <IOPriority>3</IOPriority>
          <Throughput>500</Throughput>
        </Target>
        <Target>
          <Path>L:\log.dat</Path>
          <BlockSize>65536</BlockSize>
          <StrideSize>65536</StrideSize>
          <WriteRatio>0</WriteRatio>
          <RequestCount>8</RequestCount>
          <ThinkTime>5</ThinkTime>
          <BurstSize>4</BurstSize>
        </Target>
      </Targets>
    </TimeSpan>
  </TimeSpans>
</Profile>
"#,
    )
    .unwrap();
    let out = oio().arg("import").arg(&xml).output().unwrap();
    let se = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{se}");
    for w in [
        "line 23: <Throughput>500 is not honoured",
        "<Duration>60: give --time 60s",
        "<Warmup>5: give --ramp 5s",
        "<FileSize>10737418240: give --size",
        "target D:\\data.dat is not imported",
    ] {
        assert!(se.contains(w), "{w:?} missing in {se}");
    }
    let from_xml =
        oio_core::workload::Workload::from_toml(&String::from_utf8_lossy(&out.stdout), "x")
            .unwrap();
    let cmd = dir.path().join("profile.cmd");
    std::fs::write(
        &cmd,
        "diskspd -b8K -r4K -w30 -t2 -o4 D:\\data.dat\r\ndiskspd -b64K -s -w0 -o8 -j5 -i4 L:\\log.dat\r\n",
    )
    .unwrap();
    let out = oio().arg("import").arg(&cmd).output().unwrap();
    assert!(out.status.success());
    let from_cmd =
        oio_core::workload::Workload::from_toml(&String::from_utf8_lossy(&out.stdout), "x")
            .unwrap();
    assert_eq!(from_xml.streams, from_cmd.streams);
    let s = &from_xml.streams;
    assert_eq!(
        (
            s[0].read_pct.0,
            s[0].random_pct.0,
            s[0].outstanding,
            s[0].workers
        ),
        (70.0, 100.0, Some(8), 2)
    );
    assert_eq!((s[1].random_pct.0, s[1].outstanding), (0.0, Some(8)));
    assert_eq!(
        (s[1].think_time.map(|t| t.0.as_millis()), s[1].think_blocks),
        (Some(5), Some(4))
    );

    // Broken XML: the file and the line of the fault.
    let bad = dir.path().join("bad.xml");
    std::fs::write(
        &bad,
        "<Profile>\n<TimeSpans>\n<TimeSpan><Targets><Target>\n<BlockSize>8K</BlockSize>\n</Target></Targets></TimeSpan></TimeSpans></Profile>\n",
    )
    .unwrap();
    let out = oio().arg("import").arg(&bad).output().unwrap();
    let se = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{se}");
    assert!(
        se.contains("bad.xml:4:") && se.contains("<BlockSize>8K"),
        "{se}"
    );
    std::fs::write(&bad, "<Profile>\n<TimeSpans>\n<TimeSpan>\n</Profile>\n").unwrap();
    let out = oio().arg("import").arg(&bad).output().unwrap();
    let se = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{se}");
    assert!(se.contains("bad.xml:4:") && se.contains("XML"), "{se}");
}
