//! CPU time of this process and of the whole host: one reader for every part of oio that
//! reports CPU use.
//!
//! Reads `/proc/self/stat` (utime and stime, fields 14 and 15) for the process and the
//! aggregate `cpu` line of `/proc/stat` for the host, and converts clock ticks with the
//! kernel's real tick rate from `sysconf(_SC_CLK_TCK)`, never an assumed 100.
//! [`HostCpuSampler`] follows the host through a run, one sample per interval, and tells how
//! much CPU *other* processes used (host busy minus this process), the input of
//! [`crate::result::HostNoise`].

use crate::result::HostCpu;
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

    /// The CPU time of process `pid` now (children not included); `None` when it is gone or
    /// /proc is not readable.
    pub fn of_pid(pid: u32) -> Option<ProcessCpu> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
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
    Some(ProcessCpu {
        user: ticks_to_time(user, hz),
        system: ticks_to_time(system, hz),
    })
}

/// `t` clock ticks at `hz` ticks per second (`hz` > 0).
fn ticks_to_time(t: u64, hz: u64) -> Duration {
    let frac = (t % hz) as u128 * 1_000_000_000 / hz as u128;
    Duration::from_secs(t / hz) + Duration::from_nanos(frac as u64)
}

/// Spans shorter than this many clock ticks per CPU carry no host figure: the kernel charges
/// CPU time a tick at a time, so over 10 ticks (100 ms at the usual 100 Hz) one tick of
/// rounding per counter is at most a tenth of a core, and less over a 1 s interval.
pub const HOST_MIN_SPAN_TICKS: u32 = 10;

/// CPU time of the whole host since boot, summed over its CPUs: the aggregate `cpu` line of
/// `/proc/stat`. (`guest` and `guest_nice` are already inside `user` and `nice`.)
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HostCpuTimes {
    /// User mode.
    pub user: Duration,
    /// User mode at low priority (niced).
    pub nice: Duration,
    /// Kernel mode, interrupts excluded.
    pub system: Duration,
    /// Idle.
    pub idle: Duration,
    /// Idle with I/O outstanding.
    pub iowait: Duration,
    /// Hard interrupts.
    pub irq: Duration,
    /// Soft interrupts.
    pub softirq: Duration,
    /// Taken by the hypervisor for other guests while this one wanted to run.
    pub steal: Duration,
    /// CPUs online (the `cpuN` lines).
    pub cpus: u32,
    /// One clock tick: the counters' resolution.
    pub tick: Duration,
}

impl HostCpuTimes {
    /// The host's CPU time now; `None` when /proc/stat is missing or not understood.
    pub fn now() -> Option<HostCpuTimes> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        parse_proc_stat(&stat, rustix::param::clock_ticks_per_second())
    }

    /// Every category together: busy, idle and stolen.
    pub fn total(&self) -> Duration {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }
}

/// The aggregate `cpu` line and the count of `cpuN` lines of a `/proc/stat` text, with `hz`
/// ticks per second. Needs the first eight counters (user … steal, Linux 2.6.11 on).
fn parse_proc_stat(text: &str, hz: u64) -> Option<HostCpuTimes> {
    if hz == 0 {
        return None;
    }
    let mut all: Option<[u64; 8]> = None;
    let mut cpus = 0u32;
    for line in text.lines() {
        let mut f = line.split_whitespace();
        match f.next() {
            Some("cpu") => {
                let mut v = [0u64; 8];
                for slot in &mut v {
                    *slot = f.next()?.parse().ok()?;
                }
                all = Some(v);
            }
            Some(name) if name.strip_prefix("cpu").is_some_and(is_cpu_number) => cpus += 1,
            _ => {}
        }
    }
    let v = all?;
    if cpus == 0 {
        return None;
    }
    let t = |i: usize| ticks_to_time(v[i], hz);
    Some(HostCpuTimes {
        user: t(0),
        nice: t(1),
        system: t(2),
        idle: t(3),
        iowait: t(4),
        irq: t(5),
        softirq: t(6),
        steal: t(7),
        cpus,
        tick: ticks_to_time(1, hz),
    })
}

fn is_cpu_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// The host's CPU and this process's at one moment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostSample {
    /// The whole host.
    pub host: HostCpuTimes,
    /// This process (all its threads).
    pub own: ProcessCpu,
}

impl HostSample {
    /// Both, read back to back; `None` without /proc.
    pub fn now() -> Option<HostSample> {
        Some(HostSample {
            host: HostCpuTimes::now()?,
            own: ProcessCpu::now()?,
        })
    }

    /// The host's CPU from `earlier` to this sample, as shares of all the host's CPU time,
    /// and the cores other processes kept busy; `None` when less than
    /// [`HOST_MIN_SPAN_TICKS`] ticks per CPU passed (mostly rounding, then).
    ///
    /// Other processes' CPU is the host's user, nice and system time less this process's
    /// user and system time. Interrupt time (irq, softirq) is left out of it: on an I/O
    /// benchmark most of it is the completions of oio's own I/O, which the kernel charges to
    /// no process. A counter that went backwards (iowait can, on tickless kernels) counts 0.
    pub fn since(&self, earlier: &HostSample) -> Option<HostCpu> {
        let (a, b) = (&earlier.host, &self.host);
        let d = |f: fn(&HostCpuTimes) -> Duration| f(b).saturating_sub(f(a)).as_secs_f64();
        let user = d(|h| h.user) + d(|h| h.nice);
        let system = d(|h| h.system);
        let irq = d(|h| h.irq) + d(|h| h.softirq);
        let (idle, iowait, steal) = (d(|h| h.idle), d(|h| h.iowait), d(|h| h.steal));
        let total = user + system + irq + idle + iowait + steal;
        let cpus = b.cpus.max(1);
        let min_span = b.tick.as_secs_f64() * f64::from(HOST_MIN_SPAN_TICKS) * f64::from(cpus);
        if total <= 0.0 || total < min_span {
            return None;
        }
        let pct = |x: f64| x * 100.0 / total;
        let cores = |x: f64| x / total * f64::from(cpus);
        let own = self.own.since(&earlier.own).total().as_secs_f64();
        let mut h = HostCpu {
            user_pct: pct(user),
            system_pct: pct(system),
            irq_pct: pct(irq),
            iowait_pct: pct(iowait),
            steal_pct: pct(steal),
            idle_pct: pct(idle),
            others_cores: cores((user + system - own).max(0.0)),
            flagged: false,
        };
        h.flagged = h.neighbour_matters(cpus);
        Some(h)
    }
}

/// Follows the host's CPU through a measured phase: a baseline, then one
/// [`HostCpuSampler::interval`] per interval, read by whichever thread closes the intervals
/// (never on the per-I/O path).
#[derive(Clone, Debug)]
pub struct HostCpuSampler {
    first: HostSample,
    last: HostSample,
}

impl HostCpuSampler {
    /// The baseline, now; `None` without /proc.
    pub fn start() -> Option<HostCpuSampler> {
        let s = HostSample::now()?;
        Some(HostCpuSampler { first: s, last: s })
    }

    /// A new baseline, now (the ramp ended: the measured phase starts here).
    pub fn restart(&mut self) {
        if let Some(s) = HostSample::now() {
            self.first = s;
            self.last = s;
        }
    }

    /// The host since the previous sample (or the baseline); the next interval starts now.
    /// `None` when /proc could not be read or the span was too short to tell.
    pub fn interval(&mut self) -> Option<HostCpu> {
        let now = HostSample::now()?;
        let h = now.since(&self.last);
        self.last = now;
        h
    }

    /// The host from the baseline to now (the whole measured phase, in real time).
    pub fn overall(&mut self) -> Option<HostCpu> {
        let now = HostSample::now()?;
        self.last = now;
        now.since(&self.first)
    }

    /// CPUs of the host.
    pub fn cpus(&self) -> u32 {
        self.last.host.cpus
    }

    /// The shortest span that gets a figure ([`HOST_MIN_SPAN_TICKS`] ticks).
    pub fn min_span(&self) -> Duration {
        self.last.host.tick * HOST_MIN_SPAN_TICKS
    }
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

    /// /proc/stat of a 2-CPU guest, captured (the `intr` line shortened).
    const STAT: &str = "cpu  76381 5620 22230 63491 6347 0 232 2108 0 0
cpu0 38323 2420 10575 32849 2961 0 50 1033 0 0
cpu1 38057 3200 11655 30642 3386 0 181 1074 0 0
intr 549683 0 0 0 0 0 0 0 0 0 0
ctxt 680473
btime 1767000000
processes 9001
procs_running 3
procs_blocked 0
softirq 123 0 1 2 3
";

    #[test]
    fn the_host_line_is_read_with_the_given_tick_rate_and_the_cpus_are_counted() {
        let h = parse_proc_stat(STAT, 100).unwrap();
        assert_eq!(h.cpus, 2);
        assert_eq!(h.user, Duration::from_millis(763_810));
        assert_eq!(h.nice, Duration::from_millis(56_200));
        assert_eq!(h.system, Duration::from_millis(222_300));
        assert_eq!(h.idle, Duration::from_millis(634_910));
        assert_eq!(h.iowait, Duration::from_millis(63_470));
        assert_eq!(h.irq, Duration::ZERO);
        assert_eq!(h.softirq, Duration::from_millis(2_320));
        assert_eq!(h.steal, Duration::from_millis(21_080));
        assert_eq!(h.tick, Duration::from_millis(10));
        assert_eq!(
            h.total(),
            Duration::from_millis(10 * (76381 + 5620 + 22230 + 63491 + 6347 + 232 + 2108))
        );
        let h = parse_proc_stat(STAT, 250).unwrap();
        assert_eq!(h.user, Duration::from_micros(305_524_000));
        assert_eq!(h.tick, Duration::from_millis(4));
        // The `softirq` line is not a CPU; `cpu` lines of a kernel without guest fields
        // (8 counters) are enough.
        let old = "cpu 1 2 3 4 5 6 7 8\ncpu0 1 2 3 4 5 6 7 8\n";
        assert_eq!(parse_proc_stat(old, 100).unwrap().cpus, 1);
    }

    #[test]
    fn a_host_line_that_is_not_understood_gives_none() {
        assert!(parse_proc_stat(STAT, 0).is_none());
        assert!(parse_proc_stat("", 100).is_none());
        assert!(parse_proc_stat("garbage\n", 100).is_none());
        // Seven counters: steal is missing.
        assert!(parse_proc_stat("cpu 1 2 3 4 5 6 7\ncpu0 1 2 3 4 5 6 7\n", 100).is_none());
        assert!(parse_proc_stat("cpu 1 2 x 4 5 6 7 8\ncpu0 1 2 3 4 5 6 7 8\n", 100).is_none());
        assert!(parse_proc_stat("cpu 1 2 -3 4 5 6 7 8\ncpu0 1 2 3 4 5 6 7 8\n", 100).is_none());
        // No per-CPU line: the CPU count is unknown.
        assert!(parse_proc_stat("cpu 1 2 3 4 5 6 7 8\n", 100).is_none());
        assert!(parse_proc_stat("cpu 1 2 3 4 5 6 7 8\ncpux 1\n", 100).is_none());
    }

    /// A sample `dt` ticks (each: user, nice, system, idle, iowait, irq, softirq, steal)
    /// after `base`, with this process at `own` ticks (user, system).
    fn sample(base: &HostCpuTimes, dt: [u64; 8], own: (u64, u64)) -> HostSample {
        let t = |v: u64| ticks_to_time(v, 100);
        HostSample {
            host: HostCpuTimes {
                user: base.user + t(dt[0]),
                nice: base.nice + t(dt[1]),
                system: base.system + t(dt[2]),
                idle: base.idle + t(dt[3]),
                iowait: base.iowait + t(dt[4]),
                irq: base.irq + t(dt[5]),
                softirq: base.softirq + t(dt[6]),
                steal: base.steal + t(dt[7]),
                ..*base
            },
            own: ProcessCpu {
                user: t(own.0),
                system: t(own.1),
            },
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn an_interval_gives_shares_of_the_host_and_the_cores_others_used() {
        let base = parse_proc_stat(STAT, 100).unwrap();
        let a = sample(&base, [0; 8], (1000, 300));
        // One second on 2 CPUs: 200 ticks. oio used 50 + 10 of the 120 ticks of user, nice
        // and system: others 60 ticks = 0.6 s in 1 s = 0.6 cores.
        let b = sample(&base, [80, 10, 30, 50, 10, 0, 10, 10], (1050, 310));
        let h = b.since(&a).unwrap();
        assert!(close(h.user_pct, 45.0), "{h:?}");
        assert!(close(h.system_pct, 15.0), "{h:?}");
        assert!(close(h.irq_pct, 5.0), "{h:?}");
        assert!(close(h.iowait_pct, 5.0), "{h:?}");
        assert!(close(h.steal_pct, 5.0), "{h:?}");
        assert!(close(h.idle_pct, 25.0), "{h:?}");
        assert!(close(h.others_cores, 0.6), "{h:?}");
        assert!(h.flagged);
        // oio alone: nobody else.
        let b = sample(&base, [50, 0, 10, 140, 0, 0, 0, 0], (1050, 310));
        let h = b.since(&a).unwrap();
        assert!(close(h.others_cores, 0.0), "{h:?}");
        assert!(!h.flagged);
        // oio charged more than the host counted (the two are rounded apart): never below 0.
        let b = sample(&base, [40, 0, 10, 150, 0, 0, 0, 0], (1050, 310));
        assert_eq!(b.since(&a).unwrap().others_cores, 0.0);
        // A counter that went backwards counts 0, it does not wrap.
        let mut b = sample(&base, [50, 0, 10, 140, 0, 0, 0, 0], (1050, 310));
        b.host.iowait -= Duration::from_millis(20);
        assert_eq!(b.since(&a).unwrap().iowait_pct, 0.0);
    }

    #[test]
    fn a_span_under_ten_ticks_per_cpu_has_no_figure() {
        let base = parse_proc_stat(STAT, 100).unwrap();
        let a = sample(&base, [0; 8], (0, 0));
        // 2 CPUs: 20 ticks in all is the shortest span measured.
        assert!(sample(&base, [5, 0, 0, 14, 0, 0, 0, 0], (0, 0))
            .since(&a)
            .is_none());
        assert!(sample(&base, [5, 0, 0, 15, 0, 0, 0, 0], (0, 0))
            .since(&a)
            .is_some());
        assert!(a.since(&a).is_none());
    }

    #[test]
    fn the_sampler_reads_this_host() {
        let mut s = HostCpuSampler::start().expect("/proc/stat");
        assert!(s.cpus() >= 1);
        assert!(s.min_span() > Duration::ZERO);
        // Back to back, less than 10 ticks passed (or the figure is a valid one).
        if let Some(h) = s.interval() {
            let sum =
                h.user_pct + h.system_pct + h.irq_pct + h.iowait_pct + h.steal_pct + h.idle_pct;
            assert!(close(sum, 100.0), "{h:?}");
        }
        let _ = s.overall();
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
