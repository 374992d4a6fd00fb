//! The HTML report: one file, no external URL, charts as inline SVG, so it can be mailed,
//! archived with the raw results and opened offline years later.
//!
//! A few lines of inline script only *check* the page (they draw nothing): they count the
//! charts that have visible marks and any script errors and write the counts on `<body>`
//! (`data-charts`, `data-charts-drawn`, `data-errors`), and the texts whose box (`getBBox()`
//! mapped into the chart's viewBox) leaves their chart (`data-overflow`, `data-overflow-list`),
//! which is what the headless-browser test reads.

use crate::chart::{charts_of, Chart};
use crate::charts;
use crate::experiments::{self, Experiment, Kind};
use crate::model::Report;
use crate::svg::esc;
use crate::{Artifact, Renderer, ReportError};
use oio_core::units::format_signed;
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
.scroll{max-height:480px;overflow:auto}td.diff,th.diff{background:#fff3cd;color:#222}
nav ol{columns:2;font-size:14px}.chart{display:inline-block;vertical-align:top;margin:6px}
svg.oio-chart{max-width:100%;height:auto;border:1px solid #ddd}
@media (prefers-color-scheme:dark){body{background:#1b1d21;color:#e6e6e6}th{background:#2a3340}td,th{border-color:#444}
.note,.nsig{color:#b8b8b8}.sig{color:#5fd39a}.warn{color:#ffb070}a{color:#7cc4ff}}
@media print{body{max-width:none;margin:0;color:#000;background:#fff}nav{display:none}.scroll{max-height:none;overflow:visible}
.chart,table,h3{break-inside:avoid}h2{break-before:page}}";

const CHECK_SCRIPT: &str = "window.__oioErrors=[];window.addEventListener('error',function(e){window.__oioErrors.push(String(e.message))});
document.addEventListener('DOMContentLoaded',function(){var c=document.querySelectorAll('svg.oio-chart'),d=0,over=[];
for(var i=0;i<c.length;i++){var s=c[i],b=s.getBBox(),m=s.querySelectorAll('.mark');var ok=m.length>0&&b.width>0&&b.height>0;
for(var j=0;ok&&j<m.length;j++){var r=m[j].getBBox();if(r.width>0||r.height>0){d++;break}}
var vb=s.viewBox.baseVal,t=s.querySelectorAll('text');
for(var k=0;k<t.length;k++){var e=t[k],x=e.getBBox(),M=e.getCTM(),S=s.getCTM(),lo=[1e9,1e9],hi=[-1e9,-1e9];
if(!M||!S)continue;M=S.inverse().multiply(M);
[[x.x,x.y],[x.x+x.width,x.y],[x.x,x.y+x.height],[x.x+x.width,x.y+x.height]].forEach(function(p){
var q=new DOMPoint(p[0],p[1]).matrixTransform(M);lo=[Math.min(lo[0],q.x),Math.min(lo[1],q.y)];hi=[Math.max(hi[0],q.x),Math.max(hi[1],q.y)]});
if(lo[0]<vb.x-0.5||lo[1]<vb.y-0.5||hi[0]>vb.x+vb.width+0.5||hi[1]>vb.y+vb.height+0.5)over.push(s.getAttribute('data-chart')+': '+e.textContent)}}
document.body.setAttribute('data-charts',String(c.length));document.body.setAttribute('data-charts-drawn',String(d));
document.body.setAttribute('data-overflow',String(over.length));document.body.setAttribute('data-overflow-list',over.slice(0,5).join(' | '));
document.body.setAttribute('data-errors',String(window.__oioErrors.length));});";

fn opt_ns(v: Option<f64>) -> String {
    v.map(format_ns).unwrap_or_else(|| "-".into())
}

fn opt_u(v: Option<u64>) -> String {
    v.map(|v| format_ns(v as f64)).unwrap_or_else(|| "-".into())
}

impl HtmlRenderer {
    /// The page as a string.
    pub fn page(&self, r: &Report) -> String {
        let charts = charts::build(r);
        let exps = experiments::group(r);
        let diagnosis = crate::diagnose::section(r);
        let studies = crate::study::find(r);
        let mut o = String::with_capacity(64 * 1024 + r.runs.len() * 600);
        let _ = write!(
            o,
            "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><meta name=\"color-scheme\" content=\"light dark\"><title>{t}</title><style>{STYLE}</style><script>{CHECK_SCRIPT}</script></head><body><h1>{t}</h1><p class=\"note\">generated {g} by oio {v}; {n} chart(s). Latency percentiles come from merged histograms, never averaged. Runs are named by what differs between them within their experiment.</p><nav><b>Contents</b><ol>",
            t = esc(&r.title),
            g = esc(&r.generated),
            v = esc(&r.oio_version),
            n = charts.len()
        );
        let mut toc = |id: &str, name: &str| {
            let _ = write!(o, "<li><a href=\"#{id}\">{}</a></li>", esc(name));
        };
        if diagnosis.is_some() {
            toc("diagnosis", "Diagnosis");
        }
        for x in &exps {
            toc(&x.id, &exp_title(x));
        }
        if !r.sweeps.is_empty() {
            toc("sweeps", "Sweeps");
        }
        if !r.comparisons.is_empty() {
            toc("comparisons", "Comparisons");
        }
        for s in &studies {
            toc(&s.id, &format!("Study — {}", s.root));
        }
        if !r.sql.is_empty() {
            toc("sql", "Your own transactions (oio sql)");
        }
        if !r.tpcc.is_empty() || !r.tpcc_checks.is_empty() || !r.tpcc_series.is_empty() {
            toc("tpcc", "TPC-C");
        }
        if !r.fleets.is_empty() {
            toc("fleet", "Fleet runs");
        }
        if !r.fleet_tpcc.is_empty() {
            toc("fleet-tpcc", "Fleet TPC-C runs");
        }
        if !r.ladders.is_empty() {
            toc("ladder", "Host ladders");
        }
        if !r.observations.is_empty() || !r.characterizations.is_empty() {
            toc("telemetry", "Telemetry and characterization");
        }
        let others = r
            .others
            .iter()
            .any(|e| !crate::diagnose::is_diagnosis(&e.doc));
        if others {
            toc("others", "Other results");
        }
        if !r.runs.is_empty() || !r.tpcc.is_empty() || !r.sql.is_empty() {
            toc("environment", "Environment");
        }
        o.push_str("</ol></nav>");
        o.push_str(diagnosis.as_deref().unwrap_or_default());
        for x in &exps {
            experiment_section(&mut o, r, x, &charts);
        }
        if !r.sweeps.is_empty() {
            sweeps_section(&mut o, r, &charts);
        }
        if !r.comparisons.is_empty() {
            comparisons_section(&mut o, r, &charts);
        }
        crate::study::section(&mut o, r, &studies, &charts);
        if !r.sql.is_empty() {
            let claimed = crate::study::claimed_sql(&studies);
            crate::sql::section(&mut o, r, &charts, &claimed);
        }
        if !r.tpcc.is_empty() || !r.tpcc_checks.is_empty() || !r.tpcc_series.is_empty() {
            tpcc_section(&mut o, r, &charts);
        }
        if !r.fleets.is_empty() {
            crate::fleet::section(&mut o, r, &charts);
        }
        if !r.fleet_tpcc.is_empty() {
            crate::fleet_tpcc::section(&mut o, r);
        }
        if !r.ladders.is_empty() {
            crate::ladder::section(&mut o, r);
        }
        if !r.observations.is_empty() || !r.characterizations.is_empty() {
            telemetry_section(&mut o, r, &charts);
        }
        if others {
            others_section(&mut o, r);
        }
        if !r.runs.is_empty() || !r.tpcc.is_empty() || !r.sql.is_empty() {
            environment_section(&mut o, r);
        }
        o.push_str("</body></html>\n");
        o
    }
}

fn exp_title(x: &Experiment) -> String {
    let mut t = format!(
        "{} — {} ({} run{})",
        x.kind.name(),
        if x.place.is_empty() { "." } else { &x.place },
        x.runs.len(),
        if x.runs.len() == 1 { "" } else { "s" }
    );
    // The name the runs were given, unless what tells the section apart says it already.
    if let Some(k) = x.key.as_ref().filter(|k| !k.label.is_empty()) {
        if !x.apart.iter().any(|a| a.starts_with("label ")) {
            t.push_str(&format!(" · {}", k.label));
        }
    }
    // Another experiment of the same directory: what tells this one apart.
    if !x.apart.is_empty() {
        t.push_str(&format!(" · {}", x.apart.join(", ")));
    }
    t
}

fn experiment_section(o: &mut String, r: &Report, x: &Experiment, charts: &[Chart]) {
    let _ = write!(
        o,
        "<section class=\"exp\" data-kind=\"{}\"><h2 id=\"{}\">{}</h2>",
        x.kind.slug(),
        x.id,
        esc(&exp_title(x))
    );
    let what = match x.kind {
        Kind::Single => "one run.".to_string(),
        Kind::Repeat => "the same configuration run repeatedly: the spread between runs is the noise any comparison must beat.".into(),
        Kind::Interleaved => "configurations run interleaved (A B A B …), so slow drift hits them alike: which is better, and by how much?".into(),
        Kind::Depth => "closed-loop runs at several depths: where do deeper queues stop adding IOPS?".into(),
        Kind::Rate => "open-loop runs at several offered rates: which rate does the device carry, and what does response time (from each I/O's intended start) do near it?".into(),
        Kind::Blend => "the I/O blender: streams alone, then together; does mixing turn sequential I/O random?".into(),
        Kind::Series => "runs differing in several options.".into(),
    };
    let _ = write!(
        o,
        "<p class=\"note\">{}{}</p>",
        esc(&what),
        if x.differs.is_empty() {
            String::new()
        } else {
            format!(" They differ in: {}.", esc(&x.differs.join(", ")))
        }
    );
    o.push_str("<div class=\"scroll\"><table><tr><th class=\"l\">run</th><th class=\"l\">workload</th><th>QD / rate</th><th>IOPS</th><th>throughput</th><th>mean</th><th>p50</th><th>p99</th><th>p99.9</th><th>max</th><th>outstanding</th><th>time</th></tr>");
    for (&i, label) in x.runs.iter().zip(&x.labels) {
        let e = &r.runs[i];
        let t = &e.doc.summary.total;
        let l = &t.latency_ns;
        let _ = write!(
            o,
            "<tr><td class=\"l\" title=\"{}\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}/s</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.0} s</td></tr>",
            esc(&e.source),
            esc(label),
            esc(&e.doc.workload.name),
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
        );
    }
    o.push_str("</table></div>");
    if let Some(c) = experiments::comparison(r, x) {
        o.push_str("<p>Margins against the first configuration, as <code>oio compare</code> computes them from these runs:</p>");
        comparison_tables(o, &c);
    }
    if x.kind == Kind::Repeat && x.runs.len() >= 2 {
        let v: Vec<f64> = x
            .runs
            .iter()
            .map(|&i| r.runs[i].doc.summary.total.iops)
            .collect();
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let sd = (v.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt();
        let _ = write!(
            o,
            "<p>IOPS over {} runs: mean {}, standard deviation {} ({:.1} % of the mean). A difference smaller than about twice that is not distinguishable from noise with this many runs.</p>",
            v.len(),
            format_count(mean),
            format_count(sd),
            if mean > 0.0 { 100.0 * sd / mean } else { 0.0 }
        );
    }
    if x.kind == Kind::Blend {
        o.push_str("<table><tr><th class=\"l\">phase</th><th>sequential %</th><th>near-sequential %</th></tr>");
        for (&i, label) in x.runs.iter().zip(&x.labels) {
            if let Some(a) = &r.runs[i].doc.access_order {
                let _ = write!(
                    o,
                    "<tr><td class=\"l\">{}</td><td>{:.1}</td><td>{:.1}</td></tr>",
                    esc(label),
                    a.sequential_pct,
                    a.near_sequential_pct
                );
            }
        }
        o.push_str("</table>");
    }
    // Each warning once, with the runs it concerns.
    let mut warned: Vec<(&str, Vec<&str>)> = Vec::new();
    for (&i, label) in x.runs.iter().zip(&x.labels) {
        for w in &r.runs[i].doc.envelope.warnings {
            match warned.iter_mut().find(|(t, _)| *t == w.as_str()) {
                Some((_, l)) => l.push(label),
                None => warned.push((w, vec![label])),
            }
        }
    }
    for (w, labels) in warned.iter().take(10) {
        let who = if labels.len() == x.runs.len() && labels.len() > 1 {
            format!("all {} runs", labels.len())
        } else {
            labels.join(", ")
        };
        let _ = write!(o, "<p class=\"warn\">{}: {}</p>", esc(&who), esc(w));
    }
    charts_of(o, charts, &x.id);
    o.push_str("</section>");
}

fn tpcc_section(o: &mut String, r: &Report, charts: &[Chart]) {
    o.push_str("<section data-kind=\"tpcc\"><h2 id=\"tpcc\">TPC-C</h2><p class=\"note\">NOPM: new orders per minute; TPM: transactions per minute (source per run below). Latencies are measured by the client over the measured window (after ramp).</p>");
    let labels = charts::tpcc_labels(r);
    if !r.tpcc.is_empty() {
        o.push_str("<table><tr><th class=\"l\">run</th><th class=\"l\">database</th><th>warehouses</th><th>workers</th><th>NOPM</th><th>TPM</th><th class=\"l\">TPM source</th><th>NOPM/TPM</th><th>efficiency</th><th>committed</th><th>rolled back</th><th>failed</th><th>time</th></tr>");
        for (e, l) in r.tpcc.iter().zip(&labels) {
            let d = &e.doc;
            let s = &d.summary;
            let _ = write!(
                o,
                "<tr><td class=\"l\" title=\"{}\">{}</td><td class=\"l\">{} {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.0} s</td></tr>",
                esc(&e.source),
                esc(l),
                esc(&format!("{:?}", d.dialect).to_lowercase()),
                esc(&d.engine_version),
                d.warehouses,
                d.options.workers,
                format_count(s.nopm),
                format_count(s.tpm),
                esc(&s.tpm_source),
                if s.ratio_ok { "" } else { "warn" },
                s.nopm_tpm_ratio.map(|v| format!("{v:.3}")).unwrap_or("-".into()),
                s.efficiency_pct.map(|v| format!("{v:.1} %")).unwrap_or("-".into()),
                s.committed,
                s.rolled_back,
                s.failed,
                d.duration_s
            );
        }
        o.push_str("</table>");
    }
    for (n, (e, l)) in r.tpcc.iter().zip(&labels).enumerate() {
        let d = &e.doc;
        let _ = write!(o, "<h3>{}</h3><table><tr><th class=\"l\">transaction</th><th>committed</th><th>rolled back</th><th>share %</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>max</th></tr>", esc(l));
        let us = |v: Option<u64>| v.map(|v| format_ns(v as f64)).unwrap_or("-".into());
        for (k, t) in &d.transactions {
            let lat = &t.latency_ns;
            let _ = write!(
                o,
                "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&k.replace('_', " ")),
                t.committed,
                t.rolled_back,
                t.share_pct,
                us(lat.p50),
                us(lat.p90),
                us(lat.p95),
                us(lat.p99),
                us(lat.max)
            );
        }
        o.push_str("</table>");
        if !d.waits.top_events.is_empty() {
            o.push_str("<table><tr><th class=\"l\">wait event</th><th class=\"l\">class</th><th>share %</th><th>avg active sessions</th></tr>");
            for w in d.waits.top_events.iter().take(8) {
                let _ = write!(
                    o,
                    "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{:.1}</td><td>{:.2}</td></tr>",
                    esc(&w.event),
                    esc(&w.class),
                    w.share_pct,
                    w.aas
                );
            }
            o.push_str("</table>");
        }
        let per_interval = d.intervals.iter().filter(|i| !i.waits.is_empty()).count();
        if per_interval == 0 {
            let _ = write!(
                o,
                "<p class=\"note\">waits from {}: no per-interval waits recorded, so the profile is drawn as shares of the whole window, not over time.</p>",
                esc(&d.waits.source)
            );
        } else {
            let _ = write!(
                o,
                "<p class=\"note\">waits from {}: the stacked bars show each interval's average active sessions by class ({} of {} intervals recorded waits), above the device's I/O on the same time axis; the shares below are of the whole window.</p>",
                esc(&d.waits.source),
                per_interval,
                d.intervals.len()
            );
            wait_share_table(o, d);
        }
        for w in d
            .waits
            .notes
            .iter()
            .chain(&d.envelope.warnings)
            .chain(&d.notes)
        {
            let _ = write!(o, "<p class=\"note\">{}</p>", esc(w));
        }
        if d.device.is_none() {
            o.push_str("<p class=\"note\">no device I/O was recorded during this run.</p>");
        }
        charts_of(o, charts, &format!("tpcc{}", n + 1));
    }
    for (n, e) in r.tpcc_series.iter().enumerate() {
        tpcc_series_table(o, e);
        charts_of(o, charts, &format!("tpccseries{}", n + 1));
    }
    for c in &r.tpcc_checks {
        let d = &c.doc;
        let _ = write!(
            o,
            "<h3>Consistency check — {}</h3><p class=\"{}\">{}: {} of {} conditions passed ({} warehouses, {})</p><table><tr><th>#</th><th class=\"l\">condition</th><th class=\"l\">status</th><th>violations</th></tr>",
            esc(&c.label),
            if d.passed { "sig" } else { "warn" },
            if d.passed { "PASSED" } else { "FAILED" },
            d.conditions.iter().filter(|c| c.status == oio_documents::tpcc::check::Status::Pass).count(),
            d.conditions.len(),
            d.warehouses,
            esc(&d.envelope.timestamp)
        );
        for k in &d.conditions {
            let _ = write!(
                o,
                "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td></tr>",
                k.number,
                esc(&k.title),
                esc(&format!("{:?}", k.status).to_lowercase()),
                k.violations
            );
        }
        o.push_str("</table>");
    }
    if r.tpcc.iter().all(|_| r.tpcc_checks.is_empty()) && !r.tpcc.is_empty() {
        o.push_str("<p class=\"note\">no consistency check (oio tpcc check) among the inputs.</p>");
    }
    charts_of(o, charts, "tpcc");
    o.push_str("</section>");
}

/// Each interval's share of sampled time by wait class, percent (the numbers behind the
/// stacked bars), at most 30 intervals (the chart holds them all).
fn wait_share_table(o: &mut String, d: &oio_documents::tpcc::result::TpccResult) {
    let mut classes: Vec<&str> = Vec::new();
    for i in &d.intervals {
        for w in &i.waits {
            if !classes.contains(&w.name.as_str()) {
                classes.push(&w.name);
            }
        }
    }
    o.push_str("<div class=\"scroll\"><table><tr><th>interval end</th><th>NOPM</th>");
    for c in &classes {
        let _ = write!(o, "<th>{} %</th>", esc(c));
    }
    o.push_str("</tr>");
    for i in d.intervals.iter().filter(|i| !i.waits.is_empty()).take(30) {
        let _ = write!(
            o,
            "<tr><td>{:.1} s</td><td>{}</td>",
            i.t_s,
            format_count(i.nopm)
        );
        for c in &classes {
            let v = i.waits.iter().find(|w| w.name == *c).map(|w| w.share_pct);
            let _ = write!(
                o,
                "<td>{}</td>",
                v.map(|v| format!("{v:.1}")).unwrap_or("-".into())
            );
        }
        o.push_str("</tr>");
    }
    o.push_str("</table></div>");
}

fn tpcc_series_table(o: &mut String, e: &crate::model::Entry<oio_documents::tpcc::result::Series>) {
    let s = &e.doc;
    let _ = write!(
        o,
        "<h3 title=\"{}\">Worker sequence — {} ({} {}, {} warehouse{}, workers {})</h3><table><tr><th>workers</th><th>NOPM</th><th>TPM</th><th>efficiency</th><th>new-order p90</th><th>new-order p99</th><th>failed</th><th class=\"l\">result</th></tr>",
        esc(&e.source),
        esc(&e.label),
        esc(&format!("{:?}", s.dialect).to_lowercase()),
        esc(&s.db),
        s.warehouses,
        if s.warehouses == 1 { "" } else { "s" },
        esc(&s.workers.iter().map(|w| w.to_string()).collect::<Vec<_>>().join(","))
    );
    for p in &s.steps {
        let no = p.latency_ns.get("new_order");
        let lat = |v: Option<u64>| v.map(|v| format_ns(v as f64)).unwrap_or("-".into());
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}{}</td></tr>",
            p.workers,
            format_count(p.nopm),
            format_count(p.tpm),
            p.efficiency_pct.map(|v| format!("{v:.0} %")).unwrap_or("-".into()),
            lat(no.and_then(|l| l.0)),
            lat(no.and_then(|l| l.1)),
            p.failed,
            esc(&p.result_file),
            if p.partial { " (partial)" } else { "" }
        );
    }
    o.push_str("</table>");
    let missing = s.workers.len().saturating_sub(s.steps.len());
    if missing > 0 {
        let _ = write!(
            o,
            "<p class=\"warn\">{missing} of {} steps did not run (stop reason: {}).</p>",
            s.workers.len(),
            esc(&s.envelope.stop_reason.to_string())
        );
    }
    for n in s.notes.iter().chain(&s.envelope.warnings) {
        let _ = write!(o, "<p class=\"note\">{}</p>", esc(n));
    }
}

fn sweeps_section(o: &mut String, r: &Report, charts: &[Chart]) {
    o.push_str("<section data-kind=\"sweep\"><h2 id=\"sweeps\">Sweeps</h2>");
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
            let _ = write!(o, "<p><b>{}</b></p>", esc(&k.summary));
            // An undecided knee's summary already says why and what would decide it.
            if let Some(c) = k
                .confidence
                .filter(|c| *c != oio_analysis::knee::KneeConfidence::Undecided)
            {
                let _ = write!(
                    o,
                    "<p class=\"note\">confidence {}: {}{}</p>",
                    c.word(),
                    esc(&k.why.join("; ")),
                    if k.decide.is_empty() {
                        String::new()
                    } else {
                        format!("; would raise it: {}", esc(&k.decide.join(", ")))
                    }
                );
            }
            let _ = write!(o, "<p class=\"note\">rule: {}</p>", esc(&k.rule));
            // What each rule names (all are marked on the charts), then what to check.
            o.push_str("<table><tr><th class=\"l\">rule</th><th>depth</th><th>IOPS</th><th>p99</th><th class=\"l\">note</th></tr>");
            let mut rules = vec![
                ("saturation", &k.rules.saturation),
                ("% of peak", &k.rules.pct_of_peak),
                ("power", &k.rules.power),
            ];
            if let Some(t) = &k.rules.latency_target {
                rules.push(("latency target", t));
            }
            for (name, rd) in rules {
                let _ = write!(
                    o,
                    "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
                    name,
                    rd.qd.map(|q| q.to_string()).unwrap_or("-".into()),
                    rd.iops.map(format_count).unwrap_or("-".into()),
                    opt_ns(rd.latency_ns.p99),
                    esc(rd.note.as_deref().unwrap_or(""))
                );
            }
            o.push_str("</table>");
            for f in &k.flags {
                let _ = write!(o, "<p class=\"warn\">{}</p>", esc(&f.message));
            }
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
        for w in &s.envelope.warnings {
            let _ = write!(o, "<p class=\"warn\">{}</p>", esc(w));
        }
    }
    charts_of(o, charts, "sweeps");
    o.push_str("</section>");
}

/// A comparison's groups, its verdicts (margin with its interval, significance) and methods.
fn comparison_tables(o: &mut String, c: &oio_analysis::compare::Comparison) {
    {
        o.push_str("<table><tr><th class=\"l\">group</th><th>runs</th><th>IOPS</th><th>throughput</th><th>mean latency</th><th>p99 latency</th></tr>");
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
        o.push_str("</table>");
        // Seed 002's table: each metric, both values, the margin and its interval.
        let _ = write!(
            o,
            "<table><tr><th class=\"l\">metric</th><th class=\"l\">against {}</th><th>baseline</th><th>candidate</th><th>margin</th><th>{:.0} % interval</th><th>p</th><th class=\"l\">verdict</th></tr>",
            esc(&c.baseline),
            c.options.confidence * 100.0
        );
        for cc in &c.comparisons {
            for (k, m) in &cc.metrics {
                let val = |v: Option<f64>| match (v, m.unit.as_str()) {
                    (None, _) => "-".to_string(),
                    (Some(v), "ns") => format_ns(v),
                    (Some(v), "B/s") => format!("{}/s", format_bytes(v)),
                    (Some(v), "1/s") => format!("{}/s", format_count(v)),
                    (Some(v), u) => format!("{} {}", format_count(v), esc(u)),
                };
                let _ = write!(
                    o,
                    "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td><td>{}</td><td class=\"l {}\">{}</td></tr>",
                    esc(if m.label.is_empty() { k } else { &m.label }),
                    esc(&cc.group),
                    val(m.baseline_value),
                    val(m.value),
                    if m.significant { "sig" } else { "nsig" },
                    m.margin_pct.map(|v| format!("{} %", format_signed(v, 2))).unwrap_or("-".into()),
                    match (m.ci_low_pct, m.ci_high_pct) {
                        (Some(a), Some(b)) => format!("{} % to {} %", format_signed(a, 2), format_signed(b, 2)),
                        _ => "-".into(),
                    },
                    m.p_value.map(|p| format!("{p:.3}")).unwrap_or("-".into()),
                    if m.significant { "sig" } else { "nsig" },
                    // The comparison's own word: undecided and equal-within-resolution are not
                    // "not significant".
                    match m.outcome.as_str() {
                        "better" | "worse" => format!("{}, significant", m.outcome),
                        o => esc(o),
                    }
                );
            }
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
        if !c.correction.words.is_empty() {
            let _ = write!(o, "{}<br>", esc(&c.correction.words));
        }
        for m in &c.methods {
            let _ = write!(o, "{}<br>", esc(m));
        }
        o.push_str("</p>");
        for w in &c.envelope.warnings {
            let _ = write!(o, "<p class=\"warn\">{}</p>", esc(w));
        }
    }
}

fn comparisons_section(o: &mut String, r: &Report, charts: &[Chart]) {
    o.push_str("<section data-kind=\"comparison\"><h2 id=\"comparisons\">Comparisons</h2>");
    for e in &r.comparisons {
        let _ = write!(o, "<h3>{}</h3>", esc(&e.label));
        comparison_tables(o, &e.doc);
    }
    charts_of(o, charts, "comparisons");
    o.push_str("</section>");
}

fn telemetry_section(o: &mut String, r: &Report, charts: &[Chart]) {
    o.push_str(
        "<section data-kind=\"telemetry\"><h2 id=\"telemetry\">Telemetry and characterization</h2>",
    );
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
    if let Some(a) = charts::alignment(r) {
        let _ = write!(o, "<p class=\"note\">{}</p>", esc(&a.note));
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
    o.push_str("</section>");
}

fn others_section(o: &mut String, r: &Report) {
    o.push_str("<section data-kind=\"others\"><h2 id=\"others\">Other results</h2>");
    for e in r
        .others
        .iter()
        .filter(|e| !crate::diagnose::is_diagnosis(&e.doc))
    {
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
    o.push_str("</section>");
}

fn environment_section(o: &mut String, r: &Report) {
    o.push_str("<section data-kind=\"environment\"><h2 id=\"environment\">Environment</h2>");
    // One block per distinct host; fields that differ between hosts are highlighted.
    let mut hosts: Vec<(&oio_core::host::HostInfo, Vec<String>)> = Vec::new();
    let all = r
        .runs
        .iter()
        .filter_map(|e| Some((e.doc.envelope.host.as_ref()?, e.label.clone())))
        .chain(
            r.tpcc
                .iter()
                .filter_map(|e| Some((e.doc.envelope.host.as_ref()?, e.label.clone()))),
        )
        .chain(
            r.sql
                .iter()
                .filter_map(|e| Some((e.doc.envelope.host.as_ref()?, e.label.clone()))),
        );
    for (h, label) in all {
        let key = |h: &oio_core::host::HostInfo| {
            (
                h.hostname.clone(),
                h.kernel.clone(),
                h.cpus,
                h.cpu_model.clone(),
                h.os.clone(),
            )
        };
        match hosts.iter_mut().find(|(k, _)| key(k) == key(h)) {
            Some((_, l)) => l.push(label),
            None => hosts.push((h, vec![label])),
        }
    }
    let rows: Vec<Vec<(&str, String)>> = hosts
        .iter()
        .map(|(h, _)| {
            vec![
                ("host name", h.hostname.clone()),
                (
                    "system",
                    h.distribution.clone().unwrap_or_else(|| h.os.clone()),
                ),
                ("kernel", h.kernel.clone()),
                ("CPUs", h.cpus.to_string()),
                ("CPU model", h.cpu_model.clone().unwrap_or_default()),
            ]
        })
        .collect();
    for (n, ((_, labels), row)) in hosts.iter().zip(&rows).enumerate() {
        let _ = write!(
            o,
            "<h3>Host {} ({} result{})</h3><table>",
            n + 1,
            labels.len(),
            if labels.len() == 1 { "" } else { "s" }
        );
        for (k, (name, v)) in row.iter().enumerate() {
            let differs = rows.iter().any(|r| r[k].1 != *v);
            let _ = write!(
                o,
                "<tr><th class=\"l\">{}</th><td class=\"l{}\">{}</td></tr>",
                name,
                if differs { " diff" } else { "" },
                esc(v)
            );
        }
        o.push_str("</table>");
    }
    // Per-run facts that differ (engine, direct I/O, oio version, target device): listed only
    // when they are not the same everywhere.
    let facts: Vec<(String, Vec<(&str, String)>)> = r
        .runs
        .iter()
        .map(|e| {
            let d = &e.doc;
            let dev = d.targets.iter().map(|t| {
                let dv = t.device.as_ref();
                format!(
                    "{} ({}{})",
                    t.path,
                    dv.and_then(|d| d.model.clone())
                        .unwrap_or_else(|| t.kind.clone()),
                    dv.and_then(|d| d.scheduler.clone())
                        .map(|s| format!(", {s}"))
                        .unwrap_or_default()
                )
            });
            (
                e.label.clone(),
                vec![
                    ("oio", d.envelope.oio_version.clone()),
                    ("engine", d.engine.name.clone()),
                    ("direct I/O", d.options.direct.to_string()),
                    ("submission", d.options.submit.clone()),
                    ("targets", dev.collect::<Vec<_>>().join("; ")),
                ],
            )
        })
        .collect();
    if let Some((_, first)) = facts.first() {
        let same: Vec<bool> = (0..first.len())
            .map(|k| facts.iter().all(|(_, f)| f[k].1 == first[k].1))
            .collect();
        o.push_str("<table><tr><th class=\"l\">the same in every run</th><td class=\"l\">");
        for (k, (name, v)) in first.iter().enumerate() {
            if same[k] {
                let _ = write!(o, "{name}: {}<br>", esc(v));
            }
        }
        o.push_str("</td></tr></table>");
        if same.iter().any(|s| !s) {
            o.push_str("<div class=\"scroll\"><table><tr><th class=\"l\">run</th>");
            for (k, (name, _)) in first.iter().enumerate() {
                if !same[k] {
                    let _ = write!(o, "<th class=\"l diff\">{name}</th>");
                }
            }
            o.push_str("</tr>");
            for (label, f) in &facts {
                let _ = write!(o, "<tr><td class=\"l\">{}</td>", esc(label));
                for (k, (_, v)) in f.iter().enumerate() {
                    if !same[k] {
                        let _ = write!(o, "<td class=\"l\">{}</td>", esc(v));
                    }
                }
                o.push_str("</tr>");
            }
            o.push_str("</table></div>");
        }
    }
    o.push_str("</section>");
}

impl Renderer for HtmlRenderer {
    fn render(&self, report: &Report) -> Result<Vec<Artifact>, ReportError> {
        Ok(vec![Artifact {
            name: "report.html".into(),
            bytes: self.page(report).into_bytes(),
        }])
    }
}
