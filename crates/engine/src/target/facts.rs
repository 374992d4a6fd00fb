//! What the kernel says about a target: its block device (from /sys) and filesystem
//! (from /proc/self/mountinfo). Every fact is optional: containers and virtual devices hide
//! some, and a missing fact is reported as missing, not guessed.

use oio_core::result::{DeviceInfo, FilesystemInfo};
use std::fs;
use std::path::{Path, PathBuf};

/// One line of /proc/self/mountinfo.
#[derive(Clone, Debug)]
pub struct Mount {
    /// Device numbers of the mounted filesystem.
    pub dev: (u32, u32),
    /// Where it is mounted.
    pub mount_point: PathBuf,
    /// Filesystem type.
    pub fs_type: String,
    /// Mount source (e.g. /dev/sda1).
    pub source: String,
    /// Per-mount options.
    pub options: String,
}

/// All mounts of this process's namespace.
pub fn mounts() -> Vec<Mount> {
    let text = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines().filter_map(parse_mountinfo_line).collect()
}

fn parse_mountinfo_line(line: &str) -> Option<Mount> {
    // id parent maj:min root mount_point options [optional...] - fstype source super_options
    let (left, right) = line.split_once(" - ")?;
    let l: Vec<&str> = left.split(' ').collect();
    let r: Vec<&str> = right.split(' ').collect();
    let (maj, min) = l.get(2)?.split_once(':')?;
    Some(Mount {
        dev: (maj.parse().ok()?, min.parse().ok()?),
        mount_point: PathBuf::from(unescape_octal(l.get(4)?)),
        options: l.get(5)?.to_string(),
        fs_type: r.first()?.to_string(),
        source: unescape_octal(r.get(1).unwrap_or(&"")),
    })
}

/// mountinfo escapes space, tab, newline and backslash as \ooo.
fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The filesystem holding `path` (the mount with the longest matching mount point).
pub fn filesystem_of(path: &Path) -> Option<(FilesystemInfo, (u32, u32))> {
    let canon = fs::canonicalize(path)
        .or_else(|_| {
            path.parent()
                .map(|p| {
                    if p.as_os_str().is_empty() {
                        Path::new(".")
                    } else {
                        p
                    }
                })
                .map(fs::canonicalize)
                .unwrap_or_else(|| Ok(PathBuf::from("/")))
        })
        .ok()?;
    mounts()
        .into_iter()
        .filter(|m| canon.starts_with(&m.mount_point))
        .max_by_key(|m| m.mount_point.as_os_str().len())
        .map(|m| {
            (
                FilesystemInfo {
                    fs_type: m.fs_type,
                    mount_point: m.mount_point.display().to_string(),
                    source: m.source,
                    options: m.options,
                },
                m.dev,
            )
        })
}

/// Why I/O to this target is served by memory rather than a storage device, if it is: a file
/// on tmpfs/ramfs, a zram or RAM disk, or a loop device whose backing file lives in memory
/// or is read through the page cache (direct I/O off). O_DIRECT on such a target still
/// measures memory.
pub fn memory_backing(fs: Option<&FilesystemInfo>, dev: Option<&DeviceInfo>) -> Option<String> {
    if let Some(fs) = fs {
        if MEMORY_FILESYSTEMS.contains(&fs.fs_type.as_str()) {
            return Some(format!(
                "the file is on {} ({}), which is memory",
                fs.fs_type, fs.mount_point
            ));
        }
    }
    let name = dev?.parent.as_deref().unwrap_or(&dev?.name);
    if name.starts_with("zram") {
        return Some(format!("{name} is a zram device (compressed memory)"));
    }
    if name
        .strip_prefix("ram")
        .is_some_and(|n| n.parse::<u32>().is_ok())
    {
        return Some(format!("{name} is a RAM disk"));
    }
    if name.starts_with("loop") {
        let dir = sys_dir(name).join("loop");
        let backing = read_trim(dir.join("backing_file"))?;
        if let Some((bfs, _)) = filesystem_of(Path::new(&backing)) {
            if MEMORY_FILESYSTEMS.contains(&bfs.fs_type.as_str()) {
                return Some(format!(
                    "{name} is a loop device over {backing} on {}, which is memory",
                    bfs.fs_type
                ));
            }
        }
        if read_u64(dir.join("dio")) == Some(0) {
            return Some(format!(
                "{name} is a loop device without direct I/O: its backing file {backing} is read and written through the page cache"
            ));
        }
    }
    None
}

/// Whether a file is on a filesystem in memory (tmpfs and the like). io_uring hands buffered
/// reads of such files to a kernel worker thread instead of serving them within the call.
pub fn on_memory_filesystem(fs: Option<&FilesystemInfo>) -> bool {
    fs.is_some_and(|fs| MEMORY_FILESYSTEMS.contains(&fs.fs_type.as_str()))
}

/// Filesystems whose files live in memory.
const MEMORY_FILESYSTEMS: &[&str] = &["tmpfs", "ramfs", "hugetlbfs", "devtmpfs"];

fn read_trim(p: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn read_u64(p: impl AsRef<Path>) -> Option<u64> {
    read_trim(p)?.parse().ok()
}

/// Kernel name of the block device with these numbers (sda1, nvme0n1, loop0).
pub fn block_name(dev: (u32, u32)) -> Option<String> {
    let link = fs::canonicalize(format!("/sys/dev/block/{}:{}", dev.0, dev.1)).ok()?;
    link.file_name().map(|n| n.to_string_lossy().into_owned())
}

/// The sysfs directory of a block device by name.
pub fn sys_dir(name: &str) -> PathBuf {
    PathBuf::from("/sys/class/block").join(name)
}

/// Block-layer facts of the device `dev`; queue settings come from the whole disk when
/// `dev` is a partition.
pub fn device_info(dev: (u32, u32)) -> Option<DeviceInfo> {
    let name = block_name(dev)?;
    let dir = sys_dir(&name);
    let parent = if dir.join("partition").exists() {
        fs::canonicalize(&dir).ok().and_then(|p| {
            p.parent()
                .and_then(|p| p.file_name())
                .map(|n| n.to_string_lossy().into_owned())
        })
    } else {
        None
    };
    let disk = sys_dir(parent.as_deref().unwrap_or(&name));
    let q = disk.join("queue");
    let model = match (
        read_trim(disk.join("device/vendor")),
        read_trim(disk.join("device/model")),
    ) {
        (Some(v), Some(m)) => Some(format!("{v} {m}")),
        (None, Some(m)) => Some(m),
        _ => read_trim(disk.join("dm/name")).map(|n| format!("device-mapper {n}")),
    };
    let scheduler = read_trim(q.join("scheduler")).map(|s| {
        s.split_whitespace()
            .find(|w| w.starts_with('['))
            .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
            .unwrap_or(s)
    });
    Some(DeviceInfo {
        size_bytes: read_u64(dir.join("size")).map(|s| s * 512),
        name,
        parent,
        model,
        scheduler,
        nr_requests: read_u64(q.join("nr_requests")),
        queue_depth: read_u64(disk.join("device/queue_depth")),
        rotational: read_u64(q.join("rotational")).map(|v| v != 0),
        logical_block_size: read_u64(q.join("logical_block_size")),
        physical_block_size: read_u64(q.join("physical_block_size")),
        max_sectors_kb: read_u64(q.join("max_sectors_kb")),
    })
}

#[test]
fn mountinfo_lines_parse() {
    let l = "36 35 98:0 /mnt1 /mnt/with\\040space rw,noatime master:1 - ext3 /dev/root rw,errors=continue";
    let m = parse_mountinfo_line(l).unwrap();
    assert_eq!(m.dev, (98, 0));
    assert_eq!(m.mount_point, PathBuf::from("/mnt/with space"));
    assert_eq!(m.fs_type, "ext3");
    assert_eq!(m.source, "/dev/root");
}

#[test]
fn memory_filesystems_and_devices_are_named() {
    let fs = |t: &str| FilesystemInfo {
        fs_type: t.into(),
        mount_point: "/dev/shm".into(),
        ..Default::default()
    };
    let dev = |n: &str| DeviceInfo {
        name: n.into(),
        ..Default::default()
    };
    assert!(memory_backing(Some(&fs("tmpfs")), None)
        .unwrap()
        .contains("tmpfs"));
    assert!(memory_backing(Some(&fs("ramfs")), None).is_some());
    assert!(memory_backing(Some(&fs("ext4")), Some(&dev("zram0")))
        .unwrap()
        .contains("zram"));
    assert!(memory_backing(None, Some(&dev("ram0"))).is_some());
    assert!(memory_backing(Some(&fs("ext4")), Some(&dev("vda"))).is_none());
    assert!(memory_backing(None, Some(&dev("ramoops"))).is_none());
}

#[test]
fn the_root_filesystem_is_found() {
    let (fs, _) = filesystem_of(Path::new("/")).unwrap();
    assert_eq!(fs.mount_point, "/");
}
