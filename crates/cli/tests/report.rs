//! `oio sweep` (the JSON contract on the null engine, and one real small sweep on this
//! machine) and `oio report`: the HTML opened in a real headless Chromium (no console errors,
//! every chart drawn, a screenshot that is not blank), SVG/CSV/PNG files.

use crate::common::{missing, num, oio, run_json, scratch, uses_io_uring};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn validate_sweep(v: &Value) {
    let schema: Value =
        serde_json::from_str(include_str!("../../../schema/sweep.schema.json")).unwrap();
    let validator = crate::schemas::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(v)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "does not match sweep.schema.json: {errors:#?}"
    );
}

fn null_sweep(dir: &Path, extra: &[&str]) -> Value {
    let mut args = vec![
        "sweep", "randrw", "--engine", "null", "--size", "1M", "--time", "1s", "--ramp", "0s",
        "--out", "sw",
    ];
    args.extend_from_slice(extra);
    run_json(dir, &args)
}

#[test]
fn sweep_json_contract_grid_and_production() {
    let dir = scratch();
    let v = null_sweep(
        dir.path(),
        &[
            "--qd",
            "1,4",
            "--bs",
            "4k,64k",
            "--read-pct",
            "100,50",
            "--production-qd",
            "2",
        ],
    );
    validate_sweep(&v);
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 8, "2 qd x 2 bs x 2 read shares");
    for p in points {
        assert!(p["qd"].as_u64().unwrap() >= 1);
        assert!(p["iops"].as_f64().unwrap() > 0.0);
        assert!(p["latency_ns"]["p50"].as_u64().unwrap() > 0);
        assert!(
            p["latency_ns"]["p99"].as_u64().unwrap() >= p["latency_ns"]["p50"].as_u64().unwrap()
        );
        assert_eq!(p["sources"].as_array().unwrap().len(), 1);
        assert!(Path::new(dir.path())
            .join(p["sources"][0].as_str().unwrap())
            .is_file());
    }
    assert!([1, 4].contains(&(num(&v, "/knee/qd") as u64)));
    assert!(num(&v, "/knee/iops") > 0.0);
    assert!(num(&v, "/knee/latency_ns/p99") > 0.0);
    assert!(v["knee"]["rule"].as_str().unwrap().contains("90 %"));
    assert_eq!(v["series"].as_array().unwrap().len(), 4);
    assert!(v["production"]["summary"]
        .as_str()
        .unwrap()
        .contains("production outstanding I/O 2.0"));
    // One run per point: the output says what its noise cannot show, and what would.
    let w = v["warnings"][0].as_str().unwrap();
    assert!(w.starts_with("one run per point"), "{w}");
    assert!(w.contains("--repeat 3"), "{w}");
}

#[test]
fn sweep_text_states_the_rule() {
    let dir = scratch();
    let out = oio()
        .current_dir(dir.path())
        .args([
            "sweep", "randread", "--engine", "null", "--size", "1M", "--time", "1s", "--ramp",
            "0s", "--qd", "1,2", "--repeat", "2", "--steady", "1000",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    // Decided or not, the knee is stated with its range (two depths of a null engine on a
    // busy machine may well leave it undecided).
    assert!(
        text.contains("\nknee between qd ")
            || text.contains("\nknee at or below qd ")
            || text.contains("\nknee undecided ("),
        "{text}"
    );
    assert!(
        text.contains("rule: knee = the saturation depth, else the 90 %-of-peak depth"),
        "{text}"
    );
}

/// One real sweep on this machine's disk (O_DIRECT where the filesystem allows it).
#[test]
fn real_sweep_finds_a_knee_on_this_machine() {
    let _g = uses_io_uring();
    let dir = scratch();
    let mut args = vec![
        "sweep",
        "randread",
        "t.dat",
        "--size",
        "64M",
        "--time",
        "1s",
        "--ramp",
        "500ms",
        "--qd",
        "1,2,4,8,16,32,64,128,256",
    ];
    // tmpfs and overlay without O_DIRECT: fall back to the page cache, as `oio run` advises.
    let probe = oio()
        .current_dir(dir.path())
        .args([
            "run", "--rw", "randread", "t.dat", "--size", "64M", "--time", "200ms", "--ramp", "0s",
            "--json",
        ])
        .output()
        .unwrap();
    if !probe.status.success() {
        args.push("--buffered");
    }
    let v = run_json(dir.path(), &args);
    validate_sweep(&v);
    let points = v["points"].as_array().unwrap();
    let peak = points
        .iter()
        .map(|p| p["iops"].as_f64().unwrap())
        .fold(0.0, f64::max);
    let knee_iops = num(&v, "/knee/iops");
    // The 90 %-of-peak rule (when the peak is in the sweep): its depth reaches 90 % of the
    // level it states, and no shallower point did.
    let level = num(&v, "/knee/plateau_iops");
    assert!(level <= peak + 1e-6);
    if let Some(q) = v["knee"]["rules"]["pct_of_peak"]["qd"].as_f64() {
        assert!(num(&v, "/knee/rules/pct_of_peak/iops") >= 0.9 * level - 1e-6);
        for p in points {
            if p["qd"].as_f64().unwrap() < q {
                assert!(p["iops"].as_f64().unwrap() < 0.9 * level);
            }
        }
    }
    eprintln!(
        "real sweep: knee {} (engine {}, peak {:.0} IOPS, knee {:.0} IOPS, p99 {:.0} ns, saturation {})",
        v["knee"]["summary"], v["engine"], peak, knee_iops, num(&v, "/knee/latency_ns/p99"), v["knee"]["saturation_qd"]
    );
}

fn chromium() -> PathBuf {
    oio_report::png::find_chromium().expect(
        "Chromium is needed for the report test: apt-get install chromium (scripts/test installs it)",
    )
}

pub(crate) fn headless(profile: &Path) -> Command {
    let mut c = Command::new(chromium());
    c.args(oio_report::png::headless_args(profile));
    c
}

/// Loads the page in Chromium; returns the `<body ...>` tag after scripts ran and stderr.
pub(crate) fn dump_dom(page: &Path, scratch: &Path) -> (String, String) {
    let out = headless(&scratch.join("profile-dom"))
        .args([
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=3000",
            "--dump-dom",
        ])
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&out.stdout).to_string();
    let body = dom
        .split("<body")
        .nth(1)
        .and_then(|s| s.split('>').next())
        .unwrap_or_else(|| panic!("no <body> in Chromium's DOM: {dom:.300}"))
        .to_string();
    (body, String::from_utf8_lossy(&out.stderr).to_string())
}

pub(crate) fn attr(tag: &str, name: &str) -> i64 {
    tag.split(&format!("{name}=\""))
        .nth(1)
        .and_then(|s| s.split('"').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in <body{tag}>: did the check script run?"))
}

/// Luma standard deviation and share of non-white pixels of a PNG.
pub(crate) fn png_stats(path: &Path) -> (f64, f64, u32, u32) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let ch = info.color_type.samples();
    let px: Vec<f64> = buf[..info.buffer_size()]
        .chunks(ch)
        .map(|p| {
            if ch >= 3 {
                0.299 * p[0] as f64 + 0.587 * p[1] as f64 + 0.114 * p[2] as f64
            } else {
                p[0] as f64
            }
        })
        .collect();
    let mean = px.iter().sum::<f64>() / px.len() as f64;
    let sd = (px.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / px.len() as f64).sqrt();
    let ink = px.iter().filter(|v| **v < 240.0).count() as f64 / px.len() as f64;
    (sd, ink, info.width, info.height)
}

#[test]
fn report_opens_in_chromium_with_every_chart_drawn() {
    if oio_report::png::find_chromium().is_none() {
        return missing("Chromium (apt-get install chromium)");
    }
    let dir = scratch();
    let d = dir.path();
    // Inputs of every kind: repeated runs, a sweep, a comparison, a fio result, an observation
    // and a characterization.
    for (out, qd) in [("a", "1"), ("b", "4")] {
        run_json(
            d,
            &[
                "run", "--engine", "null", "--rw", "randread", "--size", "1M", "--time", "2s",
                "--ramp", "0s", "--qd", qd, "--repeat", "2", "--out", out,
            ],
        );
    }
    let sweep = null_sweep(
        d,
        &["--qd", "1,2,4", "--bs", "4k,16k", "--read-pct", "100,70"],
    );
    std::fs::write(d.join("sweep.json"), sweep.to_string()).unwrap();
    let cmp = run_json(d, &["compare", "a", "b"]);
    std::fs::write(d.join("compare.json"), cmp.to_string()).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../telemetry/tests/fixtures");
    let fio = fixtures.join("fio_3_33_jsonplus_randrw70_bssplit.json");
    let iostat = fixtures.join("iostat_12_6_iso_time_d_two_devices.txt");
    let ch = run_json(
        d,
        &[
            "characterize",
            iostat.to_str().unwrap(),
            "--device",
            "vda",
            "--busy-queue",
            "0",
        ],
    );
    std::fs::write(d.join("char.json"), ch.to_string()).unwrap();
    // An observation recorded by `oio record` on this machine while fio ran (a live recording
    // here could see an idle disk and draw empty charts).
    std::fs::copy(
        fixtures.join("capture_loop0_fio_randrw70/oio_record.json"),
        d.join("obs.json"),
    )
    .unwrap();

    let out = oio()
        .current_dir(d)
        .args([
            "report",
            "a",
            "b",
            "sweep.json",
            "compare.json",
            "char.json",
            "obs.json",
            fio.to_str().unwrap(),
            "-o",
            "r/report.html",
            "--svg",
            "r/svg",
            "--csv",
            "r/csv",
            "--png",
            "r/png",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = d.join("r/report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: nothing to fetch (the SVG namespace is a name, not a fetch).
    for bad in ["src=", "href=\"http", "url(", "@import", "<link"] {
        assert!(
            !html.contains(bad),
            "the report refers to something external: {bad}"
        );
    }
    let charts = html.matches("class=\"oio-chart\"").count();
    for id in [
        "exp1-repeat-runs",
        "exp1-repeat-iops",
        "exp1-repeat-latency",
        "exp1-repeat-outstanding",
        "exp1-repeat-percentiles",
        "exp2-repeat-runs",
        "sweep-iops",
        "sweep-latency",
        "sweep-latency-iops",
        "sweep-heatmap",
        "compare",
        "char-sizes-char",
    ] {
        assert!(
            html.contains(&format!("data-chart=\"{id}\"")),
            "chart {id} missing"
        );
        assert!(
            d.join(format!("r/svg/{id}.svg")).is_file(),
            "{id}.svg missing"
        );
        assert!(
            d.join(format!("r/png/{id}.png")).is_file(),
            "{id}.png missing"
        );
    }
    let knee = sweep["knee"]["summary"].as_str().unwrap();
    assert!(knee.starts_with("knee "), "{knee}");
    assert!(html.contains(&oio_report::svg::esc(knee)), "{knee}");
    assert!(html.contains("rule: knee = the saturation depth"));
    assert_eq!(std::fs::read_dir(d.join("r/svg")).unwrap().count(), charts);
    let runs_csv = std::fs::read_to_string(d.join("r/csv/runs.csv")).unwrap();
    assert_eq!(runs_csv.lines().count(), 1 + 5, "4 oio runs + 1 fio run");
    assert!(std::fs::read_to_string(d.join("r/csv/sweep-points.csv"))
        .unwrap()
        .lines()
        .any(|l| l.ends_with(",true")));

    // The browser: the page's own check script counts drawn charts and script errors.
    let (body, stderr) = dump_dom(&page, d);
    assert_eq!(attr(&body, "data-charts"), charts as i64);
    assert_eq!(
        attr(&body, "data-charts-drawn"),
        charts as i64,
        "some chart is empty"
    );
    assert_eq!(attr(&body, "data-errors"), 0);
    assert_eq!(
        attr(&body, "data-overflow"),
        0,
        "text outside its chart: {body}"
    );
    let console_errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .collect();
    assert!(console_errors.is_empty(), "console: {console_errors:#?}");

    // A screenshot that is not blank.
    let shot = d.join("shot.png");
    let st = headless(&d.join("profile-shot"))
        .args(["--hide-scrollbars", "--window-size=1200,2400"])
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        shot.is_file(),
        "no screenshot: {}",
        String::from_utf8_lossy(&st.stderr)
    );
    let (sd, ink, w, h) = png_stats(&shot);
    assert_eq!((w, h), (1200, 2400));
    assert!(
        sd > 20.0 && ink > 0.02,
        "screenshot looks blank: luma sd {sd:.1}, ink {ink:.3}"
    );
    let (sd, ink, w, _) = png_stats(&d.join("r/png/sweep-iops.png"));
    assert_eq!(w, 760);
    assert!(
        sd > 10.0 && ink > 0.01,
        "chart PNG looks blank: sd {sd:.1}, ink {ink:.3}"
    );
    if let Ok(keep) = std::env::var("OIO_KEEP_REPORT") {
        let _ = std::fs::copy(&shot, Path::new(&keep).join("report-shot.png"));
        let _ = std::fs::copy(&page, Path::new(&keep).join("report.html"));
    }
}

/// Runs oio in `dir`, expecting success; returns stderr.
pub(crate) fn oio_ok(dir: &Path, args: &[&str]) -> String {
    let out = oio().current_dir(dir).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "oio {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The `<section ... data-kind="KIND">…</section>` blocks of a page.
pub(crate) fn sections<'a>(html: &'a str, kind: &str) -> Vec<&'a str> {
    let open = format!("data-kind=\"{kind}\"");
    html.match_indices(&open)
        .map(|(i, _)| {
            let start = html[..i].rfind("<section").unwrap();
            let end = i + html[i..].find("</section>").unwrap() + "</section>".len();
            &html[start..end]
        })
        .collect()
}

#[test]
fn report_over_a_mixed_directory_has_one_section_per_experiment() {
    if oio_report::png::find_chromium().is_none() {
        return missing("Chromium (apt-get install chromium)");
    }
    let dir = scratch();
    let d = dir.path();
    let w = d.join("work");
    std::fs::create_dir(&w).unwrap();
    let null = [
        "--engine", "null", "--size", "1M", "--ramp", "0s", "--rw", "randrw", "--bs", "8k",
    ];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut v = vec!["run"];
        v.extend_from_slice(&null);
        v.extend_from_slice(extra);
        v
    };
    // A repeat group.
    oio_ok(
        &w,
        &with(&[
            "--time", "2s", "--qd", "4", "--repeat", "3", "--out", "repeat",
        ]),
    );
    // Open-loop runs at three offered rates on a simulated 4-server device (seed 001).
    for rate in ["8000", "9000", "10000"] {
        oio_ok(
            &w,
            &with(&[
                "--time",
                "3s",
                "--rate",
                rate,
                "--arrival",
                "poisson",
                "--sim",
                "servers=4,service=400us,dist=exp",
                "--out",
                "openloop",
            ]),
        );
    }
    // An interleaved A/B.
    oio_ok(
        &w,
        &[
            "compare",
            "--run",
            "--engine null --size 1M --ramp 0s --time 1s --rw randread --qd 1",
            "--run",
            "--engine null --size 1M --ramp 0s --time 1s --rw randread --qd 8",
            "--label",
            "qd1,qd8",
            "--repeat",
            "2",
            "--out",
            "ab",
        ],
    );
    // A sweep of a simulated device, a blend.
    oio_ok(
        &w,
        &[
            "sweep",
            "randread",
            "--sim",
            "servers=4,service=1ms,dist=exp",
            "--qd",
            "1,2,4,8",
            "--time",
            "1s",
            "--ramp",
            "0s",
            "--out",
            "sweep",
        ],
    );
    oio_ok(
        &w,
        &[
            "blend",
            "--streams",
            "2",
            "--bs",
            "64k",
            "--size",
            "4M",
            "--time",
            "1s",
            "--ramp",
            "0s",
            "--engine",
            "null",
            "--out",
            "blend",
            "blend.dat",
        ],
    );
    std::fs::remove_file(w.join("blend.dat")).unwrap();
    // Telemetry: a perfmon CSV as it is, and a characterization of another.
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../telemetry/tests/fixtures");
    std::fs::copy(
        fixtures.join("perfmon_relog_bom_crlf_zone_parens_gaps.csv"),
        w.join("tempdb.csv"),
    )
    .unwrap();
    let ch = run_json(
        d,
        &[
            "characterize",
            fixtures
                .join("iostat_12_6_iso_time_d_two_devices.txt")
                .to_str()
                .unwrap(),
            "--device",
            "vda",
            "--busy-queue",
            "0",
        ],
    );
    std::fs::write(w.join("char.json"), ch.to_string()).unwrap();
    // Two TPC-C runs on SQLite (one and two workers) and the consistency check.
    let db = format!("sqlite:{}", d.join("tpcc.db").display());
    oio_ok(d, &["tpcc", "build", "--warehouses", "1", "--db", &db]);
    for n in ["1", "2"] {
        oio_ok(
            &w,
            &[
                "tpcc",
                "run",
                "--db",
                &db,
                "--workers",
                n,
                "--time",
                "3s",
                "--ramp",
                "0s",
            ],
        );
    }
    let check = run_json(d, &["tpcc", "check", "--db", &db]);
    std::fs::write(w.join("tpcc-check.json"), check.to_string()).unwrap();

    let err = oio_ok(
        &w,
        &[
            "report",
            ".",
            "-o",
            "../r/report.html",
            "--svg",
            "../r/svg",
            "--png",
            "../r/png",
        ],
    );
    // The size is printed.
    assert!(
        err.contains("report: ../r/report.html (") && err.contains("KiB"),
        "{err}"
    );
    let page = d.join("r/report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    // One section per experiment.
    for (kind, n) in [
        ("repeat", 1),
        ("rate", 1),
        ("ab", 1),
        ("blend", 1),
        ("sweep", 1),
        ("tpcc", 1),
        ("telemetry", 1),
        ("environment", 1),
        ("depth", 0),
        ("series", 0),
    ] {
        assert_eq!(sections(&html, kind).len(), n, "sections of kind {kind}");
    }
    // The charts that answer each one's question.
    let rate = sections(&html, "rate")[0];
    for id in ["-offered\"", "-response\"", "-latency\"", "-iops\""] {
        assert!(rate.contains(id), "rate series lacks {id}");
    }
    // Runs named by what differs, never by time of day.
    for l in ["rate 8000/s", "rate 9000/s", "rate 10000/s"] {
        assert!(rate.contains(&format!(">{l}<")), "no run labelled {l}");
    }
    let ab = sections(&html, "ab")[0];
    // Seed 002's table: margins with their intervals, computed from the interleaved runs.
    assert!(
        ab.contains("-ab-margins\"")
            && ab.contains("95 % interval")
            && ab.contains("against qd1")
            && ab.contains("significant"),
        "{ab:.3000}"
    );
    assert!(
        ab.contains(">qd1 #1<") && ab.contains(">qd8 #2<"),
        "{ab:.2000}"
    );
    assert!(sections(&html, "repeat")[0].contains(">run 3<"));
    assert!(!regex_like_time(&html), "a label looks like a time of day");
    let sweep = sections(&html, "sweep")[0];
    assert!(sweep.contains("data-chart=\"sweep-iops\"") && sweep.contains("class=\"mark knee\""));
    let tpcc = sections(&html, "tpcc")[0];
    for id in [
        "tpcc1-rate",
        "tpcc1-latency-time",
        "tpcc1-txn-latency",
        "tpcc2-rate",
        "tpcc-compare",
    ] {
        assert!(
            tpcc.contains(&format!("data-chart=\"{id}\"")),
            "TPC-C lacks {id}"
        );
    }
    assert!(
        tpcc.contains("PASSED"),
        "the consistency check outcome is shown"
    );
    assert!(tpcc.contains(">workers 1<") && tpcc.contains(">workers 2<"));
    let tel = sections(&html, "telemetry")[0];
    for id in [
        "-iops\"",
        "-mibps\"",
        "-lat\"",
        "-queue\"",
        "char-sizes-char",
    ] {
        assert!(tel.contains(id), "telemetry lacks {id}");
    }
    // The environment once per host (one host here).
    assert_eq!(
        sections(&html, "environment")[0]
            .matches("<h3>Host ")
            .count(),
        1
    );
    let charts = html.matches("class=\"oio-chart\"").count();
    assert_eq!(std::fs::read_dir(d.join("r/svg")).unwrap().count(), charts);
    assert_eq!(std::fs::read_dir(d.join("r/png")).unwrap().count(), charts);
    let (sd, ink, w0, _) = png_stats(&d.join("r/png/tpcc-compare.png"));
    assert!(w0 == 760 && sd > 10.0 && ink > 0.01, "PNG looks blank");

    // In the browser: every chart drawn, no error, no text outside its chart.
    let (body, stderr) = dump_dom(&page, d);
    assert_eq!(attr(&body, "data-charts"), charts as i64);
    assert_eq!(
        attr(&body, "data-charts-drawn"),
        charts as i64,
        "some chart is empty"
    );
    assert_eq!(attr(&body, "data-errors"), 0);
    assert_eq!(
        attr(&body, "data-overflow"),
        0,
        "text outside its chart: {body}"
    );
    assert!(!stderr
        .lines()
        .any(|l| l.contains("CONSOLE") || l.contains("Uncaught")));

    // A screenshot of each section kind, alone on a page with the report's style.
    let style = &html[html.find("<head>").unwrap()..html.find("</head>").unwrap() + 7];
    let shots = d.join("shots");
    std::fs::create_dir(&shots).unwrap();
    for kind in [
        "repeat",
        "rate",
        "ab",
        "blend",
        "sweep",
        "tpcc",
        "telemetry",
        "environment",
    ] {
        let one = d.join(format!("{kind}.html"));
        std::fs::write(
            &one,
            format!(
                "<!DOCTYPE html><html lang=\"en\">{style}<body>{}</body></html>",
                sections(&html, kind)[0]
            ),
        )
        .unwrap();
        let (body, _) = dump_dom(&one, d);
        assert_eq!(attr(&body, "data-errors"), 0, "{kind}");
        assert_eq!(attr(&body, "data-overflow"), 0, "{kind}: {body}");
        let shot = shots.join(format!("{kind}.png"));
        headless(&d.join(format!("profile-{kind}")))
            .args(["--window-size=1100,1500"])
            .arg(format!("--screenshot={}", shot.display()))
            .arg(format!("file://{}", one.display()))
            .output()
            .unwrap();
        let (sd, ink, _, _) = png_stats(&shot);
        assert!(sd > 20.0 && ink > 0.02, "{kind} screenshot looks blank");
    }
    if let Ok(keep) = std::env::var("OIO_REPORT_SHOTS") {
        for e in std::fs::read_dir(&shots).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), Path::new(&keep).join(e.file_name())).unwrap();
        }
    }
    eprintln!(
        "mixed report: {} bytes, {charts} charts, {} sections",
        html.len(),
        html.matches("<section").count()
    );
}

/// True when the page shows a label like `14:56:31-…` (a run named by its time of day).
fn regex_like_time(html: &str) -> bool {
    html.as_bytes().windows(9).any(|w| {
        w[0].is_ascii_digit()
            && w[1].is_ascii_digit()
            && w[2] == b':'
            && w[5] == b':'
            && w[8] == b'-'
            && w[3..5].iter().chain(&w[6..8]).all(u8::is_ascii_digit)
    })
}

/// The `<div class="chart" id="chart-ID">…</div>` blocks of a page, for the given ids.
fn chart_divs(html: &str, ids: &[&str]) -> String {
    ids.iter()
        .map(|id| {
            let open = format!("<div class=\"chart\" id=\"chart-{id}\">");
            let start = html
                .find(&open)
                .unwrap_or_else(|| panic!("no chart {id} on the page"));
            let end = start + html[start..].find("</div>").unwrap() + "</div>".len();
            &html[start..end]
        })
        .collect()
}

#[test]
fn report_shows_tpcc_waits_over_time_a_worker_series_a_fleet_and_telemetry_on_one_axis() {
    if oio_report::png::find_chromium().is_none() {
        return missing("Chromium (apt-get install chromium)");
    }
    let dir = scratch();
    let d = dir.path();
    let w = d.join("work");
    std::fs::create_dir(&w).unwrap();
    // A TPC-C worker sequence on SQLite: a series document and one result per step.
    let db = format!("sqlite:{}", d.join("tpcc.db").display());
    oio_ok(d, &["tpcc", "build", "--warehouses", "1", "--db", &db]);
    oio_ok(
        &w,
        &[
            "tpcc",
            "run",
            "--db",
            &db,
            "--workers",
            "1,2",
            "--time",
            "3s",
            "--ramp",
            "0s",
            "--out",
            "tpcc",
        ],
    );
    let mut steps: Vec<PathBuf> = std::fs::read_dir(w.join("tpcc"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.starts_with("tpcc-") && !n.contains("series") && !n.contains("build")
        })
        .collect();
    steps.sort();
    assert_eq!(steps.len(), 2, "one result per step: {steps:?}");
    // The driver records per-interval waits; the two-worker step has them taken out, as a
    // result written before they existed lacks them, and the page must say so.
    let read = |p: &PathBuf| -> Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let (one, other): (Vec<&PathBuf>, Vec<&PathBuf>) = steps
        .iter()
        .partition(|p| read(p)["options"]["workers"] == 1);
    let measured = read(one[0]);
    assert!(measured["intervals"].as_array().unwrap().len() >= 2);
    for i in measured["intervals"].as_array().unwrap() {
        assert!(
            !i["waits"].as_array().unwrap().is_empty(),
            "the driver records each interval's waits: {i}"
        );
    }
    let mut v = read(other[0]);
    for i in v["intervals"].as_array_mut().unwrap() {
        i["waits"] = Value::Array(Vec::new());
    }
    std::fs::write(other[0], v.to_string()).unwrap();

    // A fleet of three local agents on the null engine.
    let bin = assert_cmd::cargo::cargo_bin("oio");
    oio_ok(
        &w,
        &[
            "fleet",
            "run",
            "--hosts",
            "h1,h2,h3",
            "--launcher",
            &format!("{} agent --stdio", bin.display()),
            "--engine",
            "null",
            "--rw",
            "randread",
            "--size",
            "1M",
            "--time",
            "3s",
            "--ramp",
            "0s",
            "--out",
            "fleet",
            "fleet.dat",
        ],
    );
    std::fs::remove_file(w.join("fleet.dat")).unwrap();
    // Two telemetry files of one fio run on this machine, as they are: `iostat -x -t` text
    // and an `oio record` observation.
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../telemetry/tests/fixtures");
    std::fs::create_dir(w.join("tel")).unwrap();
    for f in ["iostat_x_t_y_iso.txt", "oio_record.json"] {
        std::fs::copy(
            fixtures.join("capture_loop0_fio_randrw70").join(f),
            w.join("tel").join(f),
        )
        .unwrap();
    }

    oio_ok(
        &w,
        &["report", ".", "-o", "../r/report.html", "--svg", "../r/svg"],
    );
    let page = d.join("r/report.html");
    let html = std::fs::read_to_string(&page).unwrap();

    // TPC-C: the tuning view on one time axis, the waits stacked per interval.
    let tpcc = sections(&html, "tpcc")[0];
    for id in [
        "tpcc1-rate",
        "tpcc1-waits-time",
        "tpccseries1-scaling",
        "tpccseries1-efficiency",
    ] {
        assert!(
            tpcc.contains(&format!("data-chart=\"{id}\"")),
            "TPC-C lacks {id}"
        );
    }
    let stacked = chart_divs(&html, &["tpcc1-waits-time"]);
    // One box per class with time in it per interval.
    let boxes = measured["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|i| i["waits"].as_array().unwrap())
        .filter(|w| w["aas"].as_f64().unwrap() > 0.0)
        .count();
    assert!(boxes > 0);
    assert_eq!(
        stacked.matches("<rect class=\"mark\"").count(),
        boxes,
        "one box per class per interval"
    );
    assert!(stacked.contains("average active sessions"));
    for w in measured["intervals"][0]["waits"].as_array().unwrap() {
        let name = w["name"].as_str().unwrap();
        assert!(stacked.contains(name), "the legend names {name}");
    }
    // The same x axis (0 to the window's end) on throughput, waits and the device.
    let ticks = |id: &str| -> Vec<String> {
        let c = chart_divs(&html, &[id]);
        c.split("text-anchor=\"middle\" font-size=\"11\">")
            .skip(1)
            .map(|s| s.split('<').next().unwrap().to_string())
            .collect()
    };
    assert_eq!(ticks("tpcc1-rate"), ticks("tpcc1-waits-time"));
    assert!(
        tpcc.contains("no per-interval waits recorded"),
        "the step without waits says so"
    );
    assert!(tpcc.contains("Worker sequence") && tpcc.contains("100 %"));
    assert!(
        !html.contains("tpcc-compare\"") || tpcc.contains("tpcc-compare"),
        "the before/after chart stays in the TPC-C section"
    );

    // The fleet: per-host lines beside the merged series, skew, the outlier rule; the host
    // runs are not shown again as an experiment.
    let fleet = sections(&html, "fleet");
    assert_eq!(fleet.len(), 1);
    for id in [
        "fleet1-merged",
        "fleet1-hosts-iops",
        "fleet1-hosts-p99",
        "fleet1-hosts",
        "fleet1-skew",
    ] {
        assert!(
            fleet[0].contains(&format!("data-chart=\"{id}\"")),
            "fleet lacks {id}"
        );
    }
    for h in ["h1", "h2", "h3"] {
        assert!(fleet[0].contains(&format!("<td class=\"l\">{h}</td>")));
    }
    assert!(fleet[0].contains("Outlier rule: a host whose IOPS are more than 25 %"));
    for kind in ["repeat", "series", "single"] {
        assert!(
            sections(&html, kind).is_empty(),
            "the fleet's host runs became a {kind} section"
        );
    }

    // Telemetry: both files on one absolute axis, the time they overlap shaded.
    let tel = sections(&html, "telemetry")[0];
    for k in ["iops", "lat", "queue"] {
        assert!(tel.contains(&format!("data-chart=\"telemetry-overlay-{k}\"")));
    }
    assert!(
        tel.contains("2 telemetry files on one absolute time axis (seconds since 2026-11-21T14:13:27Z); all of them have data from"),
        "{tel:.3000}"
    );
    assert!(chart_divs(&html, &["telemetry-overlay-iops"]).contains("all files overlap"));
    // Size distributions of files without a trace are of interval means, and say so.
    assert!(
        tel.contains("-loop0-sizes\"")
            && tel.contains("weighted by its I/Os (share; interval means, not single I/Os)"),
        "{tel:.3000}"
    );

    // No chart overlays more series than a reader can tell apart: legends of at most 8.
    for c in html.split("<svg").skip(1) {
        let c = c.split("</svg>").next().unwrap();
        let lines = c.matches("stroke-width=\"2.5\"/>").count();
        assert!(lines <= 8, "a legend with {lines} lines");
    }
    let charts = html.matches("class=\"oio-chart\"").count();
    assert_eq!(std::fs::read_dir(d.join("r/svg")).unwrap().count(), charts);

    // In the browser.
    let (body, stderr) = dump_dom(&page, d);
    assert_eq!(attr(&body, "data-charts"), charts as i64);
    assert_eq!(
        attr(&body, "data-charts-drawn"),
        charts as i64,
        "some chart is empty"
    );
    assert_eq!(attr(&body, "data-errors"), 0);
    assert_eq!(
        attr(&body, "data-overflow"),
        0,
        "text outside its chart: {body}"
    );
    assert!(!stderr
        .lines()
        .any(|l| l.contains("CONSOLE") || l.contains("Uncaught")));

    // A screenshot of each new kind of view.
    let head = &html[html.find("<head>").unwrap()..html.find("</head>").unwrap() + 7];
    let shots = d.join("shots");
    std::fs::create_dir(&shots).unwrap();
    let device_lat = html
        .split("data-chart=\"")
        .skip(1)
        .map(|s| s.split('"').next().unwrap())
        .find(|id| id.starts_with("tpcc1-") && id.ends_with("-lat"))
        .expect("the device's latency beside the waits");
    let tuning = ["tpcc1-rate", "tpcc1-waits-time", device_lat];
    let series_html = {
        let i = tpcc[..tpcc.find("Worker sequence").unwrap()]
            .rfind("<h3")
            .unwrap();
        let j = tpcc[i..].find("</table>").unwrap() + i + "</table>".len();
        format!(
            "{}{}",
            &tpcc[i..j],
            chart_divs(&html, &["tpccseries1-scaling", "tpccseries1-efficiency"])
        )
    };
    let views = [
        ("tpcc-waits", chart_divs(&html, &tuning)),
        ("tpcc-series", series_html),
        ("fleet", fleet[0].to_string()),
        (
            "telemetry-overlay",
            format!(
                "{}</p>{}",
                &tel[tel.find("<p class=\"note\">").unwrap()..]
                    .split("</p>")
                    .next()
                    .unwrap(),
                chart_divs(
                    &html,
                    &[
                        "telemetry-overlay-iops",
                        "telemetry-overlay-lat",
                        "telemetry-overlay-queue",
                    ],
                )
            ),
        ),
    ];
    for (name, body) in &views {
        let one = d.join(format!("{name}.html"));
        std::fs::write(
            &one,
            format!("<!DOCTYPE html><html lang=\"en\">{head}<body>{body}</body></html>"),
        )
        .unwrap();
        let (b, _) = dump_dom(&one, d);
        assert_eq!(attr(&b, "data-errors"), 0, "{name}");
        assert_eq!(attr(&b, "data-overflow"), 0, "{name}: {b}");
        let shot = shots.join(format!("{name}.png"));
        headless(&d.join(format!("profile-{name}")))
            .args(["--window-size=1100,1300"])
            .arg(format!("--screenshot={}", shot.display()))
            .arg(format!("file://{}", one.display()))
            .output()
            .unwrap();
        // Line charts on white hold less ink than tables: the chart PNGs' threshold.
        let (sd, ink, _, _) = png_stats(&shot);
        assert!(
            sd > 10.0 && ink > 0.01,
            "{name} screenshot looks blank: sd {sd:.1}, ink {ink:.3}"
        );
    }
    if let Ok(keep) = std::env::var("OIO_REPORT_SHOTS") {
        for e in std::fs::read_dir(&shots).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), Path::new(&keep).join(e.file_name())).unwrap();
        }
    }

    // A host far from the others' median is flagged, with the rule and what it cannot tell.
    let merged = std::fs::read_dir(w.join("fleet"))
        .unwrap()
        .map(|e| e.unwrap().path().join("merged.json"))
        .find(|p| p.is_file())
        .expect("merged.json");
    let mut m: Value = serde_json::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    // Three null-engine agents share two cores, so their own IOPS differ by chance: give
    // h1 and h2 the same figure and h3 30 % of it, so only h3 is far from the median.
    let hosts = m["hosts"].as_array_mut().unwrap();
    let usual = hosts[0]["iops"].as_f64().unwrap();
    for h in hosts.iter_mut() {
        let f = if h["host"] == "h3" { 0.3 } else { 1.0 };
        h["iops"] = Value::from(usual * f);
    }
    std::fs::write(&merged, m.to_string()).unwrap();
    oio_ok(&w, &["report", "fleet", "-o", "../r/fleet.html"]);
    let f = std::fs::read_to_string(d.join("r/fleet.html")).unwrap();
    assert!(
        f.contains("Flagged: h3. ") && f.contains("cannot tell why"),
        "{}",
        sections(&f, "fleet").join("")
    );
    // Files years apart, one without a start time: side by side from their own starts, and
    // the page says why (the years-apart case alone is a unit test).
    let apart = d.join("apart");
    std::fs::create_dir(&apart).unwrap();
    for f in [
        "perfmon_relog_bom_crlf_zone_parens_gaps.csv",
        "iostat_12_6_iso_time_d_two_devices.txt",
        "blkparse_default_two_devices_summary.txt",
    ] {
        std::fs::copy(fixtures.join(f), apart.join(f)).unwrap();
    }
    oio_ok(d, &["report", "apart", "-o", "r/apart.html"]);
    let a = std::fs::read_to_string(d.join("r/apart.html")).unwrap();
    assert!(
        a.contains("3 telemetry files aligned at their own starts (seconds since each file's first sample): apart/blkparse_default_two_devices_summary did not record when it started")
            && a.contains("time since each file's start"),
        "{a:.3000}"
    );
    // A per-I/O trace gives the distribution of single I/O sizes.
    assert!(a.contains("I/O sizes (share of traced I/Os)"), "{a:.3000}");
    eprintln!(
        "report with new sections: {} bytes, {charts} charts",
        html.len()
    );
}
