//! Results of users' own transactions (`oio sql run`, `oio.sql`): per run the headline, the
//! latency of each transaction, the waits and the device, and the per-interval throughput on
//! one time axis with the device; and worker sequences (one script at several worker counts,
//! outside a study), drawn by worker count with every run visible.

use crate::chart::{charts_of, observation_panels, push_plot, Chart};
use crate::model::Report;
use crate::svg::{esc, Axis, Fmt, Mode, Plot, Series};
use oio_core::observation::Observation;
use oio_core::units::{format_bytes, format_count, format_ns};
use oio_documents::sql::SqlResult;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

/// What one throughput figure of an `oio.sql` result is, said once per section.
pub const TPS_DEFINITION: &str = "transactions/s: transactions committed per second of the measured window (after the ramp), counted by the client; a transaction is one run of one of the script's transactions, whatever BEGIN/COMMIT it holds (pgbench's rule)";

/// Names for `oio.sql` results by what differs between them (label, script, database,
/// workers, rate, version, host; else the command line's options), repeats of one name
/// numbered in the order they ran ("a #1", "a #2").
pub fn names(docs: &[&SqlResult]) -> Vec<String> {
    let facts: Vec<Vec<(String, String)>> = docs
        .iter()
        .map(|r| {
            let mut v = Vec::new();
            if let Some(l) = &r.envelope.label {
                v.push((String::new(), l.clone()));
            }
            v.push((String::new(), r.script.sources.join(" ")));
            v.push((String::new(), format!("{:?}", r.dialect).to_lowercase()));
            v.push(("workers".into(), r.options.workers.to_string()));
            if let Some(rate) = r.options.rate_tps {
                v.push(("rate".into(), format!("{rate}/s")));
            }
            v.push(("version".into(), r.engine_version.clone()));
            if let Some(h) = &r.envelope.host {
                v.push(("host".into(), h.hostname.clone()));
            }
            v
        })
        .collect();
    let mut names = oio_core::settings::name_by_difference(&[facts], docs.len(), |_| String::new());
    // Repeats: numbered by the time they ran, not the order the files were read.
    let mut order: Vec<usize> = (0..docs.len()).collect();
    order.sort_by(|a, b| {
        docs[*a]
            .envelope
            .timestamp
            .cmp(&docs[*b].envelope.timestamp)
    });
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for n in &names {
        *counts.entry(n.clone()).or_default() += 1;
    }
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for i in order {
        let n = names[i].clone();
        if counts[&n] > 1 || n.is_empty() {
            let k = seen.entry(n.clone()).or_default();
            *k += 1;
            names[i] = if n.is_empty() {
                format!("SQL run {k}")
            } else {
                format!("{n} #{k}")
            };
        }
    }
    names
}

/// The report's `oio.sql` results' names ([`names`]).
pub fn labels(report: &Report) -> Vec<String> {
    names(&report.sql.iter().map(|e| &e.doc).collect::<Vec<_>>())
}

/// "device vda during the window (2 s, time-weighted): 0.0 reads/s, 18.0 writes/s, 1.3 MiB
/// written/s, queue 0.2, write latency 11.4 ms", one per device.
pub fn device_lines(obs: &Observation) -> Vec<String> {
    let mut out = Vec::new();
    for d in &obs.devices {
        let secs: f64 = d.intervals.iter().map(|i| i.duration_s).sum();
        if secs.is_nan() || secs <= 0.0 {
            continue;
        }
        // Time-weighted, over the intervals that have the figure.
        let avg = |f: &dyn Fn(&oio_core::observation::DeviceInterval) -> Option<f64>| {
            let (mut s, mut t) = (0.0, 0.0);
            for i in &d.intervals {
                if let Some(v) = f(i).filter(|v| v.is_finite()) {
                    s += v * i.duration_s;
                    t += i.duration_s;
                }
            }
            (t > 0.0).then(|| s / t)
        };
        let num = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.1}"));
        out.push(format!(
            "device {} during the window ({secs:.0} s, time-weighted): {} reads/s, {} writes/s, {} written/s, queue {}, write latency {}",
            d.name,
            num(avg(&|i| i.read.iops)),
            num(avg(&|i| i.write.iops)),
            avg(&|i| i.write.bytes_per_sec).map_or("-".into(), format_bytes),
            num(avg(&|i| i.queue_mean)),
            avg(&|i| i.write.latency_mean_ns.filter(|v| *v > 0.0)).map_or("-".into(), format_ns),
        ));
    }
    out
}

/// The wait group with the largest share of a result's profile, "lock 41 %" (None without a
/// profile).
pub fn largest_wait(r: &SqlResult) -> Option<(String, f64)> {
    r.waits
        .shares()
        .into_iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// Several `oio.sql` results of one script in one directory at different worker counts.
#[derive(Clone, Debug)]
pub struct Sequence {
    /// The directory.
    pub place: String,
    /// The script's sources.
    pub script: String,
    /// Indices into [`Report::sql`], by workers then time.
    pub runs: Vec<usize>,
}

/// Worker sequences among the report's `oio.sql` results, leaving out those in `claimed`
/// (a study's runs differ by candidate, not by workers).
pub fn sequences(report: &Report, claimed: &[usize]) -> Vec<Sequence> {
    let mut by: BTreeMap<(String, String, String, String, String), Vec<usize>> = BTreeMap::new();
    for (i, e) in report.sql.iter().enumerate() {
        if claimed.contains(&i) {
            continue;
        }
        let d = &e.doc;
        let place = Path::new(&e.source)
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let key = (
            place,
            d.script.sources.join(" "),
            d.db.clone(),
            format!("{:?}", d.options.rate_tps),
            d.envelope.label.clone().unwrap_or_default(),
        );
        by.entry(key).or_default().push(i);
    }
    let mut out: Vec<Sequence> = by
        .into_iter()
        .filter_map(|((place, script, ..), mut runs)| {
            let mut ws: Vec<u32> = runs
                .iter()
                .map(|&i| report.sql[i].doc.options.workers)
                .collect();
            ws.sort();
            ws.dedup();
            if ws.len() < 2 {
                return None;
            }
            runs.sort_by(|a, b| {
                let (x, y) = (&report.sql[*a].doc, &report.sql[*b].doc);
                (x.options.workers, &x.envelope.timestamp)
                    .cmp(&(y.options.workers, &y.envelope.timestamp))
            });
            Some(Sequence {
                place,
                script,
                runs,
            })
        })
        .collect();
    out.sort_by_key(|s| s.runs[0]);
    out
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Each worker count of a sequence: (workers, median transactions/s of its runs).
fn steps(report: &Report, s: &Sequence) -> Vec<(u32, f64)> {
    let mut by: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for &i in &s.runs {
        let d = &report.sql[i].doc;
        by.entry(d.options.workers).or_default().push(d.summary.tps);
    }
    by.into_iter()
        .map(|(w, mut v)| (w, median(&mut v)))
        .collect()
}

/// Transactions/s per worker against the smallest count's median per worker, percent (100 =
/// linear scaling); None without a first step to scale from.
fn efficiency(first: (u32, f64), workers: u32, tps: f64) -> Option<f64> {
    let per = first.1 / first.0.max(1) as f64;
    (per > 0.0 && workers > 0).then(|| tps / workers as f64 / per * 100.0)
}

/// The SQL section: every result's figures, then the worker sequences.
pub fn section(o: &mut String, r: &Report, charts: &[Chart], claimed: &[usize]) {
    let _ = write!(
        o,
        "<section data-kind=\"sql\"><h2 id=\"sql\">Your own transactions (oio sql)</h2><p class=\"note\">{}. Latencies are measured by the client from each transaction's start (under --rate, from its scheduled start) over the measured window; percentiles from merged histograms.</p>",
        esc(TPS_DEFINITION)
    );
    let labels = labels(r);
    runs_table(o, r, &labels);
    for (n, (e, l)) in r.sql.iter().zip(&labels).enumerate() {
        run_block(o, &e.doc, l, &e.source);
        charts_of(o, charts, &format!("sql{}", n + 1));
    }
    for (n, s) in sequences(r, claimed).iter().enumerate() {
        sequence_table(o, r, s, &labels);
        charts_of(o, charts, &format!("sqlseq{}", n + 1));
    }
    o.push_str("</section>");
}

fn runs_table(o: &mut String, r: &Report, labels: &[String]) {
    let engine = |d: &SqlResult| {
        format!(
            "{} {}",
            format!("{:?}", d.dialect).to_lowercase(),
            d.engine_version
        )
    };
    // One server for every run (the usual case) is said once, not in every row.
    let mut engines: Vec<String> = r.sql.iter().map(|e| engine(&e.doc)).collect();
    engines.sort();
    engines.dedup();
    let one = engines.len() == 1;
    if one {
        let _ = write!(o, "<p>every run on {}</p>", esc(&engines[0]));
    }
    o.push_str("<table><tr><th class=\"l\">run</th><th class=\"l\">script</th><th class=\"l\">database</th><th>workers</th><th>transactions/s</th><th>committed</th><th>failed</th><th>retried</th><th class=\"l\">largest wait</th><th>time</th></tr>");
    for (e, l) in r.sql.iter().zip(labels) {
        let d = &e.doc;
        let s = &d.summary;
        let _ = write!(
            o,
            "<tr><td class=\"l\" title=\"{}\">{}</td><td class=\"l\">{}</td><td class=\"l\">{} {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td><td>{:.0} s</td></tr>",
            esc(&e.source),
            esc(l),
            esc(&d.script.sources.join(" ")),
            esc(&format!("{:?}", d.dialect).to_lowercase()),
            if one { String::new() } else { esc(&d.engine_version) },
            d.options.workers,
            format_count(s.tps),
            s.committed,
            s.failed,
            s.retries,
            largest_wait(d)
                .map(|(b, p)| format!("{} {p:.0} %", esc(&b)))
                .unwrap_or("-".into()),
            d.duration_s
        );
    }
    o.push_str("</table>");
}

/// One result: headline, per-transaction latencies, waits, device, notes.
fn run_block(o: &mut String, d: &SqlResult, label: &str, source: &str) {
    let s = &d.summary;
    let lp = match d.options.rate_tps {
        Some(r) => format!("open loop at {r}/s"),
        None => "closed loop".into(),
    };
    let _ = write!(
        o,
        "<h3 title=\"{}\">{}</h3><p class=\"headline\"><b>{} transactions/s</b> over {:.0} s at {} worker{} ({lp}) on {} {}: committed {}, failed {}, retried {} ({} statements)</p>",
        esc(source),
        esc(label),
        format_count(s.tps),
        d.duration_s,
        d.options.workers,
        if d.options.workers == 1 { "" } else { "s" },
        esc(&format!("{:?}", d.dialect).to_lowercase()),
        esc(&d.engine_version),
        s.committed,
        s.failed,
        s.retries,
        s.statements
    );
    o.push_str("<table><tr><th class=\"l\">transaction</th><th>committed</th><th>failed</th><th>retried</th><th>share %</th><th>weight %</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>max</th></tr>");
    let lat = |v: Option<u64>| v.map(|v| format_ns(v as f64)).unwrap_or("-".into());
    for (k, t) in &d.transactions {
        let l = &t.latency_ns;
        let _ = write!(
            o,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(k),
            t.committed,
            t.failed,
            t.retried,
            t.share_pct,
            t.target_share_pct,
            lat(l.p50),
            lat(l.p90),
            lat(l.p95),
            lat(l.p99),
            lat(l.max)
        );
    }
    o.push_str("</table>");
    waits_block(o, d);
    match &d.device {
        Some(obs) => {
            for line in device_lines(obs) {
                let _ = write!(o, "<p class=\"device\">{}</p>", esc(&line));
            }
        }
        None => o.push_str("<p class=\"note\">no device I/O was recorded during this run.</p>"),
    }
    let c = &d.cpu;
    let _ = write!(
        o,
        "<p class=\"note\">driver CPU {:.2} cores busy{}{}</p>",
        c.cores_busy,
        c.ns_per_txn
            .map(|v| format!(", {} per transaction", format_ns(v)))
            .unwrap_or_default(),
        if c.includes_database {
            " (includes the in-process database)"
        } else {
            ""
        }
    );
    if d.errors.count > 0 {
        let _ = write!(
            o,
            "<p class=\"warn\">{} transaction(s) failed for good: {}{}</p>",
            d.errors.count,
            d.errors
                .by_kind
                .iter()
                .map(|(k, n)| format!("{} × {n}", esc(k)))
                .collect::<Vec<_>>()
                .join(", "),
            d.errors
                .first
                .as_ref()
                .map(|f| format!("; first: {}", esc(f)))
                .unwrap_or_default()
        );
    }
    for w in &d.envelope.warnings {
        let _ = write!(o, "<p class=\"warn\">{}</p>", esc(w));
    }
    for n in &d.notes {
        let _ = write!(o, "<p class=\"note\">{}</p>", esc(n));
    }
}

/// The wait profile: its buckets (or classes) and top events, or why there is none.
fn waits_block(o: &mut String, d: &SqlResult) {
    let w = &d.waits;
    let groups = w.shares();
    if groups.is_empty() {
        let _ = write!(
            o,
            "<p class=\"note\">no wait profile (source: {}){}</p>",
            esc(&w.source),
            w.notes
                .iter()
                .map(|n| format!(": {}", esc(n)))
                .collect::<String>()
        );
        return;
    }
    let _ = write!(
        o,
        "<table><tr><th class=\"l\">wait {} ({})</th><th>share %</th></tr>",
        if w.buckets.is_empty() {
            "class"
        } else {
            "bucket"
        },
        esc(&w.source)
    );
    for (name, share) in &groups {
        let _ = write!(
            o,
            "<tr><td class=\"l\">{}</td><td>{share:.1}</td></tr>",
            esc(name)
        );
    }
    o.push_str("</table>");
    if !w.top_events.is_empty() {
        o.push_str("<table><tr><th class=\"l\">wait event</th><th class=\"l\">class</th><th>share %</th><th>avg active sessions</th></tr>");
        for e in w.top_events.iter().take(8) {
            let _ = write!(
                o,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{:.1}</td><td>{:.2}</td></tr>",
                esc(&e.event),
                esc(&e.class),
                e.share_pct,
                e.aas
            );
        }
        o.push_str("</table>");
    }
    for n in &w.notes {
        let _ = write!(o, "<p class=\"note\">{}</p>", esc(n));
    }
}

fn sequence_table(o: &mut String, r: &Report, s: &Sequence, labels: &[String]) {
    let st = steps(r, s);
    let _ = write!(
        o,
        "<h3>Worker sequence — {} in {} (workers {})</h3><p class=\"note\">efficiency: transactions/s per worker against the median per worker at {} worker{} (100 % = linear scaling); every run is listed and drawn.</p><table><tr><th class=\"l\">run</th><th>workers</th><th>transactions/s</th><th>efficiency</th><th>p95 (slowest transaction)</th><th>failed</th><th class=\"l\">largest wait</th></tr>",
        esc(&s.script),
        esc(&s.place),
        st.iter().map(|x| x.0.to_string()).collect::<Vec<_>>().join(", "),
        st[0].0,
        if st[0].0 == 1 { "" } else { "s" }
    );
    for &i in &s.runs {
        let d = &r.sql[i].doc;
        let p95 = d
            .transactions
            .values()
            .filter_map(|t| t.latency_ns.p95)
            .max();
        let _ = write!(
            o,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
            esc(&labels[i]),
            d.options.workers,
            format_count(d.summary.tps),
            efficiency(st[0], d.options.workers, d.summary.tps)
                .map(|e| format!("{e:.0} %"))
                .unwrap_or("-".into()),
            p95.map(|v| format_ns(v as f64)).unwrap_or("-".into()),
            d.summary.failed,
            largest_wait(d)
                .map(|(b, p)| format!("{} {p:.0} %", esc(&b)))
                .unwrap_or_else(|| format!("- ({})", esc(&d.waits.source)))
        );
    }
    o.push_str("</table>");
}

/// Every chart of the SQL section.
pub fn charts(report: &Report, out: &mut Vec<Chart>, claimed: &[usize]) {
    let labels = labels(report);
    for (n, (e, l)) in report.sql.iter().zip(&labels).enumerate() {
        over_time(out, &format!("sql{}", n + 1), l, &e.doc);
    }
    for (n, s) in sequences(report, claimed).iter().enumerate() {
        sequence_charts(out, &format!("sqlseq{}", n + 1), report, s);
    }
}

/// An interval's end, seconds from the window's start (`t_s` is its start): where the
/// device's intervals, which are stamped at their end, put the same time.
pub fn interval_end(i: &oio_documents::sql::SqlInterval) -> f64 {
    i.t_s + i.duration_s
}

/// One result over time: throughput, latency, and the device on the same time axis.
fn over_time(out: &mut Vec<Chart>, sec: &str, name: &str, r: &SqlResult) {
    let tmax = r
        .intervals
        .iter()
        .map(interval_end)
        .chain(r.device.iter().flat_map(|o| {
            o.devices
                .iter()
                .flat_map(|d| d.intervals.iter().map(|i| i.t_s))
        }))
        .fold(r.duration_s, f64::max);
    let t = Axis::linear("time (s, interval end)", Fmt::Secs).with_span(0.0, tmax);
    let mut p = Plot::new(
        &format!("{name}: transactions/s per interval"),
        t.clone(),
        Axis::linear("transactions/s", Fmt::Count),
    );
    p.series.push(Series::new(
        "committed/s",
        r.intervals
            .iter()
            .map(|i| (interval_end(i), i.tps))
            .collect(),
        Mode::LinePoints,
    ));
    push_plot(out, format!("{sec}-rate"), sec, p);
    let mut l = Plot::new(
        &format!("{name}: latency per interval, p50 (solid) and p99 (dashed)"),
        t.clone(),
        Axis::log("latency", Fmt::Ns),
    );
    let pick = |f: fn(&oio_core::histogram::LatencySummary) -> Option<u64>| {
        r.intervals
            .iter()
            .filter_map(|i| f(&i.latency_ns).map(|v| (interval_end(i), v as f64)))
            .collect::<Vec<_>>()
    };
    l.series
        .push(Series::new("p50", pick(|s| s.p50), Mode::LinePoints));
    let mut p99 = Series::new("p99", pick(|s| s.p99), Mode::LinePoints);
    p99.dashed = true;
    l.series.push(p99);
    push_plot(out, format!("{sec}-latency-time"), sec, l);
    if let Some(obs) = &r.device {
        observation_panels(out, sec, &format!("{name} device"), obs, Some(&t));
    }
}

/// A worker sequence: transactions/s and efficiency by workers, every run a dot, the line
/// through each count's median labelled with its largest wait.
fn sequence_charts(out: &mut Vec<Chart>, sec: &str, report: &Report, s: &Sequence) {
    let st = steps(report, s);
    let ws: Vec<f64> = st.iter().map(|x| x.0 as f64).collect();
    let x = || Axis::log("workers", Fmt::Count).with_ticks(ws.clone());
    let runs: Vec<&SqlResult> = s.runs.iter().map(|&i| &report.sql[i].doc).collect();
    let mut p = Plot::new(
        &format!(
            "{}: transactions/s by workers (dots: runs; dashed: linear from {})",
            s.script, st[0].0
        ),
        x(),
        Axis::linear("transactions/s", Fmt::Count),
    );
    p.series.push(Series::new(
        "each run",
        runs.iter()
            .map(|d| (d.options.workers as f64, d.summary.tps))
            .collect(),
        Mode::Points,
    ));
    let mut med = Series::new(
        "median, largest wait",
        st.iter().map(|(w, v)| (*w as f64, *v)).collect(),
        Mode::Line,
    );
    med.labels = Some(
        st.iter()
            .map(|(w, _)| {
                let mut shares: BTreeMap<String, Vec<f64>> = BTreeMap::new();
                let at: Vec<&&SqlResult> =
                    runs.iter().filter(|d| d.options.workers == *w).collect();
                for d in &at {
                    for (b, v) in d.waits.shares() {
                        shares.entry(b).or_default().push(v);
                    }
                }
                shares
                    .into_iter()
                    .map(|(b, v)| (b, v.iter().sum::<f64>() / at.len().max(1) as f64))
                    .max_by(|a, b| a.1.total_cmp(&b.1))
                    .map(|(b, v)| format!("{b} {v:.0} %"))
                    .unwrap_or_default()
            })
            .collect(),
    );
    p.series.push(med);
    let per = st[0].1 / st[0].0.max(1) as f64;
    let mut lin = Series::new(
        "linear",
        ws.iter().map(|w| (*w, per * w)).collect(),
        Mode::Line,
    );
    lin.dashed = true;
    p.series.push(lin);
    push_plot(out, format!("{sec}-scaling"), sec, p);
    let mut e = Plot::new(
        &format!(
            "{}: efficiency by workers (per worker against {}'s median)",
            s.script, st[0].0
        ),
        x(),
        Axis::linear("efficiency (%)", Fmt::Pct),
    );
    e.series.push(Series::new(
        "each run",
        runs.iter()
            .filter_map(|d| {
                let w = d.options.workers;
                efficiency(st[0], w, d.summary.tps).map(|v| (w as f64, v))
            })
            .collect(),
        Mode::Points,
    ));
    e.series.push(Series::new(
        "median",
        st.iter()
            .filter_map(|(w, v)| efficiency(st[0], *w, *v).map(|e| (*w as f64, e)))
            .collect(),
        Mode::Line,
    ));
    push_plot(out, format!("{sec}-efficiency"), sec, e);
}
