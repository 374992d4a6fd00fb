//! Result files of the commands that write their own documents (tpcc, record, report…). The
//! writing itself lives in `oio_lab::sink`: whole or not at all, never replacing a file, and
//! never lost — a result that cannot be saved where asked is saved in `$TMPDIR` or the current
//! directory, or printed on stdout, and the command exits 2 ([`exit_code`]).

use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

pub use oio_lab::sink::result_file_name;

/// Set when a result could not be saved where asked (it was saved elsewhere or printed).
static RESCUED: AtomicBool = AtomicBool::new(false);

/// Records that a result was saved elsewhere than asked (the command exits 2).
pub fn mark_rescued() {
    RESCUED.store(true, Ordering::SeqCst);
}

/// Writes `bytes` to `path` whole or not at all (a symlink there is replaced, never followed).
pub fn write_file_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    Ok(oio_lab::sink::write_file_atomic(path, bytes)?)
}

/// Checks, before a command measures anything, that results can be saved in `dir`; `flag`
/// names the option that chooses another directory.
pub fn check_destination(dir: &Path, flag: &str) -> anyhow::Result<()> {
    Ok(oio_lab::sink::check_destination(dir, flag)?)
}

/// Writes `value` as pretty JSON into `dir/name` atomically and returns the path, rescuing it
/// (with a warning, or on stdout as a last resort) when it cannot be saved there.
pub fn write_json_atomic<T: Serialize>(
    dir: &Path,
    name: &str,
    value: &T,
) -> anyhow::Result<PathBuf> {
    let bytes = oio_lab::sink::json_bytes(value)?;
    let mut sink = oio_lab::FileSink::new(
        dir,
        Box::new(crate::output::terminal::stdout_unlocked()),
        Box::new(|w: &str| crate::output::style::print_warning(w)),
    );
    let saved = sink.save_bytes(None, name, &bytes);
    if sink.rescued() {
        mark_rescued();
    }
    Ok(saved?)
}

/// Set when a log the user asked for (`--lat-log`, `--hdr-log`) could not be written whole.
static OUTPUT_FAILED: AtomicBool = AtomicBool::new(false);

/// Records that a per-run log could not be written (the command exits 2).
pub fn mark_output_failed() {
    OUTPUT_FAILED.store(true, Ordering::SeqCst);
}

/// The exit code of a command that returned `code`: 2 if a result had to be saved elsewhere
/// than asked, or a log asked for could not be written (the command did not do all it was
/// asked, though the result is kept).
pub fn exit_code(code: ExitCode) -> ExitCode {
    let short = RESCUED.load(Ordering::SeqCst) || OUTPUT_FAILED.load(Ordering::SeqCst);
    if short && code == ExitCode::SUCCESS {
        ExitCode::from(crate::EXIT_ERROR)
    } else {
        code
    }
}
