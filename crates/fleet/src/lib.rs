//! oio on many hosts at once.
//!
//! A controller starts one `oio agent --stdio` per host through a launcher (by default the
//! system's `ssh`, so keys, agents, `~/.ssh/config`, jump hosts and ControlMaster all work;
//! or `kubectl exec -i`, `docker exec -i`, `ip netns exec`: anything that gives a stdio pipe).
//! oio adds no daemon, port or authentication of its own; it adds one plan for every host, a
//! start barrier in each agent's own clock, and exact merging of the hosts' histograms.
//!
//! - [`protocol`]: the line-delimited JSON messages, histograms as hdrhistogram V2.
//! - [`clock`]: clock-offset estimation (the probe with the shortest round trip).
//! - [`agent`]: the agent's side of a session.
//! - [`controller`]: launching, preparing, starting and collecting many hosts.
//! - [`merge`]: the merged result (bucket-by-bucket sums, never averaged percentiles).
//! - [`tpcc`]: TPC-C on many hosts, and its merged result.
//! - [`sql`]: users' own SQL transactions on many hosts, and their merged `oio.sql` result.
//! - [`fio`]: importing fio's own client/server results.
//! - [`install`]: copying oio to hosts through the launcher's transport.
//! - [`launch`]: a shell script run on a host through that transport; the guard on an
//!   installed agent.
//! - [`inventory`]: hosts, their targets and launchers from a TOML file.
//! - [`scale`]: host ladders, scaling efficiency and where it falls below a threshold.
//! - [`limits`]: the open files a fleet needs (the soft limit raised to the hard one).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod agent;
pub mod clock;
pub mod controller;
pub mod fio;
pub mod install;
pub mod inventory;
pub mod launch;
pub mod limits;
pub mod merge;
pub mod protocol;
pub mod scale;
pub mod sql;
pub mod tpcc;

/// Runs one plan with the engine. The one place the fleet calls the measuring library, so it
/// can be pointed at the experiments library's plans without touching the protocol.
pub fn execute(
    plan: &oio_engine::RunPlan,
    observer: &mut dyn oio_engine::RunObserver,
    stop: &std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Result<oio_core::result::RunResult, oio_engine::RunError> {
    oio_engine::run(
        plan,
        observer,
        &oio_core::Cancel::from_flag(std::sync::Arc::clone(stop)),
    )
}
