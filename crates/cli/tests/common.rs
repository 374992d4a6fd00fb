use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command as Cmd;

/// A test whose real part (root, a server, a tool, loop devices) is missing calls this and
/// returns. Under `OIO_TEST_REQUIRE_ALL=1` (set by `.ci/run`) it fails instead: CI must never
/// pass a test that did not run.
pub fn missing(what: &str) {
    if std::env::var_os("OIO_TEST_REQUIRE_ALL").is_some_and(|v| v == "1") {
        panic!("OIO_TEST_REQUIRE_ALL=1 and this test cannot run: {what}");
    }
    eprintln!("SKIPPED (not run): {what}");
}

/// The oio binary built for these tests.
pub fn oio() -> Command {
    let mut c = Command::cargo_bin("oio").expect("oio binary");
    c.env("NO_COLOR", "1");
    // oio's settings journal in the tests' own state directory, not the machine's.
    c.env(
        "XDG_STATE_HOME",
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("oio-state"),
    );
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

/// The JSON files directly in `dir`, sorted by name.
pub fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    v.sort();
    v
}

/// A number at a JSON pointer such as `/summary/total/iops`.
pub fn num(v: &Value, pointer: &str) -> f64 {
    v.pointer(pointer)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("no number at {pointer}"))
}

/// Tests that need io_uring hold this for reading; a test that must have the disk to itself
/// (the open loop's rate) holds it for writing.
pub static IO_URING: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Holds the io_uring lock for reading.
pub fn uses_io_uring() -> std::sync::RwLockReadGuard<'static, ()> {
    IO_URING.read().unwrap_or_else(|e| e.into_inner())
}

/// True when the tests run as root (loop devices, mounts, fsfreeze need it).
pub fn is_root() -> bool {
    Cmd::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.starts_with(b"0"))
        .unwrap_or(false)
}

/// A sparse image file of `size` bytes.
pub fn sparse_image(path: &Path, size: u64) -> PathBuf {
    std::fs::File::create(path)
        .and_then(|f| f.set_len(size))
        .expect("image file");
    path.to_path_buf()
}

/// A loop device over an image file, detached on drop.
pub struct LoopDevice {
    /// `/dev/loopN`.
    pub dev: PathBuf,
}

impl LoopDevice {
    /// Attaches `image`; None (with a note) where loop devices are not available.
    pub fn attach(image: &Path) -> Option<LoopDevice> {
        let out = Cmd::new("losetup")
            .args(["-f", "--show"])
            .arg(image)
            .output()
            .ok()?;
        if !out.status.success() {
            missing(&format!(
                "losetup failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
            return None;
        }
        Some(LoopDevice {
            dev: PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()),
        })
    }

    /// Kernel name (`loop3`), as in /proc/diskstats.
    pub fn name(&self) -> &str {
        self.dev
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = Cmd::new("losetup").arg("-d").arg(&self.dev).status();
    }
}

/// True when `tool` is on PATH.
pub fn have(tool: &str) -> bool {
    Cmd::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// True when loop devices can be made here (root and /dev/loop-control); otherwise the test
/// is reported as not run (a failure under `OIO_TEST_REQUIRE_ALL=1`).
pub fn can_use_loop_devices(test: &str) -> bool {
    let ok = is_root() && Path::new("/dev/loop-control").exists();
    if !ok {
        missing(&format!("{test}: needs root and /dev/loop-control"));
    }
    ok
}

/// Runs a 16-I/O random-write `oio run` on `dev` with `extra` flags: (exit code, stderr).
pub fn run_write(dev: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let d = scratch();
    let out = oio()
        .current_dir(d.path())
        .args([
            "run",
            "--rw",
            "randwrite",
            "--bs",
            "4k",
            "--ios",
            "16",
            "--ramp",
            "0",
        ])
        .args(extra)
        .arg(dev)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `oio tpcc build` of one warehouse with two loader workers into `db`, run in `dir`.
pub fn tpcc_build_one_warehouse(dir: &Path, db: &str) {
    run_json(
        dir,
        &[
            "tpcc",
            "build",
            "--db",
            db,
            "--warehouses",
            "1",
            "--workers",
            "2",
        ],
    );
}

/// How late this machine wakes a sleeping thread, measured while something else runs: a
/// thread sleeps 1 ms at a time and records the worst overshoot until [`WakeProbe::stop`].
/// Tests that bound a scheduling-sensitive figure (a start skew) add it to their bound, so a
/// busy machine widens the bound by what it was seen to delay, no more.
pub struct WakeProbe {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<std::time::Duration>,
}

impl WakeProbe {
    pub fn start() -> WakeProbe {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let tick = std::time::Duration::from_millis(1);
            let mut worst = std::time::Duration::ZERO;
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                let t = std::time::Instant::now();
                std::thread::sleep(tick);
                worst = worst.max(t.elapsed().saturating_sub(tick));
            }
            worst
        });
        WakeProbe { stop, thread }
    }

    /// The worst wake-up delay seen.
    pub fn stop(self) -> std::time::Duration {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}
