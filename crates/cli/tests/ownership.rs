use crate::common::{
    can_use_loop_devices, is_root, missing, oio, scratch, sparse_image, LoopDevice,
};
use crate::hardening::{signal, spawn, stderr, wait_until, write_run};
use std::io::BufRead;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, UNIX_EPOCH};

/// A filesystem mounted for a test, unmounted when dropped (before its loop device goes).
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn mount(args: &[&str], at: &Path) -> Option<Mounted> {
    std::fs::create_dir_all(at).unwrap();
    let st = Command::new("mount").args(args).arg(at).status().ok()?;
    st.success().then(|| Mounted(at.to_path_buf()))
}

const SIZE: usize = 1 << 20;

/// Makes `t.dat` in `dir` with oio, then at once writes a foreign file of the same size over
/// it with `tool` (`cp`, or `dd conv=notrunc`): oio must refuse to write to it, naming what
/// changed, and leave it alone. Returns whether the copy landed in the second oio recorded
/// the file in (by the change time, whole seconds: the case size + inode + time missed).
fn copy_over_at_once(dir: &Path, tool: &str) -> bool {
    let t = dir.join("t.dat");
    let _ = std::fs::remove_file(&t);
    let o = write_run(dir, &["--size", "1M"], "t.dat");
    assert!(o.status.success(), "{}", stderr(&o));
    let sealed = std::fs::metadata(&t).unwrap().ctime();
    let precious = dir.join("precious.db");
    let st = if tool == "cp" {
        Command::new("cp").arg(&precious).arg(&t).status()
    } else {
        Command::new("dd")
            .arg(format!("if={}", precious.display()))
            .arg(format!("of={}", t.display()))
            .args(["bs=64k", "conv=notrunc", "status=none"])
            .status()
    }
    .unwrap();
    assert!(st.success());
    let same_second = std::fs::metadata(&t).unwrap().ctime() == sealed;
    let o = write_run(dir, &[], "t.dat");
    let e = stderr(&o);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{tool} (same second: {same_second}): {e}"
    );
    assert!(
        e.contains("t.dat")
            && e.contains("changed since an oio run last closed it")
            && e.contains("modified at")
            && e.contains("--allow-overwrite"),
        "{tool}: {e}"
    );
    assert_eq!(
        std::fs::read(&t).unwrap(),
        vec![0x5Au8; SIZE],
        "{tool}: untouched"
    );
    same_second
}

/// The copies of the issue, each repeated until a few landed in oio's second (at most 12
/// tries; every try must be refused), then a copy whose time is put back as oio left it
/// (`touch -r`): its contents tell.
fn copies_over_oio_files_are_refused(dir: &Path, fs: &str) {
    std::fs::write(dir.join("precious.db"), vec![0x5Au8; SIZE]).unwrap();
    for tool in ["cp", "dd"] {
        let (mut tries, mut same) = (0, 0);
        while same < 3 && tries < 12 {
            tries += 1;
            same += usize::from(copy_over_at_once(dir, tool));
        }
        assert!(
            same >= 1,
            "{fs}: no {tool} in 12 landed in the second oio recorded the file in"
        );
        eprintln!("{fs}: {tool}: {same} of {tries} in the same second, all refused");
    }

    let t = dir.join("t.dat");
    let _ = std::fs::remove_file(&t);
    let o = write_run(dir, &["--size", "1M"], "t.dat");
    assert!(o.status.success(), "{}", stderr(&o));
    let md = std::fs::metadata(&t).unwrap();
    let left = UNIX_EPOCH + Duration::new(md.mtime() as u64, md.mtime_nsec() as u32);
    let st = Command::new("cp")
        .arg(dir.join("precious.db"))
        .arg(&t)
        .status()
        .unwrap();
    assert!(st.success());
    let f = std::fs::File::options().write(true).open(&t).unwrap();
    f.set_modified(left).unwrap();
    drop(f);
    let o = write_run(dir, &[], "t.dat");
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{fs}: {e}");
    assert!(
        e.contains("its contents differ from what oio left (compared in 16 sampled 4 KiB blocks)"),
        "{fs}: {e}"
    );
    assert_eq!(std::fs::read(&t).unwrap(), vec![0x5Au8; SIZE]);
}

#[test]
fn a_copy_over_an_oio_file_in_the_same_second_is_refused_on_one_second_timestamps() {
    if !can_use_loop_devices("ext4 -I 128 (1-second timestamps) on a loop device") {
        return;
    }
    let d = scratch();
    let img = sparse_image(&d.path().join("ext4.img"), 64 << 20);
    let st = Command::new("mkfs.ext4")
        .args(["-q", "-F", "-I", "128"])
        .arg(&img)
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "mkfs.ext4 -I 128");
    let Some(dev) = LoopDevice::attach(&img) else {
        return;
    };
    let mnt = d.path().join("mnt");
    let Some(_m) = mount(&[dev.dev.to_str().unwrap()], &mnt) else {
        missing("mounting ext4 -I 128 from a loop device");
        return;
    };
    // 128-byte inodes keep whole seconds only: the case the issue found.
    let probe = mnt.join("probe");
    std::fs::write(&probe, b"x").unwrap();
    assert_eq!(std::fs::metadata(&probe).unwrap().mtime_nsec(), 0);
    copies_over_oio_files_are_refused(&mnt, "ext4 -I 128");
}

#[test]
fn a_copy_over_an_oio_file_at_once_is_refused_on_tmpfs_and_ext4() {
    let d = scratch();
    copies_over_oio_files_are_refused(d.path(), "ext4");
    if !is_root() {
        missing("a copy over an oio file on tmpfs: needs root (mount)");
        return;
    }
    let mnt = d.path().join("tmpfs");
    let Some(_m) = mount(&["-t", "tmpfs", "-o", "size=16m", "tmpfs"], &mnt) else {
        missing("mounting a tmpfs");
        return;
    };
    copies_over_oio_files_are_refused(&mnt, "tmpfs");
}

/// Whether process `pid` holds a write (exclusive) flock, from /proc/locks (looking does not
/// take the lock, so it never gets in the run's way).
fn holds_write_lock(pid: u32) -> bool {
    std::fs::read_to_string("/proc/locks")
        .unwrap_or_default()
        .lines()
        .any(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.len() > 4 && w[1] == "FLOCK" && w[3] == "WRITE" && w[4] == pid.to_string()
        })
}

fn verify_args<'a>(time: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "run",
        "--verify",
        "--engine",
        "sync",
        "--buffered",
        "--rw",
        "randrw",
        "--bs",
        "4k",
        "--qd",
        "4",
        "--time",
        time,
        "--ramp",
        "0",
    ];
    a.extend_from_slice(extra);
    a.push("t.dat");
    a
}

#[test]
fn two_runs_on_one_target_never_both_write_and_wait_waits() {
    let d = scratch();
    let o = write_run(d.path(), &["--size", "8M"], "t.dat");
    assert!(o.status.success(), "{}", stderr(&o));

    // A long --verify run holds the file.
    let first = spawn(d.path(), &verify_args("300s", &[]));
    let pid = first.id();
    wait_until("the first run to lock t.dat", || holds_write_lock(pid));

    // A second is refused, naming the first, and blaming no one's data.
    let out = oio()
        .current_dir(d.path())
        .args(verify_args("1s", &[]))
        .output()
        .unwrap();
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains(&format!(
            "t.dat is in use by oio, pid {pid} (writing to it)"
        )) && e.contains("--wait"),
        "{e}"
    );
    assert!(!e.contains("someone else"), "{e}");
    // A reader too (it would read blocks changing under it): a read run and `oio verify`.
    for args in [
        vec![
            "run",
            "--engine",
            "sync",
            "--buffered",
            "--rw",
            "randread",
            "--time",
            "1s",
            "--ramp",
            "0",
            "t.dat",
        ],
        vec!["verify", "t.dat"],
    ] {
        let out = oio().current_dir(d.path()).args(&args).output().unwrap();
        let e = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {e}");
        assert!(
            e.contains(&format!("in use by oio, pid {pid} (writing to it)")),
            "{e}"
        );
    }

    // With --wait the second says whom it waits for, and runs once the first has ended.
    let mut second = spawn(d.path(), &verify_args("300ms", &["--wait"]));
    let mut err = std::io::BufReader::new(second.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "no waiting notice: {seen}"
        );
        seen.push_str(&line);
        if line.contains("waiting for t.dat") {
            assert!(
                line.contains(&format!("in use by oio, pid {pid} (writing to it)")),
                "{line}"
            );
            break;
        }
    }
    signal(&first, "INT");
    let first = first.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(130), "{}", stderr(&first));
    let status = second.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    assert_eq!(status.code(), Some(0), "{seen}{rest}");

    // Nothing was written twice over: every acknowledged block is there.
    let out = oio()
        .current_dir(d.path())
        .args(["verify", "t.dat"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("no mismatch"), "{text}");
}

#[test]
fn two_runs_on_one_block_device_never_both_write() {
    if !can_use_loop_devices("two runs on one loop device") {
        return;
    }
    let d = scratch();
    let img = sparse_image(&d.path().join("blank.img"), 64 << 20);
    let Some(dev) = LoopDevice::attach(&img) else {
        return;
    };
    let path = dev.dev.to_str().unwrap();
    let run = |time: &'static str| {
        vec![
            "run",
            "--engine",
            "sync",
            "--rw",
            "randwrite",
            "--bs",
            "4k",
            "--time",
            time,
            "--ramp",
            "0",
            "--allow-overwrite",
            path,
        ]
    };
    let first = spawn(d.path(), &run("300s"));
    let pid = first.id();
    wait_until("the first run to lock the device", || holds_write_lock(pid));
    let out = oio()
        .current_dir(d.path())
        .args(run("1s"))
        .output()
        .unwrap();
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains(&format!(
            "{path} is in use by oio, pid {pid} (writing to it)"
        )),
        "{e}"
    );
    signal(&first, "INT");
    assert_eq!(first.wait_with_output().unwrap().status.code(), Some(130));
    // Free again.
    let out = oio()
        .current_dir(d.path())
        .args(run("200ms"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn one_file_named_twice_in_a_writing_run_is_refused_at_once() {
    let d = scratch();
    let o = write_run(d.path(), &["--size", "1M"], "t.dat");
    assert!(o.status.success(), "{}", stderr(&o));
    std::os::unix::fs::symlink("t.dat", d.path().join("u.dat")).unwrap();
    // It would wait for its own lock otherwise (with --wait, forever).
    let o = write_run(d.path(), &["--wait", "u.dat"], "t.dat");
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("u.dat and t.dat are the same file; name it once"),
        "{e}"
    );
    // Reading it twice is fine.
    let o = oio()
        .current_dir(d.path())
        .args([
            "run",
            "--engine",
            "sync",
            "--buffered",
            "--rw",
            "randread",
            "--time",
            "100ms",
            "--ramp",
            "0",
            "t.dat",
            "u.dat",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}
