//! The report's "Diagnosis" section: the findings `oio diagnose` prints, for the same inputs.
//!
//! The rules live in [`oio_analysis::diagnose`]; this module only turns a [`Report`]'s
//! documents into the analysis' [`Inputs`] (so a report over a directory says what
//! `oio diagnose DIR` says) and renders the findings: the claim, its confidence, the evidence
//! with units and where each number comes from, the threshold of the rule that fired, what to
//! try next, and what the findings cannot tell. `oio.diagnosis` documents given to the report
//! are shown as they were written, beside the one computed here.

use crate::model::{Entry, Report};
use crate::svg::esc;
use oio_analysis::diagnose::{
    self, samples_from_observation, DbFacts, Diagnosis, Evidence, Finding, Inputs, Options, Status,
    WaitShareFact,
};
use oio_documents::tpcc::TpccResult;
use std::fmt::Write;

/// True for an `oio.diagnosis` document (shown in this section, not among "other results").
pub fn is_diagnosis(doc: &serde_json::Value) -> bool {
    doc.get("schema").and_then(|s| s.as_str()) == Some(diagnose::SCHEMA)
}

/// What the database rules need from a TPC-C result.
pub fn db_facts(source: &str, t: &TpccResult) -> DbFacts {
    let sq = t.waits.sqlite.as_ref();
    DbFacts {
        source: source.into(),
        dialect: format!("{:?}", t.dialect).to_lowercase(),
        own_transactions: false,
        warehouses: t.warehouses,
        workers: t.options.workers,
        duration_s: t.duration_s,
        cpus: t.envelope.host.as_ref().map_or(0, |h| h.cpus),
        driver_cores_busy: t.cpu.cores_busy,
        includes_database: t.cpu.includes_database,
        wait_source: t.waits.source.clone(),
        session_samples: t.waits.session_samples,
        buckets: t
            .waits
            .buckets
            .iter()
            .map(|b| WaitShareFact {
                name: b.name.clone(),
                aas: b.aas,
                share_pct: b.share_pct,
            })
            .collect(),
        sqlite_sync: sq.and_then(|s| s.synchronous).and_then(|s| {
            serde_json::to_value(s)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
        }),
        commit_s: sq.map(|s| s.commit_s),
        commit_mean_us: sq.and_then(|s| s.commit_mean_ns).map(|ns| ns / 1e3),
        writer_wait_s: sq.map(|s| s.writer_wait_s),
        worker_s: sq.map(|s| s.worker_s),
        retries: t.summary.retries,
        committed: t.summary.committed,
        nopm: t.summary.nopm,
        device: t.device.clone(),
        host_others_cores: t.host_noise.as_ref().map(|h| h.others_cores_mean),
    }
}

/// What the database rules need from an `oio sql run` result (the user's own transactions:
/// no warehouses, no NOPM).
pub fn sql_db_facts(source: &str, t: &oio_documents::sql::SqlResult) -> DbFacts {
    DbFacts {
        source: source.into(),
        dialect: t.dialect.name().to_string(),
        own_transactions: true,
        workers: t.options.workers,
        duration_s: t.duration_s,
        cpus: t.envelope.host.as_ref().map_or(0, |h| h.cpus),
        driver_cores_busy: t.cpu.cores_busy,
        includes_database: t.cpu.includes_database,
        wait_source: t.waits.source.clone(),
        session_samples: t.waits.session_samples,
        buckets: t
            .waits
            .buckets
            .iter()
            .map(|b| WaitShareFact {
                name: b.name.clone(),
                aas: b.aas,
                share_pct: b.share_pct,
            })
            .collect(),
        retries: t.summary.retries,
        committed: t.summary.committed,
        device: t.device.clone(),
        host_others_cores: t.host_noise.as_ref().map(|h| h.others_cores_mean),
        ..DbFacts::default()
    }
}

/// The database facts of TPC-C results, each source followed by what tells it apart from
/// the others when that is a setting, the setup or a label ("tpcc-….json
/// (synchronous_commit=off)"), as the report and `compare` name them.
pub fn tpcc_facts(results: &[(String, TpccResult)]) -> Vec<DbFacts> {
    let docs: Vec<&TpccResult> = results.iter().map(|(_, t)| t).collect();
    let names = crate::chart::tpcc_names(&docs);
    results
        .iter()
        .zip(names)
        .map(|((source, t), n)| {
            if n.starts_with("TPC-C run ") || results.len() < 2 {
                db_facts(source, t)
            } else {
                db_facts(&format!("{source} ({n})"), t)
            }
        })
        .collect()
}

/// The analysis' inputs from a report's documents, each named by its file as `oio diagnose`
/// names it. `None` when the report holds nothing the rules read.
pub fn inputs_of(r: &Report) -> Option<Inputs> {
    let mut inputs = Inputs::default();
    for e in &r.observations {
        inputs
            .series
            .extend(samples_from_observation(&e.source, &e.doc));
    }
    inputs.runs = r
        .runs
        .iter()
        .map(|e| (e.source.clone(), e.doc.clone()))
        .collect();
    inputs.sweeps = r
        .sweeps
        .iter()
        .map(|e| (e.source.clone(), e.doc.clone()))
        .collect();
    inputs.characterizations = r
        .characterizations
        .iter()
        .map(|e| (e.source.clone(), e.doc.clone()))
        .collect();
    let tpcc: Vec<(String, TpccResult)> = r
        .tpcc
        .iter()
        .map(|e| (e.source.clone(), e.doc.clone()))
        .collect();
    inputs.databases = tpcc_facts(&tpcc);
    for e in &r.tpcc_series {
        let found = crate::scaling::of_series(&e.doc, |file| {
            r.tpcc
                .iter()
                .find(|t| t.source.ends_with(file))
                .map(|t| &t.doc)
        });
        inputs.scaling.extend(found.map(|x| (e.source.clone(), x)));
    }
    let nothing = inputs.series.is_empty()
        && inputs.runs.is_empty()
        && inputs.sweeps.is_empty()
        && inputs.characterizations.is_empty()
        && inputs.databases.is_empty();
    if nothing {
        return None;
    }
    fn sources<T>(v: &[Entry<T>]) -> impl Iterator<Item = String> + '_ {
        v.iter().map(|e| e.source.clone())
    }
    inputs.names = sources(&r.observations)
        .chain(sources(&r.runs))
        .chain(sources(&r.sweeps))
        .chain(sources(&r.characterizations))
        .chain(sources(&r.tpcc))
        .collect();
    Some(inputs)
}

/// An evidence value as `oio diagnose` prints it: durations and sizes in readable units,
/// other numbers with their unit; empty for a fact without a number.
pub fn evidence_value(e: &Evidence) -> String {
    let Some(v) = e.value else {
        return String::new();
    };
    match e.unit.as_str() {
        "ns" => diagnose::fmt_ns(v),
        "bytes" => diagnose::fmt_bytes(v),
        "bytes/s" => format!("{}/s", diagnose::fmt_bytes(v)),
        unit => {
            let n = if v.abs() >= 100.0 || v == v.round() {
                format!("{v:.0}")
            } else {
                format!("{v:.2}")
            };
            format!("{n} {unit}").trim().to_string()
        }
    }
}

/// When each rule fires, in short (the README's rule table has the reasons).
fn threshold(rule: &str) -> Option<&'static str> {
    Some(match rule {
        "queue_saturation" => "from some queue length on, IOPS grow slower than queue^0.2 while mean latency grows at least as queue^0.8 (6 busy intervals or 3 sweep points over 3 levels)",
        "bound" => "on the saturation plateau, mean I/O ≥ 64 KiB: throughput-bound, smaller: IOPS-bound; a device busy < 10 % of the time: idle; no plateau, ≤ 2 I/Os outstanding and busy ≥ 50 % of the time: latency-bound; open loop below 95 % of the offered rate: falls behind",
        "write_penalty" => "at equal queue, a write share spanning ≥ 20 points and the write-heavy half's median latency ≥ 1.3× the read-heavy half's",
        "periods_differ" => "the slowest period's mean latency ≥ 1.5× the fastest's",
        "production_on_curve" => "a sweep plus a characterization or capture of production: its outstanding I/O placed against the knee",
        "log_flush_bound" => "PostgreSQL: WAL waits ≥ 25 % of session samples; SQLite: COMMIT ≥ 30 % of the window; MariaDB/MySQL: redo log waits ≥ 25 % of the workers' time (undecided without performance_schema)",
        "data_read_bound" => "PostgreSQL: data-file I/O waits ≥ 25 % of session samples; MariaDB/MySQL: data file I/O waits ≥ 25 % of the workers' time (undecided without performance_schema)",
        "scaling_stops" => "a worker sequence's efficiency (NOPM per worker against the first count's) below 70 % from some count on, every run agreeing",
        "lock_contention" => "PostgreSQL: row, tuple and buffer lock waits ≥ 20 % of session samples; SQLite: queued for the write slot ≥ 30 % of worker time",
        "cpu_bound" => "sessions on CPU, or oio with SQLite inside it, ≥ 80 % of the host's cores",
        "generator_bound" => "oio's own CPU ≥ 80 % of the cores (runs: ≥ 90 % of min(cores, workers))",
        "buffered_io" => "a run without O_DIRECT",
        "memory_backed" => "a target on tmpfs, ramfs or a ram, zram or pmem device",
        "simulated" => "the null engine or a simulated device",
        "layout_phase" => "a fio result holding sequential-write jobs named or stonewalled as a file layout or fill",
        "too_short" => "fewer than 3 intervals, or IOPS drifting > 10 % over the run",
        "run_to_run_noise" => "IOPS of one workload and depth varying > 10 % (relative standard deviation)",
        _ => return None,
    })
}

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Found => "found",
        Status::NotFound => "not found",
        Status::Undecided => "undecided",
    }
}

fn finding_html(o: &mut String, n: usize, f: &Finding) {
    let _ = write!(
        o,
        "<div class=\"finding\" data-rule=\"{}\"><h4>{n}. <span class=\"warn\">[{} confidence]</span> {}</h4><p class=\"note\">rule {} · {}</p>",
        esc(&f.rule),
        format!("{:?}", f.confidence).to_lowercase(),
        esc(&f.claim),
        esc(&f.rule),
        esc(&f.source)
    );
    if !f.evidence.is_empty() {
        o.push_str(
            "<table><tr><th class=\"l\">evidence</th><th>value</th><th class=\"l\">from</th></tr>",
        );
        for e in &f.evidence {
            let _ = write!(
                o,
                "<tr><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
                esc(&e.what),
                esc(&evidence_value(e)),
                esc(&e.from)
            );
        }
        o.push_str("</table>");
    }
    if let Some(t) = threshold(&f.rule) {
        let _ = write!(o, "<p class=\"note\">Fires when: {}.</p>", esc(t));
    }
    for n in &f.next {
        let _ = write!(o, "<p>→ {}</p>", esc(n));
    }
    o.push_str("</div>");
}

fn diagnosis_html(o: &mut String, title: &str, d: &Diagnosis) {
    let _ = write!(o, "<h3>{}</h3>", esc(title));
    if let Some(q) = &d.queue_limit {
        let _ = write!(
            o,
            "<p class=\"note\">Queue limit compared with: {} I/Os ({}).</p>",
            q.value,
            esc(&q.from)
        );
    }
    let found: Vec<&Finding> = d.found().collect();
    if found.is_empty() {
        o.push_str("<p>No bottleneck found by the rules that could decide.</p>");
        // What weighed numbers and could not decide is the answer then: shown, not folded.
        let weighed: Vec<&Finding> = d
            .findings
            .iter()
            .filter(|f| f.status == Status::Undecided && !f.evidence.is_empty())
            .collect();
        if !weighed.is_empty() {
            o.push_str("<ul class=\"undecided\">");
            for f in weighed {
                let _ = write!(o, "<li>undecided: {}", esc(&f.claim));
                for n in &f.next {
                    let _ = write!(o, " → {}", esc(n));
                }
                o.push_str("</li>");
            }
            o.push_str("</ul>");
        }
    }
    // One finding with the same rule and claim for many inputs (100 null-engine runs) is
    // shown once, with the inputs it also holds for.
    let mut groups: Vec<(&Finding, Vec<&str>)> = Vec::new();
    for f in &found {
        match groups
            .iter_mut()
            .find(|(g, _)| g.rule == f.rule && g.claim == f.claim)
        {
            Some((_, also)) => also.push(&f.source),
            None => groups.push((f, Vec::new())),
        }
    }
    for (i, (f, also)) in groups.iter().enumerate() {
        finding_html(o, i + 1, f);
        if !also.is_empty() {
            let _ = write!(
                o,
                "<p class=\"note\">The same for {} more input{}: {}{}</p>",
                also.len(),
                if also.len() == 1 { "" } else { "s" },
                esc(&also.iter().take(5).copied().collect::<Vec<_>>().join(", ")),
                if also.len() > 5 { ", …" } else { "" }
            );
        }
    }
    let mut rest: Vec<(&Finding, usize)> = Vec::new();
    for f in d.findings.iter().filter(|f| f.status != Status::Found) {
        match rest
            .iter_mut()
            .find(|(g, _)| g.rule == f.rule && g.status == f.status && g.claim == f.claim)
        {
            Some((_, n)) => *n += 1,
            None => rest.push((f, 0)),
        }
    }
    if !rest.is_empty() {
        let _ = write!(
            o,
            "<details><summary>{} more rule(s) found nothing or could not decide</summary><table><tr><th class=\"l\">rule</th><th class=\"l\">status</th><th class=\"l\">why</th><th class=\"l\">input</th></tr>",
            rest.len()
        );
        for (f, more) in rest {
            let _ = write!(
                o,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}{}</td></tr>",
                esc(&f.rule),
                status_name(f.status),
                esc(&f.claim),
                esc(&f.source),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            );
        }
        o.push_str("</table></details>");
    }
    if !d.notes.is_empty() {
        o.push_str("<p class=\"note\">What these findings cannot tell:</p><ul class=\"note\">");
        for n in &d.notes {
            let _ = write!(o, "<li>{}</li>", esc(n));
        }
        o.push_str("</ul>");
    }
}

/// The section (`<section data-kind="diagnosis">`, heading id `diagnosis`), or `None` when
/// the report has nothing to diagnose and no diagnosis document.
pub fn section(r: &Report) -> Option<String> {
    let computed = inputs_of(r).map(|i| diagnose::diagnose(&i, &Options::default()));
    let given: Vec<&Entry<serde_json::Value>> =
        r.others.iter().filter(|e| is_diagnosis(&e.doc)).collect();
    if computed.is_none() && given.is_empty() {
        return None;
    }
    let mut o = String::from(
        "<section data-kind=\"diagnosis\"><h2 id=\"diagnosis\">Diagnosis</h2><p class=\"note\">What <code>oio diagnose</code> finds in these inputs, most confident first: each claim with its evidence (units as stated; where each number comes from), the threshold of the rule that fired, and what to try next. Not proof of a cause: change the named thing and measure again.</p>",
    );
    if let Some(d) = &computed {
        let title = if d.queue_limit.is_none() {
            "From this report's inputs (no queue limit known: give oio diagnose --queue-limit N to compare)"
        } else {
            "From this report's inputs"
        };
        diagnosis_html(&mut o, title, d);
    }
    for e in given {
        let title = format!("{} (oio.diagnosis, {})", e.label, e.source);
        let newer = e
            .doc
            .get("schema_version")
            .and_then(|v| v.as_u64())
            .is_some_and(|v| v > u64::from(diagnose::SCHEMA_VERSION));
        if newer {
            let _ = write!(
                o,
                "<h3>{}</h3><p class=\"warn\">Written by a newer oio (schema_version {} > {}): not shown; open it with that version.</p>",
                esc(&title),
                e.doc["schema_version"],
                diagnose::SCHEMA_VERSION
            );
            continue;
        }
        match serde_json::from_value::<Diagnosis>(e.doc.clone()) {
            Ok(d) => diagnosis_html(&mut o, &title, &d),
            Err(err) => {
                let _ = write!(
                    o,
                    "<h3>{}</h3><p class=\"warn\">Not a valid oio.diagnosis document: {}.</p>",
                    esc(&title),
                    esc(&err.to_string())
                );
            }
        }
    }
    o.push_str("</section>");
    Some(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use oio_analysis::diagnose::Confidence;

    fn diagnosis_doc() -> serde_json::Value {
        let d = Diagnosis {
            envelope: oio_core::Envelope::new(diagnose::SCHEMA, diagnose::SCHEMA_VERSION),
            inputs: vec!["sda.json".into()],
            groups: vec![],
            queue_limit: None,
            findings: vec![Finding {
                rule: "queue_saturation".into(),
                status: Status::Found,
                claim: "queue saturation above a queue of <16>".into(),
                evidence: vec![Evidence {
                    what: "mean latency there".into(),
                    value: Some(1_250_000.0),
                    unit: "ns".into(),
                    from: "sda.json t=10–20 s".into(),
                }],
                confidence: Confidence::High,
                next: vec!["state the adapter's queue limit".into()],
                source: "sda.json".into(),
                group: String::new(),
                conflicting: vec![],
                period: String::new(),
            }],
            notes: vec!["interval means cannot show tails".into()],
        };
        serde_json::to_value(d).unwrap()
    }

    fn report_with(doc: serde_json::Value) -> Report {
        Report {
            others: vec![Entry {
                label: "diag".into(),
                source: "diag.json".into(),
                doc,
            }],
            ..Default::default()
        }
    }

    #[test]
    fn one_finding_for_many_inputs_is_shown_once_with_the_others_named() {
        let mut d = diagnosis_doc();
        let f = d["findings"][0].clone();
        let list = d["findings"].as_array_mut().unwrap();
        for k in 1..8 {
            let mut g = f.clone();
            g["source"] = format!("run-{k}.json").into();
            list.push(g);
        }
        let s = section(&report_with(d)).expect("a section");
        assert_eq!(s.matches("data-rule=\"queue_saturation\"").count(), 1);
        assert!(
            s.contains("The same for 7 more inputs: run-1.json, run-2.json, run-3.json, run-4.json, run-5.json, …"),
            "{s}"
        );
    }

    #[test]
    fn a_given_diagnosis_is_shown_with_evidence_threshold_and_notes_escaped() {
        let s = section(&report_with(diagnosis_doc())).expect("a section");
        assert!(s.contains("data-rule=\"queue_saturation\""));
        assert!(s.contains("queue of &lt;16&gt;"), "claims are escaped: {s}");
        assert!(s.contains("<td>1.25 ms</td>"), "{s}");
        assert!(s.contains("sda.json t=10–20 s"));
        assert!(s.contains("Fires when: from some queue length on"));
        assert!(s.contains("interval means cannot show tails"));
        assert!(s.contains("→ state the adapter"));
    }

    #[test]
    fn a_newer_or_broken_diagnosis_is_named_not_shown() {
        let mut d = diagnosis_doc();
        d["schema_version"] = (diagnose::SCHEMA_VERSION + 1).into();
        let s = section(&report_with(d)).unwrap();
        assert!(s.contains("Written by a newer oio") && !s.contains("data-rule"));
        let mut d = diagnosis_doc();
        d["findings"] = "none".into();
        let s = section(&report_with(d)).unwrap();
        assert!(s.contains("Not a valid oio.diagnosis document"), "{s}");
    }

    #[test]
    fn nothing_to_diagnose_gives_no_section() {
        let r = report_with(serde_json::json!({"schema": "oio.blend"}));
        assert!(section(&r).is_none());
        assert!(inputs_of(&r).is_none());
    }

    #[test]
    fn evidence_values_carry_their_units() {
        let ev = |value: Option<f64>, unit: &str| Evidence {
            what: String::new(),
            value,
            unit: unit.into(),
            from: String::new(),
        };
        assert_eq!(evidence_value(&ev(Some(4096.0), "bytes")), "4.0 KiB");
        assert_eq!(evidence_value(&ev(Some(7172.4), "IOPS")), "7172 IOPS");
        assert_eq!(evidence_value(&ev(Some(0.953), "")), "0.95");
        assert_eq!(evidence_value(&ev(None, "ns")), "");
    }
}
