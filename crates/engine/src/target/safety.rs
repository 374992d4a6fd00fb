//! Why a block device must not be written: mounts, users, partitions, signatures.
//!
//! Beyond fio's "is it mounted?": oio refuses to write to a device that is mounted (itself
//! or a partition), used as swap, held by another block device (LVM, dm, md), partitioned,
//! or that carries any signature the system's prober (libblkid, or wipefs when the library
//! cannot be loaded; see [`super::blkid`]) or oio's own short list of magics knows, unless
//! `--destroy-data` is given. Each finding is a sentence naming what was found, where, and
//! which check found it. When no prober can run, that is itself a finding: oio's own list
//! is a safety net, not an authority.

use super::{blkid, facts};
use std::fs::{self, File};
use std::os::unix::fs::{FileExt, MetadataExt};

/// What the checks of a device found.
#[derive(Clone, Debug, Default)]
pub struct Inspection {
    /// Everything that says the device holds data or is in use; empty when it looks blank.
    pub findings: Vec<String>,
    /// Which checks looked, for the message when nothing was found
    /// (`libblkid 2.38.1 and oio's own checks`).
    pub checked_by: String,
}

/// Checks the open device `file` (kernel name `name`, numbers `dev`, `size` bytes).
pub fn inspect(file: &File, name: &str, dev: (u32, u32), size: u64) -> Inspection {
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
    found.extend(users(&devs));
    // wipefs (when libblkid cannot be loaded) opens the very device checked here, through
    // this process's descriptor, not the name (which may point elsewhere by now).
    let by_fd = {
        use std::os::fd::AsRawFd;
        std::path::PathBuf::from(format!(
            "/proc/{}/fd/{}",
            std::process::id(),
            file.as_raw_fd()
        ))
    };
    let checked_by = match blkid::probe(file, &by_fd) {
        Ok(p) => {
            if !p.signatures.is_empty() {
                found.push(format!(
                    "{} found {}",
                    p.by,
                    p.signatures
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            format!("{} and oio's own checks", p.by)
        }
        Err(why) => {
            found.push(why.to_string());
            "oio's own checks".to_string()
        }
    };
    let own = signatures(file, size);
    if !own.is_empty() {
        found.push(format!("oio's own checks found {}", own.join(", ")));
    }
    Inspection {
        findings: found,
        checked_by,
    }
}

/// Who uses the devices `devs` ((major, minor), kernel name): mounts, swap, holders.
fn users(devs: &[((u32, u32), String)]) -> Vec<String> {
    let mut found = Vec::new();
    for m in facts::mounts() {
        if let Some((_, n)) = devs.iter().find(|(d, _)| *d == m.dev) {
            found.push(format!(
                "{n} is mounted at {} ({})",
                oio_core::text::printable(&m.mount_point.to_string_lossy()),
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
                let d = (rustix::fs::major(md.rdev()), rustix::fs::minor(md.rdev()));
                if let Some((_, n)) = devs.iter().find(|(x, _)| *x == d) {
                    found.push(format!("{n} is in use as swap"));
                }
            }
        }
    }
    for (_, n) in devs {
        if let Ok(rd) = fs::read_dir(facts::sys_dir(n).join("holders")) {
            for h in rd.flatten() {
                found.push(format!(
                    "{n} is held by {} (device-mapper, LVM or RAID)",
                    h.file_name().to_string_lossy()
                ));
            }
        }
    }
    found
}

/// A loop device whose backing file is a given file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backed {
    /// Kernel name (`loop3`).
    pub name: String,
    /// Who uses it or its partitions (mounted at..., swap, held by...); empty when nobody.
    pub users: Vec<String>,
}

/// The loop devices whose backing file is the file with metadata `md` (by device and
/// inode: from the loop's `backing_file` in sysfs, or, when that name does not lead to it
/// from here (another mount namespace set the loop up), from LOOP_GET_STATUS64 on its node).
pub fn loops_backed_by(md: &fs::Metadata) -> Vec<Backed> {
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir("/sys/block") else {
        return out;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("loop") {
            continue;
        }
        let dir = e.path();
        let Ok(backing) = fs::read_to_string(dir.join("loop/backing_file")) else {
            continue; // not attached
        };
        let by_name = fs::metadata(backing.trim_end_matches('\n'))
            .is_ok_and(|b| (b.dev(), b.ino()) == (md.dev(), md.ino()));
        if !(by_name || loop_status_is(&name, md)) {
            continue;
        }
        let Some(dev) = read_dev(&dir) else { continue };
        let mut devs = vec![(dev, name.clone())];
        if let Ok(parts) = fs::read_dir(&dir) {
            for p in parts.flatten() {
                let child = p.file_name().to_string_lossy().into_owned();
                if child.starts_with(&name) && p.path().join("partition").exists() {
                    if let Some(d) = read_dev(&p.path()) {
                        devs.push((d, child));
                    }
                }
            }
        }
        out.push(Backed {
            users: users(&devs),
            name,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Whether the loop device `name` is backed by the file with metadata `md`, as the loop
/// itself says (LOOP_GET_STATUS64: the backing file's device and inode).
fn loop_status_is(name: &str, md: &fs::Metadata) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(node) = fs::File::open(format!("/dev/{name}")) else {
        return false;
    };
    // struct loop_info64 (linux/loop.h): 232 bytes; lo_device and lo_inode come first.
    #[repr(C)]
    struct LoopInfo64 {
        lo_device: u64,
        lo_inode: u64,
        rest: [u8; 216],
    }
    const LOOP_GET_STATUS64: libc::c_ulong = 0x4C05;
    let mut info = LoopInfo64 {
        lo_device: 0,
        lo_inode: 0,
        rest: [0; 216],
    };
    // SAFETY: LOOP_GET_STATUS64 writes one struct loop_info64 (232 bytes, the size and
    // layout of LoopInfo64) to the pointer; the descriptor is open for the whole call.
    let rc = unsafe {
        libc::ioctl(
            node.as_raw_fd(),
            LOOP_GET_STATUS64 as _,
            &mut info as *mut LoopInfo64,
        )
    };
    rc == 0 && (info.lo_device, info.lo_inode) == (md.dev(), md.ino())
}

fn read_dev(dir: &std::path::Path) -> Option<(u32, u32)> {
    let t = fs::read_to_string(dir.join("dev")).ok()?;
    let (a, b) = t.trim().split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// oio's own short list of on-disk magics at the start or end of the device, each named
/// with its offset. A safety net under libblkid (and the only check when no prober can run).
pub fn signatures(file: &File, size: u64) -> Vec<String> {
    let mut head = vec![0u8; (1 << 20).min(size as usize)];
    let n = read_full(file, &mut head, 0);
    head.truncate(n);
    let mut found = Vec::new();
    partition_tables(file, size, &head, &mut found);
    filesystems(&head, &mut found);
    md_raid(file, size, &head, &mut found);
    found.dedup();
    found
}

/// Whether `head` holds `magic` at `off`.
fn at(head: &[u8], off: usize, magic: &[u8]) -> bool {
    head.get(off..off + magic.len()) == Some(magic)
}

fn partition_tables(file: &File, size: u64, head: &[u8], found: &mut Vec<String>) {
    let at = |off: usize, magic: &[u8]| at(head, off, magic);
    // Partition tables: GPT by its primary header (LBA 1 for 512-byte or 4 KiB sectors) and
    // by its backup in the last sector, so a disk whose start was wiped is still seen.
    let primary = [512usize, 4096].into_iter().find(|&o| at(o, b"EFI PART"));
    if let Some(o) = primary {
        found.push(format!("a GPT partition table at offset {o:#x}"));
    } else {
        for sector in [512u64, 4096] {
            let Some(off) = size.checked_sub(sector) else {
                continue;
            };
            let mut m = [0u8; 8];
            if read_full(file, &mut m, off) == 8 && &m == b"EFI PART" {
                found.push(format!(
                    "gpt (backup header only): \"EFI PART\" in the last sector at offset {off:#x} and none at LBA 1"
                ));
                break;
            }
        }
    }
    if at(510, &[0x55, 0xAA]) {
        // A DOS table with entries, or a boot signature alone: an MBR with no entries yet,
        // a protective MBR, or the boot sector of FAT, exFAT, NTFS. Any of them is data.
        let has_entry = (0..4).any(|i| head.get(446 + i * 16 + 4).is_some_and(|t| *t != 0));
        let is_fat = at(54, b"FAT") || at(82, b"FAT32");
        if has_entry && !is_fat && primary.is_none() {
            found.push("a DOS (MBR) partition table at offset 0x1be".to_string());
        } else {
            found.push("a boot sector signature 0x55AA at offset 0x1fe".to_string());
        }
    }
}

fn filesystems(head: &[u8], found: &mut Vec<String>) {
    let at = |off: usize, magic: &[u8]| at(head, off, magic);
    // Filesystems and volume formats.
    let bcache = [
        0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca, 0x82, 0x65, 0xf5, 0x7f, 0x48, 0xba, 0x6d,
        0x81,
    ];
    let checks: &[(usize, &[u8], &str)] = &[
        (
            1080,
            &[0x53, 0xEF],
            "an ext2/ext3/ext4 filesystem signature",
        ),
        (0, b"XFSB", "an XFS filesystem signature"),
        (65600, b"_BHRfS_M", "a btrfs filesystem signature"),
        (3, b"NTFS    ", "an NTFS filesystem signature"),
        (3, b"EXFAT   ", "an exFAT filesystem signature"),
        (3, b"-FVE-FS-", "a BitLocker encryption header"),
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
        (65536 + 52, b"ReIsErFs", "a ReiserFS filesystem signature"),
        (65536 + 52, b"ReIsEr2Fs", "a ReiserFS filesystem signature"),
        (65536 + 52, b"ReIsEr3Fs", "a ReiserFS filesystem signature"),
        (32768, b"JFS1", "a JFS filesystem signature"),
        (4096 + 24, &bcache, "a bcache superblock"),
        (0, b"bluestore block device", "a Ceph BlueStore label"),
    ];
    for (off, magic, what) in checks {
        if at(*off, magic) {
            found.push(format!("{what} at offset {off:#x}"));
        }
    }
    for sector in 0..4usize {
        if at(sector * 512, b"LABELONE") && at(sector * 512 + 24, b"LVM2 001") {
            found.push(format!(
                "an LVM2 physical volume label at offset {:#x}",
                sector * 512
            ));
        }
    }
}

fn md_raid(file: &File, size: u64, head: &[u8], found: &mut Vec<String>) {
    let at = |off: usize, magic: &[u8]| at(head, off, magic);
    // Linux MD RAID superblocks: 1.1 at 0, 1.2 at 4 KiB, 0.90 and 1.0 near the end.
    let md_magic = 0xa92b4efcu32.to_le_bytes();
    let mut md = [0usize, 4096]
        .into_iter()
        .find(|&o| at(o, &md_magic))
        .map(|o| o as u64);
    if md.is_none() && size >= 128 << 10 {
        let v090 = (size & !(64 * 1024 - 1)) - 64 * 1024;
        let v10 = ((size - 8192) / 4096) * 4096;
        md = [v090, v10].into_iter().find(|&off| {
            let mut m = [0u8; 4];
            read_full(file, &mut m, off) == 4 && m == md_magic
        });
    }
    if let Some(off) = md {
        found.push(format!("a Linux MD RAID superblock at offset {off:#x}"));
    }
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
            vec!["an ext2/ext3/ext4 filesystem signature at offset 0x438"]
        );
        let f = image(&[(512, b"EFI PART")]);
        assert_eq!(
            signatures(&f, 2 << 20),
            vec!["a GPT partition table at offset 0x200"]
        );
        let f = image(&[(510, &[0x55, 0xAA]), (446 + 4, &[0x83])]);
        assert_eq!(
            signatures(&f, 2 << 20),
            vec!["a DOS (MBR) partition table at offset 0x1be"]
        );
        let f = image(&[(512, b"LABELONE"), (536, b"LVM2 001")]);
        assert_eq!(
            signatures(&f, 2 << 20),
            vec!["an LVM2 physical volume label at offset 0x200"]
        );
        let f = image(&[(4096, &0xa92b4efcu32.to_le_bytes())]);
        assert_eq!(
            signatures(&f, 2 << 20),
            vec!["a Linux MD RAID superblock at offset 0x1000"]
        );
        let f = image(&[(3, b"EXFAT   "), (510, &[0x55, 0xAA])]);
        assert_eq!(
            signatures(&f, 2 << 20),
            vec![
                "a boot sector signature 0x55AA at offset 0x1fe",
                "an exFAT filesystem signature at offset 0x3"
            ]
        );
    }

    #[test]
    fn an_mbr_with_no_entries_and_a_backup_only_gpt_are_seen() {
        let f = image(&[(510, &[0x55, 0xAA])]);
        assert_eq!(
            signatures(&f, 2 << 20),
            vec!["a boot sector signature 0x55AA at offset 0x1fe"]
        );
        let f = image(&[((2 << 20) - 512, b"EFI PART")]);
        let s = signatures(&f, 2 << 20);
        assert_eq!(s.len(), 1, "{s:?}");
        assert!(
            s[0].starts_with("gpt (backup header only)") && s[0].contains("0x1ffe00"),
            "{s:?}"
        );
        // 4 KiB sectors: the backup is in the last 4 KiB.
        let f = image(&[((2 << 20) - 4096, b"EFI PART")]);
        assert!(signatures(&f, 2 << 20)[0].contains("0x1ff000"));
        // With the primary present, the backup is not reported separately.
        let f = image(&[(512, b"EFI PART"), ((2 << 20) - 512, b"EFI PART")]);
        assert_eq!(
            signatures(&f, 2 << 20),
            vec!["a GPT partition table at offset 0x200"]
        );
    }

    #[test]
    fn inspect_names_the_prober() {
        let f = image(&[(510, &[0x55, 0xAA])]);
        let i = inspect(&f, "oio-no-such-dev", (0, 0), 2 << 20);
        let all = i.findings.join("; ");
        assert!(
            all.contains("oio's own checks found a boot sector signature"),
            "{all}"
        );
        if i.checked_by.starts_with("libblkid") {
            assert!(
                all.contains("dos (partition table) at offset 0x1fe"),
                "{all}"
            );
        }
        let blank = image(&[]);
        let i = inspect(&blank, "oio-no-such-dev", (0, 0), 2 << 20);
        if i.checked_by.starts_with("libblkid") {
            assert!(i.findings.is_empty(), "{:?}", i.findings);
        }
    }
}
