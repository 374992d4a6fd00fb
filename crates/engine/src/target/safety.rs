//! Why a block device must not be written: mounts, users, partitions, signatures.
//!
//! Beyond fio's "is it mounted?": oio refuses to write to a device that is mounted (itself
//! or a partition), used as swap, held by another block device (LVM, dm, md), partitioned,
//! or that carries a known partition-table, filesystem, LVM, RAID or encryption signature,
//! unless `--destroy-data` is given. Each finding is a sentence naming what was found.

use super::facts;
use std::fs::{self, File};
use std::os::unix::fs::FileExt;

/// Everything that says the device holds data or is in use; empty when it looks blank.
pub fn inspect(file: &File, name: &str, dev: (u32, u32), size: u64) -> Vec<String> {
    let mut found = Vec::new();
    let sys = facts::sys_dir(name);

    // Partitions known to the kernel, and every (major, minor) that belongs to this disk.
    let mut devs = vec![(dev, name.to_string())];
    if let Ok(rd) = fs::read_dir(&sys) {
        for e in rd.flatten() {
            let child = e.file_name().to_string_lossy().into_owned();
            if child.starts_with(name) && e.path().join("partition").exists() {
                if let Some(d) = read_dev(&e.path()) {
                    devs.push((d, child.clone()));
                }
                found.push(format!("partition {child} exists"));
            }
        }
    }
    for m in facts::mounts() {
        if let Some((_, n)) = devs.iter().find(|(d, _)| *d == m.dev) {
            found.push(format!(
                "{n} is mounted at {} ({})",
                m.mount_point.display(),
                m.fs_type
            ));
        }
    }
    if let Ok(swaps) = fs::read_to_string("/proc/swaps") {
        for line in swaps.lines().skip(1) {
            let Some(path) = line.split_whitespace().next() else {
                continue;
            };
            if let Ok(md) = fs::metadata(path) {
                use std::os::unix::fs::MetadataExt;
                let d = (rustix::fs::major(md.rdev()), rustix::fs::minor(md.rdev()));
                if let Some((_, n)) = devs.iter().find(|(x, _)| *x == d) {
                    found.push(format!("{n} is in use as swap"));
                }
            }
        }
    }
    for (_, n) in &devs {
        if let Ok(rd) = fs::read_dir(facts::sys_dir(n).join("holders")) {
            for h in rd.flatten() {
                found.push(format!(
                    "{n} is held by {} (device-mapper, LVM or RAID)",
                    h.file_name().to_string_lossy()
                ));
            }
        }
    }
    found.extend(signatures(file, size));
    found
}

fn read_dev(dir: &std::path::Path) -> Option<(u32, u32)> {
    let t = fs::read_to_string(dir.join("dev")).ok()?;
    let (a, b) = t.trim().split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Known on-disk signatures found at the start or end of the device.
pub fn signatures(file: &File, size: u64) -> Vec<String> {
    let mut head = vec![0u8; (1 << 20).min(size as usize)];
    let n = read_full(file, &mut head, 0);
    head.truncate(n);
    let mut found = Vec::new();
    let at = |off: usize, magic: &[u8]| head.get(off..off + magic.len()) == Some(magic);

    // Partition tables.
    for lba in [512usize, 4096] {
        if at(lba, b"EFI PART") {
            found.push("a GPT partition table".to_string());
            break;
        }
    }
    if at(510, &[0x55, 0xAA]) && found.is_empty() {
        // An MBR with a non-empty partition entry (a boot sector alone is not a table).
        let has_entry = (0..4).any(|i| head.get(446 + i * 16 + 4).is_some_and(|t| *t != 0));
        let is_fat = at(54, b"FAT") || at(82, b"FAT32");
        if has_entry && !is_fat {
            found.push("a DOS (MBR) partition table".to_string());
        }
    }
    // Filesystems and volume formats.
    let checks: &[(usize, &[u8], &str)] = &[
        (
            1080,
            &[0x53, 0xEF],
            "an ext2/ext3/ext4 filesystem signature",
        ),
        (0, b"XFSB", "an XFS filesystem signature"),
        (65600, b"_BHRfS_M", "a btrfs filesystem signature"),
        (3, b"NTFS    ", "an NTFS filesystem signature"),
        (54, b"FAT1", "a FAT filesystem signature"),
        (82, b"FAT32   ", "a FAT32 filesystem signature"),
        (0, b"LUKS\xba\xbe", "a LUKS encryption header"),
        (0, b"hsqs", "a squashfs signature"),
        (
            1024,
            &[0x10, 0x20, 0xF5, 0xF2],
            "an F2FS filesystem signature",
        ),
        (32769, b"CD001", "an ISO 9660 signature"),
        (4086, b"SWAPSPACE2", "a swap signature"),
    ];
    for (off, magic, what) in checks {
        if at(*off, magic) {
            found.push(what.to_string());
        }
    }
    for sector in 0..4usize {
        if at(sector * 512, b"LABELONE") && at(sector * 512 + 24, b"LVM2 001") {
            found.push("an LVM2 physical volume label".to_string());
        }
    }
    // Linux MD RAID superblocks: 1.1 at 0, 1.2 at 4 KiB, 0.90 and 1.0 near the end.
    let md_magic = 0xa92b4efcu32.to_le_bytes();
    if at(0, &md_magic) || at(4096, &md_magic) {
        found.push("a Linux MD RAID superblock".to_string());
    } else if size >= 128 << 10 {
        let v090 = (size & !(64 * 1024 - 1)) - 64 * 1024;
        let v10 = ((size - 8192) / 4096) * 4096;
        for off in [v090, v10] {
            let mut m = [0u8; 4];
            if read_full(file, &mut m, off) == 4 && m == md_magic {
                found.push("a Linux MD RAID superblock".to_string());
                break;
            }
        }
    }
    found.dedup();
    found
}

fn read_full(file: &File, buf: &mut [u8], offset: u64) -> usize {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) | Err(_) => break,
            Ok(n) => done += n,
        }
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn image(patch: &[(usize, &[u8])]) -> File {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&vec![0u8; 2 << 20]).unwrap();
        for (off, bytes) in patch {
            f.write_at(bytes, *off as u64).unwrap();
        }
        f
    }

    #[test]
    fn a_blank_device_has_no_signature() {
        assert!(signatures(&image(&[]), 2 << 20).is_empty());
    }

    #[test]
    fn known_signatures_are_named() {
        let f = image(&[(1080, &[0x53, 0xEF])]);
        assert_eq!(
            signatures(&f, 2 << 20),
            vec!["an ext2/ext3/ext4 filesystem signature"]
        );
        let f = image(&[(512, b"EFI PART")]);
        assert_eq!(signatures(&f, 2 << 20), vec!["a GPT partition table"]);
        let f = image(&[(510, &[0x55, 0xAA]), (446 + 4, &[0x83])]);
        assert_eq!(signatures(&f, 2 << 20), vec!["a DOS (MBR) partition table"]);
        let f = image(&[(512, b"LABELONE"), (536, b"LVM2 001")]);
        assert_eq!(
            signatures(&f, 2 << 20),
            vec!["an LVM2 physical volume label"]
        );
        let f = image(&[(4096, &0xa92b4efcu32.to_le_bytes())]);
        assert_eq!(signatures(&f, 2 << 20), vec!["a Linux MD RAID superblock"]);
    }
}
