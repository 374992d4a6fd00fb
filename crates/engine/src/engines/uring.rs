//! The io_uring engine.
//!
//! One ring per worker thread, created on that thread (so `SINGLE_ISSUER` and
//! `DEFER_TASKRUN` apply). Features are probed at run time and each one degrades on its own:
//! ring flags, registered files, registered (fixed) buffers, timeouts on waits. Each request
//! is submitted as it is queued ([`SubmitMode::PerIo`], the default) or pushed and submitted
//! with the others in the `io_uring_enter` that also waits ([`SubmitMode::Batch`]).

use super::{Completion, Dir, Engine, EngineError, EngineSetup, IoRequest, SlotStates, SubmitMode};
use crate::sys::AlignedBuf;
use io_uring::{opcode, types, IoUring, Probe};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::io::RawFd;
use std::time::{Duration, Instant};

/// Registered buffers are limited to this many by the kernel.
const MAX_FIXED_BUFFERS: u32 = 16384;
/// Largest submission queue the kernel accepts.
const MAX_ENTRIES: u32 = 32768;

/// `io_uring_enter`'s flag to reap completions (and run deferred task work).
const IORING_ENTER_GETEVENTS: u32 = 1;

/// An io_uring engine.
pub struct UringEngine {
    // Field order matters for drop: the ring closes before the buffers are freed, and
    // `Drop` first waits for in-flight I/O (see below).
    ring: IoUring,
    bufs: Vec<AlignedBuf>,
    files: Vec<File>,
    fds: Vec<RawFd>,
    slots: SlotStates,
    fixed_bufs: bool,
    fixed_files: bool,
    ext_arg: bool,
    per_io: bool,
    /// A whole batch fits in the submission queue (else queueing it submits part of it).
    batch_fits: bool,
    features: Vec<String>,
    /// `rw_flags` of every write (RWF_DSYNC or 0).
    write_flags: i32,
}

impl UringEngine {
    /// Creates a ring for `setup.depth` I/Os and registers what the kernel allows.
    pub fn new(setup: EngineSetup) -> Result<UringEngine, EngineError> {
        let entries = setup.depth.next_power_of_two().clamp(8, MAX_ENTRIES);
        let mut features = Vec::new();
        let ring = build_ring(entries, &mut features)?;

        let mut probe = Probe::new();
        ring.submitter()
            .register_probe(&mut probe)
            .map_err(EngineError::Unavailable)?;
        for (code, name) in [(opcode::Read::CODE, "read"), (opcode::Write::CODE, "write")] {
            if !probe.is_supported(code) {
                return Err(EngineError::Unavailable(std::io::Error::other(format!(
                    "the kernel's io_uring has no {name} operation"
                ))));
            }
        }

        let mut bufs: Vec<AlignedBuf> = (0..setup.depth)
            .map(|i| {
                let mut b = AlignedBuf::new(setup.buf_size);
                super::fill_random(b.as_mut_slice(), setup.fill_seed ^ i as u64);
                b
            })
            .collect();

        let fds: Vec<RawFd> = setup.files.iter().map(|f| f.as_raw_fd()).collect();
        let fixed_files = ring.submitter().register_files(&fds).is_ok();
        if fixed_files {
            features.push("registered_files".into());
        }

        let mut fixed_bufs = false;
        if setup.depth <= MAX_FIXED_BUFFERS
            && probe.is_supported(opcode::ReadFixed::CODE)
            && probe.is_supported(opcode::WriteFixed::CODE)
        {
            let iovecs: Vec<libc::iovec> = bufs
                .iter_mut()
                .map(|b| libc::iovec {
                    iov_base: b.as_mut_ptr().cast(),
                    iov_len: b.len(),
                })
                .collect();
            // SAFETY: each iovec points at a live heap allocation owned by `bufs`, which is
            // stored in the engine beside the ring and outlives every I/O (Drop drains them).
            fixed_bufs = unsafe { ring.submitter().register_buffers(&iovecs) }.is_ok();
            if fixed_bufs {
                features.push("registered_buffers".into());
            }
        }
        let ext_arg = ring.params().is_feature_ext_arg();
        if ext_arg {
            features.push("ext_arg".into());
        }
        features.push(format!("sq_entries={entries}"));
        features.push(format!("submit={}", setup.submit.name()));
        if setup.dsync_writes {
            features.push("rwf_dsync".into());
        }
        Ok(UringEngine {
            write_flags: if setup.dsync_writes {
                libc::RWF_DSYNC
            } else {
                0
            },
            ring,
            bufs,
            files: setup.files,
            fds,
            slots: SlotStates::new(setup.depth),
            fixed_bufs,
            fixed_files,
            ext_arg,
            per_io: setup.submit == SubmitMode::PerIo,
            batch_fits: setup.depth <= entries,
            features,
        })
    }

    fn submit_pending(&mut self) -> Result<(), EngineError> {
        loop {
            match self.ring.submit() {
                Ok(_) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    // The completion queue is full: the caller must reap first.
                    return Ok(());
                }
                Err(source) => {
                    return Err(EngineError::Io {
                        what: "io_uring submit",
                        source,
                    })
                }
            }
        }
    }
}

/// Ring set-up flags by name, and how to ask for them.
type RingFlags = (&'static [&'static str], fn(&mut io_uring::Builder));

/// Tries the fastest ring set-up first and drops flags the kernel refuses.
fn build_ring(entries: u32, features: &mut Vec<String>) -> Result<IoUring, EngineError> {
    let attempts: [RingFlags; 3] = [
        (&["single_issuer", "defer_taskrun", "coop_taskrun"], |b| {
            b.setup_single_issuer()
                .setup_defer_taskrun()
                .setup_coop_taskrun();
        }),
        (&["coop_taskrun"], |b| {
            b.setup_coop_taskrun();
        }),
        (&[], |_| {}),
    ];
    let mut last = None;
    for (names, apply) in attempts {
        let mut b = IoUring::builder();
        apply(&mut b);
        b.setup_cqsize(entries * 2);
        match b.build(entries) {
            Ok(r) => {
                features.extend(names.iter().map(|s| s.to_string()));
                return Ok(r);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(EngineError::Unavailable(
        last.expect("at least one attempt"),
    ))
}

/// Builds the entry for a request with either a registered or a plain file descriptor.
macro_rules! rw_entry {
    ($fd:expr, $self:ident, $req:ident, $ptr:ident) => {
        match ($req.dir, $self.fixed_bufs) {
            (Dir::Read, true) => opcode::ReadFixed::new($fd, $ptr, $req.len, $req.slot as u16)
                .offset($req.offset)
                .build(),
            (Dir::Write, true) => opcode::WriteFixed::new($fd, $ptr, $req.len, $req.slot as u16)
                .offset($req.offset)
                .rw_flags($self.write_flags)
                .build(),
            (Dir::Read, false) => opcode::Read::new($fd, $ptr, $req.len)
                .offset($req.offset)
                .build(),
            (Dir::Write, false) => opcode::Write::new($fd, $ptr, $req.len)
                .offset($req.offset)
                .rw_flags($self.write_flags)
                .build(),
        }
    };
}

impl Engine for UringEngine {
    fn name(&self) -> &'static str {
        "io_uring"
    }

    fn features(&self) -> Vec<String> {
        self.features.clone()
    }

    fn buffer(&mut self, slot: u32) -> Option<&mut [u8]> {
        if self.slots.is_busy(slot) {
            return None;
        }
        Some(self.bufs[slot as usize].as_mut_slice())
    }

    #[inline]
    fn queue(&mut self, req: IoRequest) -> Result<(), EngineError> {
        assert!(req.len as usize <= self.bufs[req.slot as usize].len());
        self.slots.acquire(req.slot);
        let ptr = self.bufs[req.slot as usize].as_mut_ptr();
        let entry = if self.fixed_files {
            rw_entry!(types::Fixed(req.file), self, req, ptr)
        } else {
            rw_entry!(types::Fd(self.fds[req.file as usize]), self, req, ptr)
        }
        .user_data(req.slot as u64);
        if self.ring.submission().is_full() {
            self.submit_pending()?;
        }
        // SAFETY: the buffer of `req.slot` is owned by this engine and stays allocated and
        // untouched until its completion is reaped: `SlotStates::acquire` refuses a slot that
        // is in flight, `buffer()` refuses busy slots, and `Drop` waits for in-flight I/O
        // before the buffers are freed. The file stays open as long as the engine.
        unsafe { self.ring.submission().push(&entry) }.map_err(|_| EngineError::Io {
            what: "io_uring submission queue",
            source: std::io::Error::other("submission queue full after submit"),
        })?;
        if self.per_io {
            self.submit_pending()?;
        }
        Ok(())
    }

    fn submit_and_wait(
        &mut self,
        min_complete: usize,
        timeout: Option<Duration>,
    ) -> Result<usize, EngineError> {
        let want = min_complete.min(self.slots.count());
        loop {
            let r = match (timeout, self.ext_arg, want) {
                // A poll: submit, and run the completions the kernel has deferred to this
                // thread (DEFER_TASKRUN posts them only on an enter with GETEVENTS; without
                // it an open loop that only polled never saw one, and stalled with every
                // slot busy above ~50k IOPS).
                (Some(t), _, 0) if t.is_zero() => {
                    let pending = self.ring.submission().len() as u32;
                    // SAFETY: no argument is passed; the submission queue's tail was synced
                    // when its entries were pushed.
                    unsafe {
                        self.ring.submitter().enter::<libc::sigset_t>(
                            pending,
                            0,
                            IORING_ENTER_GETEVENTS,
                            None,
                        )
                    }
                }
                (_, _, 0) => self.ring.submit(),
                (Some(t), true, _) => {
                    let ts = types::Timespec::from(t);
                    let args = types::SubmitArgs::new().timespec(&ts);
                    self.ring.submitter().submit_with_args(want, &args)
                }
                _ => self.ring.submit_and_wait(want),
            };
            return match r {
                Ok(n) => Ok(n),
                Err(e) => match e.raw_os_error() {
                    Some(libc::ETIME) | Some(libc::EBUSY) => Ok(0),
                    Some(libc::EINTR) => continue,
                    _ => Err(EngineError::Io {
                        what: "io_uring_enter",
                        source: e,
                    }),
                },
            };
        }
    }

    #[inline]
    fn reap(&mut self, out: &mut Vec<Completion>) {
        for cqe in self.ring.completion() {
            let slot = cqe.user_data() as u32;
            self.slots.release(slot);
            out.push(Completion {
                slot,
                result: cqe.result(),
            });
        }
    }

    fn in_flight(&self) -> usize {
        self.slots.count()
    }

    fn starts_on_queue(&self) -> bool {
        self.per_io || !self.batch_fits
    }
}

impl Drop for UringEngine {
    fn drop(&mut self) {
        // The kernel may still write into buffers of in-flight reads: wait for them before the
        // buffers are freed. A device that never answers would hang us; after a generous limit
        // leak the buffers instead of freeing memory the kernel may still use.
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut scratch = Vec::new();
        while self.slots.count() > 0 && Instant::now() < deadline {
            if self
                .submit_and_wait(1, Some(Duration::from_millis(100)))
                .is_err()
            {
                break;
            }
            scratch.clear();
            self.reap(&mut scratch);
        }
        if self.slots.count() > 0 {
            std::mem::forget(std::mem::take(&mut self.bufs));
        }
        let _ = &self.files;
    }
}
