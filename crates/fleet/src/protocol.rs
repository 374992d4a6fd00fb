//! The agent protocol: one JSON object per line over any byte pipe (an SSH session's stdio,
//! `kubectl exec -i`, `ip netns exec`, a local pipe).
//!
//! A session, controller (C) and agent (A):
//!
//! ```text
//! C→A hello        A→C hello        oio version, protocol version, histogram layout; any
//!                                   mismatch is refused by either side with an `error`
//! C→A time ×N      A→C time_reply   clock-offset estimation (see [`crate::clock`])
//! C→A prepare      A→C ready|error  the plan; the agent opens or creates every target with
//!                                   every safety refusal the engine has, and runs nothing
//! C→A go           A→C started      the start instant, in the agent's clock
//!                  A→C interval ×n  each interval: counters and exact histograms
//!                  A→C result       the host's full `oio.run` result, and its targets'
//!                                   devices from /proc/diskstats over the measured window
//! C→A beat                          about every second from `go` on: the controller is
//!                                   there; an agent that hears nothing for the watchdog it
//!                                   carries stops its I/O (a link dead without closing)
//! C→A stop                          stop now (another host was lost, or Ctrl-C)
//!                  A→C progress     after hello, whenever the agent said nothing for a
//!                                   second: what it is doing and a count of its steps
//! ```
//!
//! `progress` lets the controller tell a host that stalls from one that is slow: a host that
//! sends nothing at all for the stall limit (its agent stopped, its link dead), or whose count
//! does not move for that long (its storage hangs, e.g. a dead NFS mount), is stalled, named
//! with the phase and for how long.
//!
//! A TPC-C session (`oio fleet tpcc run`) is the same with `prepare_tpcc` (the agent opens its
//! database and refuses one whose build is incomplete), `ready_tpcc`, `started` when the
//! driver's measured window opens (after it connected and ramped), `tpcc_interval` (whole
//! new-order and transaction counts and the latency histograms of each interval) and
//! `tpcc_result` (the host's full `oio.tpcc` document).
//!
//! A SQL session (`oio fleet sql run`) is the same again with `prepare_sql` (the agent loads
//! the script from the texts the plan carries, opens its database and runs the script's setup,
//! all before the common start), `ready_sql`, `started` when the measured window opens,
//! `sql_interval` (whole committed, failed and retried counts and the interval's latency
//! histogram) and `sql_result` (the host's full `oio.sql` document).
//!
//! `check` (instead of `prepare`) asks for the targets' state without creating or writing
//! anything. End of file on the agent's stdin means the controller is gone: the agent stops its
//! I/O at once and exits.

use oio_core::histogram::{SparseHistogram, HIGHEST_NS, SIGNIFICANT_DIGITS};
use oio_core::result::{DirStats, Interval, RunResult, TargetInfo};
use oio_engine::RunPlan;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};

/// A prepared target as this host's kernel knows it: `BOOT_ID:file:MAJOR:MINOR:INODE`, or
/// `BOOT_ID:block:MAJOR:MINOR` for a block device (its node's own device number, so two
/// names of one disk are one). The boot id keeps files on different machines apart (the same
/// device and inode numbers are common there); hosts that are containers or namespaces of one
/// kernel share it, and a file they share is then one target. None when it cannot be read.
pub fn target_identity(path: &std::path::Path) -> Option<String> {
    use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let m = std::fs::metadata(path).ok()?;
    Some(if m.file_type().is_block_device() {
        format!(
            "{}:block:{}:{}",
            boot.trim(),
            rustix::fs::major(m.rdev()),
            rustix::fs::minor(m.rdev())
        )
    } else {
        format!(
            "{}:file:{}:{}:{}",
            boot.trim(),
            rustix::fs::major(m.dev()),
            rustix::fs::minor(m.dev()),
            m.ino()
        )
    })
}

/// Version of this protocol; bumped on any incompatible change. 5: plans travel in the form
/// results record them (target options beside the rest, `time_ns`, the simulated device as
/// its text). 6: `beat` (the agent's watchdog), targets' and databases' identities. 7: SQL
/// script runs (`prepare_sql`, `ready_sql`, `sql_interval`, `sql_result`). 8: `arm` and `armed`
/// between `ready` and `go` for I/O plans (the lead before the start carries only `go`).
pub const PROTOCOL_VERSION: u32 = 8;

/// Longest line either side accepts (a final result with a long series of per-interval
/// histograms is the largest message): a hostile or broken peer cannot make the reader grow
/// without limit.
pub const MAX_LINE: usize = 256 << 20;

/// Buckets of oio's histogram layout: no histogram has more.
pub fn max_buckets() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *N.get_or_init(|| empty_hdr().distinct_values())
}

/// Longest base64 histogram accepted: a V2 serialisation of oio's layout with every bucket
/// counted (40 bytes of header, at most 9 bytes per bucket), in base64.
pub fn max_histogram_b64() -> usize {
    (40 + 9 * max_buckets()).div_ceil(3) * 4
}

/// Most bytes one interval of a final result can take as JSON: three directions, each with
/// two histograms of every bucket (two numbers of at most 20 digits each), and its figures.
pub fn max_result_interval_bytes() -> usize {
    3 * (2 * max_buckets() * 46 + 4096)
}

/// How latency histograms are bucketed; both sides must agree, or merging would be inexact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistogramLayout {
    /// Always "ns".
    pub unit: Unit,
    /// Lowest discernible value.
    pub lowest: u64,
    /// Highest trackable value.
    pub highest: u64,
    /// Significant decimal digits.
    pub significant_digits: u8,
}

/// The unit of every latency on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Nanoseconds.
    Ns,
}

impl HistogramLayout {
    /// The layout of this build of oio.
    pub fn current() -> HistogramLayout {
        HistogramLayout {
            unit: Unit::Ns,
            lowest: 1,
            highest: HIGHEST_NS,
            significant_digits: SIGNIFICANT_DIGITS,
        }
    }
}

/// What a side says about itself first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// `oio --version` of the sender (version and commit).
    pub oio_version: String,
    /// [`PROTOCOL_VERSION`] of the sender.
    pub protocol: u32,
    /// The sender's histogram layout.
    pub histogram: HistogramLayout,
    /// The sender's host name (for messages).
    #[serde(default)]
    pub hostname: String,
}

impl Hello {
    /// This process's hello.
    pub fn current(oio_version: &str) -> Hello {
        Hello {
            oio_version: oio_version.to_string(),
            protocol: PROTOCOL_VERSION,
            histogram: HistogramLayout::current(),
            hostname: oio_core::host::HostInfo::detect().hostname,
        }
    }

    /// The controller's check of an agent's hello (`self` is the controller's).
    pub fn check_agent(&self, agent: &Hello) -> Result<(), HelloMismatch> {
        mismatch(self, agent)
    }

    /// The agent's check of the controller's hello (`self` is the agent's).
    pub fn check_controller(&self, controller: &Hello) -> Result<(), HelloMismatch> {
        mismatch(controller, self)
    }
}

/// An agent and a controller that cannot work together, said from where the user sits (the
/// controller): the message reaches the user as "host NAME: hello: …" whichever side refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HelloMismatch {
    /// Another protocol version.
    #[error("it runs oio {agent_oio} (agent protocol version {agent}), this controller runs oio {controller_oio} (protocol version {controller}): install the same oio on every host (`oio fleet install`; check with `oio --version`)")]
    Protocol {
        /// The agent's oio version.
        agent_oio: String,
        /// The agent's protocol version.
        agent: u32,
        /// The controller's oio version.
        controller_oio: String,
        /// The controller's protocol version.
        controller: u32,
    },
    /// The same protocol from another oio.
    #[error("it runs oio {agent}, this controller runs oio {controller}: install the same oio on every host (`oio fleet install`), so one plan means the same thing everywhere")]
    Version {
        /// The agent's oio version.
        agent: String,
        /// The controller's.
        controller: String,
    },
    /// Histograms that could not be merged exactly.
    #[error("its histogram layout {agent:?} differs from this controller's {controller:?}: histograms could not be merged exactly; install the same oio on every host")]
    Histogram {
        /// The agent's layout.
        agent: HistogramLayout,
        /// The controller's.
        controller: HistogramLayout,
    },
}

/// Refuses an agent and controller that differ in protocol, oio version or histogram layout,
/// saying what differs and what to do.
fn mismatch(controller: &Hello, agent: &Hello) -> Result<(), HelloMismatch> {
    if agent.protocol != controller.protocol {
        return Err(HelloMismatch::Protocol {
            agent_oio: agent.oio_version.clone(),
            agent: agent.protocol,
            controller_oio: controller.oio_version.clone(),
            controller: controller.protocol,
        });
    }
    if agent.oio_version != controller.oio_version {
        return Err(HelloMismatch::Version {
            agent: agent.oio_version.clone(),
            controller: controller.oio_version.clone(),
        });
    }
    if agent.histogram != controller.histogram {
        return Err(HelloMismatch::Histogram {
            agent: agent.histogram,
            controller: controller.histogram,
        });
    }
    Ok(())
}

/// Most bytes of log files an agent sends with its result; the rest stay on the host (said).
pub const MAX_LOG_BYTES: usize = 64 << 20;

/// A log file whose bytes did not arrive as base64.
#[derive(Debug, thiserror::Error)]
#[error("log {name}: not base64: {source}")]
pub struct LogDecodeError {
    /// Its file name.
    pub name: String,
    /// What the decoder said.
    pub source: base64::DecodeError,
}

/// One log file of a run, sent with its result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogFile {
    /// Its file name (no directory).
    pub name: String,
    /// Its bytes, base64 (standard alphabet, padded).
    pub data: String,
}

impl LogFile {
    /// Its bytes.
    pub fn bytes(&self) -> Result<Vec<u8>, LogDecodeError> {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD
            .decode(&self.data)
            .map_err(|source| LogDecodeError {
                name: self.name.clone(),
                source,
            })
    }

    /// A name the controller may write under a directory of its own: letters, digits and
    /// `. _ -`, not starting with `.`, at most 255 bytes.
    pub fn safe_name(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= 255
            && !name.starts_with('.')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    }
}

/// One latency histogram on the wire: the buckets as hdrhistogram's V2 serialisation in
/// base64, plus what buckets cannot hold exactly (count, sum, min, max).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireHistogram {
    /// hdrhistogram V2 (uncompressed), base64 (standard alphabet, padded).
    pub v2: String,
    /// Samples.
    pub count: u64,
    /// Exact sum of the samples, ns.
    pub sum: f64,
    /// Exact minimum, ns.
    pub min: Option<u64>,
    /// Exact maximum, ns.
    pub max: Option<u64>,
}

/// A histogram that could not be decoded.
#[derive(Debug, thiserror::Error)]
#[error("histogram: {0}")]
pub struct HistogramError(pub String);

fn empty_hdr() -> hdrhistogram::Histogram<u64> {
    hdrhistogram::Histogram::new_with_bounds(1, HIGHEST_NS, SIGNIFICANT_DIGITS)
        .expect("static histogram bounds are valid")
}

impl WireHistogram {
    /// Encodes a result file's sparse histogram. Each bucket is recorded at its highest
    /// value, which falls in the same bucket, so nothing moves.
    pub fn from_sparse(s: &SparseHistogram) -> WireHistogram {
        use base64::Engine as _;
        use hdrhistogram::serialization::Serializer as _;
        let mut h = empty_hdr();
        for [v, c] in &s.buckets {
            h.saturating_record_n((*v).max(1), *c);
        }
        let mut bytes = Vec::new();
        hdrhistogram::serialization::V2Serializer::new()
            .serialize(&h, &mut bytes)
            .expect("a histogram of valid bounds serialises into memory");
        WireHistogram {
            v2: base64::engine::general_purpose::STANDARD.encode(&bytes),
            count: s.count,
            sum: s.sum,
            min: s.min,
            max: s.max,
        }
    }

    /// Decodes into a sparse histogram, refusing a layout other than oio's (checked in the
    /// header before anything is allocated) and bucket counts that disagree with `count`.
    pub fn to_sparse(&self) -> Result<SparseHistogram, HistogramError> {
        use base64::Engine as _;
        if self.v2.len() > max_histogram_b64() {
            return Err(HistogramError(format!(
                "{} bytes of base64, more than the {} a histogram of oio's layout can need",
                self.v2.len(),
                max_histogram_b64()
            )));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&self.v2)
            .map_err(|e| HistogramError(format!("not base64: {e}")))?;
        // V2 header (big-endian): cookie, payload length, normalizing offset, significant
        // digits (i32 each), lowest, highest (u64 each), integer-to-double ratio.
        if bytes.len() < 40 {
            return Err(HistogramError("shorter than a V2 header".into()));
        }
        let be32 = |o: usize| u32::from_be_bytes(bytes[o..o + 4].try_into().expect("4 bytes"));
        let be64 = |o: usize| u64::from_be_bytes(bytes[o..o + 8].try_into().expect("8 bytes"));
        // Only the uncompressed V2 form, whose payload is exactly what follows the header:
        // the deserialiser sizes a buffer from the payload length it reads (a 40-byte
        // histogram claiming 2 GiB would allocate them), and a compressed one could inflate
        // to anything.
        const V2_COOKIE: u32 = 0x1c84_9303 | 0x10;
        if be32(0) != V2_COOKIE {
            return Err(HistogramError(format!(
                "cookie {:#x}: not an uncompressed hdrhistogram V2 serialisation",
                be32(0)
            )));
        }
        if be32(4) as usize != bytes.len() - 40 {
            return Err(HistogramError(format!(
                "its header says {} bytes of payload, {} follow",
                be32(4),
                bytes.len() - 40
            )));
        }
        let (digits, lowest, highest) = (be32(12), be64(16), be64(24));
        if (digits, lowest, highest) != (u32::from(SIGNIFICANT_DIGITS), 1, HIGHEST_NS) {
            return Err(HistogramError(format!(
                "layout {digits} digits, {lowest}..{highest} ns; oio uses {SIGNIFICANT_DIGITS} digits, 1..{HIGHEST_NS} ns"
            )));
        }
        let h: hdrhistogram::Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| HistogramError(format!("not an hdrhistogram V2 serialisation: {e:?}")))?;
        let buckets: Vec<[u64; 2]> = h
            .iter_recorded()
            .map(|v| [v.value_iterated_to(), v.count_at_value()])
            .collect();
        let in_buckets = buckets.iter().fold(0u64, |a, b| a.saturating_add(b[1]));
        if in_buckets != self.count {
            return Err(HistogramError(format!(
                "its buckets hold {in_buckets} samples but its count says {}",
                self.count
            )));
        }
        if let (Some(lo), Some(hi)) = (self.min, self.max) {
            if lo > hi {
                return Err(HistogramError(format!(
                    "its minimum {lo} ns is above its maximum {hi} ns"
                )));
            }
        }
        Ok(SparseHistogram {
            unit: "ns".into(),
            significant_digits: SIGNIFICANT_DIGITS,
            count: self.count,
            sum: self.sum,
            min: self.min,
            max: self.max,
            buckets,
        })
    }
}

/// One direction of one interval on the wire.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireDir {
    /// I/Os completed.
    pub ios: u64,
    /// Bytes transferred.
    pub bytes: u64,
    /// I/Os per second over the interval.
    pub iops: f64,
    /// Bytes per second over the interval.
    pub bytes_per_sec: f64,
    /// Latency histogram, ns (None: no I/O).
    pub latency: Option<WireHistogram>,
}

impl WireDir {
    /// From a result's per-direction stats (with their histogram).
    pub fn from_stats(d: &DirStats) -> WireDir {
        WireDir {
            ios: d.ios,
            bytes: d.bytes,
            iops: d.iops,
            bytes_per_sec: d.bytes_per_sec,
            latency: d.histogram.as_ref().map(WireHistogram::from_sparse),
        }
    }

    /// Back to stats, percentiles computed from the decoded histogram.
    pub fn to_stats(&self) -> Result<DirStats, HistogramError> {
        let sparse = self.latency.as_ref().map(|h| h.to_sparse()).transpose()?;
        let hist = sparse
            .as_ref()
            .map(oio_core::histogram::LatencyHistogram::from_sparse)
            .unwrap_or_default();
        let latency_ns = hist.summary();
        Ok(DirStats {
            ios: self.ios,
            bytes: self.bytes,
            iops: self.iops,
            bytes_per_sec: self.bytes_per_sec,
            mean_io_bytes: (self.ios > 0).then(|| self.bytes as f64 / self.ios as f64),
            outstanding_mean: self.iops * latency_ns.mean.unwrap_or(0.0) / 1e9,
            latency_ns,
            service_latency_ns: None,
            lag_ns: None,
            histogram: sparse,
            lag_histogram: None,
        })
    }
}

/// One interval as an agent streams it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireInterval {
    /// 0-based index in the host's measured series.
    pub index: u64,
    /// End of the interval, seconds since the host's measured phase began.
    pub t_s: f64,
    /// Length, seconds.
    pub duration_s: f64,
    /// Reads.
    pub read: WireDir,
    /// Writes.
    pub write: WireDir,
    /// Both.
    pub total: WireDir,
    /// Failed I/Os in the interval, when the agent counts them per interval (None: not
    /// counted; the host's result carries the run's errors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<u64>,
}

impl WireInterval {
    /// From a finished interval of the engine (which must carry histograms to be exact).
    pub fn from_interval(index: u64, i: &Interval) -> WireInterval {
        WireInterval {
            index,
            t_s: i.t_s,
            duration_s: i.duration_s,
            read: WireDir::from_stats(&i.read),
            write: WireDir::from_stats(&i.write),
            total: WireDir::from_stats(&i.total),
            errors: Some(i.errors),
        }
    }

    /// Back to a result interval.
    pub fn to_interval(&self) -> Result<Interval, HistogramError> {
        Ok(Interval {
            t_s: self.t_s,
            duration_s: self.duration_s,
            read: self.read.to_stats()?,
            write: self.write.to_stats()?,
            total: self.total.to_stats()?,
            offered_iops: None,
            backlog_max: None,
            // Not streamed: the host's result carries it.
            host_cpu: None,
            errors: self.errors.unwrap_or(0),
        })
    }
}

/// One interval of a TPC-C run as an agent streams it: whole counts, so a merge sums them
/// exactly (rates are computed from the sums, never averaged).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireTpccInterval {
    /// 0-based index in the host's measured series.
    pub index: u64,
    /// End of the interval, seconds since the host's measured window began.
    pub t_s: f64,
    /// Length, seconds.
    pub duration_s: f64,
    /// New orders in the interval (Σ `d_next_o_id` delta).
    pub new_orders: i64,
    /// Completed transactions per type.
    pub completed: std::collections::BTreeMap<String, u64>,
    /// Latency of every transaction, ns (None: none completed).
    pub latency: Option<WireHistogram>,
    /// Latency of New-Order, ns.
    pub new_order_latency: Option<WireHistogram>,
    /// Transactions failed for good in the interval, when the agent counts them per interval
    /// (None: not counted; the host's result carries the run's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<u64>,
}

impl WireTpccInterval {
    /// From the driver's closed interval.
    pub fn from_closed(index: u64, c: &oio_tpcc::driver::ClosedInterval<'_>) -> WireTpccInterval {
        let wire = |h: &SparseHistogram| (h.count > 0).then(|| WireHistogram::from_sparse(h));
        WireTpccInterval {
            index,
            t_s: c.interval.t_s,
            duration_s: c.interval.duration_s,
            new_orders: c.new_orders,
            completed: c.interval.completed.clone(),
            latency: wire(&c.latency),
            new_order_latency: wire(&c.new_order_latency),
            errors: Some(c.failed),
        }
    }

    /// Transactions completed, all types.
    pub fn transactions(&self) -> u64 {
        self.completed
            .values()
            .fold(0u64, |a, b| a.saturating_add(*b))
    }
}

/// A SQL script run as it travels to an agent: the scripts' texts (not their paths, which
/// the host may not have), defines and options, and this host's database.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WireSqlPlan {
    /// This host's database URL (with its password, as the command line gave it).
    pub db: String,
    /// The scripts as the controller loaded them, with their texts.
    pub script: oio_documents::sql::ScriptRecord,
    /// How the step runs (one worker count; the setup flag says whether this host runs it).
    pub options: oio_documents::sql::SqlOptions,
    /// `--device`: the block device to record (None: the one under the database).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// `--label`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

impl WireSqlPlan {
    /// The runnable plan: the database parsed and the script loaded for its dialect, every
    /// refusal of `oio sql run` made here.
    pub fn plan(&self) -> Result<oio_sql::SqlRun, oio_sql::SqlError> {
        let db: oio_tpcc::DbUrl = self.db.parse().map_err(oio_sql::SqlError::Database)?;
        oio_sql::SqlRun::from_record(db, &self.script, self.options.clone(), self.label.clone())
    }
}

/// One interval of a SQL script run as an agent streams it: whole counts, so a merge sums
/// them exactly, and the histogram of its committed runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireSqlInterval {
    /// 0-based index in the host's measured series.
    pub index: u64,
    /// End of the interval, seconds since the host's measured window began.
    pub t_s: f64,
    /// Length, seconds.
    pub duration_s: f64,
    /// Committed runs per transaction.
    pub committed: std::collections::BTreeMap<String, u64>,
    /// Runs that failed for good.
    pub failed: u64,
    /// Tries run again.
    pub retried: u64,
    /// Latency of every committed run, ns (None: none committed).
    pub latency: Option<WireHistogram>,
}

impl WireSqlInterval {
    /// Committed runs, all transactions.
    pub fn committed_all(&self) -> u64 {
        self.committed
            .values()
            .fold(0u64, |a, b| a.saturating_add(*b))
    }
}

/// What `check` found about one target.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetCheck {
    /// Path as bound.
    pub path: String,
    /// Role ("" default).
    pub role: String,
    /// `ok` (usable as the plan asks), `create` (does not exist; `prepare` would create it) or
    /// `refused` (with the reason).
    pub status: String,
    /// Facts or the reason.
    pub detail: String,
}

/// Every message, tagged by `msg`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "msg", rename_all = "snake_case")]
pub enum Message {
    /// Both sides, first.
    Hello(Hello),
    /// Controller: a clock probe.
    Time {
        /// Probe number, echoed.
        seq: u32,
    },
    /// Agent: its wall clock when the probe arrived.
    TimeReply {
        /// The probe's number.
        seq: u32,
        /// Agent's CLOCK_REALTIME, ns since 1970.
        agent_ns: i64,
    },
    /// Controller: check the plan's targets without creating or writing anything.
    Check {
        /// The plan (this host's bindings).
        plan: Box<RunPlan>,
    },
    /// Agent: the targets' state.
    Checked {
        /// One per bound path.
        targets: Vec<TargetCheck>,
    },
    /// Controller: open or create the targets and get ready; run nothing.
    Prepare {
        /// The plan (this host's bindings).
        plan: Box<RunPlan>,
    },
    /// Agent: prepared.
    Ready {
        /// The targets, as the result will describe them.
        targets: Vec<TargetInfo>,
        /// Each target as this host's kernel knows it, in the order of `targets` (see
        /// [`target_identity`]): the controller refuses two hosts on one target.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        identities: Vec<String>,
    },
    /// Controller: open this TPC-C plan's database and check its build; run nothing.
    PrepareTpcc {
        /// The plan (this host's database URL).
        plan: Box<oio_tpcc::TpccRunPlan>,
    },
    /// Agent: the database is built and answers.
    ReadyTpcc {
        /// The database, password redacted.
        db: String,
        /// Its warehouses.
        warehouses: u32,
        /// The database as its server names it (see
        /// [`oio_documents::fleet::FleetTpccHost::db_identity`]); None when it could not be
        /// read.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        identity: Option<String>,
    },
    /// Agent: one finished TPC-C interval.
    TpccInterval(Box<WireTpccInterval>),
    /// Agent: the host's TPC-C result (its last message).
    TpccResult {
        /// The full `oio.tpcc` document.
        result: Box<oio_tpcc::TpccResult>,
    },
    /// Controller: load this SQL script run, open its database and run the script's setup
    /// (when the plan asks); run no transaction.
    PrepareSql {
        /// The plan (this host's database URL).
        plan: Box<WireSqlPlan>,
    },
    /// Agent: the script loaded, the database answers, the setup ran.
    ReadySql {
        /// The database, password redacted.
        db: String,
        /// The database as its server names it; None when it could not be read.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        identity: Option<String>,
    },
    /// Agent: one finished SQL interval.
    SqlInterval(Box<WireSqlInterval>),
    /// Agent: the host's SQL result (its last message).
    SqlResult {
        /// The full `oio.sql` document.
        result: Box<oio_documents::sql::SqlResult>,
    },
    /// Controller: every host is ready and accepted; open the targets for the run (as the
    /// engine does, its locks taken) and wait for `go` (I/O plans; since protocol 8).
    Arm,
    /// Agent: the targets are open and the workers' inputs made: `go` starts them at once.
    Armed,
    /// Controller: start at this instant of the agent's clock.
    Go {
        /// Agent's CLOCK_REALTIME, ns since 1970.
        start_agent_ns: i64,
    },
    /// Agent: workers started (TPC-C: the measured window opened).
    Started {
        /// Agent's CLOCK_REALTIME when its workers had started, ns since 1970.
        agent_ns: i64,
    },
    /// Agent: one finished interval.
    Interval(Box<WireInterval>),
    /// Agent: the host's result (its last message).
    Result {
        /// The full `oio.run` document.
        result: Box<RunResult>,
        /// Its targets' block devices from /proc/diskstats over the measured window (since
        /// protocol 4).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        devices: Option<Box<oio_core::observation::Observation>>,
        /// The run's `--hdr-log`/`--lat-log` files, for the controller to keep (since
        /// protocol 4; at most [`MAX_LOG_BYTES`] in all).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        logs: Vec<LogFile>,
    },
    /// Controller: still here (about every second from `go` on). The first arms the agent's
    /// watchdog: an agent that hears nothing from its controller for `watchdog_ms` (its link
    /// dead without closing, the controller stopped) stops its I/O and says why in its result.
    Beat {
        /// Silence after which the agent stops, ms.
        watchdog_ms: u64,
    },
    /// Controller: stop at once (the agent then sends its partial result).
    Stop {
        /// Why, for the agent's log.
        reason: String,
    },
    /// Agent: alive, and how far its current phase got (a keepalive after a second of
    /// saying nothing).
    Progress {
        /// `prepare`, `check`, `prepare_tpcc`, `waiting`, `arm`, `run`.
        phase: String,
        /// Steps done in the phase so far (bytes filled, targets checked): it moves while
        /// the work does.
        done: u64,
        /// Bytes to fill in the phase, when known (0: not counted).
        total: u64,
        /// What it is doing, for messages ("filling /data/oio.dat").
        detail: String,
    },
    /// Either side: a refusal or failure; the sender stops.
    Error {
        /// `hello`, `prepare`, `run`, `protocol`.
        phase: String,
        /// What went wrong, in words.
        message: String,
    },
}

impl Message {
    /// The message's tag, for errors.
    pub fn name(&self) -> &'static str {
        match self {
            Message::Hello(_) => "hello",
            Message::Time { .. } => "time",
            Message::TimeReply { .. } => "time_reply",
            Message::Check { .. } => "check",
            Message::PrepareTpcc { .. } => "prepare_tpcc",
            Message::ReadyTpcc { .. } => "ready_tpcc",
            Message::TpccInterval(_) => "tpcc_interval",
            Message::TpccResult { .. } => "tpcc_result",
            Message::PrepareSql { .. } => "prepare_sql",
            Message::ReadySql { .. } => "ready_sql",
            Message::SqlInterval(_) => "sql_interval",
            Message::SqlResult { .. } => "sql_result",
            Message::Checked { .. } => "checked",
            Message::Prepare { .. } => "prepare",
            Message::Ready { .. } => "ready",
            Message::Arm => "arm",
            Message::Armed => "armed",
            Message::Go { .. } => "go",
            Message::Started { .. } => "started",
            Message::Interval(_) => "interval",
            Message::Result { .. } => "result",
            Message::Stop { .. } => "stop",
            Message::Beat { .. } => "beat",
            Message::Progress { .. } => "progress",
            Message::Error { .. } => "error",
        }
    }
}

/// A line that is not a message.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The pipe failed.
    #[error("reading: {0}")]
    Io(#[from] std::io::Error),
    /// Longer than the reader's limit ([`MAX_LINE`] by default).
    #[error("a line longer than {0} bytes")]
    TooLong(usize),
    /// Not a message of this protocol.
    #[error("line {line}: not a message of oio's agent protocol ({error}): {start}")]
    Bad {
        /// 1-based line number on this pipe.
        line: u64,
        /// What the parser said.
        error: String,
        /// The line's first characters.
        start: String,
    },
}

/// Writes one message as one line and flushes.
pub fn send(w: &mut dyn Write, m: &Message) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(m).map_err(std::io::Error::other)?;
    line.push(b'\n');
    w.write_all(&line)?;
    w.flush()
}

/// Reads messages line by line with a bound on each line.
pub struct Reader<R> {
    inner: R,
    line: u64,
    buf: Vec<u8>,
    limit: usize,
    last_len: usize,
}

impl<R: BufRead> Reader<R> {
    /// Wraps a buffered pipe.
    pub fn new(inner: R) -> Self {
        Self::with_limit(inner, MAX_LINE)
    }

    /// Wraps a buffered pipe, accepting lines of at most `limit` bytes.
    pub fn with_limit(inner: R, limit: usize) -> Self {
        Reader {
            inner,
            line: 0,
            buf: Vec::new(),
            limit,
            last_len: 0,
        }
    }

    /// Bytes of the last line read.
    pub fn last_len(&self) -> usize {
        self.last_len
    }

    /// The next message; `Ok(None)` at end of file. Empty lines are skipped.
    pub fn next_message(&mut self) -> Result<Option<Message>, ReadError> {
        loop {
            self.buf.clear();
            let got = self.read_line()?;
            if !got {
                return Ok(None);
            }
            self.line += 1;
            self.last_len = self.buf.len();
            let text = self.buf.trim_ascii();
            if text.is_empty() {
                continue;
            }
            return serde_json::from_slice(text).map(Some).map_err(|e| {
                let s = String::from_utf8_lossy(&text[..text.len().min(80)]).into_owned();
                ReadError::Bad {
                    line: self.line,
                    error: e.to_string(),
                    start: s,
                }
            });
        }
    }

    /// Reads up to and including '\n' into `buf`, at most MAX_LINE bytes; false at EOF with
    /// nothing read.
    fn read_line(&mut self) -> Result<bool, ReadError> {
        loop {
            let avail = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            if avail.is_empty() {
                return Ok(!self.buf.is_empty());
            }
            let (take, done) = match avail.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (avail.len(), false),
            };
            if self.buf.len() + take > self.limit {
                return Err(ReadError::TooLong(self.limit));
            }
            self.buf.extend_from_slice(&avail[..take]);
            self.inner.consume(take);
            if done {
                return Ok(true);
            }
        }
    }
}

/// CLOCK_REALTIME in ns since 1970 (negative before it).
pub fn now_ns() -> i64 {
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_nanos()).unwrap_or(i64::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oio_core::histogram::LatencyHistogram;

    fn hist(values: &[u64]) -> LatencyHistogram {
        let mut h = LatencyHistogram::new();
        for &v in values {
            h.record(v);
        }
        h
    }

    #[test]
    fn a_histogram_crosses_the_wire_bucket_for_bucket() {
        let h = hist(&[
            1,
            999,
            1000,
            1001,
            55_555,
            7_000_000,
            7_000_001,
            3_000_000_000,
        ]);
        let sparse = h.to_sparse();
        let wire = WireHistogram::from_sparse(&sparse);
        let line = serde_json::to_string(&wire).unwrap();
        let back: WireHistogram = serde_json::from_str(&line).unwrap();
        assert_eq!(back.to_sparse().unwrap(), sparse);
    }

    #[test]
    fn a_foreign_layout_or_a_lying_count_is_refused() {
        use base64::Engine as _;
        use hdrhistogram::serialization::Serializer as _;
        let mut other = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 1000, 3).unwrap();
        other.record(5).unwrap();
        let mut bytes = Vec::new();
        hdrhistogram::serialization::V2Serializer::new()
            .serialize(&other, &mut bytes)
            .unwrap();
        let w = WireHistogram {
            v2: base64::engine::general_purpose::STANDARD.encode(&bytes),
            count: 1,
            sum: 5.0,
            min: Some(5),
            max: Some(5),
        };
        let e = w.to_sparse().unwrap_err().to_string();
        assert!(e.contains("3 digits"), "{e}");
        let mut lying = WireHistogram::from_sparse(&hist(&[10, 20]).to_sparse());
        lying.count = 3;
        let e = lying.to_sparse().unwrap_err().to_string();
        assert!(e.contains("hold 2 samples"), "{e}");
        // Extremes that contradict each other (found by bench/fuzz: a panic in the quantiles).
        let mut upside_down = WireHistogram::from_sparse(&hist(&[10, 20]).to_sparse());
        (upside_down.min, upside_down.max) = (Some(u64::MAX), Some(9_000_000_000));
        let e = upside_down.to_sparse().unwrap_err().to_string();
        assert!(e.contains("above its maximum"), "{e}");
        lying.v2 = "%%%".into();
        assert!(lying.to_sparse().is_err());
        // A header claiming 2 GiB of payload is refused before the deserialiser sizes a
        // buffer from it (it allocated 3 GB for a 579-byte line), and so is a compressed one.
        let good = WireHistogram::from_sparse(&hist(&[10]).to_sparse());
        let mut b = base64::engine::general_purpose::STANDARD
            .decode(&good.v2)
            .unwrap();
        b[4..8].copy_from_slice(&(2u32 << 30).to_be_bytes());
        let huge = WireHistogram {
            v2: base64::engine::general_purpose::STANDARD.encode(&b),
            ..good.clone()
        };
        let e = huge.to_sparse().unwrap_err().to_string();
        assert!(e.contains("bytes of payload"), "{e}");
        b[0..4].copy_from_slice(&(0x1c84_9304u32 | 0x10).to_be_bytes());
        let packed = WireHistogram {
            v2: base64::engine::general_purpose::STANDARD.encode(&b),
            ..good
        };
        let e = packed.to_sparse().unwrap_err().to_string();
        assert!(e.contains("not an uncompressed"), "{e}");
    }

    #[test]
    fn messages_are_one_tagged_line_each() {
        let mut out = Vec::new();
        send(&mut out, &Message::Time { seq: 3 }).unwrap();
        send(&mut out, &Message::Go { start_agent_ns: -5 }).unwrap();
        assert_eq!(
            String::from_utf8(out.clone()).unwrap(),
            "{\"msg\":\"time\",\"seq\":3}\n{\"msg\":\"go\",\"start_agent_ns\":-5}\n"
        );
        out.extend_from_slice(b"\n{\"msg\":\"warp\"}\n");
        let mut r = Reader::new(out.as_slice());
        assert!(matches!(
            r.next_message(),
            Ok(Some(Message::Time { seq: 3 }))
        ));
        assert!(matches!(
            r.next_message(),
            Ok(Some(Message::Go { start_agent_ns: -5 }))
        ));
        match r.next_message() {
            Err(ReadError::Bad { line, start, .. }) => {
                assert_eq!(line, 4);
                assert!(start.contains("warp"));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(r.next_message(), Ok(None)));
    }

    #[test]
    fn an_endless_line_is_refused_without_reading_it_all() {
        let endless = std::io::repeat(b'x');
        let mut r = Reader::with_limit(std::io::BufReader::new(endless), 1 << 20);
        assert!(matches!(r.next_message(), Err(ReadError::TooLong(_))));
    }

    #[test]
    fn hello_refuses_another_protocol_version_or_layout() {
        let me = Hello::current("0.1.0 (commit abc)");
        let mut peer = me.clone();
        assert!(me.check_agent(&peer).is_ok());
        peer.protocol = PROTOCOL_VERSION + 1;
        let e = me.check_agent(&peer).unwrap_err().to_string();
        assert!(
            e.contains(&format!("agent protocol version {}", PROTOCOL_VERSION + 1))
                && e.contains("install the same oio"),
            "{e}"
        );
        // An agent of protocol 7 knows no `arm`: refused by its version, by name.
        let mut older = me.clone();
        older.protocol = 7;
        let e = me.check_agent(&older).unwrap_err().to_string();
        assert!(
            e.contains("(agent protocol version 7), this controller runs oio 0.1.0 (commit abc) (protocol version 8)"),
            "{e}"
        );
        // Either side refuses in the same words, from the controller's side.
        let mut peer = me.clone();
        peer.oio_version = "0.2.0 (commit def)".into();
        let e = me.check_agent(&peer).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "it runs oio 0.2.0 (commit def), this controller runs oio 0.1.0 (commit abc): "
            ),
            "{e}"
        );
        assert_eq!(peer.check_controller(&me).unwrap_err().to_string(), e);
        let mut peer = me.clone();
        peer.histogram.significant_digits = 3;
        assert!(me
            .check_agent(&peer)
            .unwrap_err()
            .to_string()
            .contains("histogram layout"));
        // The refusal is a message the other side can parse.
        let line = serde_json::to_string(&Message::Hello(me)).unwrap();
        assert!(line.starts_with("{\"msg\":\"hello\""), "{line}");
    }

    #[test]
    fn an_interval_round_trips_with_percentiles_from_its_buckets() {
        let h = hist(&[100, 200, 300, 400_000]);
        let d = DirStats::from_parts(4, 4 * 4096, &h, 1.0, true);
        let i = Interval {
            t_s: 1.0,
            duration_s: 1.0,
            read: d.clone(),
            write: DirStats::default(),
            total: d.clone(),
            offered_iops: None,
            backlog_max: None,
            host_cpu: None,
            errors: 0,
        };
        let w = WireInterval::from_interval(0, &i);
        let json = serde_json::to_string(&Message::Interval(Box::new(w))).unwrap();
        let Message::Interval(back) = serde_json::from_str(&json).unwrap() else {
            panic!("not an interval")
        };
        let back = back.to_interval().unwrap();
        assert_eq!(back.total.histogram, d.histogram);
        assert_eq!(back.total.latency_ns, d.latency_ns);
        assert_eq!(back.write.ios, 0);
        assert!(back.write.histogram.is_none());
    }
}
