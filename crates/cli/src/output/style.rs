//! The one colour policy: decided once from `--color`, `NO_COLOR`, `TERM=dumb` and whether
//! the stream is a terminal (anstream does the detection), then used everywhere.

use crate::cli::ColorWhen;
use anstyle::{AnsiColor, Style};
use std::io::Write;

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
    let mut e = anstream::stderr();
    let _ = writeln!(e, "oio: {ERROR}error:{ERROR:#} {msg}");
}

/// Prints `oio: warning: ...` on stderr.
pub fn print_warning(msg: &str) {
    let mut e = anstream::stderr();
    let _ = writeln!(e, "oio: {WARN}warning:{WARN:#} {msg}");
}

/// Prints `oio: ...` on stderr.
pub fn print_notice(msg: &str) {
    let mut e = anstream::stderr();
    let _ = writeln!(e, "oio: {msg}");
}
