//! The one colour policy: decided once from `--color`, `NO_COLOR`, `TERM=dumb` and whether
//! the stream is a terminal (anstream does the detection), then used everywhere.

use crate::values::ColorWhen;
use anstyle::{AnsiColor, Style};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// `--quiet`: set once before the command runs, read by every printer.
static QUIET: AtomicBool = AtomicBool::new(false);

/// Applies `--quiet` for the whole process: the live line, the run header, summaries,
/// notices and warnings are left out; errors and the saved result's path remain.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// True under `--quiet`.
pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// Headings.
pub const HEAD: Style = Style::new().bold();
/// Warnings.
pub const WARN: Style = AnsiColor::Yellow.on_default().bold();
/// Errors.
pub const ERROR: Style = AnsiColor::Red.on_default().bold();
/// De-emphasised text.
pub const DIM: Style = Style::new().dimmed();

/// Applies `--color` for the whole process.
pub fn set_color_choice(when: ColorWhen) {
    let choice = match when {
        ColorWhen::Auto => anstream::ColorChoice::Auto,
        ColorWhen::Always => anstream::ColorChoice::Always,
        ColorWhen::Never => anstream::ColorChoice::Never,
    };
    choice.write_global();
}

/// Prints `oio: error: ...` on stderr.
pub fn print_error(msg: &str) {
    // Messages carry names and text from files, agents and servers: shown, never acted on.
    let msg = oio_core::text::printable_lines(msg);
    let mut e = anstream::stderr();
    let _ = writeln!(e, "oio: {ERROR}error:{ERROR:#} {msg}");
}

/// Prints `oio: warning: ...` on stderr (not under `--quiet`).
pub fn print_warning(msg: &str) {
    if quiet() {
        return;
    }
    let msg = oio_core::text::printable_lines(msg);
    let mut e = anstream::stderr();
    let _ = writeln!(e, "oio: {WARN}warning:{WARN:#} {msg}");
}

/// Prints `oio: ...` on stderr (not under `--quiet`; where a result went is
/// [`print_saved`]'s).
pub fn print_notice(msg: &str) {
    if quiet() {
        return;
    }
    let msg = oio_core::text::printable_lines(msg);
    let mut e = anstream::stderr();
    let _ = writeln!(e, "oio: {msg}");
}

/// Says where a result was saved: `oio: WHAT: PATH` on stderr. Under `--quiet` the bare path:
/// on stdout (the one line a script reads), or on stderr when `json` put the document on
/// stdout.
pub fn print_saved(what: &str, path: &std::path::Path, json: bool) {
    let shown = path.display().to_string();
    let path = oio_core::text::printable(&shown);
    match (quiet(), json) {
        (false, _) => {
            let mut e = anstream::stderr();
            let _ = writeln!(e, "oio: {what}: {path}");
        }
        (true, false) => {
            let _ = writeln!(anstream::stdout().lock(), "{path}");
        }
        (true, true) => {
            let _ = writeln!(anstream::stderr(), "{path}");
        }
    }
}
