use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

/// The oio binary built for these tests.
pub fn oio() -> Command {
    let mut c = Command::cargo_bin("oio").expect("oio binary");
    c.env("NO_COLOR", "1");
    c
}

/// A scratch directory on a real filesystem (not tmpfs), under the cargo target dir.
pub fn scratch() -> tempfile::TempDir {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tempfile::tempdir_in(base).expect("scratch dir")
}

/// Runs oio with `args` in `dir`, expecting success, and parses its `--json` stdout.
pub fn run_json(dir: &Path, args: &[&str]) -> Value {
    let out = oio()
        .current_dir(dir)
        .args(args)
        .arg("--json")
        .output()
        .expect("oio runs");
    assert!(
        out.status.success(),
        "oio {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// A number at a JSON pointer such as `/summary/total/iops`.
pub fn num(v: &Value, pointer: &str) -> f64 {
    v.pointer(pointer)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("no number at {pointer}"))
}

/// Tests that need io_uring hold this for reading; the test that disables io_uring
/// machine-wide (to check the fallback) holds it for writing.
pub static IO_URING: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Holds the io_uring lock for reading.
pub fn uses_io_uring() -> std::sync::RwLockReadGuard<'static, ()> {
    IO_URING.read().unwrap_or_else(|e| e.into_inner())
}
