//! `oio report` over a study directory (issue 40, item 5): real `oio sql study` and `oio tpcc
//! study` runs on SQLite, the page opened in headless Chromium (rendered text, every chart
//! drawn, no script error, not blank), and the study section checked against what the study
//! itself printed on the terminal (the same headline, the same wait-shift words).

use crate::common::{missing, oio, scratch};
use crate::report::{attr, headless, oio_ok, png_stats, sections};
use std::path::Path;

/// Runs oio in `dir`, expecting success; returns stdout (a study's conclusion).
fn stdout_of(dir: &Path, args: &[&str]) -> String {
    let out = oio().current_dir(dir).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "oio {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The page as Chromium has it after its scripts ran.
fn rendered(page: &Path, scratch: &Path) -> (String, String) {
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
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The page's check script saw every chart drawn, no error, no text outside its chart, and a
/// screenshot of the page is not blank. Returns the rendered DOM.
fn check_in_chromium(page: &Path, d: &Path) -> String {
    let html = std::fs::read_to_string(page).unwrap();
    let charts = html.matches("class=\"oio-chart\"").count() as i64;
    let (dom, stderr) = rendered(page, d);
    let body = dom
        .split("<body")
        .nth(1)
        .and_then(|s| s.split('>').next())
        .unwrap_or_else(|| panic!("no <body> in Chromium's DOM: {dom:.300}"));
    assert_eq!(attr(body, "data-charts"), charts);
    assert_eq!(
        attr(body, "data-charts-drawn"),
        charts,
        "some chart is empty"
    );
    assert_eq!(attr(body, "data-errors"), 0);
    assert_eq!(
        attr(body, "data-overflow"),
        0,
        "text outside its chart: {body}"
    );
    let console: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .collect();
    assert!(console.is_empty(), "console: {console:#?}");
    let shot = d.join("shot.png");
    let st = headless(&d.join("profile-shot"))
        .args(["--hide-scrollbars", "--window-size=1200,1600"])
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        shot.is_file(),
        "no screenshot: {}",
        String::from_utf8_lossy(&st.stderr)
    );
    let (sd, ink, _, _) = png_stats(&shot);
    assert!(
        sd > 20.0 && ink > 0.02,
        "screenshot looks blank: luma sd {sd:.1}, ink {ink:.3}"
    );
    dom
}

/// The SVG of chart `id` in a page.
fn chart<'a>(html: &'a str, id: &str) -> &'a str {
    let at = html
        .find(&format!("data-chart=\"{id}\""))
        .unwrap_or_else(|| panic!("no chart {id}"));
    let start = html[..at].rfind("<svg").unwrap();
    &html[start..at + html[at..].find("</svg>").unwrap()]
}

/// The lines of a chart: one `<path class="mark" d=…>` each.
fn lines(svg: &str) -> Vec<&str> {
    svg.match_indices("<path class=\"mark\" d=\"M")
        .map(|(i, _)| &svg[i..i + svg[i..].find("</path>").unwrap_or(svg.len() - i)])
        .collect()
}

/// The closing headline lines of a study ("CAND (…) against BASE (…): …").
fn headlines(stdout: &str, base: &str) -> Vec<String> {
    stdout
        .lines()
        .filter(|l| l.contains(&format!(") against {base} (")))
        .map(str::to_string)
        .collect()
}

#[test]
fn report_over_an_sql_study_shows_its_verdict_overlay_and_waits_in_chromium() {
    if oio_report::png::find_chromium().is_none() {
        return missing("Chromium (apt-get install chromium)");
    }
    let dir = scratch();
    let d = dir.path();
    let stdout = stdout_of(
        d,
        &[
            "sql",
            "study",
            "--candidate",
            "a=builtin:point-select",
            "--candidate",
            "b=builtin:hot-rows",
            "-n",
            "2",
            "--repeat",
            "2",
            "--time",
            "2s",
            "--ramp",
            "0",
            "--db",
            "sqlite:x.db",
            "--out",
            "study",
        ],
    );
    let said = headlines(&stdout, "a");
    assert_eq!(said.len(), 1, "{stdout}");
    let err = oio_ok(d, &["report", "study", "-o", "r/report.html"]);
    assert!(err.contains("4 SQL runs, 1 study"), "{err}");
    let page = d.join("r/report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    let studies = sections(&html, "study");
    assert_eq!(studies.len(), 1, "one study section");
    let s = studies[0];
    assert!(
        s.contains("(oio sql study, 2 candidates, 4 runs)"),
        "{s:.400}"
    );
    // The terminal's headline, word for word: one comparison, one wait rule.
    assert!(
        s.contains(&oio_report::svg::esc(&said[0])),
        "the report's headline differs from the study's: {}",
        said[0]
    );
    // The verdict row of the study's metric: margin, interval and outcome.
    let row = s
        .split("<tr class=\"verdict-row\" data-metric=\"tps\" data-candidate=\"b\">")
        .nth(1)
        .and_then(|r| r.split("</tr>").next())
        .expect("the transactions/s verdict row of b");
    assert!(
        row.contains("transactions/s") && row.contains(" %, "),
        "{row}"
    );
    assert!(
        ["better", "worse", "undecided", "no significant difference"]
            .iter()
            .any(|w| row.contains(&format!(">{w}</td>"))),
        "{row}"
    );
    // The overlay: one line per run, candidates by colour, rounds told apart.
    let overlay = chart(s, "study1-overlay");
    let runs = lines(overlay);
    assert_eq!(runs.len(), 4, "one line per run: {overlay:.600}");
    for (cand, round) in [("a", 1), ("a", 2), ("b", 1), ("b", 2)] {
        let tip = format!("<title>{cand} (builtin:");
        let of = format!("round {round} of 2, started ");
        assert_eq!(
            runs.iter()
                .filter(|l| l.contains(&tip) && l.contains(&of))
                .count(),
            1,
            "{cand} round {round}"
        );
        assert!(overlay.contains(&format!(">{cand} · round {round} · ")));
    }
    let colour = |l: &str| {
        l.split("stroke=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .to_string()
    };
    let of_a: Vec<String> = runs
        .iter()
        .filter(|l| l.contains("<title>a ("))
        .map(|l| colour(l))
        .collect();
    let of_b: Vec<String> = runs
        .iter()
        .filter(|l| l.contains("<title>b ("))
        .map(|l| colour(l))
        .collect();
    assert!(of_a[0] == of_a[1] && of_b[0] == of_b[1] && of_a[0] != of_b[0]);
    assert_eq!(
        runs.iter()
            .filter(|l| l.contains("stroke-dasharray"))
            .count(),
        2,
        "second rounds are dashed"
    );
    // SQLite has no wait interface: the table is there and says so.
    let waits = s
        .split("<table class=\"waitshift\">")
        .nth(1)
        .expect("wait table");
    assert!(waits.contains("no wait profile in these results (source: none)"));
    // The run table: every run once, the server's version once above it, not in the rows.
    let table = s.split("<table class=\"study-runs\">").nth(1).unwrap();
    let table = &table[..table.find("</table>").unwrap()];
    assert_eq!(table.matches("<tr>").count(), 1 + 4);
    assert!(!table.contains("SQLite 3."));
    assert!(s.contains("the same in every run: ") && s.matches("server SQLite 3.").count() == 1);
    // The throughput's definition, once.
    assert_eq!(
        s.matches("transactions committed per second of the measured window")
            .count(),
        1
    );
    // The runs are in the SQL section, not "other results".
    assert!(!html.contains("data-kind=\"others\""));
    assert_eq!(sections(&html, "sql").len(), 1);

    let dom = check_in_chromium(&page, d);
    assert!(dom.contains("Study — ") && dom.contains("data-chart=\"study1-overlay\""));
    assert!(dom.contains("data-metric=\"tps\" data-candidate=\"b\""));
    assert!(dom.contains("class=\"waitshift\""));
}

#[test]
fn report_over_a_tpcc_study_shows_the_wait_shift_the_study_printed() {
    if oio_report::png::find_chromium().is_none() {
        return missing("Chromium (apt-get install chromium)");
    }
    let dir = scratch();
    let d = dir.path();
    oio_ok(
        d,
        &["tpcc", "build", "--db", "sqlite:t.db", "--warehouses", "1"],
    );
    let stdout = stdout_of(
        d,
        &[
            "tpcc",
            "study",
            "--db",
            "sqlite:t.db",
            "--set",
            "full:synchronous=full",
            "--set",
            "off:synchronous=off",
            "-n",
            "2",
            "--repeat",
            "2",
            "--time",
            "3s",
            "--ramp",
            "0",
            "--out",
            "study",
        ],
    );
    let said = headlines(&stdout, "full");
    assert_eq!(said.len(), 1, "{stdout}");
    oio_ok(d, &["report", "study", "-o", "r/report.html"]);
    let page = d.join("r/report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    let studies = sections(&html, "study");
    assert_eq!(studies.len(), 1);
    let s = studies[0];
    assert!(s.contains("(oio tpcc study, 2 candidates, 4 runs)"));
    assert!(s.contains(&oio_report::svg::esc(&said[0])), "{}", said[0]);
    assert!(s.contains("<tr class=\"verdict-row\" data-metric=\"nopm\" data-candidate=\"off\">"));
    // SQLite's timed waits: each bucket judged in the page as on the terminal.
    let mut judged = 0;
    for l in stdout.lines().filter(|l| l.contains("   off: ")) {
        let bucket = l.split_whitespace().next().unwrap();
        let word = l.split("   off: ").nth(1).unwrap().trim();
        let row = s
            .split(&format!("<tr data-bucket=\"{bucket}\">"))
            .nth(1)
            .and_then(|r| r.split("</tr>").next())
            .unwrap_or_else(|| panic!("no row for {bucket} in the wait table"));
        assert!(
            row.contains(&format!(">{}</td>", oio_report::svg::esc(word))),
            "{bucket}: {word} vs {row}"
        );
        judged += 1;
    }
    assert!(judged >= 2, "the study printed its wait table: {stdout}");
    assert_eq!(lines(chart(s, "study1-overlay")).len(), 4);
    // One TPM definition, said once; the run table has NOPM and TPM per run.
    assert_eq!(s.matches("TPM (table and verdict): ").count(), 1);
    assert!(s.contains("<th>NOPM</th><th>TPM</th>"));
    let dom = check_in_chromium(&page, d);
    assert!(dom.contains("data-chart=\"study1-overlay\"") && dom.contains("class=\"waitshift\""));
}
