//! The engine's own `unsafe` outside io_uring: page-aligned buffers and rusage.
//!
//! (The io_uring submission path keeps its `unsafe` next to the ring in `engines/uring.rs`,
//! where the invariant it relies on is enforced.)

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;

/// Alignment of every I/O buffer: a page, which satisfies O_DIRECT on any device.
pub const BUF_ALIGN: usize = 4096;

/// A zeroed, page-aligned heap buffer that frees itself.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: AlignedBuf owns its allocation exclusively, like a Box<[u8]>.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// Allocates `len` zeroed bytes (rounded up to a whole page).
    pub fn new(len: usize) -> AlignedBuf {
        let len = len.max(1).div_ceil(BUF_ALIGN) * BUF_ALIGN;
        let layout = Layout::from_size_align(len, BUF_ALIGN).expect("buffer size fits a Layout");
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        AlignedBuf { ptr, layout }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.layout.size()
    }

    /// Always false: a buffer has at least one page.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for len initialised (zeroed) bytes for as long as self lives.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len()) }
    }

    /// The bytes, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len()) }
    }

    /// Raw pointer for handing to the kernel.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this same layout.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// User and system CPU seconds used so far by the whole process.
pub fn process_cpu() -> (f64, f64) {
    // SAFETY: getrusage only writes into the zeroed struct we pass it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer cannot fail.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

/// This thread's scheduler times so far, ns: on a CPU, and runnable but waiting for one
/// (the first two fields of /proc/thread-self/schedstat); None where the kernel has no such
/// file. Read twice per run per worker, never on the I/O path.
pub fn thread_sched() -> Option<(u64, u64)> {
    parse_schedstat(&std::fs::read_to_string("/proc/thread-self/schedstat").ok()?)
}

fn parse_schedstat(s: &str) -> Option<(u64, u64)> {
    let mut f = s.split_whitespace().map(|x| x.parse::<u64>().ok());
    Some((f.next()??, f.next()??))
}

/// Asks for precise timer wake-ups on this thread (timer slack 1 ns instead of 50 µs), so
/// open-loop arrivals a few microseconds apart are issued on time.
pub fn precise_timers() {
    // SAFETY: PR_SET_TIMERSLACK takes an integer and touches no memory.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

#[test]
fn schedstat_gives_cpu_and_run_queue_times() {
    assert_eq!(
        parse_schedstat("166482 2449164 2\n"),
        Some((166482, 2449164))
    );
    assert_eq!(parse_schedstat("12"), None);
    assert_eq!(parse_schedstat("a b c"), None);
    // A thread that used the CPU and then slept (the kernel brings its counts up to date
    // when it leaves the CPU) has CPU time where the file exists.
    let t0 = std::time::Instant::now();
    while t0.elapsed() < std::time::Duration::from_millis(20) {
        std::hint::spin_loop();
    }
    std::thread::sleep(std::time::Duration::from_millis(1));
    if let Some((run, _)) = thread_sched() {
        assert!(run > 0);
    }
}

#[test]
fn buffers_are_page_aligned_and_zeroed() {
    let mut b = AlignedBuf::new(5000);
    assert_eq!(b.len(), 8192);
    assert_eq!(b.as_mut_ptr() as usize % BUF_ALIGN, 0);
    assert!(b.as_slice().iter().all(|&x| x == 0));
    b.as_mut_slice()[8191] = 7;
    assert_eq!(b.as_slice()[8191], 7);
}
