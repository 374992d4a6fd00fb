//! Integration tests of the oio binary, one module per area.

// Hostile and extreme input: bounds on every number, no panic, no hang, no allocation bomb.
mod bounds;
// `oio blend`: the I/O blender.
mod blend;
// Shared helpers: the binary, temp dirs, JSON access.
mod common;
// The words and conventions a user meets: help snapshots, completions, man, --quiet, --version.
mod conventions;
// Data patterns: incompressible and unique by default, compressibility and duplication on demand.
mod data;
// Open loop: offered rates, bursts, coordinated omission.
mod openloop;
// Memory: every plan's estimate checked before it starts, under an address-space cap.
mod memory;
// `oio run`: workloads, engines, measurement, results, Ctrl-C.
mod run;
// The host's noise: busy neighbours make a run noisy, the virtual clock never.
mod hostnoise;
// Data safety: overwrite refusals, block devices on loop devices.
mod safety;
// `oio export` with hostile names: nothing injected into fio, diskspd or vdbench output.
mod hostile_export;
// Issue 42: exports to fio run the same workload (fio run, imported, compared), and back.
mod roundtrip;
// Issue 37's targets: one descriptor per device (a flipped symlink), loop backing files,
// nothing created in /dev, a killed fill's leftover, a verify journal on a tiny filesystem.
mod targets;
// Block-device signatures by libblkid, cross-checked with wipefs, on loop devices.
mod signatures;
// Issue 37: one trust boundary for what others hand oio (FIFOs, devices, plans, names).
mod boundary;
// Hardening: traps at oio's file names, ownership records, signals, result destinations.
mod hardening;
// Ownership and locks: copies over oio files in the same second, two runs on one target.
mod ownership;
// Verification: self-checking blocks, the journal, `oio verify` after a kill.
mod verify;
// Workload files and profiles: parsing, errors, round trips.
mod workload;
// Workload features: synchronous writes, syncs by time, think time, write patterns, hdr logs.
mod workload_features;
// `oio tpcc`: build, run, check on SQLite and PostgreSQL.
mod tpcc;
// Issue 23: settings in every TPC-C result, runs named by what differs, studies.
mod study;
// Issue 40: users' own transactions (`oio sql run`, `oio sql study`) on the three dialects.
mod sql;
// Issue 41: SQL Server over TDS against a Babelfish server (scripts/test-sqlserver); skipped
// without one.
mod sqlserver;
// `--label` on every command that writes a result, and the names it gives runs.
mod labels;
// `oio record`, `characterize`, `export`, `import`: against iostat and fio.
mod telemetry;
// `oio run --repeat`, `oio compare`: groups, interleaved runs, statistics, JSON contract.
mod compare;
// Experiments as plans: `oio rerun`, Ctrl-C in compare --run, sweep and blend, the compare and
// sweep tables from fixed documents.
mod lab;
// `oio sweep` against a simulated device: every knee rule, flags, --refine, steady state.
mod sweep;
// `oio sweep` and `oio report`: knee, JSON contract, HTML in headless Chromium, SVG/PNG/CSV.
mod report;
// `oio report` with `oio diagnose`'s findings, in headless Chromium.
mod report_diagnosis;
// Issue 40: `oio report` over `oio sql study` and `oio tpcc study` directories, in Chromium.
mod report_study;
// `oio diagnose`: a real sweep, a raw capture, SQLite log-bound vs not.
mod diagnose;
// Every document kind against its JSON Schema; newer versions refused by name.
mod schemas;
// Real inputs: localized perfmon, diskspd/IOMeter/vdbench imports, fio logs against fio JSON.
mod inputs;
// `oio replay`: traces at their times or a fixed depth, against fio replaying the same iolog.
mod replay;
// Every example in README.md, run (or skipped with the reason).
mod readme;
// `oio::run` in this process on the simulated device's virtual clock: exact numbers, no sleep.
mod inprocess;
// Snapshots of the terminal tables of deterministic (virtual-clock) results.
mod tables;
// `oio fleet` over real SSH between network namespaces: start skew, exact merge, refusals, lost hosts.
mod fleet;
// `oio fleet` against stalled, hostile and misconfigured hosts (local agents).
mod fleet_hardening;
// `oio fleet tpcc run` against two PostgreSQL servers in two network namespaces.
mod fleet_tpcc;
// `oio fleet sql run`: users' own transactions on two hosts against PostgreSQL (local agents).
mod fleet_sql;
// Known answers under injected noise on the virtual clock: knees, verdicts and saturation are
// right or undecided, never confidently wrong.
mod conclusions;
