//! The result of `oio tpcc run` (`oio.tpcc`) and of a worker-count sequence
//! (`oio.tpcc.series`).
//!
//! The document types live in `oio_documents::tpcc::result` (so the report reads them without
//! the database drivers) and are re-exported here; this module builds them.

pub use oio_documents::tpcc::result::*;

use crate::txn::TxnType;
use oio_core::document::Envelope;

/// Mean keying plus think time of one transaction over the mix at scale 1, seconds (the
/// `cycle_s` of [`TerminalStats`] before `pace_scale`).
pub fn spec_cycle_s() -> f64 {
    TxnType::ALL
        .iter()
        .map(|t| {
            let (k, th) = t.keying_think_s();
            t.mix_pct() as f64 / 100.0 * (k + th)
        })
        .sum()
}

/// Per-type name helper for map keys.
pub fn key(t: TxnType) -> String {
    t.name().to_string()
}

/// An empty series for `plan`'s sequence, described by its first result.
pub fn new_series(first: &TpccResult, plan: &crate::plan::TpccRunPlan) -> Series {
    let mut envelope = Envelope::new(SERIES_SCHEMA, SERIES_SCHEMA_VERSION);
    envelope.timestamp = first.envelope.timestamp.clone();
    envelope.command = first.envelope.command.clone();
    envelope.host = first.envelope.host.clone();
    envelope.plan = Some(plan.for_document(None));
    let mut notes = vec![
        "each run has its own ramp; efficiency_pct = (NOPM ÷ workers) ÷ (the first worker count's NOPM ÷ workers) × 100".to_string(),
        "latency_ns holds each step's [p90, p99] per transaction type in ns, from its runs' merged histograms".into(),
    ];
    if plan.repeat > 1 {
        notes.push(format!(
            "each worker count ran {} times, interleaved with the others in the order runs lists ({}), never back to back, so a neighbour's burst or a drift does not land on one count's runs alone; a step's nopm and tpm are the medians of its runs and efficiency_pct is from the medians; nopm_runs gives each run's NOPM (their spread is the run-to-run noise)",
            plan.repeat,
            plan.order.as_deref().unwrap_or("each count once, in order")
        ));
    }
    if plan.step.terminals.is_some() {
        notes.push("terminal mode: the same terminals in every step, so NOPM is bounded by them and efficiency_pct per connection falls as connections are added; a step's terminals.efficiency_pct and terminals.late_s say whether its connections kept up".into());
    }
    Series {
        envelope,
        label: plan.label.clone(),
        db: first.db.clone(),
        dialect: first.dialect,
        warehouses: first.warehouses,
        workers: plan.workers.clone(),
        repeat: plan.repeat,
        order: plan.order.clone(),
        steps: Vec::new(),
        runs: Vec::new(),
        notes,
    }
}
