//! File descriptors for a fleet: the controller holds three pipes per host it talks to (the
//! agent's stdin, stdout and stderr), so the usual soft limit of 1024 ends a fleet at about
//! 330 hosts, well short of what oio takes. The soft limit is raised to the hard one (which
//! needs no privilege); a fleet that needs more still is refused before anything starts,
//! naming how many it needs and the limit.

use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};

/// Descriptors the controller holds per host it talks to at once.
pub const PER_HOST: u64 = 3;
/// Descriptors kept for everything else (its own stdio, result files, the metrics endpoint,
/// a pipe being made for the next launcher).
pub const RESERVE: u64 = 64;

/// Why a fleet cannot get the descriptors it needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    /// The hard limit is lower than the fleet needs.
    #[error("{hosts} hosts at once need {need} open files ({PER_HOST} per host and {RESERVE} more), but this process may open {limit} (RLIMIT_NOFILE, its hard limit{raised}): raise the hard limit (`ulimit -Hn`, `LimitNOFILE=` for a service, /etc/security/limits.conf) or run fewer hosts")]
    TooFew {
        /// Hosts at once.
        hosts: usize,
        /// Descriptors they need.
        need: u64,
        /// The most this process may have.
        limit: u64,
        /// ", the soft limit already raised to it" when it was.
        raised: &'static str,
    },
}

/// What [`ensure`] did: the soft limit before and after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Raised {
    /// The soft limit found.
    pub before: u64,
    /// The soft limit now.
    pub now: u64,
}

/// Descriptors `hosts` hosts at once need.
pub fn needed(hosts: usize) -> u64 {
    (hosts as u64)
        .saturating_mul(PER_HOST)
        .saturating_add(RESERVE)
}

/// The soft limit to set: the hard one (`None`: unlimited, then the kernel's own ceiling on
/// open files, `nr_open`), never lower than it already is.
fn target(soft: u64, hard: Option<u64>, nr_open: u64) -> u64 {
    hard.unwrap_or(nr_open).max(soft)
}

/// The kernel's ceiling on one process's open files (`/proc/sys/fs/nr_open`; 1048576, the
/// kernel's default, when it cannot be read).
fn nr_open() -> u64 {
    std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1 << 20)
}

/// Raises this process's soft RLIMIT_NOFILE to its hard limit when it is lower, then checks
/// that `hosts` hosts at once fit: the limits before and after, or why they do not fit.
pub fn ensure(hosts: usize) -> Result<Raised, LimitError> {
    let found = getrlimit(Resource::Nofile);
    // None: unlimited (RLIM_INFINITY).
    let before = found.current.unwrap_or(u64::MAX);
    let want = target(before, found.maximum, nr_open());
    let now = if want > before
        && setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(want),
                maximum: found.maximum,
            },
        )
        .is_ok()
    {
        getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX)
    } else {
        before
    };
    let need = needed(hosts);
    if need > now {
        return Err(LimitError::TooFew {
            hosts,
            need,
            limit: now,
            raised: if now > before {
                ", the soft limit already raised to it"
            } else {
                ""
            },
        });
    }
    Ok(Raised { before, now })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_goes_to_the_hard_one_and_never_down() {
        assert_eq!(target(1024, Some(524_288), 1 << 20), 524_288);
        assert_eq!(target(1024, None, 1 << 20), 1 << 20);
        assert_eq!(target(4096, Some(4096), 1 << 20), 4096);
        assert_eq!(needed(4096), 4096 * 3 + 64);
        assert_eq!(needed(usize::MAX), u64::MAX);
    }

    /// In a child process of its own (limits are the whole process's): with a soft limit of
    /// 256 under a higher hard one, 4096 hosts fit once the soft limit is raised to the hard;
    /// more than the hard limit allows is refused, naming both numbers.
    #[test]
    fn the_soft_limit_is_raised_to_the_hard_one() {
        if std::env::var_os("OIO_LIMITS_CHILD").is_none() {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "limits::tests::the_soft_limit_is_raised_to_the_hard_one",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("OIO_LIMITS_CHILD", "1")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{text}");
            assert!(text.contains("raised 256 ->"), "{text}");
            return;
        }
        let hard = getrlimit(Resource::Nofile).maximum;
        let hard_n = hard.unwrap_or_else(nr_open);
        assert!(
            hard_n >= needed(4096),
            "the hard limit {hard_n} is below 4096 hosts' need: this test needs a higher one"
        );
        setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(256),
                maximum: hard,
            },
        )
        .unwrap();
        // 100 hosts need 364: more than 256, raised.
        let r = ensure(100).unwrap();
        assert_eq!(
            r,
            Raised {
                before: 256,
                now: hard_n
            }
        );
        assert_eq!(getrlimit(Resource::Nofile).current, Some(hard_n));
        println!("raised 256 -> {}", r.now);
        // 4096 hosts, the documented most, fit.
        ensure(4096).unwrap();
        // More than the hard limit allows: refused, both numbers named.
        let hosts = (hard_n / PER_HOST) as usize;
        let e = ensure(hosts).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "{hosts} hosts at once need {} open files (3 per host and 64 more), but this process may open {hard_n} (RLIMIT_NOFILE, its hard limit)",
                needed(hosts)
            )),
            "{e}"
        );
    }
}
