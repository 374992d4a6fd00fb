//! The portable engine: a pool of threads doing blocking `pread`/`pwrite`.
//!
//! Used when io_uring is unavailable (old kernels, container seccomp profiles). To keep
//! `depth` I/Os in flight it runs `depth` threads, so each buffer travels to a thread with
//! its request and comes back with the completion: ownership moves, nothing is shared.

use super::{Completion, Dir, Engine, EngineError, EngineSetup, IoRequest, SlotStates};
use crate::sys::AlignedBuf;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Most threads one sync engine starts.
pub const MAX_THREADS: u32 = 1024;

struct Job {
    req: IoRequest,
    buf: AlignedBuf,
}

struct Done {
    slot: u32,
    result: i32,
    buf: AlignedBuf,
}

/// A thread-pool engine.
pub struct SyncEngine {
    slots: SlotStates,
    bufs: Vec<Option<AlignedBuf>>,
    jobs: Option<Sender<Job>>,
    done: Receiver<Done>,
    arrived: Vec<Done>,
    threads: Vec<JoinHandle<()>>,
    dsync: bool,
}

impl SyncEngine {
    /// Starts `min(depth, MAX_THREADS)` I/O threads.
    pub fn new(setup: EngineSetup) -> Result<SyncEngine, EngineError> {
        let files = Arc::new(setup.files);
        let (jobs_tx, jobs_rx) = crossbeam_channel::unbounded::<Job>();
        let (done_tx, done_rx) = crossbeam_channel::unbounded::<Done>();
        let n = setup.depth.clamp(1, MAX_THREADS);
        let mut threads = Vec::with_capacity(n as usize);
        for i in 0..n {
            let rx = jobs_rx.clone();
            let tx = done_tx.clone();
            let files = Arc::clone(&files);
            let dsync = setup.dsync_writes;
            let h = std::thread::Builder::new()
                .name(format!("oio-sync-{i}"))
                .spawn(move || io_thread(rx, tx, files, dsync))
                .map_err(|source| EngineError::Io {
                    what: "starting an I/O thread",
                    source,
                })?;
            threads.push(h);
        }
        let bufs = (0..setup.depth)
            .map(|i| {
                let mut b = AlignedBuf::new(setup.buf_size);
                super::fill_random(b.as_mut_slice(), setup.fill_seed ^ i as u64);
                Some(b)
            })
            .collect();
        Ok(SyncEngine {
            slots: SlotStates::new(setup.depth),
            bufs,
            jobs: Some(jobs_tx),
            done: done_rx,
            arrived: Vec::new(),
            threads,
            dsync: setup.dsync_writes,
        })
    }
}

fn io_thread(jobs: Receiver<Job>, done: Sender<Done>, files: Arc<Vec<File>>, dsync: bool) {
    for Job { req, mut buf } in jobs.iter() {
        let file = &files[req.file as usize];
        let len = req.len as usize;
        let r = match req.dir {
            Dir::Read => file.read_at(&mut buf.as_mut_slice()[..len], req.offset),
            // pwritev2 with RWF_DSYNC: this write alone is synchronous (Linux 4.7+).
            Dir::Write if dsync => rustix::io::pwritev2(
                file,
                &[std::io::IoSlice::new(&buf.as_slice()[..len])],
                req.offset,
                rustix::io::ReadWriteFlags::DSYNC,
            )
            .map_err(std::io::Error::from),
            Dir::Write => file.write_at(&buf.as_slice()[..len], req.offset),
        };
        let result = match r {
            Ok(n) => n as i32,
            Err(e) => -e.raw_os_error().unwrap_or(libc::EIO),
        };
        if done
            .send(Done {
                slot: req.slot,
                result,
                buf,
            })
            .is_err()
        {
            return;
        }
    }
}

impl Engine for SyncEngine {
    fn name(&self) -> &'static str {
        "sync"
    }

    fn features(&self) -> Vec<String> {
        vec![
            format!("threads={}", self.threads.len()),
            "pread_pwrite".into(),
        ]
        .into_iter()
        .chain(self.dsync.then(|| "pwritev2_rwf_dsync".to_string()))
        .collect()
    }

    fn buffer(&mut self, slot: u32) -> Option<&mut [u8]> {
        self.bufs[slot as usize].as_mut().map(|b| b.as_mut_slice())
    }

    fn queue(&mut self, req: IoRequest) -> Result<(), EngineError> {
        self.slots.acquire(req.slot);
        let buf = self.bufs[req.slot as usize]
            .take()
            .expect("an idle slot has its buffer");
        self.jobs
            .as_ref()
            .expect("jobs channel lives until drop")
            .send(Job { req, buf })
            .map_err(|_| EngineError::WorkerGone)
    }

    fn submit_and_wait(
        &mut self,
        min_complete: usize,
        timeout: Option<Duration>,
    ) -> Result<usize, EngineError> {
        self.arrived.extend(self.done.try_iter());
        let deadline = timeout.map(|t| Instant::now() + t);
        while self.arrived.len() < min_complete.min(self.slots.count()) {
            let got = match deadline {
                Some(d) => match self.done.recv_deadline(d) {
                    Ok(v) => v,
                    Err(RecvTimeoutError::Timeout) => break,
                    Err(RecvTimeoutError::Disconnected) => return Err(EngineError::WorkerGone),
                },
                None => self.done.recv().map_err(|_| EngineError::WorkerGone)?,
            };
            self.arrived.push(got);
        }
        Ok(0)
    }

    fn reap(&mut self, out: &mut Vec<Completion>) {
        self.arrived.extend(self.done.try_iter());
        for d in self.arrived.drain(..) {
            self.slots.release(d.slot);
            self.bufs[d.slot as usize] = Some(d.buf);
            out.push(Completion {
                slot: d.slot,
                result: d.result,
            });
        }
    }

    fn in_flight(&self) -> usize {
        self.slots.count()
    }

    fn starts_on_queue(&self) -> bool {
        true
    }
}

impl Drop for SyncEngine {
    fn drop(&mut self) {
        // Closing the job channel ends each thread after its current I/O.
        self.jobs.take();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
