//! Stopping a command: SIGINT (Ctrl-C), SIGTERM and SIGHUP all ask the running command to stop
//! and write its partial result; a second one leaves at once. One handler per process, shared
//! by every command and installed when a command first asks for the flag (commands that never
//! ask keep the default: a signal ends them at once). [`exit_code`] is the one place that maps
//! the stop cause to the process's exit code.

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Exit code of a command stopped by Ctrl-C (128 + SIGINT), after its partial result is written.
pub const EXIT_INTERRUPTED: u8 = 128 + SIGINT as u8;

/// The first stopping signal received (0: none).
static CAUSE: AtomicI32 = AtomicI32::new(0);

/// What a command left changed outside itself and how to undo it (a study's server settings),
/// printed by a second signal before the process leaves, so leaving at once never leaves the
/// user blind. None: nothing to undo.
static LAST_WORDS: Mutex<Option<String>> = Mutex::new(None);

/// Sets (or with None clears) what a second signal prints before the process leaves: what
/// remains changed and how to put it back. While it is set, the first signal also says what a
/// second would do.
pub fn set_last_words(text: Option<String>) {
    *LAST_WORDS.lock().unwrap_or_else(|e| e.into_inner()) = text;
}

fn last_words() -> Option<String> {
    LAST_WORDS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The exit code of a process stopped by `signal`: 128 + its number, as shells report it
/// (SIGINT 130, SIGTERM 143, SIGHUP 129).
pub fn signal_exit_code(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(EXIT_INTERRUPTED)
}

/// The signal that asked this process to stop, if one did.
pub fn stop_cause() -> Option<i32> {
    match CAUSE.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Forgets the stop cause, for a command whose normal end is a signal (`oio record` without
/// `--duration`): it finished, it was not interrupted.
pub fn take_cause() -> Option<i32> {
    match CAUSE.swap(0, Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// A signal's name for messages.
pub fn signal_name(signal: i32) -> &'static str {
    match signal {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// The exit code of a command that returned `code`: a command a signal stopped exits with
/// that signal's code whatever it returned (a partial result is not a success).
pub fn exit_code(code: std::process::ExitCode) -> std::process::ExitCode {
    match stop_cause() {
        Some(s) => std::process::ExitCode::from(signal_exit_code(s)),
        None => code,
    }
}

/// The cancellation token of the running command: cancelled by the first stopping signal
/// (installs the handler on first use). Only the signal handler cancels it.
pub fn cancel_token() -> oio_core::Cancel {
    oio_core::Cancel::from_flag(stop_flag())
}

/// The flag a stopping signal sets; installs the handler on first use.
pub fn stop_flag() -> Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        // Without a handler (the registration failed) signals keep their default action:
        // they end the process, as before oio handled them.
        if let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
            let f = Arc::clone(&flag);
            // (A process that cannot start this thread fails at its first run's threads too.)
            let _ = std::thread::Builder::new()
                .name("oio-signals".into())
                .spawn(move || {
                    for s in signals.forever() {
                        if CAUSE
                            .compare_exchange(0, s, Ordering::SeqCst, Ordering::SeqCst)
                            .is_ok()
                            && !f.swap(true, Ordering::SeqCst)
                        {
                            if last_words().is_some() {
                                let _ = writeln!(crate::output::terminal::stderr(), "oio: stopping; what this command changed is put back next ({} again leaves at once and prints how to put it back yourself)", signal_name(s));
                            }
                            continue;
                        }
                        // A second signal: leave at once, saying what is left to undo.
                        if let Some(w) = last_words() {
                            let _ = writeln!(crate::output::terminal::stderr(), "oio: {}: leaving at once. {w}", signal_name(s));
                        }
                        std::process::exit(i32::from(signal_exit_code(s)));
                    }
                });
        }
        flag
    })
    .clone()
}
