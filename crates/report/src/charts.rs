//! Which charts a report has, built from its documents. Each chart has a stable id (also its
//! file name with `--svg`/`--png`) and a section. Time series and percentile curves overlay at
//! most [`MAX_OVERLAY`] runs (more lines are unreadable); the run table and the IOPS–latency
//! scatter show every run.

use crate::model::Report;
use crate::svg::{Axis, BarSeries, Bars, Fmt, Heatmap, Marker, Mode, Plot, Series};
use oio_analysis::sweep;
use oio_core::histogram::LatencyHistogram;
use oio_core::result::{Interval, RunResult};

/// Most runs overlaid in one time-series or percentile chart.
pub const MAX_OVERLAY: usize = 8;
/// Queue length above which an observation interval counts as busy (seed 002's filter).
pub const BUSY_QUEUE: f64 = 2.0;

/// A chart ready to embed.
#[derive(Clone, Debug)]
pub struct Chart {
    /// Stable id (`[a-z0-9-]`), used as file name.
    pub id: String,
    /// Section it belongs to ("runs", "sweeps", "comparisons", "telemetry").
    pub section: &'static str,
    /// Title.
    pub title: String,
    /// The `<svg>` element.
    pub svg: String,
}

fn slug(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    while out.contains("--") {
        out = out.replace("--", "-");
    }
    out.trim_matches('-').chars().take(40).collect()
}

fn push_plot(out: &mut Vec<Chart>, id: String, section: &'static str, p: Plot) {
    if p.has_data() {
        out.push(Chart {
            svg: p.to_svg(&id),
            title: p.title.clone(),
            id,
            section,
        });
    }
}

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
    runs(report, &mut out);
    sweeps(report, &mut out);
    comparisons(report, &mut out);
    telemetry(report, &mut out);
    out
}

fn runs(report: &Report, out: &mut Vec<Chart>) {
    let shown: Vec<_> = report.runs.iter().take(MAX_OVERLAY).collect();
    if shown.is_empty() {
        return;
    }
    let more = if report.runs.len() > MAX_OVERLAY {
        format!(" (first {MAX_OVERLAY} of {} runs)", report.runs.len())
    } else {
        String::new()
    };
    let t = Axis::linear("time (s)", Fmt::Secs);
    let mut p = Plot::new(
        &format!("IOPS per interval{more}"),
        t.clone(),
        Axis::linear("IOPS", Fmt::Count),
    );
    let mut b = Plot::new(
        &format!("Throughput per interval{more}"),
        t.clone(),
        Axis::linear("MiB/s", Fmt::Count),
    );
    let mut l = Plot::new(
        &format!("Latency per interval: p50 (solid) and p99 (dashed){more}"),
        t.clone(),
        Axis::log("latency", Fmt::Ns),
    );
    let mut q = Plot::new(
        &format!("Outstanding I/O per interval (Little's law){more}"),
        t,
        Axis::linear("outstanding I/Os", Fmt::Count),
    );
    let mut pct = Plot::new(
        &format!("Latency by percentile (merged run histogram){more}"),
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
    for e in &shown {
        let r = &e.doc;
        p.series
            .push(series_of(r, &e.label, |i| Some(i.total.iops), Mode::Line));
        b.series.push(series_of(
            r,
            &e.label,
            |i| Some(i.total.bytes_per_sec / 1048576.0),
            Mode::Line,
        ));
        l.series.push(series_of(
            r,
            &format!("{} p50", e.label),
            |i| i.total.latency_ns.p50.map(|v| v as f64),
            Mode::Line,
        ));
        let mut s99 = series_of(
            r,
            &format!("{} p99", e.label),
            |i| i.total.latency_ns.p99.map(|v| v as f64),
            Mode::Line,
        );
        s99.dashed = true;
        l.series.push(s99);
        q.series.push(series_of(
            r,
            &e.label,
            |i| Some(i.total.outstanding_mean),
            Mode::Line,
        ));
        if let Some(h) = &r.summary.total.histogram {
            let h = LatencyHistogram::from_sparse(h);
            let pts: Vec<(f64, f64)> = (0..=50)
                .map(|k| {
                    std::f64::consts::LOG10_2 + k as f64 * (5.0 - std::f64::consts::LOG10_2) / 50.0
                })
                .filter_map(|x| {
                    let qq = 1.0 - 10f64.powf(-x);
                    // Beyond the sample count a percentile is the maximum: stop there.
                    if (1.0 - qq) * (h.count() as f64) < 1.0 {
                        return None;
                    }
                    h.quantile(qq).map(|v| (x, v as f64))
                })
                .collect();
            pct.series
                .push(Series::new(&e.label, pts, Mode::LinePoints));
        }
    }
    push_plot(out, "run-iops".into(), "runs", p);
    push_plot(out, "run-mibps".into(), "runs", b);
    push_plot(out, "run-latency".into(), "runs", l);
    push_plot(out, "run-outstanding".into(), "runs", q);
    push_plot(out, "run-percentiles".into(), "runs", pct);
    if report.runs.len() >= 2 {
        let mut s = Plot::new(
            &format!(
                "Every run: IOPS against p99 latency ({} runs)",
                report.runs.len()
            ),
            Axis::linear("IOPS", Fmt::Count),
            Axis::log("p99 latency", Fmt::Ns),
        );
        s.series.push(Series::new(
            "run",
            report
                .runs
                .iter()
                .filter_map(|e| {
                    let t = &e.doc.summary.total;
                    t.latency_ns.p99.map(|v| (t.iops, v as f64))
                })
                .collect(),
            Mode::Points,
        ));
        push_plot(out, "runs-iops-p99".into(), "runs", s);
    }
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
        let groups = sweep::series(&s.points);
        for (bs, rp, pts) in &groups {
            let mut pts = pts.clone();
            pts.sort_by_key(|p| p.qd);
            let name = if groups.len() > 1 {
                format!(
                    "{} {}",
                    bs_key(bs),
                    rp.map(|r| format!("{r:.0}% read")).unwrap_or_default()
                )
            } else {
                s.workload.clone()
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
        if let Some(k) = &s.knee {
            let label = format!("knee: qd {}", k.qd);
            iops.markers.push(Marker {
                x: k.qd as f64,
                y: k.iops,
                label: label.clone(),
            });
            if let Some(p99) = k.latency_ns.p99 {
                lat.markers.push(Marker {
                    x: k.qd as f64,
                    y: p99,
                    label: label.clone(),
                });
                li.markers.push(Marker {
                    x: k.iops,
                    y: p99,
                    label,
                });
            }
        }
        push_plot(out, id("iops"), "sweeps", iops);
        push_plot(out, id("latency"), "sweeps", lat);
        push_plot(out, id("latency-iops"), "sweeps", li);
        // Grid: peak IOPS by block size x read share.
        let mut cols: Vec<String> = Vec::new();
        let mut rows: Vec<Option<f64>> = Vec::new();
        for (bs, rp, _) in &groups {
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
            let hid = id("heatmap");
            out.push(Chart {
                svg: h.to_svg(&hid),
                title: h.title,
                id: hid,
                section: "sweeps",
            });
        }
    }
}

fn comparisons(report: &Report, out: &mut Vec<Chart>) {
    for (ci, e) in report.comparisons.iter().enumerate() {
        let c = &e.doc;
        if c.comparisons.is_empty() {
            continue;
        }
        let keys = ["iops", "bytes_per_sec", "latency_mean", "latency_p99"];
        let bars = Bars {
            title: format!(
                "Margin against {} with {:.0} % intervals{}",
                c.baseline,
                c.options.confidence * 100.0,
                if report.comparisons.len() > 1 {
                    format!(" ({})", e.label)
                } else {
                    String::new()
                }
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
        let id = format!(
            "compare{}",
            if ci == 0 {
                String::new()
            } else {
                ci.to_string()
            }
        );
        out.push(Chart {
            svg: bars.to_svg(&id),
            title: bars.title,
            id,
            section: "comparisons",
        });
    }
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
        let id = format!("char-sizes-{}", slug(&e.label));
        out.push(Chart {
            svg: bars.to_svg(&id),
            title: bars.title,
            id,
            section: "telemetry",
        });
    }
    for e in &report.observations {
        for d in e.doc.devices.iter().take(4) {
            let name = format!("{} {}", e.label, d.name);
            let iv = &d.intervals;
            let mut p = Plot::new(
                &format!(
                    "{name}: IOPS and queue length, busy periods (queue > {BUSY_QUEUE}) shaded"
                ),
                Axis::linear("time (s)", Fmt::Secs),
                Axis::linear("IOPS / queue length", Fmt::Count),
            );
            p.series.push(Series::new(
                "IOPS",
                iv.iter()
                    .map(|i| (i.t_s, i.read.iops_or_zero() + i.write.iops_or_zero()))
                    .collect(),
                Mode::Line,
            ));
            let queue: Vec<(f64, f64)> = iv
                .iter()
                .filter_map(|i| i.queue_mean.map(|q| (i.t_s, q)))
                .collect();
            let qmax = queue.iter().map(|q| q.1).fold(0.0, f64::max);
            let imax = p.series[0].points.iter().map(|q| q.1).fold(0.0, f64::max);
            if !queue.is_empty() {
                // Queue on the IOPS scale would be flat: scale it and say so.
                let k = if qmax > 0.0 && imax > 0.0 {
                    (imax / qmax).max(1.0).round()
                } else {
                    1.0
                };
                p.series.push(Series::new(
                    &format!("queue length × {k:.0}"),
                    queue.iter().map(|(t, q)| (*t, q * k)).collect(),
                    Mode::Line,
                ));
            }
            p.bands = iv
                .iter()
                .filter(|i| i.queue_mean.is_some_and(|q| q > BUSY_QUEUE))
                .map(|i| (i.t_s - i.duration_s, i.t_s))
                .collect();
            p.band_label = Some("busy".into());
            let id = format!("obs-{}", slug(&name));
            push_plot(out, id.clone(), "telemetry", p);
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
        }
    }
}
