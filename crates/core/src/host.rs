//! Facts about the machine a result was measured on.

use serde::{Deserialize, Serialize};

/// The machine, as far as the result needs it to be compared with others.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct HostInfo {
    /// Host name.
    pub hostname: String,
    /// Operating system name ("Linux").
    pub os: String,
    /// Distribution, from /etc/os-release.
    pub distribution: Option<String>,
    /// Kernel release.
    pub kernel: String,
    /// CPU model name.
    pub cpu_model: Option<String>,
    /// Logical CPUs available to oio.
    pub cpus: usize,
    /// Memory in bytes.
    pub memory_bytes: Option<u64>,
    /// Kernel clock source; `tsc` is cheap to read, others can make timing costly.
    pub clocksource: Option<String>,
}

impl HostInfo {
    /// Reads the facts of this machine; missing facts stay empty.
    pub fn detect() -> HostInfo {
        let uname = rustix::system::uname();
        let read = |p: &str| std::fs::read_to_string(p).ok();
        HostInfo {
            hostname: uname.nodename().to_string_lossy().into_owned(),
            os: uname.sysname().to_string_lossy().into_owned(),
            distribution: read("/etc/os-release").and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                    .map(|v| v.trim_matches('"').to_string())
            }),
            kernel: uname.release().to_string_lossy().into_owned(),
            cpu_model: read("/proc/cpuinfo").and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            }),
            cpus: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            memory_bytes: read("/proc/meminfo").and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("MemTotal:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|v| v.parse::<u64>().ok())
                    .map(|kib| kib * 1024)
            }),
            clocksource: read("/sys/devices/system/clocksource/clocksource0/current_clocksource")
                .map(|s| s.trim().to_string()),
        }
    }
}

/// The current time as RFC 3339 UTC with seconds: `2026-11-21T14:05:02Z`.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// The current time as `20261121T140502Z` (RFC 3339 without separators), for file and
/// directory names: sorts by time and needs no quoting in a shell.
pub fn now_compact() -> String {
    compact(&now_rfc3339())
}

/// An RFC 3339 stamp without its separators (`2026-11-21T14:05:02Z` → `20261121T140502Z`).
pub fn compact(rfc3339: &str) -> String {
    rfc3339
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn stamps_have_the_documented_shapes() {
        let now = super::now_rfc3339();
        assert_eq!(now.len(), 20, "{now}");
        assert!(now.ends_with('Z') && now.as_bytes()[10] == b'T', "{now}");
        assert_eq!(super::compact("2026-11-21T14:05:02Z"), "20261121T140502Z");
        assert_eq!(super::now_compact().len(), 16);
    }
}
