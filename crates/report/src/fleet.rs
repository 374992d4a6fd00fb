//! Fleet results (`oio.fleet` from `oio fleet run`) in the report: each host's series beside
//! the merged one, the start skew of each host, and hosts whose IOPS stand out from the others.
//!
//! A fleet run writes the merged document and one `oio.run` per host (`hosts[].result_file`)
//! into one directory; those host runs are shown here, with their fleet, not again as an
//! experiment of their own.

use crate::chart::{charts_of, overlay_or_multiples, push_plot, Chart};
use crate::model::Report;
use crate::svg::{esc, Axis, BarSeries, Bars, Fmt, Mode, Plot, Series};
use oio_core::result::Interval;
use oio_core::units::format_signed;
use oio_core::units::{format_bytes, format_count, format_ns};
use oio_documents::fleet::FleetHost;
use std::fmt::Write;
use std::path::Path;

/// A host whose IOPS are more than this many percent above or below the median of the
/// fleet's hosts is flagged as an outlier.
pub const OUTLIER_PCT: f64 = 25.0;
/// Fewest hosts for which a median says what is usual.
pub const OUTLIER_MIN_HOSTS: usize = 3;

/// True when the run at `source` is the result file `result_file` of a host of the fleet
/// document at `fleet_source`: the same file name in the fleet document's directory (the
/// recorded path is relative to where `oio fleet run` ran, not to the document).
fn is_host_file(fleet_source: &str, result_file: &str, source: &str) -> bool {
    let (f, r, s) = (
        Path::new(fleet_source),
        Path::new(result_file),
        Path::new(source),
    );
    let same_dir =
        f.parent() == s.parent() && r.file_name().is_some() && r.file_name() == s.file_name();
    same_dir || s.ends_with(r) || (s.is_absolute() && r.is_absolute() && s == r)
}

/// For each fleet document, for each of its hosts: the index of that host's run in
/// [`Report::runs`], when it was given to the report.
pub fn host_runs(report: &Report) -> Vec<Vec<Option<usize>>> {
    report
        .fleets
        .iter()
        .map(|f| {
            f.doc
                .hosts
                .iter()
                .map(|h| {
                    let rf = h.result_file.as_deref()?;
                    report
                        .runs
                        .iter()
                        .position(|e| is_host_file(&f.source, rf, &e.source))
                })
                .collect()
        })
        .collect()
}

/// Runs that a fleet section shows (so experiments leave them out).
pub fn claimed_runs(report: &Report) -> Vec<usize> {
    host_runs(report).into_iter().flatten().flatten().collect()
}

/// The median of the hosts' IOPS and each host's distance from it, percent; None for the
/// distances when there are fewer than [`OUTLIER_MIN_HOSTS`] hosts or the median is 0. Hosts
/// of different workload groups ran different workloads: each is measured against the median
/// of its own group only (and the median returned is None when there are several groups).
pub fn deviations(hosts: &[FleetHost]) -> (Option<f64>, Vec<Option<f64>>) {
    let median_of = |group: &str| {
        let mut v: Vec<f64> = hosts
            .iter()
            .filter(|h| h.group == group)
            .map(|h| h.iops)
            .collect();
        v.sort_by(f64::total_cmp);
        let m = match v.len() {
            0 => None,
            n if n % 2 == 1 => Some(v[n / 2]),
            n => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
        };
        (m, v.len())
    };
    let dev = hosts
        .iter()
        .map(|h| {
            let (m, n) = median_of(&h.group);
            let m = m.filter(|m| *m > 0.0 && n >= OUTLIER_MIN_HOSTS)?;
            Some(100.0 * (h.iops - m) / m)
        })
        .collect();
    let one_group = hosts
        .iter()
        .all(|h| hosts.first().is_some_and(|f| f.group == h.group));
    let median = one_group
        .then(|| median_of(hosts.first().map_or("", |h| &h.group)).0)
        .flatten();
    (median, dev)
}

/// True when a host's distance from the median breaks the rule.
pub fn is_outlier(dev: Option<f64>) -> bool {
    dev.is_some_and(|d| d.abs() > OUTLIER_PCT)
}

fn series(name: &str, iv: &[Interval], f: &dyn Fn(&Interval) -> Option<f64>, mode: Mode) -> Series {
    Series::new(
        name,
        iv.iter().filter_map(|i| f(i).map(|v| (i.t_s, v))).collect(),
        mode,
    )
}

/// The charts of every fleet document: merged IOPS per interval, each host's IOPS and p99
/// per interval on the same time axis, the hosts' IOPS against the median, their start skew.
pub fn charts(report: &Report, out: &mut Vec<Chart>) {
    let runs = host_runs(report);
    for (n, (e, hr)) in report.fleets.iter().zip(&runs).enumerate() {
        let f = &e.doc;
        let sec = format!("fleet{}", n + 1);
        let host_iv: Vec<(&str, &[Interval])> = f
            .hosts
            .iter()
            .zip(hr)
            .filter_map(|(h, r)| Some((h.host.as_str(), &report.runs[(*r)?].doc.intervals[..])))
            .collect();
        let tmax = f
            .intervals
            .iter()
            .map(|i| i.t_s)
            .chain(host_iv.iter().flat_map(|(_, iv)| iv.iter().map(|i| i.t_s)))
            .fold(0.0, f64::max);
        let t = Axis::linear("time (s)", Fmt::Secs).with_span(0.0, tmax);
        let mut m = Plot::new(
            &format!(
                "{}: merged IOPS per interval (sum over the hosts that delivered it)",
                e.label
            ),
            t.clone(),
            Axis::linear("IOPS", Fmt::Count),
        );
        m.series.push(series(
            "merged",
            &f.intervals,
            &|i| Some(i.total.iops),
            Mode::LinePoints,
        ));
        push_plot(out, format!("{sec}-merged"), &sec, m);
        if !host_iv.is_empty() {
            overlay_or_multiples(
                out,
                &format!("{sec}-hosts-iops"),
                &sec,
                &format!("{}: IOPS per interval of each host", e.label),
                t.clone(),
                Axis::linear("IOPS", Fmt::Count),
                host_iv
                    .iter()
                    .map(|(h, iv)| series(h, iv, &|i| Some(i.total.iops), Mode::Line))
                    .collect(),
            );
            let mut lat: Vec<Series> = vec![series(
                "merged",
                &f.intervals,
                &|i| i.total.latency_ns.p99.map(|v| v as f64),
                Mode::LinePoints,
            )];
            lat.extend(host_iv.iter().map(|(h, iv)| {
                series(
                    h,
                    iv,
                    &|i| i.total.latency_ns.p99.map(|v| v as f64),
                    Mode::Points,
                )
            }));
            overlay_or_multiples(
                out,
                &format!("{sec}-hosts-p99"),
                &sec,
                &format!(
                    "{}: p99 latency per interval, merged and each host",
                    e.label
                ),
                t,
                Axis::log("p99 latency", Fmt::Ns),
                lat,
            );
        }
        let (median, dev) = deviations(&f.hosts);
        let ok = |k: usize| !is_outlier(dev[k]);
        let bars = Bars {
            title: format!(
                "{}: IOPS of each host{}",
                e.label,
                median
                    .filter(|_| f.hosts.len() >= OUTLIER_MIN_HOSTS)
                    .map(|m| format!(
                        " (median {}; outlier: more than {OUTLIER_PCT:.0} % from it)",
                        format_count(m)
                    ))
                    .unwrap_or_default()
            ),
            y_label: "IOPS".into(),
            fmt: Fmt::Count,
            categories: f.hosts.iter().map(|h| h.host.clone()).collect(),
            series: vec![
                BarSeries {
                    name: "within the rule".into(),
                    values: (0..f.hosts.len())
                        .map(|k| ok(k).then_some((f.hosts[k].iops, None)))
                        .collect(),
                },
                BarSeries {
                    name: "outlier".into(),
                    values: (0..f.hosts.len())
                        .map(|k| (!ok(k)).then_some((f.hosts[k].iops, None)))
                        .collect(),
                },
            ],
        };
        let id = format!("{sec}-hosts");
        out.push(Chart {
            svg: bars.to_svg(&id),
            title: bars.title,
            id,
            section: sec.clone(),
        });
        if f.hosts.iter().any(|h| h.start_skew_ns.is_some()) {
            let bars = Bars {
                title: format!(
                    "{}: start skew of each host (µs, positive: late; whiskers ± half the clock probe's round trip)",
                    e.label
                ),
                y_label: "start skew (µs)".into(),
                fmt: Fmt::Count,
                categories: f.hosts.iter().map(|h| h.host.clone()).collect(),
                series: vec![BarSeries {
                    name: "start skew".into(),
                    values: f
                        .hosts
                        .iter()
                        .map(|h| {
                            let s = h.start_skew_ns? as f64 / 1e3;
                            let u = h.clock_rtt_ns as f64 / 2e3;
                            Some((s, Some((s - u, s + u))))
                        })
                        .collect(),
                }],
            };
            let id = format!("{sec}-skew");
            out.push(Chart {
                svg: bars.to_svg(&id),
                title: bars.title,
                id,
                section: sec,
            });
        }
    }
}

fn ms(ns: i64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

/// The fleet section of the HTML page.
pub fn section(o: &mut String, report: &Report, charts: &[Chart]) {
    o.push_str("<section data-kind=\"fleet\"><h2 id=\"fleet\">Fleet runs</h2><p class=\"note\">Every host started at one instant, each its workload (one for all, or its workload group's: then the merged percentiles mix workloads, and each group's own are shown); the merged histograms are the bucket-by-bucket sum of the hosts' (percentiles are never averaged). Start skew: when a host's workers started against the common start instant, known within ± half the round trip of its clock probe.</p>");
    let runs = host_runs(report);
    for (n, (e, hr)) in report.fleets.iter().zip(&runs).enumerate() {
        let f = &e.doc;
        let t = &f.summary.total;
        let _ = write!(
            o,
            "<h3 title=\"{}\">{} — {} host{}, started {}</h3><p>merged: {} IOPS, {}/s, latency p50 {} p99 {} max {} (from the summed histograms), {:.1} outstanding; {} interval(s). The controller used {:.3} s CPU ({:.1} µs per host per interval).</p>",
            esc(&e.source),
            esc(&e.label),
            f.hosts.len(),
            if f.hosts.len() == 1 { "" } else { "s" },
            esc(&f.start),
            format_count(t.iops),
            format_bytes(t.bytes_per_sec),
            t.latency_ns.p50.map(|v| format_ns(v as f64)).unwrap_or("-".into()),
            t.latency_ns.p99.map(|v| format_ns(v as f64)).unwrap_or("-".into()),
            t.latency_ns.max.map(|v| format_ns(v as f64)).unwrap_or("-".into()),
            t.outstanding_mean,
            f.intervals.len(),
            f.controller.cpu_s,
            f.controller.cpu_us_per_host_interval,
        );
        let (median, dev) = deviations(&f.hosts);
        o.push_str("<table><tr><th class=\"l\">host</th><th class=\"l\">status</th><th>IOPS</th><th>from the median</th><th>start skew</th><th>± (rtt/2)</th><th>clock offset</th><th>intervals</th><th class=\"l\">own result</th></tr>");
        for (k, h) in f.hosts.iter().enumerate() {
            let out = is_outlier(dev[k]);
            let _ = write!(
                o,
                "<tr><td class=\"l\">{}</td><td class=\"l{}\">{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
                esc(&h.host),
                if h.status == "completed" { "" } else { " warn" },
                esc(&h.status),
                format_count(h.iops),
                if out { "warn" } else { "" },
                dev[k]
                    .map(|d| format!("{} %{}", format_signed(d, 1), if out { " outlier" } else { "" }))
                    .unwrap_or("-".into()),
                h.start_skew_ns.map(ms).unwrap_or("-".into()),
                ms(h.clock_rtt_ns / 2),
                ms(h.clock_offset_ns),
                h.intervals,
                match (hr[k], &h.result_file) {
                    (Some(i), _) => esc(&report.runs[i].source),
                    (None, Some(f)) => format!("{} (not among the inputs)", esc(f)),
                    (None, None) => "none written".into(),
                }
            );
        }
        o.push_str("</table>");
        groups_table(o, f);
        devices_table(o, f);
        let flagged: Vec<&str> = f
            .hosts
            .iter()
            .zip(&dev)
            .filter(|(_, d)| is_outlier(**d))
            .map(|(h, _)| h.host.as_str())
            .collect();
        match median {
            _ if !f.groups.is_empty() => {
                let _ = write!(
                    o,
                    "<p class=\"{}\">Outlier rule: a host whose IOPS are more than {OUTLIER_PCT:.0} % above or below the median of its own workload group (groups of fewer than {OUTLIER_MIN_HOSTS} hosts are not judged): hosts of different workloads are not compared. {}</p>",
                    if flagged.is_empty() { "note" } else { "warn" },
                    if flagged.is_empty() {
                        "No host breaks it.".to_string()
                    } else {
                        format!("Flagged: {}.", esc(&flagged.join(", ")))
                    }
                );
            }
            Some(m) if f.hosts.len() >= OUTLIER_MIN_HOSTS => {
                let _ = write!(
                    o,
                    "<p class=\"{}\">Outlier rule: a host whose IOPS are more than {OUTLIER_PCT:.0} % above or below the median of the {} hosts ({} IOPS). {}</p>",
                    if flagged.is_empty() { "note" } else { "warn" },
                    f.hosts.len(),
                    format_count(m),
                    if flagged.is_empty() {
                        "No host breaks it.".to_string()
                    } else {
                        format!(
                            "Flagged: {}. The rule cannot tell why (the host's device, its CPU, the network, a neighbour on shared storage, or its clock): compare its own result and environment with the others'.",
                            esc(&flagged.join(", "))
                        )
                    }
                );
            }
            _ => {
                let _ = write!(
                    o,
                    "<p class=\"note\">No outlier check: it needs at least {OUTLIER_MIN_HOSTS} hosts for a median to say what is usual.</p>"
                );
            }
        }
        for l in &f.lost {
            let _ = write!(o, "<p class=\"warn\">lost: {}</p>", esc(l));
        }
        if f.envelope.partial {
            o.push_str("<p class=\"warn\">partial: the merged result lacks what lost hosts did not deliver (hosts per interval below).</p>");
        }
        for w in &f.envelope.warnings {
            let _ = write!(o, "<p class=\"warn\">{}</p>", esc(w));
        }
        if f.hosts_per_interval.iter().any(|h| *h != f.hosts.len()) {
            let _ = write!(
                o,
                "<p class=\"note\">hosts per interval: {}</p>",
                f.hosts_per_interval
                    .iter()
                    .map(|h| h.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
        charts_of(o, charts, &format!("fleet{}", n + 1));
    }
    o.push_str("</section>");
}

/// Each host's devices over the measured window (from /proc/diskstats), and the verdict.
fn devices_table(o: &mut String, f: &oio_documents::fleet::FleetResult) {
    if f.hosts.iter().all(|h| h.devices.is_empty()) {
        return;
    }
    o.push_str("<table><tr><th class=\"l\">host</th><th class=\"l\">device</th><th>r/s</th><th>w/s</th><th>bytes/s</th><th>r_await</th><th>w_await</th><th>aqu-sz</th><th>%util</th></tr>");
    let ms = |v: Option<f64>| v.map(|v| format!("{v:.2} ms")).unwrap_or("-".into());
    for h in &f.hosts {
        for d in &h.devices {
            let _ = write!(
                o,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&h.host),
                esc(&d.name),
                format_count(d.read_iops),
                format_count(d.write_iops),
                format_bytes(d.bytes_per_sec),
                ms(d.read_await_ms),
                ms(d.write_await_ms),
                d.queue_mean.map(|q| format!("{q:.2}")).unwrap_or("-".into()),
                d.util_pct.map(|u| format!("{u:.0} %")).unwrap_or("-".into()),
            );
        }
    }
    o.push_str("</table>");
    if let Some(v) = &f.devices {
        let _ = write!(o, "<p class=\"note\">devices: {}</p>", esc(v));
    }
}

/// One row per workload group (hosts that ran different workloads), the total under them.
fn groups_table(o: &mut String, f: &oio_documents::fleet::FleetResult) {
    if f.groups.is_empty() {
        return;
    }
    o.push_str("<p class=\"note\">Workload groups: hosts that ran their own workload, each group merged as the total is (rates over the fleet window, histograms summed).</p><table><tr><th class=\"l\">group</th><th class=\"l\">workload</th><th class=\"l\">hosts</th><th>IOPS</th><th>reads</th><th>p50</th><th>p99</th><th>max</th></tr>");
    let row = |o: &mut String, name: &str, wl: &str, hosts: &str, s: &oio_core::result::Summary| {
        let t = &s.total;
        let lat = |v: Option<u64>| v.map(|v| format_ns(v as f64)).unwrap_or("-".into());
        let _ = write!(
            o,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(name),
            esc(wl),
            esc(hosts),
            format_count(t.iops),
            if t.ios > 0 {
                format!("{:.1} %", 100.0 * s.read.ios as f64 / t.ios as f64)
            } else {
                "-".into()
            },
            lat(t.latency_ns.p50),
            lat(t.latency_ns.p99),
            lat(t.latency_ns.max),
        );
    };
    for g in &f.groups {
        row(o, &g.name, &g.workload, &g.hosts.join(", "), &g.summary);
    }
    row(
        o,
        "total",
        "",
        &format!("{} hosts", f.hosts.len()),
        &f.summary,
    );
    o.push_str("</table>");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str, iops: f64) -> FleetHost {
        FleetHost {
            boot_id: None,
            host: name.into(),
            launcher: vec![],
            result_file: Some(format!("out/{name}.json")),
            clock_offset_ns: 0,
            clock_rtt_ns: 20_000,
            start_skew_ns: Some(300_000),
            status: "completed".into(),
            iops,
            ios: (iops * 3.0) as u64,
            window_s: 3.0,
            intervals: 3,
            lost: None,
            faulty: None,
            group: String::new(),
            workload: String::new(),
            read_share_pct: None,
            bindings: Vec::new(),
            devices: Vec::new(),
            logs: Vec::new(),
        }
    }

    #[test]
    fn a_host_far_from_the_median_is_an_outlier_and_two_hosts_are_never_judged() {
        let hosts = vec![
            host("a", 1000.0),
            host("b", 1100.0),
            host("c", 700.0),
            host("d", 1050.0),
        ];
        let (m, dev) = deviations(&hosts);
        assert_eq!(m, Some(1025.0));
        let flagged: Vec<bool> = dev.iter().map(|d| is_outlier(*d)).collect();
        // 700 is 31.7 % below 1025; 1100 is 7.3 % above.
        assert_eq!(flagged, [false, false, true, false]);
        let (_, two) = deviations(&hosts[..2]);
        assert!(two.iter().all(Option::is_none));
    }

    /// Issue 39: hosts of different workload groups are each compared with their own group's
    /// median: a slow workload's hosts are not outliers against a fast one's.
    #[test]
    fn outliers_are_judged_within_a_workload_group_only() {
        let in_group = |name: &str, iops: f64, g: &str| FleetHost {
            group: g.into(),
            ..host(name, iops)
        };
        let hosts = vec![
            in_group("a", 1000.0, "fast"),
            in_group("b", 1100.0, "fast"),
            in_group("c", 1050.0, "fast"),
            in_group("d", 100.0, "slow"),
            in_group("e", 110.0, "slow"),
            in_group("f", 60.0, "slow"),
        ];
        let (m, dev) = deviations(&hosts);
        assert_eq!(m, None);
        let flagged: Vec<bool> = dev.iter().map(|d| is_outlier(*d)).collect();
        // f is 40 % below its group's median of 100; a is 4.8 % below 1050.
        assert_eq!(flagged, [false, false, false, false, false, true]);
        assert_eq!(dev[5], Some(-40.0));
        // A group of two is not judged, whatever the other group holds.
        let (_, dev) = deviations(&hosts[..5]);
        assert_eq!((dev[3], dev[4]), (None, None));
    }

    #[test]
    fn host_files_are_found_beside_the_fleet_document() {
        // The recorded path is relative to where the fleet ran; the report may be given
        // another path to the same directory.
        assert!(is_host_file(
            "../x/fleet/f1/merged.json",
            "fleet/f1/h1.json",
            "../x/fleet/f1/h1.json"
        ));
        assert!(!is_host_file(
            "../x/fleet/f1/merged.json",
            "fleet/f1/h1.json",
            "../x/fleet/f2/h1.json"
        ));
    }
}
