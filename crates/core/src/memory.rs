//! One memory budget for every plan.
//!
//! A plan's estimator (the engine's run plan, a lab experiment, a TPC-C plan) lists what its
//! run will hold as [`Estimate`] items — I/O buffers, histograms, the per-interval series,
//! threads, terminals — each with what would shrink it. [`Estimate::check`] compares the
//! total with a [`Limit`] before anything starts, so a plan too big for the host is refused
//! with the numbers and the flag to change, instead of ending halfway in a failed allocation
//! (which aborts the process and leaves no result).
//!
//! The default limit is a share of what the host can give now: half of `MemAvailable`
//! (`/proc/meminfo`), three quarters of the room left under the cgroup's memory limit (v2
//! `memory.max`, v1 `memory.limit_in_bytes`) and three quarters of the room left under the
//! address-space limit (`ulimit -v`, `prlimit --as`), whichever is least; the shares leave room
//! for what an estimate cannot see (the allocator's slack, libraries, the page cache the run
//! itself fills). `--memory-limit` replaces it.

use crate::units::format_bytes;
use std::path::{Path, PathBuf};

/// Resident memory of a thread beyond what it allocates: the stack it touches and its
/// bookkeeping (the rest of its stack is address space it reserves and never touches).
pub const THREAD_BYTES: u64 = 64 << 10;

/// One thing a run holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    /// What it is, with its arithmetic: `the series: 240,000 intervals of 1ms × 2.9 KiB`.
    pub what: String,
    /// Bytes, at most.
    pub bytes: u64,
    /// What would shrink it (`use --interval 100ms or longer`), when the user can.
    pub fix: Option<String>,
}

/// What a plan will hold in memory at most, item by item.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Estimate {
    items: Vec<Item>,
}

impl Estimate {
    /// An empty estimate.
    pub fn new() -> Estimate {
        Estimate::default()
    }

    /// Adds an item (nothing when `bytes` is 0).
    pub fn add(&mut self, what: impl Into<String>, bytes: u64, fix: Option<String>) {
        if bytes > 0 {
            self.items.push(Item {
                what: what.into(),
                bytes,
                fix,
            });
        }
    }

    /// Adds every item of `other`.
    pub fn extend(&mut self, other: Estimate) {
        self.items.extend(other.items);
    }

    /// The items, in the order they were added.
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// Bytes in all (saturating: an estimate past 16 EiB is still refused).
    pub fn total(&self) -> u64 {
        self.items
            .iter()
            .fold(0u64, |a, i| a.saturating_add(i.bytes))
    }

    /// Refuses the plan when its total is above `limit` (no limit known: no check). The error
    /// names the largest items with what would shrink them.
    pub fn check(&self, limit: Option<&Limit>) -> Result<(), MemoryError> {
        match limit {
            Some(l) if self.total() > l.bytes => Err(MemoryError {
                estimate: self.clone(),
                limit: l.clone(),
            }),
            _ => Ok(()),
        }
    }
}

/// The most memory a plan may take, and where that figure comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct Limit {
    /// Bytes.
    pub bytes: u64,
    /// `--memory-limit`, or the share of the host's figure it was taken from.
    pub source: String,
}

/// Share of `MemAvailable` a plan may take.
const AVAILABLE_SHARE: f64 = 0.5;
/// Share of the room left under a cgroup's or the address-space limit a plan may take.
const HARD_LIMIT_SHARE: f64 = 0.75;

impl Limit {
    /// `given` (from `--memory-limit`), else the host's (see the module's doc); None when
    /// nothing is known (no /proc): then no plan is refused.
    pub fn resolve(given: Option<u64>) -> Option<Limit> {
        match given {
            Some(bytes) => Some(Limit {
                bytes,
                source: "--memory-limit".into(),
            }),
            None => Limit::detect(),
        }
    }

    /// The host's limit now: the least of the shares of what it can give.
    pub fn detect() -> Option<Limit> {
        let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
        let available = meminfo
            .as_deref()
            .and_then(|m| meminfo_kib(m, "MemAvailable"));
        let cgroup = std::fs::read_to_string("/proc/self/cgroup")
            .ok()
            .and_then(|c| cgroup_room(&c, Path::new("/sys/fs/cgroup")));
        let status = std::fs::read_to_string("/proc/self/status").ok();
        let address_space = address_space_room(status.as_deref());
        host_limit(available, cgroup, address_space)
    }
}

/// The least of the host's shares, with its source; None when no figure is known.
fn host_limit(
    available: Option<u64>,
    cgroup: Option<Room>,
    address_space: Option<Room>,
) -> Option<Limit> {
    let share = |b: u64, s: f64| (b as f64 * s) as u64;
    let mut candidates = Vec::new();
    if let Some(a) = available {
        candidates.push(Limit {
            bytes: share(a, AVAILABLE_SHARE),
            source: format!("half of MemAvailable, {}", format_bytes(a as f64)),
        });
    }
    for (room, what, how) in [
        (cgroup, "the cgroup's memory limit", ""),
        (address_space, "the address-space limit", ", ulimit -v"),
    ] {
        if let Some(r) = room {
            candidates.push(Limit {
                bytes: share(r.left, HARD_LIMIT_SHARE),
                source: format!(
                    "75 % of the {} left under {what} of {}{how}",
                    format_bytes(r.left as f64),
                    format_bytes(r.limit as f64)
                ),
            });
        }
    }
    candidates.into_iter().min_by_key(|l| l.bytes)
}

/// A hard limit and what is left under it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Room {
    limit: u64,
    left: u64,
}

/// A `/proc/meminfo` field in bytes.
fn meminfo_kib(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.strip_prefix(':')?;
        let kib: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kib.saturating_mul(1024))
    })
}

/// The tightest memory limit of this process's cgroups (v2, or v1's memory controller) and
/// the room under it, from `/proc/self/cgroup` and the hierarchy mounted at `root`. Every
/// ancestor's limit counts (a child cannot use more than its parent allows); inside a
/// container the path may not exist under `root`, and the root's own files are read then.
fn cgroup_room(proc_cgroup: &str, root: &Path) -> Option<Room> {
    let mut best: Option<Room> = None;
    for line in proc_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let (dir, max, current) = if controllers.is_empty() {
            (root.to_path_buf(), "memory.max", "memory.current")
        } else if controllers.split(',').any(|c| c == "memory") {
            (
                root.join("memory"),
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
            )
        } else {
            continue;
        };
        for d in ancestors(&dir, path) {
            let Some(limit) = read_number(&d.join(max)) else {
                continue;
            };
            // v1 says "no limit" with a number near 2^63.
            if limit >= 1 << 60 {
                continue;
            }
            let used = read_number(&d.join(current)).unwrap_or(0);
            let room = Room {
                limit,
                left: limit.saturating_sub(used),
            };
            if best.is_none_or(|b| room.left < b.left) {
                best = Some(room);
            }
        }
    }
    best
}

/// `dir/path` and each of its ancestors up to `dir` itself.
fn ancestors(dir: &Path, path: &str) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    let mut p = dir.to_path_buf();
    for part in path.split('/').filter(|s| !s.is_empty()) {
        p.push(part);
        out.push(p.clone());
    }
    out
}

/// A number in a cgroup file (None for "max", a missing file or anything else).
fn read_number(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The address-space limit (RLIMIT_AS) and the room under it, given the process's current
/// size (`VmSize` of `/proc/self/status`).
fn address_space_room(status: Option<&str>) -> Option<Room> {
    let limit = rustix::process::getrlimit(rustix::process::Resource::As).current?;
    let used = status.and_then(|s| meminfo_kib(s, "VmSize")).unwrap_or(0);
    Some(Room {
        limit,
        left: limit.saturating_sub(used),
    })
}

/// A plan whose estimate is above the limit.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryError {
    /// What the plan would hold.
    pub estimate: Estimate,
    /// The limit it exceeds.
    pub limit: Limit,
}

impl std::fmt::Display for MemoryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let total = self.estimate.total();
        write!(
            f,
            "this would hold about {} in memory, more than the limit of {} ({}), so it was not started",
            format_bytes(total as f64),
            format_bytes(self.limit.bytes as f64),
            self.limit.source
        )?;
        // The largest items, until they make 90 % of the total (at most three).
        let mut items: Vec<&Item> = self.estimate.items.iter().collect();
        items.sort_by_key(|i| std::cmp::Reverse(i.bytes));
        let mut shown = 0u64;
        let mut fixes: Vec<&str> = Vec::new();
        for (n, i) in items.iter().enumerate() {
            if n == 3 || (n > 0 && shown as f64 >= 0.9 * total as f64) {
                break;
            }
            write!(
                f,
                "{} {} ≈ {}",
                if n == 0 { ":" } else { ";" },
                i.what,
                format_bytes(i.bytes as f64)
            )?;
            shown = shown.saturating_add(i.bytes);
            if let Some(fix) = i.fix.as_deref() {
                if !fixes.contains(&fix) {
                    fixes.push(fix);
                }
            }
        }
        fixes.push("give a larger --memory-limit if the host has the memory");
        write!(f, ". To fit: {}", fixes.join("; or "))
    }
}

impl std::error::Error for MemoryError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_fields_read_in_bytes() {
        let m = "MemTotal:       32768000 kB\nMemFree:  100 kB\nMemAvailable:   23755552 kB\n";
        assert_eq!(meminfo_kib(m, "MemAvailable"), Some(23_755_552 * 1024));
        assert_eq!(meminfo_kib(m, "MemFree"), Some(100 * 1024));
        assert_eq!(meminfo_kib(m, "Mem"), None);
        assert_eq!(meminfo_kib(m, "Swap"), None);
    }

    #[test]
    fn the_tightest_cgroup_limit_of_the_path_and_its_ancestors_counts() {
        let d = tempfile_dir();
        let root = d.join("cg");
        // v2: the parent allows 4 GiB with 1 GiB used, the leaf 8 GiB: the parent's room wins.
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/memory.max"), "4294967296\n").unwrap();
        std::fs::write(root.join("a/memory.current"), "1073741824\n").unwrap();
        std::fs::write(root.join("a/b/memory.max"), "8589934592\n").unwrap();
        std::fs::write(root.join("a/b/memory.current"), "0\n").unwrap();
        std::fs::write(root.join("memory.max"), "max\n").unwrap();
        assert_eq!(
            cgroup_room("0::/a/b\n", &root),
            Some(Room {
                limit: 4 << 30,
                left: 3 << 30
            })
        );
        // v1: the memory controller's own hierarchy; "no limit" is a number near 2^63.
        std::fs::create_dir_all(root.join("memory/x")).unwrap();
        std::fs::write(
            root.join("memory/memory.limit_in_bytes"),
            "9223372036854771712\n",
        )
        .unwrap();
        std::fs::write(root.join("memory/x/memory.limit_in_bytes"), "2147483648\n").unwrap();
        std::fs::write(root.join("memory/x/memory.usage_in_bytes"), "536870912\n").unwrap();
        let v1 = "5:cpu,cpuacct:/x\n4:memory:/x\n";
        assert_eq!(
            cgroup_room(v1, &root),
            Some(Room {
                limit: 2 << 30,
                left: 3 << 29
            })
        );
        // No limit anywhere.
        assert_eq!(cgroup_room("4:memory:/missing\n", &root), None);
        let _ = std::fs::remove_dir_all(&d);
    }

    fn tempfile_dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "oio-memory-test-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn the_host_limit_is_the_least_share_and_says_where_it_comes_from() {
        let gib = 1u64 << 30;
        let l = host_limit(Some(16 * gib), None, None).unwrap();
        assert_eq!(l.bytes, 8 * gib);
        assert!(l.source.contains("MemAvailable"), "{}", l.source);
        let l = host_limit(
            Some(16 * gib),
            None,
            Some(Room {
                limit: 4 * gib,
                left: 4 * gib,
            }),
        )
        .unwrap();
        assert_eq!(l.bytes, 3 * gib);
        assert!(
            l.source
                .contains("address-space limit of 4.00 GiB, ulimit -v"),
            "{}",
            l.source
        );
        assert_eq!(host_limit(None, None, None), None);
    }

    #[test]
    fn a_refusal_names_the_estimate_the_limit_and_the_largest_items_with_their_fixes() {
        let mut e = Estimate::new();
        e.add(
            "the series: 240,000 intervals × 2.0 KiB",
            240_000 * 2048,
            Some("use --interval 100ms or longer".into()),
        );
        e.add("I/O buffers: 32 × 8 KiB", 32 * 8192, None);
        e.add("nothing", 0, None);
        assert_eq!(e.items().len(), 2);
        assert!(e.check(None).is_ok());
        let big = Limit {
            bytes: 1 << 30,
            source: "--memory-limit".into(),
        };
        assert!(e.check(Some(&big)).is_ok());
        let small = Limit {
            bytes: 100 << 20,
            source: "--memory-limit".into(),
        };
        let msg = e.check(Some(&small)).unwrap_err().to_string();
        assert!(msg.contains("about 469 MiB"), "{msg}");
        assert!(msg.contains("limit of 100 MiB (--memory-limit)"), "{msg}");
        assert!(
            msg.contains("240,000 intervals × 2.0 KiB ≈ 469 MiB"),
            "{msg}"
        );
        assert!(!msg.contains("I/O buffers"), "only what makes 90 %: {msg}");
        assert!(
            msg.contains("use --interval 100ms or longer; or give a larger --memory-limit"),
            "{msg}"
        );
    }

    #[test]
    fn a_given_limit_replaces_the_hosts() {
        let l = Limit::resolve(Some(12345)).unwrap();
        assert_eq!((l.bytes, l.source.as_str()), (12345, "--memory-limit"));
    }
}
