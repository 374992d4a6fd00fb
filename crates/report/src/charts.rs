//! Which charts a report has, built from its documents. Each chart has a stable id (also its
//! file name with `--svg`/`--png`) and a section. Time series and percentile curves overlay at
//! most [`MAX_OVERLAY`] runs (more lines are unreadable); the run table and the IOPS–latency
//! scatter show every run.

pub use crate::chart::Chart;
use crate::chart::{
    observation_panels, overlay_or_multiples, push_plot, slug, tpcc_names, BUSY_QUEUE, MAX_OVERLAY,
    MAX_SERIES, SMALL,
};
use crate::experiments::{self, Experiment, Kind};
use crate::model::Report;
use crate::svg::{Axis, BarSeries, Bars, Fmt, Heatmap, Marker, Mode, Plot, Series, Stack};
use oio_analysis::sweep;
use oio_core::histogram::LatencyHistogram;
use oio_core::result::{Interval, RunResult};

fn series_of(
    r: &RunResult,
    name: &str,
    f: impl Fn(&Interval) -> Option<f64>,
    mode: Mode,
) -> Series {
    Series::new(
        name,
        r.intervals
            .iter()
            .filter_map(|i| f(i).map(|v| (i.t_s, v)))
            .collect(),
        mode,
    )
}

/// Every chart of the report, in page order.
pub fn build(report: &Report) -> Vec<Chart> {
    let mut out = Vec::new();
    for x in experiments::group(report) {
        experiment(report, &x, &mut out);
    }
    sweeps(report, &mut out);
    comparisons(report, &mut out);
    telemetry(report, &mut out);
    let studies = crate::study::find(report);
    crate::study::charts(report, &studies, &mut out);
    crate::sql::charts(report, &mut out, &crate::study::claimed_sql(&studies));
    tpcc(report, &mut out);
    crate::fleet::charts(report, &mut out);
    // Ids are file names with --svg/--png: names cut to length (two devices of one long file
    // name) or two files with one label must not overwrite each other.
    let mut seen = std::collections::HashSet::new();
    for c in &mut out {
        if !seen.insert(c.id.clone()) {
            let base = c.id.clone();
            let mut k = 2;
            while !seen.insert(format!("{base}-{k}")) {
                k += 1;
            }
            let new = format!("{base}-{k}");
            c.svg = c.svg.replacen(
                &format!("data-chart=\"{base}\""),
                &format!("data-chart=\"{new}\""),
                1,
            );
            c.id = new;
        }
    }
    out
}

fn pct_curve(h: &LatencyHistogram) -> Vec<(f64, f64)> {
    (0..=50)
        .map(|k| std::f64::consts::LOG10_2 + k as f64 * (5.0 - std::f64::consts::LOG10_2) / 50.0)
        .filter_map(|x| {
            let qq = 1.0 - 10f64.powf(-x);
            // Beyond the sample count a percentile is the maximum: stop there.
            if (1.0 - qq) * (h.count() as f64) < 1.0 {
                return None;
            }
            h.quantile(qq).map(|v| (x, v as f64))
        })
        .collect()
}

/// One time-series quantity per run: overlaid when few, else one small chart per run on a
/// shared scale.
#[allow(clippy::too_many_arguments)]
fn per_run(
    out: &mut Vec<Chart>,
    x: &Experiment,
    report: &Report,
    key: &str,
    title: &str,
    y: Axis,
    mode: Mode,
    f: &dyn Fn(&Interval) -> Option<f64>,
) {
    let series: Vec<Series> = x
        .runs
        .iter()
        .zip(&x.labels)
        .map(|(&i, l)| series_of(&report.runs[i].doc, l, f, mode))
        .collect();
    overlay_or_multiples(
        out,
        &format!("{}-{key}", x.id),
        &x.id,
        title,
        Axis::linear("time (s)", Fmt::Secs),
        y,
        series,
    );
}

fn experiment(report: &Report, x: &Experiment, out: &mut Vec<Chart>) {
    let runs: Vec<&RunResult> = x.runs.iter().map(|&i| &report.runs[i].doc).collect();
    let sec = x.id.as_str();
    if let Some(c) = experiments::comparison(report, x) {
        out.extend(margin_chart(&c, &format!("{sec}-margins"), sec, ""));
    }
    // The question first.
    match x.kind {
        Kind::Rate => rate_charts(out, sec, x, &runs),
        Kind::Depth => depth_charts(out, sec, &runs),
        Kind::Repeat | Kind::Interleaved | Kind::Blend | Kind::Series if runs.len() > 24 => {
            run_dots(out, sec, &runs)
        }
        Kind::Repeat | Kind::Interleaved | Kind::Blend | Kind::Series if runs.len() > 1 => {
            run_bars(out, sec, x, &runs)
        }
        _ => {}
    }
    interval_charts(out, report, x, &runs);
    percentile_chart(out, sec, x, &runs);
}

/// An open-loop rate series: achieved against offered rate, and response and service time.
fn rate_charts(out: &mut Vec<Chart>, sec: &str, x: &Experiment, runs: &[&RunResult]) {
    let mut pts: Vec<(f64, &RunResult, &str)> = runs
        .iter()
        .zip(&x.labels)
        .filter_map(|(r, l)| r.summary.offered_iops.map(|o| (o, *r, l.as_str())))
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut xo = Axis::linear("offered rate (IOPS)", Fmt::Count);
    xo.from_zero = false;
    let mut p = Plot::new(
        "Offered and achieved rate",
        xo.clone(),
        Axis::linear("IOPS", Fmt::Count),
    );
    p.series.push(Series::new(
        "offered (the line y = x)",
        pts.iter().map(|(o, _, _)| (*o, *o)).collect(),
        Mode::Line,
    ));
    let mut ach = Series::new(
        "achieved",
        pts.iter()
            .map(|(o, r, _)| (*o, r.summary.total.iops))
            .collect(),
        Mode::LinePoints,
    );
    ach.labels = Some(pts.iter().map(|(_, _, l)| l.to_string()).collect());
    p.series.push(ach);
    push_plot(out, format!("{sec}-offered"), sec, p);
    let mut l = Plot::new(
        "Response time (from intended start) and service time (from submission)",
        xo,
        Axis::log("latency", Fmt::Ns),
    );
    let lat = |name: &str, dashed: bool, f: &dyn Fn(&RunResult) -> Option<u64>| {
        let mut s = Series::new(
            name,
            pts.iter()
                .filter_map(|(o, r, _)| f(r).map(|v| (*o, v as f64)))
                .collect(),
            Mode::LinePoints,
        );
        s.dashed = dashed;
        s
    };
    l.series.push(lat("response p50", false, &|r| {
        r.summary.total.latency_ns.p50
    }));
    l.series.push(lat("response p99", true, &|r| {
        r.summary.total.latency_ns.p99
    }));
    l.series.push(lat("service p50", false, &|r| {
        r.summary.total.service_latency_ns.as_ref()?.p50
    }));
    l.series.push(lat("service p99", true, &|r| {
        r.summary.total.service_latency_ns.as_ref()?.p99
    }));
    push_plot(out, format!("{sec}-response"), sec, l);
}

/// A depth series: IOPS and latency by queue depth.
fn depth_charts(out: &mut Vec<Chart>, sec: &str, runs: &[&RunResult]) {
    let mut pts: Vec<(f64, &RunResult)> = runs
        .iter()
        .map(|r| (r.summary.configured_outstanding as f64, *r))
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let xq = Axis::log("queue depth (outstanding I/O)", Fmt::Count)
        .with_ticks(pts.iter().map(|p| p.0).collect());
    let mut p = Plot::new(
        "IOPS by queue depth",
        xq.clone(),
        Axis::linear("IOPS", Fmt::Count),
    );
    p.series.push(Series::new(
        "IOPS",
        pts.iter()
            .map(|(q, r)| (*q, r.summary.total.iops))
            .collect(),
        Mode::LinePoints,
    ));
    push_plot(out, format!("{sec}-depth-iops"), sec, p);
    let mut l = Plot::new(
        "Latency by queue depth: p50 (solid), p99 (dashed)",
        xq,
        Axis::log("latency", Fmt::Ns),
    );
    l.series.push(Series::new(
        "p50",
        pts.iter()
            .filter_map(|(q, r)| r.summary.total.latency_ns.p50.map(|v| (*q, v as f64)))
            .collect(),
        Mode::LinePoints,
    ));
    let mut p99 = Series::new(
        "p99",
        pts.iter()
            .filter_map(|(q, r)| r.summary.total.latency_ns.p99.map(|v| (*q, v as f64)))
            .collect(),
        Mode::LinePoints,
    );
    p99.dashed = true;
    l.series.push(p99);
    push_plot(out, format!("{sec}-depth-latency"), sec, l);
}

/// Too many runs to label: one dot per run, in the order they ran.
fn run_dots(out: &mut Vec<Chart>, sec: &str, runs: &[&RunResult]) {
    // Too many bars to label: one dot per run, in the order they ran.
    let mut p = Plot::new(
        &format!(
            "IOPS of each run, in the order they ran ({} runs)",
            runs.len()
        ),
        Axis::linear("run", Fmt::Count),
        Axis::linear("IOPS", Fmt::Count),
    );
    p.series.push(Series::new(
        "run",
        runs.iter()
            .enumerate()
            .map(|(k, r)| ((k + 1) as f64, r.summary.total.iops))
            .collect(),
        Mode::Points,
    ));
    push_plot(out, format!("{sec}-runs"), sec, p);
}

/// One bar per run: the spread a repeat shows, or the configurations side by side.
fn run_bars(out: &mut Vec<Chart>, sec: &str, x: &Experiment, runs: &[&RunResult]) {
    // One bar per run: the spread a repeat shows, or the configurations side by side.
    let bars = Bars {
        title: "IOPS of each run (whiskers: min and max of its intervals)".into(),
        y_label: "IOPS".into(),
        fmt: Fmt::Count,
        categories: x.labels.clone(),
        series: vec![BarSeries {
            name: "IOPS".into(),
            values: runs
                .iter()
                .map(|r| {
                    let iv = r.intervals.iter().map(|i| i.total.iops);
                    let lo = iv.clone().fold(f64::INFINITY, f64::min);
                    let hi = iv.fold(f64::NEG_INFINITY, f64::max);
                    Some((r.summary.total.iops, lo.is_finite().then_some((lo, hi))))
                })
                .collect(),
        }],
    };
    let id = format!("{sec}-runs");
    out.push(Chart {
        svg: bars.to_svg(&id),
        title: bars.title,
        id,
        section: sec.to_string(),
    });
}

/// Each run's intervals: IOPS, p99 latency, outstanding I/O and (open loop) offered rate.
fn interval_charts(out: &mut Vec<Chart>, report: &Report, x: &Experiment, runs: &[&RunResult]) {
    per_run(
        out,
        x,
        report,
        "iops",
        "IOPS per interval",
        Axis::linear("IOPS", Fmt::Count),
        Mode::Line,
        &|i| Some(i.total.iops),
    );
    // Seed 001's `await` plot: each interval's latency as a dot.
    per_run(
        out,
        x,
        report,
        "latency",
        "p99 latency per interval (one dot per interval)",
        Axis::log("p99 latency", Fmt::Ns),
        Mode::Points,
        &|i| i.total.latency_ns.p99.map(|v| v as f64),
    );
    per_run(
        out,
        x,
        report,
        "outstanding",
        "Outstanding I/O per interval (Little's law)",
        Axis::linear("outstanding I/Os", Fmt::Count),
        Mode::Line,
        &|i| Some(i.total.outstanding_mean),
    );
    if runs
        .iter()
        .any(|r| r.intervals.iter().any(|i| i.offered_iops.is_some()))
    {
        per_run(
            out,
            x,
            report,
            "offered-interval",
            "Offered rate per interval",
            Axis::linear("offered IOPS", Fmt::Count),
            Mode::Line,
            &|i| i.offered_iops,
        );
    }
}

/// Percentile curves: one per run, at most MAX_SERIES (more are told apart in the table).
fn percentile_chart(out: &mut Vec<Chart>, sec: &str, x: &Experiment, runs: &[&RunResult]) {
    let mut pct = Plot::new(
        "Latency by percentile (merged run histogram)",
        Axis::linear("percentile", Fmt::Nines).with_ticks(vec![
            std::f64::consts::LOG10_2,
            1.0,
            2.0,
            3.0,
            4.0,
            5.0,
        ]),
        Axis::log("latency", Fmt::Ns),
    );
    pct.x.from_zero = false;
    if runs.len() > MAX_SERIES {
        pct.title = format!(
            "Latency by percentile: fastest, median and slowest of {} runs by p99",
            runs.len()
        );
    }
    let mut by_p99: Vec<usize> = (0..runs.len()).collect();
    by_p99.sort_by_key(|&k| runs[k].summary.total.latency_ns.p99.unwrap_or(0));
    let pick: Vec<usize> = if runs.len() > MAX_SERIES {
        vec![
            by_p99[0],
            by_p99[by_p99.len() / 2],
            by_p99[by_p99.len() - 1],
        ]
    } else {
        (0..runs.len()).collect()
    };
    for k in pick {
        if let Some(h) = &runs[k].summary.total.histogram {
            let h = LatencyHistogram::from_sparse(h);
            pct.series
                .push(Series::new(&x.labels[k], pct_curve(&h), Mode::LinePoints));
        }
    }
    push_plot(out, format!("{sec}-percentiles"), sec, pct);
}

/// Picks one percentile of a TPC-C latency summary.
type Pick = fn(&oio_core::histogram::LatencySummary) -> Option<u64>;

fn tpcc(report: &Report, out: &mut Vec<Chart>) {
    let labels = tpcc_labels(report);
    for (n, e) in report.tpcc.iter().enumerate() {
        let sec = format!("tpcc{}", n + 1);
        tpcc_over_time(out, &sec, &labels[n], &e.doc);
        tpcc_profiles(out, &sec, &labels[n], &e.doc);
    }
    for (n, e) in report.tpcc_series.iter().enumerate() {
        let label = if report.tpcc_series.len() == 1 {
            "Worker sequence"
        } else {
            &e.label
        };
        tpcc_series(out, &format!("tpccseries{}", n + 1), label, &e.doc);
    }
    if report.tpcc.len() >= 2 {
        tpcc_compared(out, report, &labels);
    }
}

/// One TPC-C run over time on one time axis (throughput, waits, device, new-order latency), so
/// the charts stacked on the page line up interval by interval.
fn tpcc_over_time(
    out: &mut Vec<Chart>,
    sec: &str,
    name: &str,
    r: &oio_documents::tpcc::TpccResult,
) {
    // One time axis for the tuning view (throughput, waits, device), so the charts stacked
    // on the page line up interval by interval.
    let tmax = r
        .intervals
        .iter()
        .map(|i| i.t_s)
        .chain(r.device.iter().flat_map(|o| {
            o.devices
                .iter()
                .flat_map(|d| d.intervals.iter().map(|i| i.t_s))
        }))
        .fold(r.duration_s, f64::max);
    let t = Axis::linear("time (s)", Fmt::Secs).with_span(0.0, tmax);
    let mut p = Plot::new(
        &format!("{name}: NOPM and TPM per interval (client-counted, per minute)"),
        t.clone(),
        Axis::linear("transactions per minute", Fmt::Count),
    );
    p.series.push(Series::new(
        "NOPM (new orders)",
        r.intervals.iter().map(|i| (i.t_s, i.nopm)).collect(),
        Mode::Line,
    ));
    p.series.push(Series::new(
        "TPM (all committed)",
        r.intervals.iter().map(|i| (i.t_s, i.tpm_client)).collect(),
        Mode::Line,
    ));
    push_plot(out, format!("{sec}-rate"), sec, p);
    if let Some(p) = waits_over_time(name, r, t.clone()) {
        push_plot(out, format!("{sec}-waits-time"), sec, p);
    }
    if let Some(obs) = &r.device {
        observation_panels(out, sec, &format!("{name} device"), obs, Some(&t));
    }
    let mut l = Plot::new(
        &format!("{name}: new-order latency per interval, p50 (solid) and p99 (dashed)"),
        t.clone(),
        Axis::log("latency", Fmt::Ns),
    );
    let us = |v: Option<u64>| v.map(|v| v as f64);
    l.series.push(Series::new(
        "p50",
        r.intervals
            .iter()
            .filter_map(|i| us(i.new_order_latency_ns.p50).map(|v| (i.t_s, v)))
            .collect(),
        Mode::LinePoints,
    ));
    let mut s = Series::new(
        "p99",
        r.intervals
            .iter()
            .filter_map(|i| us(i.new_order_latency_ns.p99).map(|v| (i.t_s, v)))
            .collect(),
        Mode::LinePoints,
    );
    s.dashed = true;
    l.series.push(s);
    push_plot(out, format!("{sec}-latency-time"), sec, l);
}

/// One TPC-C run's totals: latency by transaction type and the wait profile.
fn tpcc_profiles(out: &mut Vec<Chart>, sec: &str, name: &str, r: &oio_documents::tpcc::TpccResult) {
    // Per-transaction percentiles as grouped bars (linear axis, ns).
    let kinds: Vec<&String> = r.transactions.keys().collect();
    let pcts: [(&str, Pick); 3] = [("p50", |l| l.p50), ("p90", |l| l.p90), ("p99", |l| l.p99)];
    let bars = Bars {
        title: format!("{name}: latency by transaction type"),
        y_label: "latency".into(),
        fmt: Fmt::Ns,
        categories: kinds.iter().map(|k| k.replace('_', " ")).collect(),
        series: pcts
            .iter()
            .map(|(n, f)| BarSeries {
                name: (*n).into(),
                values: kinds
                    .iter()
                    .map(|k| f(&r.transactions[*k].latency_ns).map(|v| (v as f64, None)))
                    .collect(),
            })
            .collect(),
    };
    if bars
        .series
        .iter()
        .any(|s| s.values.iter().any(Option::is_some))
    {
        let id = format!("{sec}-txn-latency");
        out.push(Chart {
            svg: bars.to_svg(&id),
            title: bars.title,
            id,
            section: sec.to_string(),
        });
    }
    // The wait profile: shares by class (the result holds totals, not a series).
    let w = &r.waits;
    let shares: Vec<&oio_documents::tpcc::waits::WaitShare> = if w.buckets.is_empty() {
        w.classes.iter().collect()
    } else {
        w.buckets.iter().collect()
    };
    if !shares.is_empty() {
        let bars = Bars {
            title: format!("{name}: wait profile, share of sampled session time"),
            y_label: "share (%)".into(),
            fmt: Fmt::Pct,
            categories: shares.iter().map(|s| s.name.clone()).collect(),
            series: vec![BarSeries {
                name: "share".into(),
                values: shares.iter().map(|s| Some((s.share_pct, None))).collect(),
            }],
        };
        let id = format!("{sec}-waits");
        out.push(Chart {
            svg: bars.to_svg(&id),
            title: bars.title,
            id,
            section: sec.to_string(),
        });
    }
}

/// Several TPC-C runs side by side: NOPM and TPM.
fn tpcc_compared(out: &mut Vec<Chart>, report: &Report, labels: &[String]) {
    let bars = Bars {
        title: "TPC-C runs compared: NOPM and TPM".into(),
        y_label: "per minute".into(),
        fmt: Fmt::Count,
        categories: labels.to_vec(),
        series: vec![
            BarSeries {
                name: "NOPM".into(),
                values: report
                    .tpcc
                    .iter()
                    .map(|e| Some((e.doc.summary.nopm, None)))
                    .collect(),
            },
            BarSeries {
                name: "TPM".into(),
                values: report
                    .tpcc
                    .iter()
                    .map(|e| Some((e.doc.summary.tpm, None)))
                    .collect(),
            },
        ],
    };
    let id = "tpcc-compare".to_string();
    out.push(Chart {
        svg: bars.to_svg(&id),
        title: bars.title,
        id,
        section: "tpcc".into(),
    });
}

/// A worker-count sequence: NOPM and TPM against workers beside the line of linear scaling
/// from the first step, and the efficiency of each step.
fn tpcc_series(
    out: &mut Vec<Chart>,
    sec: &str,
    label: &str,
    s: &oio_documents::tpcc::result::Series,
) {
    let steps: Vec<&oio_documents::tpcc::result::SeriesPoint> =
        s.steps.iter().filter(|p| p.workers > 0).collect();
    let Some(first) = steps.first() else {
        return;
    };
    let ws: Vec<f64> = steps.iter().map(|p| p.workers as f64).collect();
    let mut p = Plot::new(
        &format!("{label}: NOPM and TPM by workers, dashed: linear scaling from the first step"),
        Axis::log("workers", Fmt::Count).with_ticks(ws.clone()),
        Axis::linear("per minute", Fmt::Count),
    );
    let mut nopm = Series::new(
        "NOPM",
        steps.iter().map(|p| (p.workers as f64, p.nopm)).collect(),
        Mode::LinePoints,
    );
    nopm.labels = Some(
        steps
            .iter()
            .map(|p| {
                p.efficiency_pct
                    .map(|e| format!("{e:.0} %"))
                    .unwrap_or_default()
            })
            .collect(),
    );
    p.series.push(nopm);
    p.series.push(Series::new(
        "TPM",
        steps.iter().map(|p| (p.workers as f64, p.tpm)).collect(),
        Mode::LinePoints,
    ));
    let per = first.nopm / first.workers as f64;
    let mut lin = Series::new(
        "NOPM if linear",
        ws.iter().map(|w| (*w, per * w)).collect(),
        Mode::Line,
    );
    lin.dashed = true;
    p.series.push(lin);
    push_plot(out, format!("{sec}-scaling"), sec, p);
    let bars = Bars {
        title: format!("{label}: scaling efficiency per step (NOPM per worker vs the first step)"),
        y_label: "efficiency (%)".into(),
        fmt: Fmt::Pct,
        categories: steps
            .iter()
            .map(|p| {
                format!(
                    "{} worker{}{}",
                    p.workers,
                    if p.workers == 1 { "" } else { "s" },
                    if p.partial { " (partial)" } else { "" }
                )
            })
            .collect(),
        series: vec![BarSeries {
            name: "efficiency".into(),
            values: steps
                .iter()
                .map(|p| p.efficiency_pct.map(|e| (e, None)))
                .collect(),
        }],
    };
    if bars.series[0].values.iter().any(Option::is_some) {
        let id = format!("{sec}-efficiency");
        out.push(Chart {
            svg: bars.to_svg(&id),
            title: bars.title,
            id,
            section: sec.to_string(),
        });
    }
}

/// Most wait classes stacked; the rest are summed as "other".
pub const MAX_WAIT_LAYERS: usize = 7;

/// The wait profile per interval as stacked bars of average active sessions by class (the
/// classes of `intervals[].waits`, largest over the run at the bottom), or None when no
/// interval recorded waits.
pub fn waits_over_time(
    name: &str,
    r: &oio_documents::tpcc::result::TpccResult,
    t: Axis,
) -> Option<Plot> {
    let iv: Vec<&oio_documents::tpcc::result::Interval> =
        r.intervals.iter().filter(|i| !i.waits.is_empty()).collect();
    if iv.is_empty() {
        return None;
    }
    let mut totals: Vec<(String, f64)> = Vec::new();
    for i in &iv {
        for w in &i.waits {
            match totals.iter_mut().find(|(n, _)| *n == w.name) {
                Some((_, a)) => *a += w.aas * i.duration_s,
                None => totals.push((w.name.clone(), w.aas * i.duration_s)),
            }
        }
    }
    totals.sort_by(|a, b| b.1.total_cmp(&a.1));
    let kept: Vec<String> = if totals.len() > MAX_WAIT_LAYERS + 1 {
        totals[..MAX_WAIT_LAYERS]
            .iter()
            .map(|t| t.0.clone())
            .collect()
    } else {
        totals.iter().map(|t| t.0.clone()).collect()
    };
    let mut layers: Vec<(String, Vec<f64>)> = kept
        .iter()
        .map(|k| {
            (
                k.clone(),
                iv.iter()
                    .map(|i| i.waits.iter().filter(|w| w.name == *k).map(|w| w.aas).sum())
                    .collect(),
            )
        })
        .collect();
    if kept.len() < totals.len() {
        layers.push((
            "other classes".into(),
            iv.iter()
                .map(|i| {
                    i.waits
                        .iter()
                        .filter(|w| !kept.contains(&w.name))
                        .map(|w| w.aas)
                        .sum()
                })
                .collect(),
        ));
    }
    let mut p = Plot::new(
        &format!("{name}: wait profile per interval, average active sessions by class (stacked)"),
        t,
        Axis::linear("average active sessions", Fmt::Count),
    );
    p.stack = Some(Stack {
        spans: iv
            .iter()
            .map(|i| ((i.t_s - i.duration_s).max(0.0), i.t_s))
            .collect(),
        layers,
    });
    Some(p)
}

/// TPC-C runs named by what differs between them (database, workers, warehouses, options).
pub fn tpcc_labels(report: &Report) -> Vec<String> {
    let docs: Vec<&oio_documents::tpcc::TpccResult> = report.tpcc.iter().map(|e| &e.doc).collect();
    tpcc_names(&docs)
        .into_iter()
        .zip(&report.tpcc)
        .map(|(n, e)| match fleet_host(report, &e.source) {
            Some(h) if n.starts_with("TPC-C run ") => format!("host {h}"),
            Some(h) => format!("{n} · host {h}"),
            None => n,
        })
        .collect()
}

/// The fleet's name of the host whose own result `source` is, when a fleet TPC-C document of
/// the report lists it. A host's result does not record that name (its envelope has the
/// machine's hostname, the same for agents on one machine); the merged document does, beside
/// the file it wrote (`<dir>/<host>.json`). Matched by the file and its directory, so a
/// directory loaded by a relative or an absolute path matches alike.
fn fleet_host<'a>(report: &'a Report, source: &str) -> Option<&'a str> {
    fn tail(p: &str) -> Option<(&std::ffi::OsStr, &std::ffi::OsStr)> {
        let p = std::path::Path::new(p);
        Some((p.parent()?.file_name()?, p.file_name()?))
    }
    let want = tail(source)?;
    report.fleet_tpcc.iter().find_map(|f| {
        f.doc.hosts.iter().find_map(|h| {
            let file = h.result_file.as_deref()?;
            (tail(file) == Some(want)).then_some(h.host.as_str())
        })
    })
}

fn bs_key(b: &Option<String>) -> String {
    b.clone().unwrap_or_else(|| "workload".into())
}

fn sweeps(report: &Report, out: &mut Vec<Chart>) {
    for (si, e) in report.sweeps.iter().enumerate() {
        let s = &e.doc;
        let pre = if report.sweeps.len() > 1 {
            format!("{}: ", e.label)
        } else {
            String::new()
        };
        let id = |k: &str| {
            format!(
                "sweep{}-{k}",
                if si == 0 {
                    String::new()
                } else {
                    si.to_string()
                }
            )
        };
        let qds: Vec<f64> = {
            let mut v: Vec<u32> = s.points.iter().map(|p| p.qd).collect();
            v.sort_unstable();
            v.dedup();
            v.into_iter().map(f64::from).collect()
        };
        let xq = Axis::log("queue depth (outstanding I/O)", Fmt::Count).with_ticks(qds);
        let groups = sweep::series(&s.points);
        let (mut iops, mut lat, mut li) = sweep_curves(&pre, xq, &s.workload, &groups);
        if let Some(k) = &s.knee {
            mark_knee(k, &mut iops, &mut lat, &mut li);
        }
        // A grid of many sizes × read shares: small multiples of a few curves each.
        // (p50 and p99 of 5 groups would already be 10 curves.)
        let per = if 2 * groups.len() > MAX_OVERLAY {
            1
        } else {
            groups.len()
        };
        push_split(out, &id("iops"), "sweeps", iops, per);
        push_split(out, &id("latency"), "sweeps", lat, 2 * per);
        push_split(out, &id("latency-iops"), "sweeps", li, per);
        sweep_heatmap(out, &pre, &groups, id("heatmap"));
    }
}

/// A sweep's series (one per block size and read share): IOPS and latency by depth, and p99
/// against IOPS.
fn sweep_curves(pre: &str, xq: Axis, workload: &str, groups: &[SweepSeries]) -> (Plot, Plot, Plot) {
    let mut iops = Plot::new(
        &format!("{pre}IOPS by queue depth (whiskers: min and max of repeats)"),
        xq.clone(),
        Axis::linear("IOPS", Fmt::Count),
    );
    let mut lat = Plot::new(
        &format!("{pre}Latency by queue depth: p50 (solid), p99 (dashed)"),
        xq,
        Axis::log("latency", Fmt::Ns),
    );
    let mut li = Plot::new(
        &format!("{pre}p99 latency against IOPS, knee marked"),
        Axis::linear("IOPS", Fmt::Count),
        Axis::log("p99 latency", Fmt::Ns),
    );
    for (bs, rp, pts) in groups {
        let mut pts = pts.clone();
        pts.sort_by_key(|p| p.qd);
        let name = if groups.len() > 1 {
            format!(
                "{} {}",
                bs_key(bs),
                rp.map(|r| format!("{r:.0}% read")).unwrap_or_default()
            )
        } else {
            workload.to_string()
        };
        let mut si = Series::new(
            &name,
            pts.iter().map(|p| (p.qd as f64, p.iops)).collect(),
            Mode::LinePoints,
        );
        si.whiskers = Some(
            pts.iter()
                .map(|p| {
                    let lo = p.iops_runs.iter().copied().fold(f64::INFINITY, f64::min);
                    let hi = p.iops_runs.iter().copied().fold(0.0, f64::max);
                    if lo.is_finite() {
                        (lo, hi)
                    } else {
                        (p.iops, p.iops)
                    }
                })
                .collect(),
        );
        iops.series.push(si);
        lat.series.push(Series::new(
            &format!("{name} p50"),
            pts.iter()
                .filter_map(|p| p.latency_ns.p50.map(|v| (p.qd as f64, v as f64)))
                .collect(),
            Mode::LinePoints,
        ));
        let mut p99 = Series::new(
            &format!("{name} p99"),
            pts.iter()
                .filter_map(|p| p.latency_ns.p99.map(|v| (p.qd as f64, v as f64)))
                .collect(),
            Mode::LinePoints,
        );
        p99.dashed = true;
        lat.series.push(p99);
        let with: Vec<_> = pts
            .iter()
            .filter_map(|p| p.latency_ns.p99.map(|v| (p.iops, v as f64, p.qd)))
            .collect();
        let mut sc = Series::new(
            &name,
            with.iter().map(|(x, y, _)| (*x, *y)).collect(),
            Mode::LinePoints,
        );
        sc.labels = Some(with.iter().map(|(_, _, q)| format!("qd {q}")).collect());
        li.series.push(sc);
    }
    (iops, lat, li)
}

/// Marks every knee rule that names a depth; the headline rule first.
fn mark_knee(k: &oio_analysis::knee::Knee, iops: &mut Plot, lat: &mut Plot, li: &mut Plot) {
    let mut rules: Vec<(&str, &oio_analysis::knee::RuleDepth)> = vec![
        ("saturation", &k.rules.saturation),
        ("% of peak", &k.rules.pct_of_peak),
        ("power", &k.rules.power),
    ];
    if let Some(t) = &k.rules.latency_target {
        rules.push(("latency target", t));
    }
    rules.sort_by_key(|(n, _)| {
        let h = k.headline.replace('_', " ");
        !(h == *n || (h == "pct of peak" && *n == "% of peak"))
    });
    for (name, r) in rules {
        let (Some(qd), Some(ri)) = (r.qd, r.iops) else {
            continue;
        };
        let label = format!("{name}: qd {qd}");
        iops.markers.push(Marker {
            x: qd as f64,
            y: ri,
            label: label.clone(),
        });
        if let Some(p99) = r.latency_ns.p99 {
            lat.markers.push(Marker {
                x: qd as f64,
                y: p99,
                label: label.clone(),
            });
            li.markers.push(Marker {
                x: ri,
                y: p99,
                label,
            });
        }
    }
}

/// A grid of sweep series: peak IOPS by block size and read share (with more than one of
/// either).
fn sweep_heatmap(out: &mut Vec<Chart>, pre: &str, groups: &[SweepSeries], hid: String) {
    // Grid: peak IOPS by block size x read share.
    let mut cols: Vec<String> = Vec::new();
    let mut rows: Vec<Option<f64>> = Vec::new();
    for (bs, rp, _) in groups {
        let c = bs_key(bs);
        if !cols.contains(&c) {
            cols.push(c);
        }
        if !rows.contains(rp) {
            rows.push(*rp);
        }
    }
    if cols.len() > 1 || rows.len() > 1 {
        let values = rows
            .iter()
            .map(|r| {
                cols.iter()
                    .map(|c| {
                        groups
                            .iter()
                            .find(|(b, rp, _)| bs_key(b) == *c && rp == r)
                            .map(|(_, _, pts)| pts.iter().map(|p| p.iops).fold(0.0, f64::max))
                    })
                    .collect()
            })
            .collect();
        let h = Heatmap {
            title: format!("{pre}Peak IOPS by block size and read share"),
            x_label: "block size".into(),
            y_label: "reads".into(),
            columns: cols,
            rows: rows
                .iter()
                .map(|r| r.map(|v| format!("{v:.0} %")).unwrap_or("workload".into()))
                .collect(),
            values,
            fmt: Fmt::Count,
        };
        out.push(Chart {
            svg: h.to_svg(&hid),
            title: h.title,
            id: hid,
            section: "sweeps".into(),
        });
    }
}

/// One series of a sweep: block size, read share and its points.
type SweepSeries<'a> = (
    Option<String>,
    Option<f64>,
    Vec<&'a oio_analysis::sweep::SweepPoint>,
);

/// Pushes `p` whole when it has at most [`MAX_OVERLAY`] series, else as small multiples of
/// `per` series each on the plot's shared scales; a marker goes to the multiple whose
/// series pass through it.
fn push_split(out: &mut Vec<Chart>, id: &str, section: &str, p: Plot, per: usize) {
    if p.series.len() <= MAX_OVERLAY || per == 0 {
        push_plot(out, id.to_string(), section, p);
        return;
    }
    let span = |v: &mut dyn Iterator<Item = f64>| {
        v.filter(|x| x.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
                (a.min(x), b.max(x))
            })
    };
    let (x0, x1) = span(&mut p.series.iter().flat_map(|s| s.points.iter().map(|q| q.0)));
    let (y0, y1) = span(
        &mut p
            .series
            .iter()
            .flat_map(|s| {
                s.points.iter().map(|q| q.1).chain(
                    s.whiskers
                        .iter()
                        .flat_map(|w| w.iter().flat_map(|(a, b)| [*a, *b])),
                )
            })
            .chain(p.markers.iter().map(|m| m.y)),
    );
    for (k, chunk) in p.series.chunks(per).enumerate() {
        let name = chunk
            .iter()
            .map(|s| s.name.trim_end_matches(" p50").trim_end_matches(" p99"))
            .fold(Vec::<&str>::new(), |mut v, n| {
                if !v.contains(&n) {
                    v.push(n);
                }
                v
            })
            .join(", ");
        let mut q = Plot::new(
            &format!("{}: {name}", p.title),
            if x0.is_finite() {
                p.x.clone().with_span(x0, x1)
            } else {
                p.x.clone()
            },
            if y0.is_finite() {
                p.y.clone().with_span(y0, y1)
            } else {
                p.y.clone()
            },
        );
        q.size = SMALL;
        q.series = chunk.to_vec();
        q.markers = p
            .markers
            .iter()
            .filter(|m| {
                chunk.iter().any(|s| {
                    s.points.iter().any(|(x, y)| {
                        (x - m.x).abs() <= 1e-9 * m.x.abs().max(1.0)
                            && (y - m.y).abs() <= 1e-6 * m.y.abs().max(1.0)
                    })
                })
            })
            .cloned()
            .collect();
        push_plot(out, format!("{id}-{}", k + 1), section, q);
    }
}

fn comparisons(report: &Report, out: &mut Vec<Chart>) {
    for (ci, e) in report.comparisons.iter().enumerate() {
        let suffix = if report.comparisons.len() > 1 {
            format!(" ({})", e.label)
        } else {
            String::new()
        };
        let id = format!(
            "compare{}",
            if ci == 0 {
                String::new()
            } else {
                ci.to_string()
            }
        );
        if let Some(c) = margin_chart(&e.doc, &id, "comparisons", &suffix) {
            out.push(c);
        }
    }
}

/// Margin bars of a comparison against its baseline, with the comparison's intervals as
/// whiskers (seed 002's table as a chart); None when nothing was compared.
pub fn margin_chart(
    c: &oio_analysis::compare::Comparison,
    id: &str,
    section: &str,
    suffix: &str,
) -> Option<Chart> {
    if c.comparisons.is_empty() {
        return None;
    }
    let keys = ["iops", "bytes_per_sec", "latency_mean", "latency_p99"];
    let bars = Bars {
        title: format!(
            "Margin against {} with {:.0} % intervals{suffix}",
            c.baseline,
            c.options.confidence * 100.0,
        ),
        y_label: "margin (%)".into(),
        fmt: Fmt::Pct,
        categories: vec![
            "IOPS".into(),
            "MiB/s".into(),
            "mean latency".into(),
            "p99 latency".into(),
        ],
        series: c
            .comparisons
            .iter()
            .map(|cc| BarSeries {
                name: cc.group.clone(),
                values: keys
                    .iter()
                    .map(|k| {
                        let m = cc.metrics.get(*k)?;
                        Some((m.margin_pct?, m.ci_low_pct.zip(m.ci_high_pct)))
                    })
                    .collect(),
            })
            .collect(),
    };
    Some(Chart {
        svg: bars.to_svg(id),
        title: bars.title,
        id: id.to_string(),
        section: section.to_string(),
    })
}

fn telemetry(report: &Report, out: &mut Vec<Chart>) {
    for e in &report.characterizations {
        let c = &e.doc;
        let mut sizes: Vec<u64> = c
            .read
            .all_sizes
            .keys()
            .chain(c.write.all_sizes.keys())
            .copied()
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        if sizes.is_empty() {
            continue;
        }
        let bars = Bars {
            title: format!("{}: I/O size distribution (share of I/Os)", e.label),
            y_label: "share of I/Os (%)".into(),
            fmt: Fmt::Pct,
            categories: sizes
                .iter()
                .map(|s| oio_core::units::format_size(*s))
                .collect(),
            series: [("reads", &c.read), ("writes", &c.write)]
                .iter()
                .map(|(n, d)| BarSeries {
                    name: (*n).into(),
                    values: sizes
                        .iter()
                        .map(|s| d.all_sizes.get(s).map(|v| (*v, None)))
                        .collect(),
                })
                .collect(),
        };
        if c.periods.len() > 1 {
            // Detected busy periods side by side.
            let p = Bars {
                title: format!("{}: detected periods side by side", e.label),
                y_label: "IOPS (mean)".into(),
                fmt: Fmt::Count,
                categories: c
                    .periods
                    .iter()
                    .map(|p| format!("{:.0}–{:.0} s", p.from_s, p.to_s))
                    .collect(),
                series: vec![BarSeries {
                    name: "IOPS".into(),
                    values: c
                        .periods
                        .iter()
                        .map(|p| Some((p.iops_mean, None)))
                        .collect(),
                }],
            };
            let id = format!("char-periods-{}", slug(&e.label));
            out.push(Chart {
                svg: p.to_svg(&id),
                title: p.title,
                id,
                section: "telemetry".into(),
            });
        }
        let id = format!("char-sizes-{}", slug(&e.label));
        out.push(Chart {
            svg: bars.to_svg(&id),
            title: bars.title,
            id,
            section: "telemetry".into(),
        });
    }
    overlay(report, out);
    for e in &report.observations {
        observation_panels(out, "telemetry", &e.label, &e.doc, None);
        for d in e.doc.devices.iter().take(4) {
            let name = format!("{} {}", e.label, d.name);
            let iv = &d.intervals;
            let id = format!("telemetry-{}-{}", slug(&e.label), slug(&d.name));
            let mut s = Plot::new(
                &format!("{name}: latency against queue length (one dot per interval)"),
                Axis::linear("queue length", Fmt::Count),
                Axis::log("mean latency", Fmt::Ns),
            );
            s.series.push(Series::new(
                "interval",
                iv.iter()
                    .filter_map(|i| {
                        let (ri, wi) = (i.read.iops_or_zero(), i.write.iops_or_zero());
                        let l = match (i.read.latency_mean_ns, i.write.latency_mean_ns) {
                            (Some(r), Some(w)) if ri + wi > 0.0 => {
                                Some((r * ri + w * wi) / (ri + wi))
                            }
                            (Some(r), None) => Some(r),
                            (None, Some(w)) => Some(w),
                            _ => None,
                        }?;
                        // Idle intervals have no latency to plot on a log axis.
                        (l > 0.0).then_some((i.queue_mean?, l))
                    })
                    .collect(),
                Mode::Points,
            ));
            // A capture without I/O has no dots: leave the chart out rather than draw it empty.
            if !s.series[0].points.is_empty() {
                push_plot(out, format!("{id}-qlat"), "telemetry", s);
            }
            if let Some(b) = observed_sizes(&name, d) {
                let sid = format!("{id}-sizes");
                out.push(Chart {
                    svg: b.to_svg(&sid),
                    title: b.title,
                    id: sid,
                    section: "telemetry".into(),
                });
            }
            if let Some(b) = busy_periods(&name, d) {
                let pid = format!("{id}-periods");
                out.push(Chart {
                    svg: b.to_svg(&pid),
                    title: b.title,
                    id: pid,
                    section: "telemetry".into(),
                });
            }
        }
    }
}

/// Most size classes drawn; the rest are summed into the last bar.
const MAX_SIZE_BARS: usize = 12;

/// The I/O size distribution of one device: from each I/O of a trace (blkparse, fio
/// per-I/O logs), or else from each interval's mean size weighted by its I/Os, which is
/// a distribution of means, not of sizes (the title says which).
fn observed_sizes(name: &str, d: &oio_core::observation::DeviceSeries) -> Option<Bars> {
    use oio_core::observation::IoDir;
    use std::collections::BTreeMap;
    let mut by: [BTreeMap<u64, f64>; 2] = [BTreeMap::new(), BTreeMap::new()];
    let traced = d
        .ios
        .iter()
        .any(|r| matches!(r.dir, IoDir::Read | IoDir::Write));
    if traced {
        for r in &d.ios {
            let k = match r.dir {
                IoDir::Read => 0,
                IoDir::Write => 1,
                _ => continue,
            };
            *by[k].entry(r.bytes).or_default() += 1.0;
        }
    } else {
        for i in &d.intervals {
            for (k, c) in [(0, &i.read), (1, &i.write)] {
                let n = c.iops_or_zero() * i.duration_s;
                // Means rounded to 512-byte sectors, so near-equal means share a bar.
                if let Some(m) = c.mean_size().filter(|m| *m > 0.0 && n > 0.0) {
                    let m = ((m / 512.0).round().max(1.0) * 512.0) as u64;
                    *by[k].entry(m).or_default() += n;
                }
            }
        }
    }
    let total: f64 = by.iter().flat_map(|m| m.values()).sum();
    if total <= 0.0 {
        return None;
    }
    // The sizes carrying the most I/Os, in size order.
    let mut sizes: Vec<(u64, f64)> = by[0]
        .keys()
        .chain(by[1].keys())
        .map(|s| {
            (
                *s,
                by[0].get(s).copied().unwrap_or(0.0) + by[1].get(s).copied().unwrap_or(0.0),
            )
        })
        .collect();
    sizes.sort_by_key(|s| s.0);
    sizes.dedup_by_key(|s| s.0);
    let mut heavy = sizes.clone();
    heavy.sort_by(|a, b| b.1.total_cmp(&a.1));
    let kept: Vec<u64> = {
        let mut k: Vec<u64> = heavy.iter().take(MAX_SIZE_BARS).map(|s| s.0).collect();
        k.sort_unstable();
        k
    };
    let other = sizes.len() > kept.len();
    let mut categories: Vec<String> = kept
        .iter()
        .map(|s| oio_core::units::format_size(*s))
        .collect();
    if other {
        categories.push("other sizes".into());
    }
    let series = ["reads", "writes"]
        .iter()
        .enumerate()
        .map(|(k, n)| BarSeries {
            name: (*n).into(),
            values: kept
                .iter()
                .map(|s| by[k].get(s).map(|v| (100.0 * v / total, None)))
                .chain(other.then(|| {
                    let rest: f64 = by[k]
                        .iter()
                        .filter(|(s, _)| !kept.contains(s))
                        .map(|(_, v)| v)
                        .sum();
                    (rest > 0.0).then_some((100.0 * rest / total, None))
                }))
                .collect(),
        })
        .collect();
    Some(Bars {
        title: if traced {
            format!("{name}: I/O sizes (share of traced I/Os)")
        } else {
            format!("{name}: mean I/O size per interval, weighted by its I/Os (share; interval means, not single I/Os)")
        },
        y_label: "share of I/Os (%)".into(),
        fmt: Fmt::Pct,
        categories,
        series,
    })
}

/// Busy periods (consecutive intervals with queue > [`BUSY_QUEUE`]) side by side: mean
/// IOPS and mean queue length of each, at most 12 (the longest); None with fewer than 2.
fn busy_periods(name: &str, d: &oio_core::observation::DeviceSeries) -> Option<Bars> {
    let mut periods: Vec<Vec<&oio_core::observation::DeviceInterval>> = Vec::new();
    let mut cur = Vec::new();
    for i in &d.intervals {
        if i.queue_mean.is_some_and(|q| q > BUSY_QUEUE) {
            cur.push(i);
        } else if !cur.is_empty() {
            periods.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        periods.push(cur);
    }
    if periods.len() < 2 {
        return None;
    }
    if periods.len() > 12 {
        periods.sort_by_key(|p| std::cmp::Reverse(p.len()));
        periods.truncate(12);
        periods.sort_by(|a, b| a[0].t_s.total_cmp(&b[0].t_s));
    }
    let mean = |p: &[&oio_core::observation::DeviceInterval],
                f: &dyn Fn(&oio_core::observation::DeviceInterval) -> f64| {
        p.iter().map(|i| f(i)).sum::<f64>() / p.len() as f64
    };
    Some(Bars {
        title: format!("{name}: busy periods (queue > {BUSY_QUEUE}) side by side, mean IOPS"),
        y_label: "IOPS (mean)".into(),
        fmt: Fmt::Count,
        categories: periods
            .iter()
            .map(|p| {
                format!(
                    "{:.0}–{:.0} s, queue {:.1}",
                    p[0].t_s - p[0].duration_s,
                    p[p.len() - 1].t_s,
                    mean(p, &|i| i.queue_mean.unwrap_or(0.0))
                )
            })
            .collect(),
        series: vec![
            BarSeries {
                name: "reads".into(),
                values: periods
                    .iter()
                    .map(|p| Some((mean(p, &|i| i.read.iops_or_zero()), None)))
                    .collect(),
            },
            BarSeries {
                name: "writes".into(),
                values: periods
                    .iter()
                    .map(|p| Some((mean(p, &|i| i.write.iops_or_zero()), None)))
                    .collect(),
            },
        ],
    })
}

/// How several telemetry files are put on one time axis.
#[derive(Clone, Debug, PartialEq)]
pub struct Alignment {
    /// Seconds to add to each observation's `t_s` (same order as [`Report::observations`]).
    pub offsets: Vec<f64>,
    /// True when every file said when it started, so the axis is absolute time; false when
    /// they are aligned at their own starts.
    pub absolute: bool,
    /// Earliest start, RFC 3339, when absolute.
    pub origin: Option<String>,
    /// (from, to) on the common axis where every file has data, when they overlap.
    pub overlap: Option<(f64, f64)>,
    /// The sentence the page shows about it.
    pub note: String,
}

/// Seconds since the epoch of an RFC 3339 UTC time.
fn epoch_s(t: &str) -> Option<f64> {
    let st =
        humantime::parse_rfc3339_weak(t.trim_end_matches('Z').trim_end_matches("+00:00")).ok()?;
    Some(st.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs_f64())
}

/// The common time axis of the report's observations, when there are two or more.
pub fn alignment(report: &Report) -> Option<Alignment> {
    let obs = &report.observations;
    if obs.len() < 2 {
        return None;
    }
    // Each file's first and last instant, relative to its own start.
    let span = |o: &oio_core::observation::Observation| {
        let iv = o.devices.iter().flat_map(|d| d.intervals.iter());
        let lo = iv
            .clone()
            .map(|i| i.t_s - i.duration_s)
            .fold(f64::INFINITY, f64::min);
        let hi = iv.map(|i| i.t_s).fold(f64::NEG_INFINITY, f64::max);
        (lo.is_finite() && hi.is_finite()).then_some((lo, hi))
    };
    let starts: Vec<Option<f64>> = obs
        .iter()
        .map(|e| e.doc.start.as_deref().and_then(epoch_s))
        .collect();
    let absolute = starts.iter().all(Option::is_some);
    let (offsets, origin) = if absolute {
        let first = starts
            .iter()
            .flatten()
            .copied()
            .fold(f64::INFINITY, f64::min);
        let k = starts.iter().position(|s| *s == Some(first)).unwrap_or(0);
        (
            starts.iter().map(|s| s.unwrap_or(first) - first).collect(),
            obs[k].doc.start.clone(),
        )
    } else {
        (vec![0.0; obs.len()], None)
    };
    let ranges: Vec<Option<(f64, f64)>> = obs
        .iter()
        .zip(&offsets)
        .map(|(e, off)| span(&e.doc).map(|(a, b)| (a + off, b + off)))
        .collect();
    let overlap = if ranges.iter().all(Option::is_some) {
        let lo = ranges
            .iter()
            .flatten()
            .map(|r| r.0)
            .fold(f64::NEG_INFINITY, f64::max);
        let hi = ranges
            .iter()
            .flatten()
            .map(|r| r.1)
            .fold(f64::INFINITY, f64::min);
        (hi > lo).then_some((lo, hi))
    } else {
        None
    };
    if absolute && overlap.is_none() {
        // Years apart on one axis would squeeze each file into a sliver: side by side from
        // their own starts instead, saying when each began.
        let when = obs
            .iter()
            .map(|e| format!("{} from {}", e.label, e.doc.start.as_deref().unwrap_or("?")))
            .collect::<Vec<_>>()
            .join("; ");
        return Some(Alignment {
            offsets: vec![0.0; obs.len()],
            absolute: false,
            origin: None,
            overlap: None,
            note: format!(
                "{} telemetry files that do not overlap in time ({when}): drawn side by side from each file's own start, so the same x is not the same moment.",
                obs.len()
            ),
        });
    }
    let names = |f: &dyn Fn(usize) -> bool| {
        obs.iter()
            .enumerate()
            .filter(|(k, _)| f(*k))
            .map(|(_, e)| e.label.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let note = if absolute {
        let o = origin.as_deref().unwrap_or("?");
        let (a, b) = overlap.unwrap_or_default();
        format!(
            "{} telemetry files on one absolute time axis (seconds since {o}); all of them have data from {a:.0} s to {b:.0} s (shaded).",
            obs.len()
        )
    } else {
        format!(
            "{} telemetry files aligned at their own starts (seconds since each file's first sample): {} did not record when it started (or not as RFC 3339 UTC), so the same x is not the same moment.",
            obs.len(),
            names(&|k| starts[k].is_none())
        )
    };
    Some(Alignment {
        offsets,
        absolute,
        origin,
        overlap,
        note,
    })
}

/// Several telemetry files overlaid on their common time axis: IOPS, MiB/s, mean latency
/// and queue length per file and device (reads and writes together), at most
/// [`MAX_SERIES`] lines per chart.
fn overlay(report: &Report, out: &mut Vec<Chart>) {
    let Some(a) = alignment(report) else {
        return;
    };
    let t = Axis::linear(
        if a.absolute {
            "time since the earliest start (s)"
        } else {
            "time since each file's start (s)"
        },
        Fmt::Secs,
    );
    type Pick = fn(&oio_core::observation::DeviceInterval) -> Option<f64>;
    let picks: [(&str, &str, Axis, Pick); 4] = [
        (
            "iops",
            "IOPS (reads + writes)",
            Axis::linear("IOPS", Fmt::Count),
            |i| match (i.read.iops, i.write.iops) {
                (None, None) => None,
                (r, w) => Some(r.unwrap_or(0.0) + w.unwrap_or(0.0)),
            },
        ),
        (
            "mibps",
            "throughput (reads + writes)",
            Axis::linear("MiB/s", Fmt::Count),
            |i| match (i.read.bytes_per_sec, i.write.bytes_per_sec) {
                (None, None) => None,
                (r, w) => Some((r.unwrap_or(0.0) + w.unwrap_or(0.0)) / 1048576.0),
            },
        ),
        (
            "lat",
            "mean latency (reads and writes, weighted by I/Os)",
            Axis::log("mean latency", Fmt::Ns),
            |i| {
                let (ri, wi) = (i.read.iops_or_zero(), i.write.iops_or_zero());
                let l = match (i.read.latency_mean_ns, i.write.latency_mean_ns) {
                    (Some(r), Some(w)) if ri + wi > 0.0 => (r * ri + w * wi) / (ri + wi),
                    (Some(r), None) => r,
                    (None, Some(w)) => w,
                    _ => return None,
                };
                (l > 0.0).then_some(l)
            },
        ),
        (
            "queue",
            "queue length",
            Axis::linear("queue length (I/Os)", Fmt::Count),
            |i| i.queue_mean,
        ),
    ];
    for (key, what, y, f) in picks {
        let mut series = Vec::new();
        for (e, off) in report.observations.iter().zip(&a.offsets) {
            for d in e.doc.devices.iter().take(4) {
                series.push(Series::new(
                    &format!("{} {}", e.label, d.name),
                    d.intervals
                        .iter()
                        .filter_map(|i| f(i).map(|v| (i.t_s + off, v)))
                        .collect(),
                    Mode::Line,
                ));
            }
        }
        series.retain(|s| !s.points.is_empty());
        if series.len() < 2 {
            continue;
        }
        let mut p_title = format!("All telemetry files: {what} on one time axis");
        if !a.absolute {
            p_title.push_str(" (aligned at their starts)");
        }
        if series.len() <= MAX_SERIES {
            let mut p = Plot::new(&p_title, t.clone(), y);
            if let Some(ov) = a.overlap.filter(|_| a.absolute) {
                p.bands.push(ov);
                p.band_label = Some("all files overlap".into());
            }
            p.series = series;
            push_plot(out, format!("telemetry-overlay-{key}"), "telemetry", p);
        } else {
            overlay_or_multiples(
                out,
                &format!("telemetry-overlay-{key}"),
                "telemetry",
                &p_title,
                t.clone(),
                y,
                series,
            );
        }
    }
}

#[cfg(test)]
mod split_tests {
    use super::*;

    #[test]
    fn a_plot_with_too_many_curves_becomes_small_multiples_with_its_marker_in_one() {
        let mut p = Plot::new(
            "IOPS by queue depth",
            Axis::log("queue depth", Fmt::Count),
            Axis::linear("IOPS", Fmt::Count),
        );
        for g in 0..9 {
            p.series.push(Series::new(
                &format!("group {g}"),
                (0..4)
                    .map(|k| (2f64.powi(k), 100.0 * (g + 1) as f64 * (k + 1) as f64))
                    .collect(),
                Mode::LinePoints,
            ));
        }
        p.markers.push(Marker {
            x: 4.0,
            y: 100.0 * 5.0 * 3.0,
            label: "knee".into(),
        });
        let mut out = Vec::new();
        push_split(&mut out, "sweep-iops", "sweeps", p.clone(), 1);
        assert_eq!(out.len(), 9);
        assert_eq!(out[0].id, "sweep-iops-1");
        let with_knee: Vec<usize> = (0..9)
            .filter(|k| out[*k].svg.contains("mark knee"))
            .collect();
        assert_eq!(with_knee, [4], "the knee belongs to group 4's curve");
        // One scale for all: the largest value sets every multiple's top tick.
        let top = |c: &Chart| {
            c.svg
                .split("text-anchor=\"end\" font-size=\"11\">")
                .skip(1)
                .map(|t| t.split('<').next().unwrap().to_string())
                .last()
        };
        assert!(out
            .iter()
            .all(|c| top(c) == top(&out[8]) && top(c).is_some()));
        // Few curves stay one chart.
        let mut few = p;
        few.series.truncate(8);
        let mut out = Vec::new();
        push_split(&mut out, "x", "sweeps", few, 1);
        assert_eq!(out.len(), 1);
    }
}

#[cfg(test)]
mod telemetry_tests {
    use super::*;
    use oio_core::observation::{DeviceInterval, DeviceSeries, DirCounters};

    fn iv(t: f64, q: f64, riops: f64, rsize: f64) -> DeviceInterval {
        DeviceInterval {
            t_s: t,
            duration_s: 1.0,
            queue_mean: Some(q),
            read: DirCounters {
                iops: Some(riops),
                mean_io_bytes: Some(rsize),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn busy_periods_are_told_apart_and_interval_sizes_are_said_to_be_means() {
        let d = DeviceSeries {
            name: "sda".into(),
            intervals: vec![
                iv(1.0, 5.0, 100.0, 8192.0),
                iv(2.0, 6.0, 300.0, 8192.0),
                iv(3.0, 0.5, 10.0, 65536.0),
                iv(4.0, 9.0, 1000.0, 8200.0),
            ],
            ..Default::default()
        };
        let b = busy_periods("x", &d).expect("two busy periods");
        assert_eq!(b.categories, ["0–2 s, queue 5.5", "3–4 s, queue 9.0"]);
        assert_eq!(
            b.series[0].values,
            [Some((200.0, None)), Some((1000.0, None))]
        );
        let s = observed_sizes("x", &d).expect("sizes");
        assert!(s.title.contains("interval means, not single I/Os"));
        // 8200 B rounds to the 8 KiB sector class: 100 + 300 + 1000 I/Os of 1410.
        assert_eq!(s.categories, ["8k", "64k"]);
        let share = s.series[0].values[0].unwrap().0;
        assert!((share - 100.0 * 1400.0 / 1410.0).abs() < 1e-9, "{share}");
        // One busy period: nothing side by side.
        let one = DeviceSeries {
            intervals: d.intervals[..2].to_vec(),
            ..d
        };
        assert!(busy_periods("x", &one).is_none());
    }

    #[test]
    fn files_that_do_not_overlap_are_aligned_at_their_starts_and_overlapping_ones_share_time() {
        let obs = |start: &str| {
            let mut o = oio_core::observation::Observation::new(
                oio_core::observation::SourceKind::Record,
                vec![],
            );
            o.start = Some(start.into());
            o.devices.push(DeviceSeries {
                name: "sda".into(),
                intervals: (1..=10).map(|t| iv(t as f64, 1.0, 10.0, 4096.0)).collect(),
                ..Default::default()
            });
            o
        };
        let report = |a: &str, b: &str| Report {
            observations: [("a", a), ("b", b)]
                .iter()
                .map(|(l, s)| crate::model::Entry {
                    label: l.to_string(),
                    source: l.to_string(),
                    doc: obs(s),
                })
                .collect(),
            ..Default::default()
        };
        let near = alignment(&report("2026-01-01T00:00:00Z", "2026-01-01T00:00:04.5Z")).unwrap();
        assert!(near.absolute);
        assert_eq!(near.offsets, [0.0, 4.5]);
        assert_eq!(near.overlap, Some((4.5, 10.0)));
        let far = alignment(&report("2008-01-01T00:00:00Z", "2026-01-01T00:00:00Z")).unwrap();
        assert!(!far.absolute && far.overlap.is_none());
        assert_eq!(far.offsets, [0.0, 0.0]);
        assert!(far
            .note
            .contains("do not overlap in time (a from 2008-01-01T00:00:00Z; b from 2026"));
    }
}
