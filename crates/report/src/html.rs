//! The HTML report: one file, no external URL, charts as inline SVG, so it can be mailed,
//! archived with the raw results and opened offline years later.
//!
//! A few lines of inline script only *check* the page (they draw nothing): they count the
//! charts that have visible marks and any script errors and write the counts on `<body>`
//! (`data-charts`, `data-charts-drawn`, `data-errors`), which is what the headless-browser
//! test reads.

use crate::charts::{self, Chart};
use crate::model::Report;
use crate::svg::esc;
use crate::{Artifact, Renderer, ReportError};
use oio_core::units::{format_bytes, format_count, format_ns};
use std::fmt::Write;

/// Renders the whole report as `report.html`.
#[derive(Clone, Copy, Debug, Default)]
pub struct HtmlRenderer;

/// Most runs whose environment is listed in full.
pub const MAX_ENV_RUNS: usize = 20;

const STYLE: &str = "body{font-family:sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 16px}
h1{font-size:24px}h2{border-bottom:2px solid #0072B2;padding-bottom:4px;margin-top:36px}
table{border-collapse:collapse;font-size:13px;margin:8px 0}th,td{border:1px solid #ddd;padding:3px 8px;text-align:right}
th{background:#f2f6fa}td.l,th.l{text-align:left}.chart{margin:14px 0}.note{color:#555;font-size:13px}
.sig{color:#006b3c;font-weight:bold}.nsig{color:#555}.warn{color:#a04000}nav a{margin-right:14px}
.scroll{max-height:480px;overflow:auto}";

const CHECK_SCRIPT: &str = "window.__oioErrors=[];window.addEventListener('error',function(e){window.__oioErrors.push(String(e.message))});
document.addEventListener('DOMContentLoaded',function(){var c=document.querySelectorAll('svg.oio-chart'),d=0;
for(var i=0;i<c.length;i++){var s=c[i],b=s.getBBox(),m=s.querySelectorAll('.mark');var ok=m.length>0&&b.width>0&&b.height>0;
for(var j=0;ok&&j<m.length;j++){var r=m[j].getBBox();if(r.width>0||r.height>0){d++;break}}}
document.body.setAttribute('data-charts',String(c.length));document.body.setAttribute('data-charts-drawn',String(d));
document.body.setAttribute('data-errors',String(window.__oioErrors.length));});";

fn opt_ns(v: Option<f64>) -> String {
    v.map(format_ns).unwrap_or_else(|| "-".into())
}

fn opt_u(v: Option<u64>) -> String {
    v.map(|v| format_ns(v as f64)).unwrap_or_else(|| "-".into())
}

fn charts_of(out: &mut String, charts: &[Chart], section: &str) {
    for c in charts.iter().filter(|c| c.section == section) {
        let _ = write!(
            out,
            "<div class=\"chart\" id=\"chart-{}\">{}</div>",
            c.id, c.svg
        );
    }
}

impl HtmlRenderer {
    /// The page as a string.
    pub fn page(&self, r: &Report) -> String {
        let charts = charts::build(r);
        let mut o = String::with_capacity(64 * 1024 + r.runs.len() * 600);
        let _ = write!(
            o,
            "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>{t}</title><style>{STYLE}</style><script>{CHECK_SCRIPT}</script></head><body><h1>{t}</h1><p class=\"note\">generated {g} by oio {v}; {n} chart(s). Latency percentiles come from merged histograms, never averaged.</p><nav>",
            t = esc(&r.title),
            g = esc(&r.generated),
            v = esc(&r.oio_version),
            n = charts.len()
        );
        for (sec, name, present) in [
            ("runs", "Runs", !r.runs.is_empty()),
            ("sweeps", "Sweeps", !r.sweeps.is_empty()),
            ("comparisons", "Comparisons", !r.comparisons.is_empty()),
            (
                "telemetry",
                "Telemetry",
                !r.observations.is_empty() || !r.characterizations.is_empty(),
            ),
            ("others", "Other results", !r.others.is_empty()),
            ("environment", "Environment", !r.runs.is_empty()),
        ] {
            if present {
                let _ = write!(o, "<a href=\"#{sec}\">{name}</a>");
            }
        }
        o.push_str("</nav>");
        if !r.runs.is_empty() {
            runs_section(&mut o, r, &charts);
        }
        if !r.sweeps.is_empty() {
            sweeps_section(&mut o, r, &charts);
        }
        if !r.comparisons.is_empty() {
            comparisons_section(&mut o, r, &charts);
        }
        if !r.observations.is_empty() || !r.characterizations.is_empty() {
            telemetry_section(&mut o, r, &charts);
        }
        if !r.others.is_empty() {
            others_section(&mut o, r);
        }
        if !r.runs.is_empty() {
            environment_section(&mut o, r);
        }
        o.push_str("</body></html>\n");
        o
    }
}

fn runs_section(o: &mut String, r: &Report, charts: &[Chart]) {
    let _ = write!(
        o,
        "<h2 id=\"runs\">Runs ({})</h2><div class=\"scroll\"><table><tr><th class=\"l\">run</th><th class=\"l\">workload</th><th>QD</th><th>IOPS</th><th>throughput</th><th>mean</th><th>p50</th><th>p99</th><th>p99.9</th><th>max</th><th>outstanding</th><th>time</th><th class=\"l\">engine</th></tr>",
        r.runs.len()
    );
    for e in &r.runs {
        let t = &e.doc.summary.total;
        let l = &t.latency_ns;
        let _ = write!(
            o,
            "<tr><td class=\"l\" title=\"{}\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}/s</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.0} s</td><td class=\"l\">{}</td></tr>",
            esc(&e.source),
            esc(&e.label),
            esc(&e.doc.workload.name),
            // Open-loop runs have an offered rate, not a configured depth.
            match e.doc.summary.offered_iops {
                Some(rate) => format!("open {}/s", format_count(rate)),
                None => e.doc.summary.configured_outstanding.to_string(),
            },
            format_count(t.iops),
            format_bytes(t.bytes_per_sec),
            opt_ns(l.mean),
            opt_u(l.p50),
            opt_u(l.p99),
            opt_u(l.p999),
            opt_u(l.max),
            t.outstanding_mean,
            e.doc.duration_s,
            esc(&e.doc.engine.name)
        );
    }
    o.push_str("</table></div>");
    let warned: Vec<_> = r
        .runs
        .iter()
        .filter(|e| !e.doc.warnings.is_empty())
        .collect();
    for e in warned.iter().take(10) {
        for w in &e.doc.warnings {
            let _ = write!(o, "<p class=\"warn\">{}: {}</p>", esc(&e.label), esc(w));
        }
    }
    charts_of(o, charts, "runs");
}

fn sweeps_section(o: &mut String, r: &Report, charts: &[Chart]) {
    o.push_str("<h2 id=\"sweeps\">Sweeps</h2>");
    for e in &r.sweeps {
        let s = &e.doc;
        let _ = write!(
            o,
            "<h3>{} — {} on {}</h3>",
            esc(&e.label),
            esc(&s.workload),
            esc(&s.targets.join(", "))
        );
        if let Some(k) = &s.knee {
            let _ = write!(
                o,
                "<p><b>{}</b></p><p class=\"note\">rule: {}</p>",
                esc(&k.summary),
                esc(&k.rule)
            );
        } else {
            o.push_str("<p class=\"note\">no knee: no point completed any I/O</p>");
        }
        if let Some(p) = &s.production {
            let _ = write!(o, "<p><b>{}</b></p>", esc(&p.summary));
        }
        o.push_str("<table><tr><th>QD</th><th class=\"l\">bs</th><th>read %</th><th>runs</th><th>IOPS</th><th>throughput</th><th>mean</th><th>p50</th><th>p99</th><th>outstanding</th><th class=\"l\">steady</th></tr>");
        for p in &s.points {
            let drift = match p.steady.drift_pct {
                Some(d) => format!("drift {d:.1} %"),
                None => "too short to judge".to_string(),
            };
            let steady = match p.steady.reached {
                Some(true) => format!("yes ({drift})"),
                Some(false) => format!("NO ({drift})"),
                None => format!("not checked ({drift})"),
            };
            let _ = write!(
                o,
                "<tr><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}/s</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td class=\"l\">{}</td></tr>",
                p.qd,
                esc(p.bs.as_deref().unwrap_or("workload")),
                p.read_pct.map(|v| format!("{v:.0}")).unwrap_or("-".into()),
                p.runs,
                format_count(p.iops),
                format_bytes(p.bytes_per_sec),
                opt_ns(p.latency_ns.mean),
                opt_u(p.latency_ns.p50),
                opt_u(p.latency_ns.p99),
                p.outstanding_mean,
                steady
            );
        }
        o.push_str("</table>");
        for w in &s.warnings {
            let _ = write!(o, "<p class=\"warn\">{}</p>", esc(w));
        }
    }
    charts_of(o, charts, "sweeps");
}

fn comparisons_section(o: &mut String, r: &Report, charts: &[Chart]) {
    o.push_str("<h2 id=\"comparisons\">Comparisons</h2>");
    for e in &r.comparisons {
        let c = &e.doc;
        let _ = write!(
            o,
            "<h3>{}</h3><table><tr><th class=\"l\">group</th><th>runs</th><th>IOPS</th><th>throughput</th><th>mean latency</th><th>p99 latency</th></tr>",
            esc(&e.label)
        );
        for g in &c.groups {
            let v = |k: &str| g.values.get(k).copied().flatten();
            let _ = write!(
                o,
                "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&g.label),
                g.n,
                v("iops").map(format_count).unwrap_or("-".into()),
                v("bytes_per_sec")
                    .map(|b| format!("{}/s", format_bytes(b)))
                    .unwrap_or("-".into()),
                opt_ns(v("latency_mean")),
                opt_ns(v("latency_p99"))
            );
        }
        o.push_str("</table><ul>");
        for cc in &c.comparisons {
            for m in cc.metrics.values() {
                let _ = write!(
                    o,
                    "<li class=\"{}\">{}</li>",
                    if m.significant { "sig" } else { "nsig" },
                    esc(&m.verdict)
                );
            }
        }
        o.push_str("</ul><p class=\"note\">");
        for m in &c.methods {
            let _ = write!(o, "{}<br>", esc(m));
        }
        o.push_str("</p>");
        for w in &c.warnings {
            let _ = write!(o, "<p class=\"warn\">{}</p>", esc(w));
        }
    }
    charts_of(o, charts, "comparisons");
}

fn telemetry_section(o: &mut String, r: &Report, charts: &[Chart]) {
    o.push_str("<h2 id=\"telemetry\">Telemetry and characterization</h2>");
    for e in &r.characterizations {
        let c = &e.doc;
        let _ = write!(
            o,
            "<h3>{} — device {} ({} from {})</h3><p>reads {:.1} %, {} IOPS mean; outstanding I/O mean {:.1}, p90 {:.1}, peak {:.1} ({}); {} of {} intervals used (queue &gt; {})</p>",
            esc(&e.label),
            esc(&c.device),
            esc(&c.method),
            esc(&c.source),
            c.read_pct,
            format_count(c.total.iops.mean),
            c.outstanding.mean,
            c.outstanding.p90,
            c.outstanding.peak,
            esc(&c.outstanding.source),
            c.intervals_used,
            c.intervals_total,
            c.busy_queue
        );
        for a in &c.assumptions {
            let _ = write!(o, "<p class=\"note\">assumption: {}</p>", esc(a));
        }
    }
    for e in &r.observations {
        let _ = write!(
            o,
            "<p>{}: {} device(s), {} intervals</p>",
            esc(&e.label),
            e.doc.devices.len(),
            e.doc
                .devices
                .iter()
                .map(|d| d.intervals.len())
                .sum::<usize>()
        );
    }
    charts_of(o, charts, "telemetry");
}

fn others_section(o: &mut String, r: &Report) {
    o.push_str("<h2 id=\"others\">Other results</h2>");
    for e in &r.others {
        let _ = write!(
            o,
            "<h3>{} ({})</h3><table>",
            esc(&e.label),
            esc(e.doc.get("schema").and_then(|v| v.as_str()).unwrap_or("?"))
        );
        if let Some(m) = e.doc.as_object() {
            for (k, v) in m.iter().filter(|(_, v)| v.is_number() || v.is_string()) {
                let _ = write!(
                    o,
                    "<tr><th class=\"l\">{}</th><td class=\"l\">{}</td></tr>",
                    esc(k),
                    esc(&v.to_string())
                );
            }
        }
        o.push_str("</table>");
    }
}

fn environment_section(o: &mut String, r: &Report) {
    o.push_str("<h2 id=\"environment\">Environment</h2>");
    for e in r.runs.iter().take(MAX_ENV_RUNS) {
        let d = &e.doc;
        let _ = write!(
            o,
            "<h3>{}</h3><table><tr><th class=\"l\">host</th><td class=\"l\">{} — {} {} — {} CPUs {}</td></tr><tr><th class=\"l\">oio</th><td class=\"l\">{} — {}</td></tr><tr><th class=\"l\">engine</th><td class=\"l\">{} {} (asked {}; direct {})</td></tr><tr><th class=\"l\">time</th><td class=\"l\">{} — {:.0} s measured after {:.0} s ramp, interval {} s, seed {}</td></tr>",
            esc(&e.label),
            esc(&d.host.hostname),
            esc(d.host.distribution.as_deref().unwrap_or(&d.host.os)),
            esc(&d.host.kernel),
            d.host.cpus,
            esc(d.host.cpu_model.as_deref().unwrap_or("")),
            esc(&d.oio_version),
            esc(&d.command.join(" ")),
            esc(&d.engine.name),
            esc(&d.engine.features.join(", ")),
            esc(&d.options.engine_requested),
            d.options.direct,
            esc(&d.timestamp),
            d.duration_s,
            d.options.ramp_s,
            d.options.interval_s,
            d.options.seed
        );
        for t in &d.targets {
            let dev = t.device.as_ref();
            let _ = write!(
                o,
                "<tr><th class=\"l\">target</th><td class=\"l\">{} ({}, {}{}) — device {} model {} scheduler {} nr_requests {} queue_depth {}{}</td></tr>",
                esc(&t.path),
                esc(&t.kind),
                format_bytes(t.size_bytes as f64),
                if t.created_by_oio { ", created by oio" } else { "" },
                esc(dev.map(|d| d.name.as_str()).unwrap_or("-")),
                esc(dev.and_then(|d| d.model.as_deref()).unwrap_or("-")),
                esc(dev.and_then(|d| d.scheduler.as_deref()).unwrap_or("-")),
                dev.and_then(|d| d.nr_requests).map(|v| v.to_string()).unwrap_or("-".into()),
                dev.and_then(|d| d.queue_depth).map(|v| v.to_string()).unwrap_or("-".into()),
                t.filesystem
                    .as_ref()
                    .map(|f| format!(" — {} on {}", esc(&f.fs_type), esc(&f.mount_point)))
                    .unwrap_or_default()
            );
        }
        o.push_str("</table>");
    }
    if r.runs.len() > MAX_ENV_RUNS {
        let _ = write!(
            o,
            "<p class=\"note\">{} more runs: their environments are in their result files.</p>",
            r.runs.len() - MAX_ENV_RUNS
        );
    }
}

impl Renderer for HtmlRenderer {
    fn render(&self, report: &Report) -> Result<Vec<Artifact>, ReportError> {
        Ok(vec![Artifact {
            name: "report.html".into(),
            bytes: self.page(report).into_bytes(),
        }])
    }
}
