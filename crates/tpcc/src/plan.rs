//! What to run: the typed, serialisable plan of a TPC-C-like run and the options of one step.
//!
//! The bottom layer of the crate: plain data that depends on nothing else here, so the
//! backends, the driver and the result documents can all use it. A [`TpccRunPlan`] is
//! everything `oio tpcc run` needs (database, worker counts, durations, mode, isolation, sync,
//! seed); it is embedded in every result (`plan`), so a result says exactly how to repeat it.

use crate::error::{Result, TpccError};
use crate::url::DbUrl;
use serde::{Deserialize, Serialize};

// The options a result records are document types (the report reads them without the
// drivers); they are re-exported here, where the plan that holds them lives.
pub use oio_documents::tpcc::options::{
    Isolation, Mode, RunOptions, SqliteSync, Terminals, Timeouts, MIN_INTERVAL_S,
};

pub(crate) use oio_documents::tpcc::options::seconds;

/// Everything `oio tpcc run` needs, as a value another program can build, store and run
/// again: [`crate::run`] executes it. With several worker counts it is a sequence (HammerDB's
/// autopilot): each count runs in turn with its own ramp. The options of every step are one
/// [`RunOptions`], flattened into the plan's JSON beside `db` and `workers`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TpccRunPlan {
    /// The database URL. In a result the password is redacted, so repeating a run on a
    /// server that needs one takes it from the environment (PGPASSWORD) or a new URL.
    pub db: String,
    /// Worker counts in order; one count is a single run.
    pub workers: Vec<u32>,
    /// The options every step shares. Its own `workers` is 0 and not written: the counts
    /// are `workers` above ([`TpccRunPlan::options`] makes one step's options).
    #[serde(flatten)]
    pub step: RunOptions,
    /// Runs of each worker count (`--repeat`; 1: each once).
    #[serde(default = "one_u32", skip_serializing_if = "is_one_u32")]
    pub repeat: u32,
    /// The runs in the order they go, as indices into `workers`, each `repeat` times. Empty:
    /// each count once, in order. The caller chooses it (`oio tpcc run` by oio-lab's order
    /// rule: a count's runs never back to back, counterbalanced by default), so a plan
    /// replays the order it recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schedule: Vec<usize>,
    /// The rule that made `schedule` ("counterbalanced", "interleaved" or "shuffled", the
    /// last from `seed`), for the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<String>,
    /// A name every result of the plan carries (`--label`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The block device to record (`--device`; None: the one holding the database, found
    /// where the plan runs; "none": no device). Kept in the plan so a rerun and every host of
    /// a fleet record what the command line asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
}

fn one_u32() -> u32 {
    1
}

fn is_one_u32(x: &u32) -> bool {
    *x == 1
}

/// The longest label, in characters.
pub const MAX_LABEL: usize = 100;

impl TpccRunPlan {
    /// A plan on `db` with the given worker counts and the options of `step` (its `workers`
    /// is not used).
    pub fn new(db: &str, workers: Vec<u32>, step: RunOptions) -> TpccRunPlan {
        TpccRunPlan {
            db: db.to_string(),
            workers,
            step: RunOptions { workers: 0, ..step },
            repeat: 1,
            schedule: Vec::new(),
            order: None,
            label: None,
            device: None,
        }
    }

    /// The runs in order, as indices into `workers`: `schedule`, or each count once.
    pub fn runs(&self) -> Vec<usize> {
        if self.schedule.is_empty() {
            (0..self.workers.len()).collect()
        } else {
            self.schedule.clone()
        }
    }

    /// The parsed database URL.
    pub fn url(&self) -> Result<DbUrl> {
        self.db.parse()
    }

    /// The options of the step with `workers` workers.
    pub fn options(&self, workers: u32) -> RunOptions {
        RunOptions {
            workers,
            ..self.step.clone()
        }
    }

    /// Checks every step before any runs.
    pub fn validate(&self) -> Result<DbUrl> {
        let url = self.url()?;
        if self.workers.is_empty() || self.workers.contains(&0) {
            return Err(TpccError::Invalid(
                "--workers: every count must be at least 1 (for example 4, or 1,2,4)".into(),
            ));
        }
        for &n in &self.workers {
            self.options(n).validate(url.dialect())?;
        }
        self.validate_schedule()?;
        if let Some(l) = &self.label {
            if l.trim().is_empty()
                || l.chars().count() > MAX_LABEL
                || l.chars().any(char::is_control)
            {
                return Err(TpccError::Invalid(format!(
                    "--label '{}': expected a name of 1 to {MAX_LABEL} printable characters",
                    l.escape_debug()
                )));
            }
        }
        Ok(url)
    }

    /// Checks that `schedule` runs every worker count exactly `repeat` times.
    fn validate_schedule(&self) -> Result<()> {
        if self.repeat == 0 {
            return Err(TpccError::Invalid("--repeat must be at least 1".into()));
        }
        if self.schedule.is_empty() {
            if self.repeat > 1 {
                return Err(TpccError::Invalid(format!(
                    "a plan with repeat {} needs its schedule (the order of the runs)",
                    self.repeat
                )));
            }
            return Ok(());
        }
        let mut count = vec![0u32; self.workers.len()];
        for &i in &self.schedule {
            match count.get_mut(i) {
                Some(c) => *c += 1,
                None => {
                    return Err(TpccError::Invalid(format!(
                        "the plan's schedule names step {i}, but there are {} worker counts",
                        self.workers.len()
                    )))
                }
            }
        }
        if let Some(i) = count.iter().position(|&c| c != self.repeat) {
            return Err(TpccError::Invalid(format!(
                "the plan's schedule runs {} worker(s) {} time(s), not the {} of repeat",
                self.workers[i], count[i], self.repeat
            )));
        }
        Ok(())
    }

    /// This plan as embedded in a document: the password redacted, and narrowed to one
    /// worker count when `workers` is given (a step's own result repeats that step).
    pub fn for_document(&self, workers: Option<u32>) -> serde_json::Value {
        let mut plan = self.clone();
        plan.db = self
            .url()
            .map(|u| u.redacted())
            .unwrap_or_else(|_| self.db.clone());
        if let Some(n) = workers {
            // One run of one count: what the step's own result repeats.
            plan.workers = vec![n];
            plan.repeat = 1;
            plan.schedule = Vec::new();
            plan.order = None;
        }
        serde_json::to_value(plan).unwrap_or(serde_json::Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::url::Dialect;

    #[test]
    fn a_plan_round_trips_through_json_and_redacts_the_password() {
        let plan = TpccRunPlan::new(
            "postgres://u:secret@localhost:5432/db",
            vec![1, 2],
            RunOptions::default(),
        );
        let v = plan.for_document(Some(2));
        let text = v.to_string();
        assert!(!text.contains("secret"), "{text}");
        let back: TpccRunPlan = serde_json::from_value(v).unwrap();
        assert_eq!(back.workers, vec![2]);
        assert_eq!(back.step.seed, plan.step.seed);
        assert_eq!(back.step.time_s, plan.step.time_s);
        assert_eq!(back.options(2).workers, 2);
    }

    #[test]
    fn pacing_options_are_checked() {
        let mut o = RunOptions {
            pace_scale: 0.0,
            paced: true,
            ..RunOptions::default()
        };
        let e = o.validate(Dialect::Sqlite).unwrap_err().to_string();
        assert!(e.contains("--pace-scale must be above 0"), "{e}");
        o.pace_scale = 0.5;
        o.paced = false;
        let e = o.validate(Dialect::Sqlite).unwrap_err().to_string();
        assert!(e.contains("needs --paced or --terminals"), "{e}");
        o.terminals = Some("10/warehouse".parse().unwrap());
        assert!(o.pacing());
        o.validate(Dialect::Sqlite).unwrap();
        // Older plans without the fields read as one terminal per worker at scale 1.
        let mut v = serde_json::to_value(TpccRunPlan::new(
            "sqlite:x.db",
            vec![1],
            RunOptions::default(),
        ))
        .unwrap();
        assert!(
            v.get("terminals").is_none() && v.get("pace_scale").is_none(),
            "{v}"
        );
        v.as_object_mut().unwrap().remove("pace_scale");
        let p: TpccRunPlan = serde_json::from_value(v).unwrap();
        assert_eq!((p.step.terminals, p.step.pace_scale), (None, 1.0));
    }

    #[test]
    fn the_plan_writes_its_step_options_beside_its_worker_counts() {
        // The keys a plan wrote when it copied RunOptions field by field: old plans and
        // results embedding them must keep reading, and new ones keep the same form.
        let plan = TpccRunPlan::new("sqlite:x.db", vec![1, 4], RunOptions::default());
        let v = serde_json::to_value(&plan).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "all_warehouses",
                "db",
                "interval_s",
                "isolation",
                "max_retries",
                "mode",
                "paced",
                "ramp_s",
                "seed",
                "sqlite_sync",
                "time_s",
                "timeouts",
                "wait_sample_ms",
                "workers"
            ]
        );
        assert_eq!(v["workers"], serde_json::json!([1, 4]));
        let back: TpccRunPlan = serde_json::from_value(v).unwrap();
        assert_eq!((&back.workers[..], back.step.workers), (&[1, 4][..], 0));
        assert_eq!(back.options(4).workers, 4);
        // A step's options in a result still record their worker count.
        let o = serde_json::to_value(plan.options(4)).unwrap();
        assert_eq!(o["workers"], 4);
    }

    #[test]
    fn a_schedule_runs_every_count_repeat_times() {
        let mut plan = TpccRunPlan::new("sqlite:./x.db", vec![1, 2], RunOptions::default());
        assert_eq!(plan.runs(), vec![0, 1]);
        plan.validate().unwrap();
        plan.repeat = 2;
        assert!(plan
            .validate()
            .unwrap_err()
            .to_string()
            .contains("schedule"));
        plan.schedule = vec![0, 1, 1, 0];
        plan.validate().unwrap();
        assert_eq!(plan.runs(), vec![0, 1, 1, 0]);
        plan.schedule = vec![0, 1, 1, 1];
        let e = plan.validate().unwrap_err().to_string();
        assert!(e.contains("runs 1 worker(s) 1 time(s)"), "{e}");
        plan.schedule = vec![0, 1, 2, 0];
        assert!(plan.validate().unwrap_err().to_string().contains("step 2"));
        // A step's own result repeats one run of it.
        plan.schedule = vec![0, 1, 1, 0];
        plan.order = Some("counterbalanced".into());
        let one: TpccRunPlan = serde_json::from_value(plan.for_document(Some(2))).unwrap();
        assert_eq!(
            (one.workers, one.repeat, one.schedule, one.order),
            (vec![2], 1, vec![], None)
        );
        plan.label = Some(" ".into());
        assert!(plan.validate().unwrap_err().to_string().contains("--label"));
    }

    #[test]
    fn a_plan_with_no_or_zero_workers_is_refused() {
        let mut plan = TpccRunPlan::new("sqlite:./x.db", vec![], RunOptions::default());
        assert!(plan.validate().is_err());
        plan.workers = vec![1, 0];
        let e = plan.validate().unwrap_err().to_string();
        assert!(e.contains("at least 1"), "{e}");
        plan.workers = vec![1];
        plan.step.mode = Mode::Server;
        assert!(plan.validate().unwrap_err().to_string().contains("--mode"));
    }
}
