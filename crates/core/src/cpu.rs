//! CPU time of this process: one reader for every part of oio that reports its own CPU use.
//!
//! Reads `/proc/self/stat` (utime and stime, fields 14 and 15) and converts clock ticks with
//! the kernel's real tick rate from `sysconf(_SC_CLK_TCK)`, never an assumed 100.

use std::time::Duration;

/// User and system CPU time the whole process used so far.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProcessCpu {
    /// User-mode CPU time.
    pub user: Duration,
    /// Kernel-mode CPU time on behalf of the process.
    pub system: Duration,
}

impl ProcessCpu {
    /// The process's CPU time now; `None` when /proc is not readable (no procfs mounted).
    pub fn now() -> Option<ProcessCpu> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        parse_stat(&stat, rustix::param::clock_ticks_per_second())
    }

    /// CPU used since `earlier` (zero for a counter that went backwards).
    pub fn since(&self, earlier: &ProcessCpu) -> ProcessCpu {
        ProcessCpu {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }

    /// User plus system time.
    pub fn total(&self) -> Duration {
        self.user + self.system
    }
}

/// utime and stime of a `/proc/PID/stat` line, with `hz` ticks per second.
fn parse_stat(stat: &str, hz: u64) -> Option<ProcessCpu> {
    if hz == 0 {
        return None;
    }
    // The command name in parentheses may hold spaces and parentheses: fields are counted
    // after its last ')'. utime and stime are the 12th and 13th fields after it.
    let rest = stat.rsplit_once(')')?.1;
    let mut f = rest.split_whitespace().skip(11);
    let ticks = |v: Option<&str>| v?.parse::<u64>().ok();
    let (user, system) = (ticks(f.next())?, ticks(f.next())?);
    let d =
        |t: u64| Duration::from_secs(t / hz) + Duration::from_nanos((t % hz) * 1_000_000_000 / hz);
    Some(ProcessCpu {
        user: d(user),
        system: d(system),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_converted_with_the_given_rate_and_odd_names_do_not_confuse_the_fields() {
        let line = "1234 (a b) c)) S 1 2 3 4 5 6 7 8 9 10 250 75 0 0 20 0 1 0";
        let c = parse_stat(line, 250).unwrap();
        assert_eq!(c.user, Duration::from_secs(1));
        assert_eq!(c.system, Duration::from_millis(300));
        let c = parse_stat(line, 100).unwrap();
        assert_eq!(c.user, Duration::from_millis(2500));
        assert!(parse_stat("garbage", 100).is_none());
        assert!(parse_stat(line, 0).is_none());
    }

    #[test]
    fn the_process_cpu_time_grows_while_it_computes() {
        let a = ProcessCpu::now().expect("/proc/self/stat");
        let t = std::time::Instant::now();
        let mut x = 0u64;
        // Busy until the kernel charges at least one tick (a shared machine may take a while).
        while ProcessCpu::now().unwrap().since(&a).total() == Duration::ZERO
            && t.elapsed() < Duration::from_secs(10)
        {
            for _ in 0..100_000 {
                x = x.wrapping_mul(31).wrapping_add(1);
            }
        }
        std::hint::black_box(x);
        let used = ProcessCpu::now().unwrap().since(&a).total();
        assert!(used > Duration::ZERO);
        assert!(used <= t.elapsed() * 64, "{used:?} in {:?}", t.elapsed());
    }
}
