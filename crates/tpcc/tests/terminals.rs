//! Terminal mode on embedded SQLite: terminals with keying and think times multiplexed over
//! fewer connections bound NOPM by their number, and a run whose connections cannot keep up
//! says so.

use oio_core::Cancel;
use oio_tpcc::plan::Terminals;
use oio_tpcc::{build, run_step, BuildOptions, DbUrl, Quiet, RunOptions, SqliteSync, Timeouts};
use oio_tpcc::{TpccError, TpccResult};

fn run(db: &DbUrl, terminals: u32, connections: u32, scale: f64, time_s: f64) -> TpccResult {
    run_step(
        db,
        &RunOptions {
            workers: connections,
            ramp_s: 1.0,
            time_s,
            terminals: Some(Terminals {
                count: terminals,
                per_warehouse: false,
            }),
            pace_scale: scale,
            // No fsync per commit: the response times stay far below the think times on any
            // disk, so the terminals alone bound NOPM.
            sqlite_sync: SqliteSync::Normal,
            ..RunOptions::default()
        },
        &mut Quiet,
        &Cancel::new(),
    )
    .unwrap()
}

#[test]
fn terminals_bound_nopm_and_it_rises_with_terminals_not_connections() {
    let dir = tempfile::tempdir().unwrap();
    let db: DbUrl = format!("sqlite:{}", dir.path().join("t.db").display())
        .parse()
        .unwrap();
    build(
        &db,
        &BuildOptions {
            warehouses: 1,
            workers: 2,
            force: false,
            seed: 7,
            timeouts: Timeouts::default(),
        },
        &|_| {},
        &Cancel::new(),
    )
    .unwrap();

    // Think and keying times × 0.01: a cycle of 0.21 s, so 10 terminals offer at most
    // 10 × 0.45 × 60 ÷ 0.2099 = 1286 NOPM (12.86 per warehouse per terminal-tenth ÷ 0.01).
    let scale = 0.01;
    let ten_on_one = run(&db, 10, 1, scale, 6.0);
    let ten_on_two = run(&db, 10, 2, scale, 6.0);
    let twenty_on_one = run(&db, 20, 1, scale, 6.0);
    for r in [&ten_on_one, &ten_on_two, &twenty_on_one] {
        let t = r.terminals.as_ref().expect("terminal figures");
        eprintln!(
            "{} terminals on {} connection(s): NOPM {:.0} of {:.0} ({:.0} %), {} late of {}, waits {:.3} s, max {} ns",
            t.terminals,
            t.connections,
            r.summary.nopm,
            t.bound_nopm,
            t.efficiency_pct.unwrap_or(0.0),
            t.late_starts,
            t.started,
            t.late_s,
            t.late_max_ns
        );
        assert_eq!(r.summary.failed, 0, "{:?}", r.errors);
        assert!((t.cycle_s - 0.2099).abs() < 1e-3, "{t:?}");
        assert!(
            (t.bound_nopm / t.terminals as f64 - 128.63).abs() < 0.1,
            "{t:?}"
        );
        // Spec-like NOPM: within sampling noise of the bound (1 % of New-Orders roll back
        // and every response time lengthens a cycle, so a little below it).
        let eff = t.efficiency_pct.unwrap();
        assert!((65.0..=115.0).contains(&eff), "{eff} % {t:?}");
        // Connections kept up: no warning about them — unless the run itself recorded a
        // neighbour taking the CPU (a busy test machine), when two connections on a starved
        // host may honestly fall behind; the warning must then say so, and it does.
        if !r.noisy_host() {
            assert!(
                !r.envelope
                    .warnings
                    .iter()
                    .any(|w| w.contains("could not keep up")),
                "{:?}",
                r.envelope.warnings
            );
        }
        assert!(
            r.notes.iter().any(|n| n.contains("--pace-scale")),
            "{:?}",
            r.notes
        );
        // The summary's efficiency is against 12.86 per warehouse, scaled the same way.
        let spec = r.summary.efficiency_pct.unwrap();
        assert!((spec - r.summary.nopm * scale / 12.86 * 100.0).abs() < 1e-6);
        oio_testkit::interval_waits_add_up(r, 0.01).unwrap();
    }
    // The document carries the terminal figures and options, as its schema says.
    let mut doc = serde_json::to_value(&ten_on_one).unwrap();
    // run_step leaves the plan to its caller (run embeds it).
    doc["plan"] = oio_tpcc::TpccRunPlan::new(&ten_on_one.db, vec![1], ten_on_one.options.clone())
        .for_document(Some(1));
    assert_eq!(doc["plan"]["terminals"]["count"], 10);
    assert_eq!(doc["terminals"]["terminals"], 10);
    assert_eq!(doc["options"]["terminals"]["count"], 10);
    assert_eq!(doc["options"]["pace_scale"], 0.01);
    let path = format!(
        "{}/../../schema/tpcc.schema.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = v
        .iter_errors(&doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let mut broken = doc.clone();
    broken["terminals"]["late_starts"] = serde_json::json!(-1);
    assert!(!v.is_valid(&broken));
    // More connections for the same terminals change nothing; twice the terminals, twice
    // the NOPM.
    let ratio = ten_on_two.summary.nopm / ten_on_one.summary.nopm;
    assert!((0.7..=1.4).contains(&ratio), "2 connections ÷ 1: {ratio}");
    let ratio = twenty_on_one.summary.nopm / ten_on_one.summary.nopm;
    assert!((1.5..=2.6).contains(&ratio), "20 terminals ÷ 10: {ratio}");

    // 300 terminals with cycles of 21 ms offer ~14,000 transactions a second: one connection
    // cannot keep up, and the result says so.
    let r = run(&db, 300, 1, 0.001, 2.0);
    let t = r.terminals.as_ref().unwrap();
    eprintln!("{t:?} {:?}", r.envelope.warnings);
    assert!(t.late_starts > 0 && t.late_s > 0.0, "{t:?}");
    assert!(t.efficiency_pct.unwrap() < 80.0, "{t:?}");
    assert!(
        r.envelope
            .warnings
            .iter()
            .any(|w| w.contains("could not keep up with the 300 terminals")),
        "{:?}",
        r.envelope.warnings
    );
    // Terminals belong to a warehouse each: spreading workers over all is refused.
    let e = run_step(
        &db,
        &RunOptions {
            terminals: Some(Terminals {
                count: 10,
                per_warehouse: true,
            }),
            all_warehouses: true,
            ..RunOptions::default()
        },
        &mut Quiet,
        &Cancel::new(),
    )
    .unwrap_err();
    assert!(
        matches!(e, TpccError::Invalid(_)) && e.to_string().contains("--all-warehouses"),
        "{e}"
    );
}

#[test]
fn terminal_counts_parse_in_all_or_per_warehouse() {
    let t: Terminals = "40".parse().unwrap();
    assert_eq!((t.count, t.per_warehouse, t.total(3)), (40, false, 40));
    let t: Terminals = "10/warehouse".parse().unwrap();
    assert_eq!((t.count, t.per_warehouse, t.total(3)), (10, true, 30));
    assert!("10/w".parse::<Terminals>().unwrap().per_warehouse);
    for bad in ["0", "ten", "10/x", "-1", ""] {
        let e = bad.parse::<Terminals>().unwrap_err().to_string();
        assert!(e.contains("expected"), "{bad}: {e}");
    }
}
