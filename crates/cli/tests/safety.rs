use crate::common::{
    can_use_loop_devices, oio, run_write, scratch, sparse_image, uses_io_uring, LoopDevice,
};
use std::path::{Path, PathBuf};
use std::process::Command;

#[test]
fn an_existing_file_is_not_overwritten_without_the_flag() {
    let _uring = uses_io_uring();
    let d = scratch();
    let p = d.path().join("precious.db");
    std::fs::write(&p, vec![42u8; 1 << 20]).unwrap();
    let out = oio()
        .current_dir(d.path())
        .args([
            "run",
            "--rw",
            "randwrite",
            "--time",
            "1s",
            "--ramp",
            "0",
            "precious.db",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--allow-overwrite") && err.contains("precious.db"),
        "{err}"
    );
    assert_eq!(std::fs::read(&p).unwrap(), vec![42u8; 1 << 20], "untouched");
    // Reading it is fine.
    let out = oio()
        .current_dir(d.path())
        .args([
            "run",
            "--rw",
            "randread",
            "--time",
            "500ms",
            "--ramp",
            "0",
            "precious.db",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(&p).unwrap(), vec![42u8; 1 << 20], "untouched");
}

/// A loop device, unmounted (when mounted) before it is detached.
struct Loop {
    mount: Option<PathBuf>,
    dev: LoopDevice,
}

impl Loop {
    fn new(image: &Path) -> Option<Loop> {
        Some(Loop {
            mount: None,
            dev: LoopDevice::attach(image)?,
        })
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        if let Some(m) = &self.mount {
            let _ = Command::new("umount").arg(m).status();
        }
    }
}

fn image(dir: &Path, name: &str) -> PathBuf {
    sparse_image(&dir.join(name), 64 << 20)
}

#[test]
fn block_devices_with_data_are_refused_and_named() {
    let _uring = uses_io_uring();
    if !can_use_loop_devices("loop-device safety test") {
        return;
    }
    let d = scratch();

    // A blank device: writing needs --allow-overwrite, and then works.
    let blank = image(d.path(), "blank.img");
    let Some(l) = Loop::new(&blank) else { return };
    let (code, err) = run_write(&l.dev.dev, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--allow-overwrite"), "{err}");
    let (code, err) = run_write(&l.dev.dev, &["--allow-overwrite"]);
    assert_eq!(code, Some(0), "{err}");
    drop(l);

    // ext4: refused, naming the signature, even with --allow-overwrite.
    let ext4 = image(d.path(), "ext4.img");
    let st = Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .arg(&ext4)
        .status()
        .unwrap();
    assert!(st.success());
    let Some(mut l) = Loop::new(&ext4) else {
        return;
    };
    let (code, err) = run_write(&l.dev.dev, &["--allow-overwrite"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("ext2/ext3/ext4 filesystem signature"), "{err}");
    assert!(err.contains("--destroy-data"), "{err}");

    // Mounted: the refusal says where.
    let mnt = d.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    if Command::new("mount")
        .arg(&l.dev.dev)
        .arg(&mnt)
        .status()
        .unwrap()
        .success()
    {
        l.mount = Some(mnt.clone());
        let (code, err) = run_write(&l.dev.dev, &["--allow-overwrite"]);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("is mounted at"), "{err}");
        let _ = Command::new("umount").arg(&mnt).status();
        l.mount = None;
    }
    // Reading never needs a flag.
    let d2 = scratch();
    let out = oio()
        .current_dir(d2.path())
        .args(["run", "--rw", "randread", "--time", "300ms", "--ramp", "0"])
        .arg(&l.dev.dev)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // --destroy-data is the explicit way through.
    let (code, err) = run_write(&l.dev.dev, &["--destroy-data"]);
    assert_eq!(code, Some(0), "{err}");
    drop(l);

    // A partition table (GPT via sfdisk).
    let parted = image(d.path(), "gpt.img");
    let mut sf = Command::new("sfdisk")
        .arg("-q")
        .arg(&parted)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("sfdisk (Debian package fdisk) is installed by scripts/test");
    use std::io::Write;
    sf.stdin
        .take()
        .unwrap()
        .write_all(b"label: gpt\n,32M\n")
        .unwrap();
    assert!(sf.wait().unwrap().success());
    let Some(l) = Loop::new(&parted) else { return };
    let (code, err) = run_write(&l.dev.dev, &["--allow-overwrite"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("GPT partition table"), "{err}");
}
