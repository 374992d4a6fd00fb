//! Ctrl-C: the first one asks the running command to stop and write its partial result;
//! a second one leaves at once. One handler per process, shared by every command.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// Exit code of a command stopped by Ctrl-C (128 + SIGINT), after its partial result is written.
pub const EXIT_INTERRUPTED: u8 = 130;

/// The flag Ctrl-C sets; installs the handler on first use.
pub fn stop_flag() -> Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let f = Arc::clone(&flag);
        let _ = ctrlc::set_handler(move || {
            if f.swap(true, Ordering::SeqCst) {
                std::process::exit(EXIT_INTERRUPTED as i32);
            }
        });
        flag
    })
    .clone()
}
