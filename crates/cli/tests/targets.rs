//! Issue 37: a target is checked and written through one descriptor (a symlink flipped between
//! devices while runs start), a loop device's backing file is that device, nothing is created
//! in /dev, a killed fill's temporary file is found and removed, and a --verify journal on a
//! tiny filesystem never costs the result.

use crate::common::{can_use_loop_devices, have, missing, oio, scratch, sparse_image, LoopDevice};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn mkfs_ext4(image: &Path) {
    let st = Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .arg(image)
        .status()
        .expect("mkfs.ext4 runs");
    assert!(st.success(), "mkfs.ext4 {}", image.display());
}

fn sha(path: &Path) -> Vec<u8> {
    // The whole image: small, and any byte written shows.
    std::fs::read(path).expect("image readable")
}

/// A mount of `dev` at `at`, unmounted when dropped.
struct Mounted(PathBuf);

impl Mounted {
    fn new(dev: &Path, at: &Path) -> Option<Mounted> {
        std::fs::create_dir_all(at).ok()?;
        let ok = Command::new("mount")
            .arg(dev)
            .arg(at)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            missing(&format!("mounting {} failed", dev.display()));
            return None;
        }
        Some(Mounted(at.to_path_buf()))
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn run_json_out(dir: &Path, args: &[&str]) -> (Option<i32>, Option<Value>, String) {
    let out = oio()
        .current_dir(dir)
        .args(args)
        .arg("--json")
        .output()
        .expect("oio runs");
    (
        out.status.code(),
        serde_json::from_slice(&out.stdout).ok(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const WRITE: &[&str] = &[
    "run",
    "--rw",
    "randwrite",
    "--bs",
    "4k",
    "--ios",
    "64",
    "--ramp",
    "0",
    "--engine",
    "sync",
    "--out",
    "res",
];

#[test]
fn a_symlink_flipped_between_devices_never_reaches_the_one_with_data() {
    if !can_use_loop_devices("symlink flip race") || !have("mkfs.ext4") {
        if !have("mkfs.ext4") {
            missing("mkfs.ext4");
        }
        return;
    }
    let d = scratch();
    let blank_img = sparse_image(&d.path().join("blank.img"), 16 << 20);
    let ext4_img = sparse_image(&d.path().join("ext4.img"), 16 << 20);
    mkfs_ext4(&ext4_img);
    let before = sha(&ext4_img);
    let (Some(blank), Some(ext4)) = (
        LoopDevice::attach(&blank_img),
        LoopDevice::attach(&ext4_img),
    ) else {
        return;
    };
    let link = d.path().join("dev");
    std::os::unix::fs::symlink(&blank.dev, &link).unwrap();
    // The flipper renames a fresh link over `dev` as fast as it can: every lookup of the
    // name may reach either device.
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let (stop, dir, a, b) = (
            stop.clone(),
            d.path().to_path_buf(),
            blank.dev.clone(),
            ext4.dev.clone(),
        );
        std::thread::spawn(move || {
            let tmp = dir.join("dev.new");
            let mut flips = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let to = if flips.is_multiple_of(2) { &b } else { &a };
                let _ = std::fs::remove_file(&tmp);
                if std::os::unix::fs::symlink(to, &tmp).is_ok()
                    && std::fs::rename(&tmp, dir.join("dev")).is_ok()
                {
                    flips += 1;
                }
            }
            flips
        })
    };
    let (mut wrote, mut refused) = (0, 0);
    for i in 0..40 {
        let (code, v, err) =
            run_json_out(d.path(), &[WRITE, &["--allow-overwrite", "dev"]].concat());
        match code {
            Some(0) => {
                wrote += 1;
                let v = v.unwrap_or_else(|| panic!("try {i}: no JSON: {err}"));
                assert_eq!(
                    v.pointer("/targets/0/device/name").and_then(Value::as_str),
                    Some(blank.name()),
                    "try {i}: the result names the device written: {v}"
                );
            }
            Some(2) => {
                refused += 1;
                assert!(
                    err.contains("ext2/ext3/ext4 filesystem signature")
                        && err.contains(ext4.name()),
                    "try {i}: a refusal names the device checked: {err}"
                );
            }
            other => panic!("try {i}: exit {other:?}: {err}"),
        }
    }
    stop.store(true, Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    assert!(flips > 40, "the link flipped while runs started ({flips})");
    assert!(
        wrote > 0 && refused > 0,
        "both seen: {wrote} written, {refused} refused"
    );
    drop((blank, ext4));
    assert!(
        sha(&ext4_img) == before,
        "the ext4 device was written ({wrote} runs wrote, {refused} refused)"
    );
}

#[test]
fn the_backing_file_of_a_loop_device_is_that_device() {
    if !can_use_loop_devices("loop backing file") || !have("mkfs.ext4") {
        if !have("mkfs.ext4") {
            missing("mkfs.ext4");
        }
        return;
    }
    let d = scratch();
    let img = sparse_image(&d.path().join("disk.img"), 16 << 20);
    mkfs_ext4(&img);
    let Some(l) = LoopDevice::attach(&img) else {
        return;
    };
    let before = sha(&img);
    // Attached, not mounted: refused without --destroy-data, naming the loop.
    let (code, _, err) = run_json_out(
        d.path(),
        &[WRITE, &["--allow-overwrite", "disk.img"]].concat(),
    );
    assert_eq!(code, Some(2), "{err}");
    let dev = l.dev.display().to_string();
    assert!(
        err.contains(&format!(
            "backing file of loop device {dev} (not mounted or held now)"
        )) && err.contains("--destroy-data"),
        "{err}"
    );
    assert!(sha(&img) == before, "the image was not written");
    // Mounted (which writes to it itself): the refusal says where.
    let mnt = d.path().join("mnt");
    let Some(m) = Mounted::new(&l.dev, &mnt) else {
        return;
    };
    let (code, _, err) = run_json_out(
        d.path(),
        &[WRITE, &["--allow-overwrite", "disk.img"]].concat(),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "backing file of loop device {dev} ({} is mounted at {} (ext4))",
            l.name(),
            mnt.display()
        )),
        "{err}"
    );
    // Reading it is fine.
    let (code, _, err) = run_json_out(
        d.path(),
        &[
            "run", "--rw", "randread", "--ios", "16", "--ramp", "0", "--out", "res", "disk.img",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    drop(m);
    drop(l);
}

#[test]
fn nothing_is_created_in_dev() {
    let name = format!("/dev/oio-test-missing-{}", std::process::id());
    let (code, _, err) = run_json_out(
        scratch().path(),
        &[
            "run",
            "--rw",
            "randwrite",
            "--size",
            "1M",
            "--ios",
            "8",
            &name,
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no such device"), "{err}");
    assert!(
        std::fs::symlink_metadata(&name).is_err(),
        "{name} was created"
    );
    let temps: Vec<String> = std::fs::read_dir("/dev")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("oio-test-missing-"))
        .collect();
    assert!(temps.is_empty(), "{temps:?}");
}

#[test]
fn a_killed_fill_leaves_a_file_the_next_run_removes() {
    let d = scratch();
    // A fill killed with SIGKILL as its temporary file grows.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_oio"))
        .current_dir(d.path())
        .args([
            "run", "--rw", "randread", "--size", "4G", "--ios", "1", "t.dat",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let grown = |d: &Path| {
        std::fs::read_dir(d).unwrap().flatten().find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("t.dat.oio-tmp-")
                && e.metadata().is_ok_and(|m| m.len() >= 8 << 20)
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let tmp = loop {
        if let Some(e) = grown(d.path()) {
            break e.path();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no temporary file grew in 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let size = std::fs::metadata(&tmp).unwrap().len();
    // A lookalike with no mark (say, an older oio's): named and left.
    let other = d.path().join("u.dat.oio-tmp-1-0000abcd");
    std::fs::write(&other, vec![1u8; 8192]).unwrap();
    let (code, v, err) = run_json_out(
        d.path(),
        &[
            "run", "--engine", "null", "--rw", "randread", "--size", "1M", "--ios", "8", "--out",
            "res", "t.dat",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    let warnings: Vec<String> = v.unwrap()["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str().map(String::from))
        .collect();
    let all = warnings.join("\n");
    let name = tmp.file_name().unwrap().to_string_lossy().into_owned();
    let removed = warnings
        .iter()
        .find(|w| w.starts_with("removed ") && w.contains(&name))
        .unwrap_or_else(|| panic!("{all}"));
    assert!(
        removed.contains(&oio_core::units::format_bytes(size as f64)),
        "{removed} ({size} bytes)"
    );
    assert!(err.contains(&name), "said on the terminal too: {err}");
    assert!(!tmp.exists(), "removed");
    assert!(
        all.contains("u.dat.oio-tmp-1-0000abcd (8.00 KiB)") && all.contains("left as it is"),
        "{all}"
    );
    assert!(other.exists(), "left");
}

#[test]
fn a_verify_journal_on_a_tiny_filesystem_keeps_the_result() {
    if !can_use_loop_devices("verify journal on a tiny ext4") || !have("mkfs.ext4") {
        if !have("mkfs.ext4") {
            missing("mkfs.ext4");
        }
        return;
    }
    let d = scratch();
    let img = sparse_image(&d.path().join("fs.img"), 32 << 20);
    mkfs_ext4(&img);
    let Some(l) = LoopDevice::attach(&img) else {
        return;
    };
    let mnt = d.path().join("mnt");
    let Some(m) = Mounted::new(&l.dev, &mnt) else {
        return;
    };
    // The target takes all but 4 MiB: the journal's cap is under 2.5 MiB (about 155,000
    // block writes), the run makes 16 per write for about 20,000 writes of 40,000 I/Os. The
    // I/O count ends the run, never the clock: on a busy machine 30 s did not reach the cap.
    let free = {
        let v = rustix::fs::statvfs(&mnt).unwrap();
        v.f_bavail * v.f_frsize
    };
    let size = format!("{}", (free - (4 << 20)) & !0xFFFFF);
    let (code, v, err) = run_json_out(
        &mnt,
        &[
            "run",
            "--verify",
            "--buffered",
            "--engine",
            "sync",
            "--rw",
            "randrw",
            "--bs",
            "64k",
            "--ios",
            "40000",
            "--time",
            "10m",
            "--ramp",
            "0",
            "--size",
            &size,
            "--out",
            d.path().join("res").to_str().unwrap(),
            "t.dat",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    let v = v.expect("the result");
    assert_eq!(v["stop_reason"], "completed", "{v}");
    let warnings = v["warnings"].to_string();
    assert!(
        warnings.contains("verification journal t.dat.oio-journal: at most"),
        "{warnings}"
    );
    assert!(
        warnings.contains("stopped recording after") && warnings.contains("reached its cap"),
        "{warnings}"
    );
    assert_eq!(
        v.pointer("/verify/mismatches"),
        Some(&Value::from(0)),
        "{v}"
    );
    let after = rustix::fs::statvfs(&mnt).unwrap();
    assert!(
        after.f_bavail * after.f_frsize >= 1 << 20,
        "the filesystem was left room"
    );
    let saved = std::fs::read_dir(d.path().join("res")).unwrap().count();
    assert_eq!(saved, 1, "the result saved");
    // What the journal holds still checks.
    let out = oio()
        .current_dir(&mnt)
        .args(["verify", "t.dat"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("no mismatch"),
        "{text}"
    );
    drop(m);
}

/// `oio run randread` (the word `oio sweep randread` takes as its workload) is a target to
/// `oio run`: refused, naming what was likely meant, and nothing is created; `./randread` is
/// a file by that name.
#[test]
fn run_refuses_a_workload_name_where_a_target_is_expected() {
    let d = scratch();
    for (word, meant) in [
        ("randread", "--rw randread"),
        ("oltp-data", "--profile oltp-data"),
    ] {
        let o = oio()
            .current_dir(d.path())
            .args(["run", word, "--size", "1M", "--time", "1s", "-q"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("did you mean `oio run {meant}`")),
            "{err}"
        );
        assert!(!d.path().join(word).exists(), "{word} was created");
    }
    let o = oio()
        .current_dir(d.path())
        .args([
            "run",
            "./randread",
            "--size",
            "1M",
            "--time",
            "1s",
            "--ramp",
            "0s",
            "-q",
        ])
        .arg("--out")
        .arg(d.path().join("out"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(d.path().join("randread").is_file());
}
