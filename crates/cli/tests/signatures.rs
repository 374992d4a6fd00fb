//! Block-device signatures on loop devices: every format Debian's tools make is refused by
//! name with `--allow-overwrite` alone, written only with `--destroy-data`, and everything
//! `wipefs --no-act` lists is named in the refusal (libblkid is the authority oio asks).

use crate::common::{
    can_use_loop_devices, have, missing, oio, run_write, scratch, sparse_image, uses_io_uring,
    LoopDevice,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `(type, offset)` of every signature `wipefs --no-act` lists on `dev`.
fn wipefs(dev: &Path) -> Vec<(String, String)> {
    let out = Command::new("wipefs")
        .args(["--no-act", "--json"])
        .arg(dev)
        .output()
        .expect("wipefs (util-linux) runs");
    assert!(
        out.status.success(),
        "wipefs: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    if out.stdout.iter().all(u8::is_ascii_whitespace) {
        return Vec::new();
    }
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["signatures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["type"].as_str().unwrap().to_string(),
                s["offset"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The first 4 MiB of the device, to show a refusal changed nothing.
fn head(dev: &Path) -> Vec<u8> {
    use std::io::Read;
    let mut buf = vec![0u8; 4 << 20];
    std::fs::File::open(dev)
        .unwrap()
        .read_exact(&mut buf)
        .unwrap();
    buf
}

/// Attaches `image`, checks that writing with `--allow-overwrite` is refused naming each of
/// `expect` and everything wipefs lists (type at its offset), that the device is untouched,
/// and that `--destroy-data` writes. Returns the refusal.
fn refused_by_name(image: &Path, expect: &[&str]) -> Option<String> {
    let l = LoopDevice::attach(image)?;
    let listed = wipefs(&l.dev);
    assert!(
        !listed.is_empty(),
        "wipefs lists nothing on {}",
        image.display()
    );
    let before = head(&l.dev);
    let (code, err) = run_write(&l.dev, &["--allow-overwrite"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--destroy-data") && err.contains("holds data"),
        "{err}"
    );
    assert!(
        err.contains("libblkid") || err.contains("wipefs --no-act"),
        "the refusal says which prober found it: {err}"
    );
    for want in expect {
        assert!(err.contains(want), "refusal does not name {want:?}: {err}");
    }
    // Each item libblkid reported reads "TYPE (usage) at offset 0x..".
    let items: Vec<&str> = err.split([',', ';']).map(str::trim).collect();
    for (ty, off) in &listed {
        let at = format!("at offset {off}");
        assert!(
            items
                .iter()
                .any(|i| i.contains(&format!("{ty} (")) && i.ends_with(&at)),
            "wipefs lists {ty} at {off}, the refusal does not name it there: {err}"
        );
    }
    assert!(head(&l.dev) == before, "a refused run changed the device");
    let (code, err2) = run_write(&l.dev, &["--destroy-data"]);
    assert_eq!(code, Some(0), "{err2}");
    Some(err)
}

fn mkfs(dir: &Path, name: &str, mib: u64, tool: &str, args: &[&str]) -> Option<PathBuf> {
    if !have(tool) {
        missing(&format!("{tool} (scripts/test installs it)"));
        return None;
    }
    let img = sparse_image(&dir.join(name), mib << 20);
    let out = Command::new(tool).args(args).arg(&img).output().unwrap();
    assert!(
        out.status.success(),
        "{tool} {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(img)
}

/// exFAT used to "show no signature" and was written over with `--allow-overwrite` alone.
#[test]
fn exfat_is_refused_by_name() {
    let _uring = uses_io_uring();
    if !can_use_loop_devices("loop-device signature test") {
        return;
    }
    let d = scratch();
    let Some(img) = mkfs(d.path(), "exfat.img", 64, "mkfs.exfat", &[]) else {
        return;
    };
    let Some(err) = refused_by_name(&img, &["exfat (filesystem) at offset 0x3"]) else {
        return;
    };
    assert!(err.contains("oio's own checks found"), "{err}");
    assert!(err.contains("exFAT filesystem signature"), "{err}");
    // Reading never needs a flag.
    let img2 = mkfs(d.path(), "exfat2.img", 64, "mkfs.exfat", &[]).unwrap();
    let Some(l) = LoopDevice::attach(&img2) else {
        return;
    };
    let out = oio()
        .current_dir(d.path())
        .args(["run", "--rw", "randread", "--ios", "16", "--ramp", "0"])
        .arg(&l.dev)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A GPT whose protective MBR and primary header were zeroed: only the backup header in the
/// last sector is left, and tools that read only the start call the disk blank.
#[test]
fn a_gpt_with_only_its_backup_header_is_refused() {
    let _uring = uses_io_uring();
    if !can_use_loop_devices("loop-device signature test") {
        return;
    }
    if !have("sfdisk") {
        missing("sfdisk (Debian package fdisk; scripts/test installs it)");
        return;
    }
    let d = scratch();
    let img = sparse_image(&d.path().join("gpt.img"), 64 << 20);
    let mut sf = Command::new("sfdisk")
        .arg("-q")
        .arg(&img)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    sf.stdin
        .take()
        .unwrap()
        .write_all(b"label: gpt\n,32M\n")
        .unwrap();
    assert!(sf.wait().unwrap().success());
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new().write(true).open(&img).unwrap();
        // LBA 0 (protective MBR), LBA 1 (header) and the 32 sectors of entries.
        f.write_all_at(&[0u8; 34 * 512], 0).unwrap();
    }
    let last = format!("{:#x}", (64u64 << 20) - 512);
    refused_by_name(
        &img,
        &[
            &format!("gpt (backup header only) (partition table) at offset {last}"),
            &format!("oio's own checks found gpt (backup header only): \"EFI PART\" in the last sector at offset {last}"),
        ],
    );
}

/// An MBR with its boot signature 0x55AA and no partition entries yet.
#[test]
fn an_mbr_with_no_entries_is_refused() {
    let _uring = uses_io_uring();
    if !can_use_loop_devices("loop-device signature test") {
        return;
    }
    let d = scratch();
    let img = sparse_image(&d.path().join("mbr.img"), 64 << 20);
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new().write(true).open(&img).unwrap();
        f.write_all_at(&[0x55, 0xAA], 510).unwrap();
    }
    refused_by_name(
        &img,
        &[
            "dos (partition table) at offset 0x1fe",
            "a boot sector signature 0x55AA at offset 0x1fe",
        ],
    );
}

/// Filesystems, caches and swap as Debian's tools make them, on tiny images.
#[test]
fn formats_made_by_debian_tools_are_refused_by_name() {
    let _uring = uses_io_uring();
    if !can_use_loop_devices("loop-device signature test") {
        return;
    }
    let d = scratch();
    // (image, MiB, tool, arguments before the image, name libblkid gives it)
    let cases: &[(&str, u64, &str, &[&str], &str)] = &[
        (
            "reiserfs.img",
            64,
            "mkfs.reiserfs",
            &["-q", "-f"],
            "reiserfs",
        ),
        ("jfs.img", 64, "mkfs.jfs", &["-q"], "jfs"),
        // NILFS needs a little over 128 MiB; its backup superblock near the end is listed too.
        ("nilfs2.img", 160, "mkfs.nilfs2", &["-q", "-f"], "nilfs2"),
        ("bcache.img", 64, "make-bcache", &["-B"], "bcache"),
        ("f2fs.img", 64, "mkfs.f2fs", &["-q", "-f"], "f2fs"),
        ("btrfs.img", 128, "mkfs.btrfs", &["-q", "-f"], "btrfs"),
        ("xfs.img", 300, "mkfs.xfs", &["-q", "-f"], "xfs"),
        ("ntfs.img", 64, "mkntfs", &["-q", "-F", "-f"], "ntfs"),
        ("udf.img", 64, "mkudffs", &[], "udf"),
        ("vfat.img", 64, "mkfs.vfat", &[], "vfat"),
        ("swap.img", 64, "mkswap", &[], "swap"),
    ];
    for (name, mib, tool, args, ty) in cases {
        let Some(img) = mkfs(d.path(), name, *mib, tool, args) else {
            continue;
        };
        refused_by_name(&img, &[&format!("{ty} (")]);
        let _ = std::fs::remove_file(&img);
    }
}
