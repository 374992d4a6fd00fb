//! The pieces every chart section is made of: a [`Chart`] (id, section, title, SVG), how a
//! plot joins the list, overlays or small multiples, the observation panels, and a section's
//! charts as HTML. The sections' own charts are built above this (charts, study, sql, fleet).

use crate::svg::{Axis, Fmt, Mode, Plot, Series};
use std::fmt::Write as _;

/// Most runs overlaid in one time-series or percentile chart.
pub const MAX_OVERLAY: usize = 8;

/// Queue length above which an observation interval counts as busy (seed 002's filter).
pub const BUSY_QUEUE: f64 = 2.0;

/// A chart ready to embed.
#[derive(Clone, Debug)]
pub struct Chart {
    /// Stable id (`[a-z0-9_-]`), used as file name.
    pub id: String,
    /// Section it belongs to (an experiment's id, "sweeps", "comparisons", "telemetry", "tpcc").
    pub section: String,
    /// Title.
    pub title: String,
    /// The `<svg>` element.
    pub svg: String,
}

/// A chart id part: lower case, so ids differing only in case cannot collide as file names.
pub(crate) fn slug(s: &str) -> String {
    oio_core::text::slug(&s.to_ascii_lowercase(), 40)
}

pub(crate) fn push_plot(out: &mut Vec<Chart>, id: String, section: &str, p: Plot) {
    if p.has_data() {
        out.push(Chart {
            svg: p.to_svg(&id),
            title: p.title.clone(),
            id,
            section: section.to_string(),
        });
    }
}

/// Most series one chart overlays; more runs get small multiples.
pub const MAX_SERIES: usize = 6;

/// Most runs drawn as small multiples; more are summarised per interval.
pub const MAX_SMALL: usize = 12;

/// Size of one small multiple, px.
pub const SMALL: (f64, f64) = (372.0, 250.0);

/// Series over one x axis: overlaid when at most [`MAX_SERIES`], small multiples on one
/// shared scale up to [`MAX_SMALL`], beyond that the median series per point with whiskers
/// from the lowest to the highest (points matched by position), so no chart shows more lines
/// than a reader can tell apart.
pub(crate) fn overlay_or_multiples(
    out: &mut Vec<Chart>,
    id: &str,
    section: &str,
    title: &str,
    t: Axis,
    y: Axis,
    series: Vec<Series>,
) {
    if series.len() <= MAX_SERIES {
        let mut p = Plot::new(title, t, y);
        p.series = series;
        push_plot(out, id.to_string(), section, p);
        return;
    }
    if series.len() > MAX_SMALL {
        // Too many for small multiples too: the median per interval, whiskers from the
        // lowest to the highest, so the file stays small and the spread stays visible.
        let n = series.iter().map(|s| s.points.len()).max().unwrap_or(0);
        let mut med = Vec::with_capacity(n);
        let mut wh = Vec::with_capacity(n);
        for k in 0..n {
            let mut v: Vec<f64> = series
                .iter()
                .filter_map(|s| s.points.get(k).map(|p| p.1))
                .collect();
            let Some(t) = series.iter().find_map(|s| s.points.get(k).map(|p| p.0)) else {
                continue;
            };
            v.sort_by(f64::total_cmp);
            med.push((t, v[v.len() / 2]));
            wh.push((v[0], v[v.len() - 1]));
        }
        let mut p = Plot::new(
            &format!(
                "{title}: median of {} per interval, whiskers lowest to highest",
                series.len()
            ),
            t,
            y,
        );
        let mode = series[0].mode;
        let mut m = Series::new(
            "median",
            med,
            if mode == Mode::Points {
                Mode::Points
            } else {
                Mode::LinePoints
            },
        );
        m.whiskers = Some(wh);
        p.series.push(m);
        push_plot(out, id.to_string(), section, p);
        return;
    }
    let all = series.iter().flat_map(|s| s.points.iter());
    let (lo, hi) = all.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
        (a.min(p.1), b.max(p.1))
    });
    let (t0, t1) = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    let t = match t.span {
        Some(_) => t,
        None if t0.is_finite() => t.with_span(t0.min(0.0), t1),
        None => t,
    };
    for (k, s) in series.into_iter().enumerate() {
        let mut p = Plot::new(
            &format!("{title}: {}", s.name),
            t.clone(),
            if lo.is_finite() {
                y.clone().with_span(lo, hi)
            } else {
                y.clone()
            },
        );
        p.size = SMALL;
        p.series.push(s);
        push_plot(out, format!("{id}-{}", k + 1), section, p);
    }
}

/// Names for TPC-C results by what differs between them: the `--label` when labels differ,
/// followed (or else replaced) by the server settings ("synchronous_commit=off") with the database, worker and
/// warehouse counts, version and host; and only when none of those differ, the options of the command line
/// ("time 10s"); "TPC-C run N" when nothing differs. Shared by the report, `compare` and
/// `diagnose` so the three name a run alike.
pub fn tpcc_names(docs: &[&oio_documents::tpcc::TpccResult]) -> Vec<String> {
    let labels = docs
        .iter()
        .map(|r| r.label.iter().map(|l| (String::new(), l.clone())).collect())
        .collect();
    let settings: Vec<Option<&std::collections::BTreeMap<String, String>>> = docs
        .iter()
        .map(|r| r.settings.as_ref().map(|s| &s.values))
        .collect();
    let settings = oio_core::settings::setting_facts(&settings);
    let setup = docs
        .iter()
        .zip(settings)
        .map(|(r, mut v)| {
            v.extend([
                (String::new(), format!("{:?}", r.dialect).to_lowercase()),
                ("workers".to_string(), r.options.workers.to_string()),
                ("warehouses".to_string(), r.warehouses.to_string()),
            ]);
            if let Some(s) = &r.settings {
                v.push(("version".to_string(), s.version.clone()));
            }
            if let Some(h) = &r.envelope.host {
                v.push(("host".to_string(), h.hostname.clone()));
            }
            v
        })
        .collect();
    let options = docs
        .iter()
        .map(|r| {
            let mut v = Vec::new();
            let args: Vec<&String> = r.envelope.command.iter().skip(3).collect();
            for w in args.windows(2) {
                if w[0].starts_with("--")
                    && !w[1].starts_with('-')
                    && !["--workers", "--warehouses", "--out", "--db", "--label"]
                        .contains(&w[0].as_str())
                {
                    v.push((w[0].trim_start_matches('-').to_string(), w[1].clone()));
                }
            }
            v
        })
        .collect();
    let n = docs.len();
    let by_label = oio_core::settings::name_by_difference(&[labels], n, |_| String::new());
    let by_setup = oio_core::settings::name_by_difference(&[setup, options], n, |_| String::new());
    // A label names the run; the settings that differ follow it ("async
    // (synchronous_commit=off)").
    by_label
        .into_iter()
        .zip(by_setup)
        .enumerate()
        .map(|(k, (l, s))| match (l.is_empty(), s.is_empty()) {
            (false, false) => format!("{l} ({s})"),
            (false, true) => l,
            (true, false) => s,
            (true, true) => format!("TPC-C run {}", k + 1),
        })
        .collect()
}

/// An observation's device as panels on one time axis: IOPS, MiB/s, latency per direction
/// and queue length, each in its own unit, busy periods shaded.
pub(crate) fn observation_panels(
    out: &mut Vec<Chart>,
    sec: &str,
    name: &str,
    obs: &oio_core::observation::Observation,
    time: Option<&Axis>,
) {
    for d in obs.devices.iter().take(4) {
        let iv = &d.intervals;
        if iv.is_empty() {
            continue;
        }
        let id = format!("{sec}-{}-{}", slug(name), slug(&d.name));
        let name = format!("{name} {}", d.name);
        let bands: Vec<(f64, f64)> = iv
            .iter()
            .filter(|i| i.queue_mean.is_some_and(|q| q > BUSY_QUEUE))
            .map(|i| (i.t_s - i.duration_s, i.t_s))
            .collect();
        let t = time
            .cloned()
            .unwrap_or_else(|| Axis::linear("time (s)", Fmt::Secs));
        let panel =
            |title: &str,
             y: Axis,
             f: &dyn Fn(&oio_core::observation::DirCounters) -> Option<f64>| {
                let mut p = Plot::new(
                    &format!("{name}: {title}, busy (queue > {BUSY_QUEUE}) shaded"),
                    t.clone(),
                    y,
                );
                for (dir, pick) in [("reads", 0), ("writes", 1)] {
                    p.series.push(Series::new(
                        dir,
                        iv.iter()
                            .filter_map(|i| {
                                f(if pick == 0 { &i.read } else { &i.write }).map(|v| (i.t_s, v))
                            })
                            .collect(),
                        Mode::Line,
                    ));
                }
                p.bands = bands.clone();
                p.band_label = Some("busy".into());
                p
            };
        push_plot(
            out,
            format!("{id}-iops"),
            sec,
            panel("IOPS", Axis::linear("IOPS", Fmt::Count), &|c| c.iops),
        );
        push_plot(
            out,
            format!("{id}-mibps"),
            sec,
            panel("throughput", Axis::linear("MiB/s", Fmt::Count), &|c| {
                c.bytes_per_sec.map(|b| b / 1048576.0)
            }),
        );
        push_plot(
            out,
            format!("{id}-lat"),
            sec,
            panel("mean latency", Axis::log("mean latency", Fmt::Ns), &|c| {
                c.latency_mean_ns.filter(|v| *v > 0.0)
            }),
        );
        let mut q = Plot::new(
            &format!("{name}: queue length (mean outstanding I/Os), busy shaded"),
            t.clone(),
            Axis::linear("queue length (I/Os)", Fmt::Count),
        );
        q.series.push(Series::new(
            "queue length",
            iv.iter()
                .filter_map(|i| i.queue_mean.map(|v| (i.t_s, v)))
                .collect(),
            Mode::Line,
        ));
        q.bands = bands.clone();
        q.band_label = Some("busy".into());
        push_plot(out, format!("{id}-queue"), sec, q);
    }
}

pub(crate) fn charts_of(out: &mut String, charts: &[Chart], section: &str) {
    for c in charts.iter().filter(|c| c.section == section) {
        let _ = write!(
            out,
            "<div class=\"chart\" id=\"chart-{}\">{}</div>",
            c.id, c.svg
        );
    }
}
