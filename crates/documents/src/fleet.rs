//! The merged results of the fleet: `oio.fleet` (`oio fleet run`) and `oio.fleet.tpcc`
//! (`oio fleet tpcc run`).
//!
//! `oio-fleet` merges hosts into these and re-exports them from its `merge`, `tpcc` and
//! `controller` modules; how the merging is done (histograms summed bucket by bucket, rates
//! over each host's own window) is described there.

use oio_core::histogram::LatencySummary;
use oio_core::result::{Interval, Summary};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The span a merged result's rates cover, and how they were made.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Window {
    /// The fleet's measured window, seconds: the longest of the hosts' own windows (each
    /// from its own start of measuring; they start together within the start skew).
    pub duration_s: f64,
    /// How the merged rates were made over it, in words.
    pub basis: String,
    /// When a host was lost: how long every host delivered intervals, seconds from the start
    /// of the window (through the last interval that every host sent).
    pub all_hosts_s: Option<f64>,
    /// The merged rate over that stretch, every host in it (IOPS; NOPM for TPC-C).
    pub all_hosts_rate: Option<f64>,
}

/// A host that stopped answering during the run. It is dated from its last message: it was
/// alive then, and went silent before its next message was due (one interval later while
/// measuring). When the controller noticed can be much later (a cut link is noticed only
/// when the run's grace period ends).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Lost {
    /// Seconds after the common start when its last message arrived (negative: before it).
    pub at_s: f64,
    /// The same instant, RFC 3339 UTC (controller's clock).
    pub at: String,
    /// What its last message was ("interval 3, t = 3.000 s", "started", "ready").
    #[serde(default)]
    pub last_message: String,
    /// Seconds after the common start when the controller noticed the loss.
    #[serde(default)]
    pub noticed_s: f64,
    /// What happened.
    pub reason: String,
}

impl Lost {
    /// One sentence for warnings: when it was last heard from, when that was noticed, why.
    pub fn describe(&self, host: &str) -> String {
        format!(
            "host {host} was lost: its last message ({}) came {:.3} s after the start ({}); the loss was noticed {:.3} s after the start: {}",
            if self.last_message.is_empty() {
                "?"
            } else {
                &self.last_message
            },
            self.at_s,
            self.at,
            self.noticed_s,
            self.reason
        )
    }
}

/// Schema name of merged fleet results.
pub const FLEET_SCHEMA: &str = oio_core::document::Kind::Fleet.schema();
/// Its version.
pub const FLEET_SCHEMA_VERSION: u32 = oio_core::document::Kind::Fleet.version();

/// One host in the merged result.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct FleetHost {
    /// Its name.
    pub host: String,
    /// The boot id of the kernel its agent ran on (from its targets' identities): hosts with
    /// one are one machine's namespaces or containers, so a device they name alike is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
    /// The launcher's command line.
    pub launcher: Vec<String>,
    /// Its own result file, when it was written.
    pub result_file: Option<String>,
    /// Agent's clock minus the controller's, ns.
    pub clock_offset_ns: i64,
    /// Round trip of the clock probe kept, ns; offsets and skews are within ± half of it.
    pub clock_rtt_ns: i64,
    /// When its workers started against the common start instant, ns (positive: late).
    pub start_skew_ns: Option<i64>,
    /// "completed", "interrupted", "errors", "lost" or "faulty".
    pub status: String,
    /// Its total I/Os per second over its own window (`window_s`).
    pub iops: f64,
    /// Its I/Os (a lost host: up to its last interval).
    #[serde(default)]
    pub ios: u64,
    /// The seconds its own figures cover: its measured window, or for a lost host the end of
    /// its last interval.
    #[serde(default)]
    pub window_s: f64,
    /// Intervals it contributed.
    pub intervals: usize,
    /// Set when it was lost.
    pub lost: Option<Lost>,
    /// Set when what it sent was refused (status "faulty"): what it sent and why. Its data is
    /// left out of every merged figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faulty: Option<String>,
    /// Its workload group (empty in results of one group).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// The name of the workload it ran.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub workload: String,
    /// Reads in percent of its I/Os (None without I/Os).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_share_pct: Option<f64>,
    /// Its targets' block devices over the measured window (from /proc/diskstats).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<HostDevice>,
    /// Its `--hdr-log`/`--lat-log` files as collected to the controller.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub logs: Vec<String>,
    /// Its targets as it used them (role and paths).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bindings: Vec<oio_core::target::TargetBinding>,
}

/// One of a host's devices over the measured window, from /proc/diskstats as `iostat -x`
/// computes it (counts over the whole window, not a mean of interval means).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct HostDevice {
    /// Kernel name (`sda`, `nvme0n1`, `vda`).
    pub name: String,
    /// Reads per second the device completed.
    pub read_iops: f64,
    /// Writes per second the device completed.
    pub write_iops: f64,
    /// Bytes per second, both directions.
    pub bytes_per_sec: f64,
    /// Mean time a read took in the device's queue and service (r_await), ms.
    pub read_await_ms: Option<f64>,
    /// Mean time a write took (w_await), ms.
    pub write_await_ms: Option<f64>,
    /// I/Os queued or in service on average (aqu-sz).
    pub queue_mean: Option<f64>,
    /// Percent of the time the device had I/O in flight (%util).
    pub util_pct: Option<f64>,
    /// Intervals recorded in the measured window.
    pub intervals: usize,
    /// Those intervals (`t_s` from the start of the measured window).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<oio_core::observation::DeviceInterval>,
}

/// The hosts of one workload group, merged as the total is (over the fleet window).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct FleetGroup {
    /// Its name (`(command line)` for the hosts on the command line's workload).
    pub name: String,
    /// The workload its hosts ran.
    pub workload: String,
    /// Its hosts.
    pub hosts: Vec<String>,
    /// Sums over its hosts, rates over the fleet window; histograms summed bucket by bucket.
    pub summary: Summary,
}

/// What the controller cost.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct ControllerCost {
    /// CPU seconds (user + system) of the controller process from `go` to the last result.
    pub cpu_s: f64,
    /// That per host and per merged interval, microseconds.
    pub cpu_us_per_host_interval: f64,
    /// Time to build the merged result, ms.
    pub merge_ms: f64,
}

/// The merged result of a fleet run: schema `oio.fleet`.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct FleetResult {
    /// Schema, versions, time, host (the controller's), stop reason, warnings, plan.
    #[serde(flatten)]
    pub envelope: oio_core::document::Envelope,
    /// The common start instant, RFC 3339 UTC with ms (controller's clock).
    pub start: String,
    /// Time between sending `go` and the start instant, ns.
    pub start_lead_ns: u64,
    /// Every host.
    pub hosts: Vec<FleetHost>,
    /// The window the merged rates cover, and how they were made.
    #[serde(default)]
    pub window: Window,
    /// Sums over the hosts, rates over `window` (see there); histograms summed bucket by
    /// bucket.
    pub summary: Summary,
    /// Which host's device limited the fleet, in words (see `oio_fleet::merge::device_verdict`); None when no
    /// host recorded a device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub devices: Option<String>,
    /// Per workload group, when hosts ran different workloads (the total is `summary`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<FleetGroup>,
    /// Per interval, summed over the hosts that delivered that interval.
    pub intervals: Vec<Interval>,
    /// Hosts in each merged interval.
    pub hosts_per_interval: Vec<usize>,
    /// Hosts lost during the run, with when and why.
    pub lost: Vec<String>,
    /// The controller's own cost.
    pub controller: ControllerCost,
}

/// Schema name of merged fleet TPC-C results.
pub const FLEET_TPCC_SCHEMA: &str = oio_core::document::Kind::FleetTpcc.schema();
/// Its version.
pub const FLEET_TPCC_SCHEMA_VERSION: u32 = oio_core::document::Kind::FleetTpcc.version();

/// One host in the merged TPC-C result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FleetTpccHost {
    /// Its name.
    pub host: String,
    /// The launcher's command line.
    pub launcher: Vec<String>,
    /// Its database, password redacted.
    pub db: String,
    /// The database as its server names it (PostgreSQL `postgres:SYSTEM_IDENTIFIER/DB_OID`,
    /// MariaDB/MySQL `mysql:SERVER/SCHEMA`, SQLite `sqlite:BOOT_ID/DEVICE/INODE` of the
    /// file), as the host's agent read it: hosts with the same identity drove one database.
    /// None when it could not be read (then the URL is compared instead, and a note says so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_identity: Option<String>,
    /// Warehouses in it.
    pub warehouses: u32,
    /// Workers (connections) it ran.
    #[serde(default)]
    pub workers: u32,
    /// Its own `oio.tpcc` result file, when it was written.
    pub result_file: Option<String>,
    /// Agent's clock minus the controller's, ns.
    pub clock_offset_ns: i64,
    /// Round trip of the clock probe kept, ns (offsets and skews are within ± half of it).
    pub clock_rtt_ns: i64,
    /// When its measured window opened (after connecting and the ramp) against the common
    /// start instant plus the ramp, ns (positive: late).
    pub start_skew_ns: Option<i64>,
    /// "completed", "interrupted", "errors", "lost" or "faulty".
    pub status: String,
    /// New orders in its window (its own result; else the sum of what it streamed).
    pub new_orders: u64,
    /// Its NOPM (new orders per minute over its own window, `window_s`).
    pub nopm: f64,
    /// The seconds its own figures cover: its measured window, or for a lost host the end of
    /// its last interval.
    #[serde(default)]
    pub window_s: f64,
    /// Its TPM from the database's counter; a host lost before its result (the counter is
    /// read as its window closes): its driver-counted TPM instead.
    pub tpm: f64,
    /// Its driver-counted transactions per minute.
    pub tpm_client: f64,
    /// New-Orders its own driver committed, per minute of its window: its part of a database
    /// it shared with other hosts (its `nopm` counts the whole database's).
    #[serde(default)]
    pub client_nopm: f64,
    /// Intervals it streamed.
    pub intervals: usize,
    /// Set when it was lost.
    pub lost: Option<Lost>,
    /// Set when what it sent was refused (status "faulty"): what it sent and why. Its counts
    /// are left out of every merged figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faulty: Option<String>,
}

/// Sums over the hosts, rates over the fleet's window (see [`Window`]).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FleetTpccSummary {
    /// Σ of the hosts' new orders (a database several hosts drove counted once).
    pub new_orders: u64,
    /// Σ of the hosts' NOPM (a database several hosts drove counted once); a host cut short
    /// adds its new orders per minute of the window.
    pub nopm: f64,
    /// Σ of the hosts' TPM (database counters; a database several hosts drove counted once);
    /// a host cut short adds its weighted by the share of the window it covered, a lost host
    /// (its counter never read) its driver-counted transactions over the window.
    pub tpm: f64,
    /// Σ of the hosts' driver-counted TPM, cut-short hosts as for `nopm`.
    pub tpm_client: f64,
    /// Latency of every transaction on every host, ns (histograms summed).
    pub latency_ns: LatencySummary,
    /// New-Order latency on every host, ns.
    pub new_order_latency_ns: LatencySummary,
    /// Per transaction type, latency over every host, ns.
    pub latency_by_type_ns: BTreeMap<String, LatencySummary>,
}

/// One merged interval (by index: the hosts started together, so interval i of each host
/// covers the same stretch of time within the start skew).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FleetTpccInterval {
    /// End of the interval, seconds since the start (the longest of the hosts').
    pub t_s: f64,
    /// Hosts that delivered this interval.
    pub hosts: usize,
    /// Σ new orders.
    pub new_orders: u64,
    /// Σ of the hosts' NOPM of this interval.
    pub nopm: f64,
    /// Σ completed transactions.
    pub transactions: u64,
    /// Σ of the hosts' driver-counted TPM of this interval.
    pub tpm_client: f64,
    /// The host with the lowest NOPM in this interval.
    pub slowest_host: String,
    /// Latency of every transaction, ns (histograms summed).
    pub latency_ns: LatencySummary,
    /// New-Order latency, ns.
    pub new_order_latency_ns: LatencySummary,
}

/// Scaling against one host.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Scaling {
    /// The one-host `oio.tpcc` result compared against.
    pub baseline_file: String,
    /// Its NOPM.
    pub baseline_nopm: f64,
    /// Hosts the run started with (lost ones included: they count against the efficiency).
    pub hosts: usize,
    /// Of those, hosts lost during the run.
    #[serde(default)]
    pub hosts_lost: usize,
    /// merged NOPM ÷ (hosts × baseline NOPM): 1.0 is linear scaling.
    pub efficiency: f64,
    /// Why the efficiency needs a second look (above 1: superlinear), when it does.
    #[serde(default)]
    pub flag: Option<String>,
}

/// The merged result of `oio fleet tpcc run`: schema `oio.fleet.tpcc`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FleetTpccResult {
    /// Schema, versions, time, the controller's host, stop reason, warnings, plan.
    #[serde(flatten)]
    pub envelope: oio_core::document::Envelope,
    /// The common start instant, RFC 3339 UTC with ms (controller's clock).
    pub start: String,
    /// Every host.
    pub hosts: Vec<FleetTpccHost>,
    /// The window the merged rates cover, and how they were made.
    #[serde(default)]
    pub window: Window,
    /// Sums over the hosts.
    pub summary: FleetTpccSummary,
    /// Per interval, summed over the hosts that delivered it.
    pub intervals: Vec<FleetTpccInterval>,
    /// Against a one-host result, when one was given.
    pub scaling: Option<Scaling>,
    /// Databases that more than one host drove: their NOPM and TPM counted once, from one
    /// reading of the database, beside the sum of what the hosts' drivers committed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shared_databases: Vec<SharedDatabase>,
    /// Hosts lost during the run, with when and why.
    pub lost: Vec<String>,
    /// What these numbers cannot tell.
    pub notes: Vec<String>,
}

/// One database that several hosts of a fleet TPC-C run drove at once.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SharedDatabase {
    /// Its identity (see [`FleetTpccHost::db_identity`]), or its URL when the server could
    /// not be asked.
    pub identity: String,
    /// The hosts that drove it.
    pub hosts: Vec<String>,
    /// The host whose reading of the database counts (it ran through its window).
    pub reading_host: String,
    /// New orders in the database over that host's window (Δ Σ `d_next_o_id`).
    pub new_orders: u64,
    /// The database's NOPM: `new_orders` per minute of the reading host's window.
    pub nopm: f64,
    /// The database's TPM from its own counter, read by that host.
    pub tpm: f64,
    /// New-Orders the hosts' drivers committed, summed.
    pub client_new_orders: u64,
    /// Σ of the hosts' driver-committed New-Orders per minute of their own windows.
    pub client_nopm: f64,
    /// How far apart `nopm` and `client_nopm` may be, NOPM: what the hosts' windows not
    /// covering each other exactly (their start skew and one interval's tail) can explain.
    pub tolerance_nopm: f64,
    /// Whether they agree within `tolerance_nopm` (false: other clients on the database, or
    /// a host's reading is wrong; a warning says which figures differ).
    pub agree: bool,
}

/// One step of a host ladder as measured (`oio fleet scale`, `oio fleet tpcc scale`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Step {
    /// Hosts in the step.
    pub hosts: usize,
    /// Merged rate over the fleet window (IOPS; NOPM for TPC-C).
    pub rate: f64,
    /// The merged rate of each full-length interval.
    pub interval_rates: Vec<f64>,
    /// p99 latency from the merged histogram, ns.
    pub p99_ns: Option<u64>,
    /// Its merged result (the first repeat's).
    pub result_file: String,
    /// False when a host was lost or stopped on errors (the step does not count).
    pub complete: bool,
    /// With repeats (`--repeat N`): each repeat's merged rate, in the order run; `rate` is
    /// their mean and the step's noise their spread (empty: one run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repeat_rates: Vec<f64>,
    /// With repeats: each repeat's merged result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub result_files: Vec<String>,
}

/// One step with its efficiency.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Scaled {
    /// The step.
    #[serde(flatten)]
    pub step: Step,
    /// Its rate per host.
    pub per_host: f64,
    /// Its relative standard error: from its repeats' rates when it ran more than once, else
    /// from its intervals (None: fewer than 3 intervals).
    pub noise: Option<f64>,
    /// Efficiency against the first step (None when it cannot be computed).
    pub efficiency: Option<f64>,
    /// ± this around the efficiency (two standard errors).
    pub margin: Option<f64>,
    /// Why an efficiency above 1 is not believed as better-than-linear scaling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flag: Option<String>,
}

/// A host ladder and what it says (`oio-fleet`'s `scale` module makes it).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Ladder {
    /// The threshold efficiency.
    pub threshold: f64,
    /// Every step, in order.
    pub steps: Vec<Scaled>,
    /// The first step whose efficiency is below the threshold beyond its margin.
    pub below_at: Option<usize>,
    /// Steps before it whose margin straddles the threshold.
    pub undecided_at: Vec<usize>,
    /// The verdict in words.
    pub verdict: String,
}

/// Schema of `oio fleet scale`'s document.
pub const SCALE_SCHEMA: &str = oio_core::document::Kind::FleetScale.schema();
/// Schema of `oio fleet tpcc scale`'s document.
pub const TPCC_SCALE_SCHEMA: &str = oio_core::document::Kind::FleetTpccScale.schema();

/// A host ladder's document as read back (`oio.fleet.scale` or `oio.fleet.tpcc.scale`, each
/// `scale.json` in its ladder's directory).
#[derive(Clone, Debug, Deserialize)]
pub struct LadderDoc {
    /// The envelope.
    #[serde(flatten)]
    pub envelope: oio_core::document::Envelope,
    /// The workload climbed (an I/O ladder).
    #[serde(default)]
    pub workload: Option<String>,
    /// Workers (connections) on each host (a TPC-C ladder).
    #[serde(default)]
    pub workers: Option<u32>,
    /// What the rates are ("NOPM"); absent on an I/O ladder, whose rates are IOPS.
    #[serde(default)]
    pub unit: Option<String>,
    /// The steps and the verdict.
    #[serde(flatten)]
    pub ladder: Ladder,
}

impl LadderDoc {
    /// The unit of the steps' rates.
    pub fn unit(&self) -> &str {
        self.unit.as_deref().unwrap_or("IOPS")
    }
}
