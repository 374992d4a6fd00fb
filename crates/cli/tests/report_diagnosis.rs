//! `oio report` carries `oio diagnose`'s findings: a sweep of the simulated device gives a
//! report whose "Diagnosis" section names the queue saturation at the sweep's depth, as the
//! browser shows it, and an `oio.diagnosis` document given to the report is shown too.

use crate::common::{missing, num, oio, run_json, scratch};
use std::path::Path;

/// The `<section data-kind="diagnosis">…</section>` blocks of a page.
fn diagnosis_sections(html: &str) -> Vec<&str> {
    html.match_indices("data-kind=\"diagnosis\"")
        .map(|(i, _)| {
            let start = html[..i].rfind("<section").unwrap();
            let end = i + html[i..].find("</section>").unwrap() + "</section>".len();
            &html[start..end]
        })
        .collect()
}

/// The DOM Chromium built from `page` after its scripts ran.
fn chromium_dom(chromium: &Path, page: &Path, profile: &Path) -> String {
    let out = std::process::Command::new(chromium)
        .args(oio_report::png::headless_args(profile))
        .args(["--virtual-time-budget=3000", "--dump-dom"])
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_report_of_a_simulated_sweep_names_the_queue_saturation_in_its_diagnosis() {
    let Some(chromium) = oio_report::png::find_chromium() else {
        return missing("Chromium (apt-get install chromium)");
    };
    let dir = scratch();
    let d = dir.path();
    let sweep = run_json(
        d,
        &[
            "sweep",
            "randread",
            "--sim",
            // The virtual clock: the model's exact curve, whatever the host's load (on the
            // real clock two busy loops beside the test left the knee undecided).
            "servers=8,service=5ms,clock=virtual",
            "--size",
            "1M",
            "--time",
            "1s",
            "--ramp",
            "0s",
            "--interval",
            "250ms",
            "--qd",
            "1,2,4,8,16,32,64",
            "--out",
            "sw",
        ],
    );
    let knee = num(&sweep, "/knee/saturation_qd");
    // A diagnosis document written by `oio diagnose --json`, given to the report as well.
    let diag = oio()
        .current_dir(d)
        .args(["diagnose", "sw", "--json"])
        .output()
        .unwrap();
    assert!(diag.status.success(), "{diag:?}");
    std::fs::write(d.join("diag.json"), &diag.stdout).unwrap();

    let out = oio()
        .current_dir(d)
        .args(["report", "sw", "diag.json", "-o", "report.html"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(d.join("report.html")).unwrap();
    let sections = diagnosis_sections(&html);
    assert_eq!(sections.len(), 1, "one Diagnosis section");
    let s = sections[0];
    assert!(
        html.contains("<a href=\"#diagnosis\">Diagnosis</a>"),
        "in the contents"
    );
    // Computed from the report's inputs, and the given document: both name the saturation.
    assert_eq!(s.matches("<h3>").count(), 2, "{s}");
    assert!(s.contains("(oio.diagnosis, diag.json)"), "{s}");
    let claim = format!("queue saturation above a queue of {knee}:");
    assert!(
        s.matches(&claim).count() >= 2,
        "the saturation at the sweep's depth {knee}, in both: {s}"
    );
    assert!(s.contains("data-rule=\"queue_saturation\""));
    // The evidence with units and where it comes from, the threshold, what it cannot tell.
    assert!(
        s.contains(&format!(
            "queue where saturation starts</td><td>{knee} I/Os</td>"
        )),
        "{s}"
    );
    assert!(s.contains("qd 64") && s.contains(" ms</td>"), "{s}");
    assert!(s.contains("Fires when: from some queue length on"));
    assert!(s.contains("cannot show tails"));
    // The simulated device is named as such.
    assert!(s.contains("data-rule=\"simulated\""));
    // A diagnosis document is not also listed among other results.
    assert!(!html.contains("data-kind=\"others\""));

    // In the browser: the section is there, rendered, without a script error.
    let dom = chromium_dom(&chromium, &d.join("report.html"), &d.join("profile"));
    let body = dom.split("<body").nth(1).unwrap_or_default();
    assert!(body.contains("data-errors=\"0\""), "{:.400}", body);
    let shown = diagnosis_sections(&dom);
    assert_eq!(shown.len(), 1, "Chromium's DOM has the section");
    assert!(shown[0].contains(&claim));
}
