//! The one place that calls the engine.

use oio_core::result::RunResult;
use oio_core::Cancel;
use oio_engine::{RunError, RunObserver, RunPlan};

/// Runs `plan` until it ends or `cancel` is cancelled (the engine only reads the token).
pub fn run_engine(
    plan: &RunPlan,
    replay: Option<&std::sync::Arc<oio_engine::replay::ReplayTrace>>,
    observer: &mut dyn RunObserver,
    cancel: &Cancel,
) -> Result<RunResult, RunError> {
    oio_engine::run_replay(plan, replay, observer, cancel)
}
