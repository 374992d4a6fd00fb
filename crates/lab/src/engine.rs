//! The one place that calls the engine.

use oio_core::result::{Interval, RunResult};
use oio_core::Cancel;
use oio_engine::{RunError, RunObserver, RunPlan, Start};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Runs `plan` until it ends or `cancel` is cancelled.
///
/// The engine still takes a stop flag it may also set itself (on I/O errors), so it gets a
/// flag of its own, never the caller's: the observer callbacks, which the engine makes a
/// few times a second and during the fill, raise it once the token is cancelled. When the
/// engine takes a `&Cancel`, this body becomes `oio_engine::run(plan, observer, cancel)`.
pub fn run_engine(
    plan: &RunPlan,
    observer: &mut dyn RunObserver,
    cancel: &Cancel,
) -> Result<RunResult, RunError> {
    let flag = Arc::new(AtomicBool::new(cancel.is_cancelled()));
    let mut bridge = Bridge {
        inner: observer,
        cancel,
        flag: Arc::clone(&flag),
    };
    oio_engine::run(plan, &mut bridge, flag)
}

struct Bridge<'a> {
    inner: &'a mut dyn RunObserver,
    cancel: &'a Cancel,
    flag: Arc<AtomicBool>,
}

impl Bridge<'_> {
    fn look(&self) {
        if self.cancel.is_cancelled() {
            self.flag.store(true, Ordering::SeqCst);
        }
    }
}

impl RunObserver for Bridge<'_> {
    fn filling(&mut self, path: &Path, done: u64, total: u64) {
        self.look();
        self.inner.filling(path, done, total);
    }
    fn started(&mut self, start: &Start<'_>) {
        self.look();
        self.inner.started(start);
    }
    fn tick(&mut self, elapsed: Duration, last: Option<&Interval>) {
        self.look();
        self.inner.tick(elapsed, last);
    }
}
