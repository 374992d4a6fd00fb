//! `oio diagnose`'s rules on synthetic data with a known cause: each cause is named, and no
//! rule names a cause that is not there.

use oio_analysis::characterize::{characterize, Options as CharOptions};
use oio_analysis::diagnose::{
    diagnose, samples_from_observation, Confidence, DbFacts, Diagnosis, Inputs, Options, Status,
    WaitShareFact,
};
use oio_analysis::knee::KneeConfidence;
use oio_analysis::stats::SeededRng;
use oio_analysis::sweep::{self, Steady, Sweep, SweepOptions, SweepPoint};
use oio_core::histogram::LatencySummary;
use oio_core::observation::{DeviceInterval, DirCounters, Observation, SourceKind};
use oio_core::result::RunResult;

/// One interval: queue, reads/s, writes/s, mean latency of reads and writes (ns), I/O size.
#[derive(Clone, Copy)]
struct Iv {
    q: f64,
    r: f64,
    w: f64,
    rl: f64,
    wl: f64,
    size: f64,
}

fn observation(ivs: &[Iv]) -> Observation {
    let mut o = Observation::new(SourceKind::Iostat, vec!["synthetic.txt".into()]);
    let d = o.device_mut("sdb");
    for (i, v) in ivs.iter().enumerate() {
        let dir = |iops: f64, lat: f64| DirCounters {
            iops: Some(iops),
            bytes_per_sec: Some(iops * v.size),
            mean_io_bytes: (iops > 0.0).then_some(v.size),
            latency_mean_ns: (iops > 0.0).then_some(lat),
            ..Default::default()
        };
        d.intervals.push(DeviceInterval {
            t_s: (i + 1) as f64,
            duration_s: 1.0,
            read: dir(v.r, v.rl),
            write: dir(v.w, v.wl),
            queue_mean: Some(v.q),
            util_pct: Some(100.0),
            ..Default::default()
        });
    }
    o
}

/// A device of `servers` servers with a fixed `service_ns`: IOPS and latency at queue `q`
/// (Little's law), times `1 + noise` (±3 %).
fn server_model(q: f64, servers: f64, service_ns: f64, rng: &mut SeededRng) -> (f64, f64) {
    let n = 1.0 + (rng.unit() - 0.5) * 0.06;
    let iops = q.min(servers) / service_ns * 1e9 * n;
    let lat = q / iops * 1e9;
    (iops, lat)
}

fn ramp_capture(
    servers: f64,
    service_ns: f64,
    queues: &[f64],
    write_pct: f64,
    size: f64,
) -> Observation {
    let mut rng = SeededRng::new(7);
    let mut ivs = Vec::new();
    for &q in queues {
        for _ in 0..4 {
            let (iops, lat) = server_model(q, servers, service_ns, &mut rng);
            let w = iops * write_pct / 100.0;
            ivs.push(Iv {
                q,
                r: iops - w,
                w,
                rl: lat,
                wl: lat,
                size,
            });
        }
    }
    observation(&ivs)
}

fn run_obs(obs: &Observation, opts: &Options) -> Diagnosis {
    let inputs = Inputs {
        series: samples_from_observation("cap", obs),
        names: vec!["cap".into()],
        ..Default::default()
    };
    diagnose(&inputs, opts)
}

fn status(d: &Diagnosis, rule: &str) -> Status {
    let f: Vec<_> = d.findings.iter().filter(|f| f.rule == rule).collect();
    assert!(!f.is_empty(), "no {rule} finding in {:#?}", d.findings);
    if f.iter().any(|f| f.status == Status::Found) {
        Status::Found
    } else {
        f[0].status
    }
}

fn found<'a>(d: &'a Diagnosis, rule: &str) -> &'a oio_analysis::diagnose::Finding {
    d.findings
        .iter()
        .find(|f| f.rule == rule && f.status == Status::Found)
        .unwrap_or_else(|| panic!("{rule} not found in {:#?}", d.findings))
}

fn found_rules(d: &Diagnosis) -> Vec<&str> {
    d.found().map(|f| f.rule.as_str()).collect()
}

fn evidence(f: &oio_analysis::diagnose::Finding, what: &str) -> f64 {
    f.evidence
        .iter()
        .find(|e| e.what.starts_with(what))
        .and_then(|e| e.value)
        .unwrap_or_else(|| panic!("no evidence {what:?} in {f:#?}"))
}

const QUEUES: [f64; 9] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0];

#[test]
fn a_steady_load_whose_latency_wanders_is_not_called_saturated() {
    // A capture of one application at a fixed concurrency on a device far from its limit (the
    // walk on this machine: qd 5, vda's queue 2.3 to 3.1 while neighbours came and went): IOPS
    // flat, and the queue follows latency by Little's law, which is saturation's pattern. A
    // queue within one doubling cannot tell them apart: undecided, never found.
    let mut ivs = Vec::new();
    for i in 0..20 {
        let lat = 60_000.0 * (1.0 + 0.9 * (i % 5) as f64 / 4.0);
        let iops = 27_000.0 * (1.0 + 0.01 * ((i % 3) as f64 - 1.0));
        ivs.push(Iv {
            q: iops * lat / 1e9,
            r: iops,
            w: 0.0,
            rl: lat,
            wl: 0.0,
            size: 4096.0,
        });
    }
    let d = run_obs(&observation(&ivs), &Options::default());
    assert_eq!(
        status(&d, "queue_saturation"),
        Status::Undecided,
        "{:#?}",
        d.findings
    );
    let f = d
        .findings
        .iter()
        .find(|f| f.rule == "queue_saturation")
        .unwrap();
    assert!(f.claim.contains("Little's law"), "{}", f.claim);
    // The same device ramped over doublings of the queue saturates at its 8 servers.
    let obs = ramp_capture(8.0, 1e6, &QUEUES, 0.0, 4096.0);
    assert_eq!(
        status(&run_obs(&obs, &Options::default()), "queue_saturation"),
        Status::Found
    );
}

#[test]
fn queue_saturation_is_found_at_the_devices_parallelism_and_compared_with_the_limit() {
    let obs = ramp_capture(8.0, 1e6, &QUEUES, 0.0, 4096.0);
    let d = run_obs(
        &obs,
        &Options {
            queue_limit: Some(256.0),
        },
    );
    let f = found(&d, "queue_saturation");
    assert_eq!(evidence(f, "queue where saturation starts"), 8.0, "{f:#?}");
    assert!(
        f.claim.contains("well below the queue limit (256"),
        "{}",
        f.claim
    );
    assert_eq!(f.confidence, Confidence::High);
    assert!(evidence(f, "IOPS elasticity") < 0.2);
    // The intervals it rests on are named.
    assert!(f.evidence[0].from.contains("t="), "{:?}", f.evidence[0]);
    let b = found(&d, "bound");
    assert!(b.claim.starts_with("IOPS-bound"), "{}", b.claim);
    // No write penalty (no writes), no latency-bound, no measurement warnings.
    assert_ne!(status(&d, "write_penalty"), Status::Found);
    for r in found_rules(&d) {
        assert!(
            ["queue_saturation", "bound", "periods_differ"].contains(&r),
            "unexpected {r} in {:#?}",
            d.findings
        );
    }
    // Ordered: found first, by confidence.
    let ranks: Vec<(bool, Confidence)> = d
        .findings
        .iter()
        .map(|f| (f.status != Status::Found, f.confidence))
        .collect();
    for w in ranks.windows(2) {
        assert!(w[0].0 <= w[1].0);
        if w[0].0 == w[1].0 && !w[0].0 {
            assert!(w[0].1 >= w[1].1, "{ranks:?}");
        }
    }
}

#[test]
fn saturation_at_an_adapter_limit_says_the_limit_and_the_excess_queue() {
    // Seed 003: fine to a queue of 256 (the adapter), then the OS queue grows to 800.
    let obs = ramp_capture(
        256.0,
        2e6,
        &[16.0, 32.0, 64.0, 128.0, 256.0, 400.0, 600.0, 800.0],
        0.0,
        65536.0,
    );
    let d = run_obs(
        &obs,
        &Options {
            queue_limit: Some(256.0),
        },
    );
    let f = found(&d, "queue_saturation");
    assert_eq!(
        evidence(f, "queue where saturation starts"),
        256.0,
        "{f:#?}"
    );
    assert!(
        f.claim.contains("sits at the queue limit (256"),
        "{}",
        f.claim
    );
    assert!(f.claim.contains("above the limit of 256"), "{}", f.claim);
    assert!(found(&d, "bound").claim.starts_with("throughput-bound"));
}

#[test]
fn a_device_that_scales_is_not_saturated_and_a_quiet_one_is_undecided() {
    // Latency constant, IOPS proportional to the queue: no saturation.
    let obs = ramp_capture(1000.0, 1e6, &QUEUES, 0.0, 4096.0);
    let d = run_obs(&obs, &Options::default());
    assert_eq!(
        status(&d, "queue_saturation"),
        Status::NotFound,
        "{:#?}",
        d.findings
    );
    assert_ne!(status(&d, "bound"), Status::Found);
    // Queue below one I/O: nothing to decide on.
    let quiet = ramp_capture(8.0, 1e6, &[0.2, 0.5, 0.8], 0.0, 4096.0);
    let d = run_obs(&quiet, &Options::default());
    let f = d
        .findings
        .iter()
        .find(|f| f.rule == "queue_saturation")
        .unwrap();
    assert_eq!(f.status, Status::Undecided);
    assert!(f.claim.contains("not enough busy intervals"), "{}", f.claim);
}

#[test]
fn a_workload_that_never_queues_is_latency_bound() {
    let mut rng = SeededRng::new(3);
    let ivs: Vec<Iv> = (0..30)
        .map(|_| {
            let lat = 5e6 * (1.0 + (rng.unit() - 0.5) * 0.1);
            let q = 1.0;
            let iops = q / lat * 1e9;
            Iv {
                q,
                r: iops,
                w: 0.0,
                rl: lat,
                wl: 0.0,
                size: 8192.0,
            }
        })
        .collect();
    let d = run_obs(&observation(&ivs), &Options::default());
    let b = found(&d, "bound");
    assert!(b.claim.starts_with("latency-bound"), "{}", b.claim);
    assert!(b.claim.contains("5.0"), "{}", b.claim);
    assert_eq!(found_rules(&d), ["bound"], "{:#?}", d.findings);
}

fn alternating(write_lat: impl Fn(f64) -> f64) -> Observation {
    let mut rng = SeededRng::new(11);
    let ivs: Vec<Iv> = (0..40)
        .map(|i| {
            let wp = if i % 2 == 0 { 0.1 } else { 0.7 };
            let q = 8.0 + rng.unit();
            let lat = write_lat(wp) * (1.0 + (rng.unit() - 0.5) * 0.06);
            let iops = q / lat * 1e9;
            Iv {
                q,
                r: iops * (1.0 - wp),
                w: iops * wp,
                rl: lat,
                wl: lat,
                size: 8192.0,
            }
        })
        .collect();
    observation(&ivs)
}

#[test]
fn write_penalty_is_found_at_equal_queue_and_not_invented() {
    let d = run_obs(
        &alternating(|wp| 1e6 * (1.0 + 2.0 * wp)),
        &Options::default(),
    );
    let f = found(&d, "write_penalty");
    let r = evidence(f, "latency ratio");
    assert!((r - 2.4 / 1.2).abs() < 0.15, "{r}");
    assert!(evidence(f, "write share, write-heavy") >= 69.0);
    let d = run_obs(&alternating(|_| 1e6), &Options::default());
    assert_eq!(
        status(&d, "write_penalty"),
        Status::NotFound,
        "{:#?}",
        d.findings
    );
    assert!(found_rules(&d).is_empty(), "{:#?}", d.findings);
}

fn two_periods(second: Iv) -> Observation {
    let mut rng = SeededRng::new(5);
    let first = Iv {
        q: 4.0,
        r: 3600.0,
        w: 400.0,
        rl: 1e6,
        wl: 1e6,
        size: 8192.0,
    };
    let ivs: Vec<Iv> = (0..60)
        .map(|i| {
            let b = if i < 30 { first } else { second };
            let n = |v: f64, rng: &mut SeededRng| v * (1.0 + (rng.unit() - 0.5) * 0.06);
            Iv {
                q: n(b.q, &mut rng),
                r: n(b.r, &mut rng),
                w: n(b.w, &mut rng),
                rl: n(b.rl, &mut rng),
                wl: n(b.wl, &mut rng),
                size: b.size,
            }
        })
        .collect();
    observation(&ivs)
}

#[test]
fn periods_that_differ_say_what_differs_and_what_latency_follows() {
    // The slow period has ten times the queue, same mix: latency follows the queue.
    let obs = two_periods(Iv {
        q: 40.0,
        r: 3600.0,
        w: 400.0,
        rl: 10e6,
        wl: 10e6,
        size: 8192.0,
    });
    let d = run_obs(&obs, &Options::default());
    let f = found(&d, "periods_differ");
    assert!(f.claim.starts_with("t=30–60 s is"), "{}", f.claim);
    assert!(f.claim.contains("(40."), "{}", f.claim);
    // At one rate the queue grew as latency did: an open loop on a slower device or a deeper
    // queue at a saturated one, which counters cannot tell apart (issue 38).
    assert!(f.claim.contains("counters cannot tell"), "{}", f.claim);
    assert!(!f.claim.contains("latency follows"), "{}", f.claim);
    // The slow period is write-heavy at the same queue: latency follows the write share.
    let obs = two_periods(Iv {
        q: 4.0,
        r: 600.0,
        w: 1400.0,
        rl: 2e6,
        wl: 2e6,
        size: 8192.0,
    });
    let f2 = run_obs(&obs, &Options::default());
    let f = found(&f2, "periods_differ");
    assert!(f.claim.contains("write share 70 % vs 10 %"), "{}", f.claim);
    assert!(
        f.claim.contains("latency follows the write share"),
        "{}",
        f.claim
    );
    // Nothing changes: one period.
    let first = Iv {
        q: 4.0,
        r: 3600.0,
        w: 400.0,
        rl: 1e6,
        wl: 1e6,
        size: 8192.0,
    };
    let d = run_obs(&two_periods(first), &Options::default());
    assert_eq!(
        status(&d, "periods_differ"),
        Status::NotFound,
        "{:#?}",
        d.findings
    );
    assert!(found_rules(&d).is_empty(), "{:#?}", d.findings);
}

fn sim_sweep() -> Sweep {
    let mut rng = SeededRng::new(9);
    let points = [1u32, 2, 4, 8, 16, 32, 64, 128]
        .iter()
        .map(|&qd| {
            let (iops, lat) = server_model(qd as f64, 8.0, 1e6, &mut rng);
            SweepPoint {
                qd,
                bs: None,
                read_pct: None,
                runs: 1,
                iops,
                iops_runs: vec![iops],
                bytes_per_sec: iops * 4096.0,
                latency_ns: LatencySummary {
                    mean: Some(lat),
                    p50: Some(lat as u64),
                    p90: Some((lat * 1.5) as u64),
                    p99: Some((lat * 2.0) as u64),
                    ..Default::default()
                },
                outstanding_mean: qd as f64,
                interval_cv_pct: Some(2.0),
                interval_se_pct: None,
                steady: Steady {
                    reached: None,
                    drift_pct: Some(1.0),
                    runs_made: 1,
                },
                sources: vec![],
                noisy_runs: 0,
            }
        })
        .collect();
    let mut s = Sweep {
        envelope: oio_core::Envelope::new(sweep::SCHEMA, sweep::SCHEMA_VERSION),
        workload: "randread-4k".into(),
        targets: vec![],
        engine: "io_uring".into(),
        simulated: None,
        options: SweepOptions {
            knee_fraction: 0.9,
            ..Default::default()
        },
        points,
        knee: None,
        series: vec![],
        production: None,
        sequence: vec![],
    };
    sweep::analyse(&mut s, None);
    s
}

#[test]
fn a_sweep_saturates_where_its_knee_says_and_production_is_placed_on_it() {
    let s = sim_sweep();
    let knee = s.knee.as_ref().expect("knee");
    assert_eq!(knee.saturation_qd, Some(8));
    // Production queues at 32 on average: beyond the knee.
    let prod = ramp_capture(8.0, 1e6, &[24.0, 32.0, 40.0], 0.0, 4096.0);
    let c = characterize(
        &prod,
        &CharOptions {
            busy_queue: 0.0,
            ..Default::default()
        },
    )
    .unwrap();
    let inputs = Inputs {
        sweeps: vec![("sweep.json".into(), s.clone())],
        characterizations: vec![("prod.json".into(), c)],
        ..Default::default()
    };
    let d = diagnose(&inputs, &Options::default());
    let f = found(&d, "queue_saturation");
    assert_eq!(evidence(f, "queue where saturation starts"), 8.0);
    assert!(f.evidence[0].from.contains("qd 8"), "{:?}", f.evidence[0]);
    let p = found(&d, "production_on_curve");
    assert!(p.claim.contains("beyond saturation"), "{}", p.claim);
    assert!((evidence(p, "production mean outstanding") - 32.0).abs() < 1.0);
    // The implied latency: 32 queued on 8 × 1 ms servers ≈ 4 ms mean.
    let m = evidence(p, "mean latency the sweep implies");
    assert!((m - 4e6).abs() < 0.3e6, "{m}");
    // The advice names the numbers: production's point against the knee's, and what backing
    // off to the knee keeps (8 servers: as many IOPS within the noise, at a quarter of the
    // latency).
    let next = p.next.join(" | ");
    assert!(
        next.contains("(production at qd 32: 7,815 IOPS, mean 4.09 ms; the knee at qd 8: 8,137 IOPS, mean 983.2 µs, p99 1.97 ms: backing off to the knee keeps 104 % of production's IOPS at 24 % of its mean latency)"),
        "{next}"
    );
    // Production at 2: below the knee, with headroom.
    let low = ramp_capture(8.0, 1e6, &[2.0, 2.0, 2.0], 0.0, 4096.0);
    let inputs = Inputs {
        sweeps: vec![("sweep.json".into(), s)],
        series: samples_from_observation("low", &low),
        ..Default::default()
    };
    let d = diagnose(&inputs, &Options::default());
    let p = found(&d, "production_on_curve");
    assert!(p.claim.contains("below the knee"), "{}", p.claim);
    let next = p.next.join(" | ");
    assert!(
        next.contains("there is headroom")
            && next.contains("(production at qd 2: ")
            && next.contains("; the knee at qd 8: 8,137 IOPS"),
        "{next}"
    );
    // A characterization without a sweep: undecided, and it says what is missing.
    let c = characterize(
        &low,
        &CharOptions {
            busy_queue: 0.0,
            ..Default::default()
        },
    )
    .unwrap();
    let d = diagnose(
        &Inputs {
            characterizations: vec![("c.json".into(), c)],
            ..Default::default()
        },
        &Options::default(),
    );
    assert_eq!(status(&d, "production_on_curve"), Status::Undecided);
    assert!(found_rules(&d).is_empty());
}

fn pg(buckets: &[(&str, f64)], warehouses: u32, workers: u32, driver: f64) -> DbFacts {
    DbFacts {
        source: "tpcc.json".into(),
        dialect: "postgres".into(),
        warehouses,
        workers,
        duration_s: 60.0,
        cpus: 2,
        driver_cores_busy: driver,
        includes_database: false,
        wait_source: "pg_stat_activity".into(),
        session_samples: 4000,
        buckets: buckets
            .iter()
            .map(|(n, s)| WaitShareFact {
                name: n.to_string(),
                aas: s / 100.0 * workers as f64,
                share_pct: *s,
            })
            .collect(),
        committed: 10_000,
        ..Default::default()
    }
}

fn db(facts: DbFacts) -> Diagnosis {
    diagnose(
        &Inputs {
            databases: vec![facts],
            ..Default::default()
        },
        &Options::default(),
    )
}

#[test]
fn database_causes_are_each_named_alone() {
    let cases: [(&str, DbFacts); 5] = [
        (
            "log_flush_bound",
            pg(
                &[
                    ("wal_flush", 55.0),
                    ("cpu", 20.0),
                    ("client_round_trips", 25.0),
                ],
                8,
                4,
                0.2,
            ),
        ),
        (
            "data_read_bound",
            pg(
                &[
                    ("data_io", 60.0),
                    ("cpu", 20.0),
                    ("client_round_trips", 20.0),
                ],
                8,
                4,
                0.2,
            ),
        ),
        (
            "lock_contention",
            pg(
                &[
                    ("row_locks", 45.0),
                    ("cpu", 15.0),
                    ("client_round_trips", 40.0),
                ],
                1,
                8,
                0.2,
            ),
        ),
        // 4 workers, 45 % on CPU with AAS = 0.45 × 4 = 1.8 of 2 cores.
        (
            "cpu_bound",
            pg(&[("cpu", 45.0), ("client_round_trips", 55.0)], 8, 4, 0.2),
        ),
        (
            "generator_bound",
            pg(&[("cpu", 10.0), ("client_round_trips", 90.0)], 8, 4, 1.9),
        ),
    ];
    for (rule, facts) in cases {
        let d = db(facts);
        assert_eq!(found_rules(&d), [rule], "{rule}: {:#?}", d.findings);
    }
    let d = db(pg(
        &[("row_locks", 45.0), ("client_round_trips", 55.0)],
        1,
        8,
        0.2,
    ));
    assert!(found(&d, "lock_contention")
        .claim
        .contains("too few warehouses per worker (1 for 8 workers)"));
    // A healthy run: nothing.
    let d = db(pg(
        &[
            ("cpu", 30.0),
            ("client_round_trips", 60.0),
            ("wal_flush", 5.0),
        ],
        8,
        4,
        0.3,
    ));
    assert!(found_rules(&d).is_empty(), "{:#?}", d.findings);
    // Too few samples: undecided, not a guess.
    let mut few = pg(&[("wal_flush", 90.0)], 8, 4, 0.2);
    few.session_samples = 10;
    let d = db(few);
    assert_eq!(status(&d, "log_flush_bound"), Status::Undecided);
}

fn sqlite(sync: &str, commit_s: f64, writer_wait_s: f64) -> DbFacts {
    DbFacts {
        source: format!("tpcc-{sync}.json"),
        dialect: "sqlite".into(),
        warehouses: 1,
        workers: 4,
        duration_s: 20.0,
        cpus: 2,
        driver_cores_busy: 0.4,
        includes_database: true,
        wait_source: "sqlite".into(),
        sqlite_sync: Some(sync.into()),
        commit_s: Some(commit_s),
        commit_mean_us: Some(commit_s * 1e6 / 2000.0),
        writer_wait_s: Some(writer_wait_s),
        worker_s: Some(80.0),
        committed: 4000,
        ..Default::default()
    }
}

#[test]
fn sqlite_full_is_log_bound_and_off_is_not() {
    let d = db(sqlite("full", 14.0, 50.0));
    let f = found(&d, "log_flush_bound");
    assert!(f.claim.contains("synchronous=full"), "{}", f.claim);
    let d = db(sqlite("off", 0.6, 2.0));
    assert_eq!(status(&d, "log_flush_bound"), Status::NotFound);
    assert!(found_rules(&d).is_empty(), "{:#?}", d.findings);
}

fn run_fixture() -> RunResult {
    let mut r: RunResult =
        serde_json::from_str(include_str!("fixtures/run-null.json")).expect("fixture parses");
    r.engine.name = "io_uring".into();
    r.envelope.warnings.clear();
    r.cpu.cores_busy = 0.1;
    let iv = r.intervals[0].clone();
    r.intervals = (1..=10)
        .map(|i| {
            let mut v = iv.clone();
            v.t_s = i as f64;
            v
        })
        .collect();
    r.duration_s = 10.0;
    r
}

fn runs(rs: Vec<RunResult>) -> Diagnosis {
    let runs: Vec<(String, RunResult)> = rs
        .into_iter()
        .enumerate()
        .map(|(i, r)| (format!("run-{i}.json"), r))
        .collect();
    diagnose(
        &Inputs {
            runs,
            ..Default::default()
        },
        &Options::default(),
    )
}

#[test]
fn measurement_warnings_are_raised_for_their_cause_only() {
    let clean = run_fixture();
    let d = runs(vec![clean.clone()]);
    assert!(found_rules(&d).is_empty(), "{:#?}", d.findings);
    let mut b = clean.clone();
    b.options.direct = false;
    assert_eq!(found_rules(&runs(vec![b])), ["buffered_io"]);
    let mut m = clean.clone();
    m.targets[0].filesystem.as_mut().unwrap().fs_type = "tmpfs".into();
    assert_eq!(found_rules(&runs(vec![m])), ["memory_backed"]);
    let mut s = clean.clone();
    s.intervals.truncate(2);
    let d = runs(vec![s]);
    assert_eq!(found_rules(&d), ["too_short"]);
    assert!(found(&d, "too_short").claim.contains("2 intervals"));
    let mut g = clean.clone();
    g.cpu.cores_busy = 0.98;
    assert_eq!(found_rules(&runs(vec![g])), ["generator_bound"]);
    let mut n = clean.clone();
    n.engine.name = "null".into();
    assert_eq!(found_rules(&runs(vec![n])), ["simulated"]);
    // Three runs of one configuration: noisy, or not.
    let with = |iops: &[f64]| {
        iops.iter()
            .map(|&v| {
                let mut r = clean.clone();
                r.summary.total.iops = v;
                r
            })
            .collect::<Vec<_>>()
    };
    let d = runs(with(&[1000.0, 1300.0, 800.0]));
    assert!(
        found_rules(&d).contains(&"run_to_run_noise"),
        "{:#?}",
        d.findings
    );
    let d = runs(with(&[1000.0, 1010.0, 995.0]));
    assert_eq!(status(&d, "run_to_run_noise"), Status::NotFound);
    assert!(!found_rules(&d).contains(&"run_to_run_noise"));
}

#[test]
fn the_diagnosis_serialises_with_its_schema() {
    let d = run_obs(
        &ramp_capture(8.0, 1e6, &QUEUES, 0.0, 4096.0),
        &Options::default(),
    );
    let v = serde_json::to_value(&d).unwrap();
    assert_eq!(v["schema"], "oio.diagnosis");
    assert_eq!(v["schema_version"], 1);
    let f = &v["findings"][0];
    for k in [
        "rule",
        "status",
        "claim",
        "evidence",
        "confidence",
        "next",
        "source",
    ] {
        assert!(f.get(k).is_some(), "{k} missing in {f}");
    }
    assert_eq!(f["status"], "found");
    let back: Diagnosis = serde_json::from_value(v).unwrap();
    assert_eq!(back.findings, d.findings);
}

// ---- Like with like: groups, simulated inputs, noise, idle devices, contradictions. ----

/// A run of the fixed-service model (`servers` × `service_ns`) at depth `qd`: IOPS and mean
/// latency by Little's law, ten steady intervals, on `engine`.
fn model_run(qd: u32, servers: f64, service_ns: f64, engine: &str) -> RunResult {
    let mut r = run_fixture();
    r.engine.name = engine.into();
    r.workload.streams[0].outstanding = Some(qd);
    r.summary.configured_outstanding = qd;
    let iops = (qd as f64).min(servers) / service_ns * 1e9;
    let lat = qd as f64 / iops * 1e9;
    let t = &mut r.summary.total;
    t.iops = iops;
    t.bytes_per_sec = iops * 4096.0;
    t.latency_ns.mean = Some(lat);
    t.outstanding_mean = qd as f64;
    r.summary.read = r.summary.total.clone();
    for iv in &mut r.intervals {
        iv.total.iops = iops;
        iv.read.iops = iops;
    }
    r
}

/// The same run on the simulated device (as `oio run --engine null --sim` records it).
fn simulated(mut r: RunResult) -> RunResult {
    r.engine.name = "null".into();
    r.engine.features = vec!["no_io".into(), "simulated_device".into()];
    r.envelope.warnings = vec![
        "simulated device (8 servers × 1.00 ms fixed service): no I/O reached any device".into(),
    ];
    r
}

/// The same run in open loop at `rate` arrivals per second.
fn open_loop(mut r: RunResult, rate: f64) -> RunResult {
    r.workload.streams[0].rate = Some(oio_core::workload::Rate {
        iops: rate,
        ..Default::default()
    });
    r.summary.configured_outstanding = 0;
    r.summary.offered_iops = Some(rate);
    r
}

fn named(rs: Vec<RunResult>, prefix: &str) -> Vec<(String, RunResult)> {
    rs.into_iter()
        .enumerate()
        .map(|(i, r)| (format!("{prefix}/run-{i}.json"), r))
        .collect()
}

fn group_of<'a>(
    d: &'a Diagnosis,
    f: &oio_analysis::diagnose::Finding,
) -> &'a oio_analysis::diagnose::GroupInfo {
    d.groups
        .iter()
        .find(|g| g.id == f.group)
        .unwrap_or_else(|| panic!("no group {:?} for {f:#?}", f.group))
}

#[test]
fn mixed_inputs_are_diagnosed_as_separate_groups_and_never_pooled() {
    // A real depth series saturating at 4, the same workload simulated saturating at 8,
    // three open-loop runs at three rates, and another workload: four experiments and more.
    let mut runs = named(
        [1, 2, 4, 8, 16, 32]
            .iter()
            .map(|&q| model_run(q, 4.0, 1e6, "io_uring"))
            .collect(),
        "real",
    );
    runs.extend(named(
        [1, 2, 4, 8, 16, 32, 64]
            .iter()
            .map(|&q| simulated(model_run(q, 8.0, 1e6, "io_uring")))
            .collect(),
        "sim",
    ));
    runs.extend(named(
        [500.0, 1000.0, 2000.0]
            .iter()
            .map(|&rate| open_loop(model_run(4, 4.0, 1e6, "io_uring"), rate))
            .collect(),
        "open",
    ));
    let mut other = model_run(4, 4.0, 1e6, "io_uring");
    other.workload.name = "seqwrite-1m".into();
    runs.extend(named(vec![other], "other"));
    let d = diagnose(
        &Inputs {
            runs,
            ..Default::default()
        },
        &Options::default(),
    );
    // One group per experiment: the real series, the simulated series, three rates, the other
    // workload; each named apart by what differs.
    assert_eq!(d.groups.len(), 6, "{:#?}", d.groups);
    let sizes: Vec<usize> = d.groups.iter().map(|g| g.inputs.len()).collect();
    assert_eq!(sizes, [6, 7, 1, 1, 1, 1], "{:#?}", d.groups);
    assert!(d.groups[1].simulated.is_some());
    assert!(
        d.groups[1]
            .differs
            .iter()
            .any(|x| x.starts_with("simulated")),
        "{:?}",
        d.groups[1].differs
    );
    assert!(
        d.groups[2].label.contains("open loop at 500/s"),
        "{}",
        d.groups[2].label
    );
    let labels: Vec<&str> = d.groups.iter().map(|g| g.label.as_str()).collect();
    let mut unique = labels.clone();
    unique.dedup();
    assert_eq!(unique.len(), labels.len(), "{labels:?}");
    // Each group saturates where its own model says, none pooled with another.
    let sat: Vec<(&str, f64)> = d
        .found()
        .filter(|f| f.rule == "queue_saturation")
        .map(|f| {
            (
                f.group.as_str(),
                evidence(f, "queue where saturation starts"),
            )
        })
        .collect();
    assert_eq!(sat, [("g1", 4.0), ("g2", 8.0)], "{:#?}", d.findings);
    // No open-loop run counted as "qd 0", no noise from runs of different rates.
    assert!(
        d.findings.iter().all(|f| !f.claim.contains("qd 0")),
        "{:#?}",
        d.findings
    );
    assert!(
        d.findings.iter().all(|f| f.rule != "run_to_run_noise"),
        "{:#?}",
        d.findings
    );
    // Every finding belongs to exactly one group.
    for f in &d.findings {
        assert!(!f.group.contains(','), "{f:#?}");
        let g = group_of(&d, f);
        for input in f.source.split(", ") {
            let input = input.split(" …").next().unwrap();
            assert!(
                f.source.contains(" runs of ") || g.inputs.iter().any(|i| i == input),
                "{input} is not in {}: {f:#?}",
                g.id
            );
        }
    }
}

#[test]
fn simulated_runs_never_feed_device_findings_and_are_said_once() {
    let runs = named(
        (0..40)
            .map(|i| {
                simulated(model_run(
                    [1, 2, 4, 8, 16, 32, 64, 128][i % 8],
                    8.0,
                    1e6,
                    "io_uring",
                ))
            })
            .collect(),
        "sim",
    );
    let d = diagnose(
        &Inputs {
            runs,
            ..Default::default()
        },
        &Options { queue_limit: None },
    );
    // One "simulated" finding for forty runs, and every device finding says it is the model's.
    assert_eq!(
        d.found().filter(|f| f.rule == "simulated").count(),
        1,
        "{:#?}",
        d.findings
    );
    for f in d.findings.iter().filter(|f| {
        [
            "queue_saturation",
            "bound",
            "write_penalty",
            "periods_differ",
        ]
        .contains(&f.rule.as_str())
    }) {
        assert!(f.claim.starts_with("simulated: "), "{}", f.claim);
        assert!(
            f.next
                .iter()
                .all(|n| n.contains("says nothing about storage")),
            "{:?}",
            f.next
        );
    }
    // The device's own queue limit (nr_requests of the disk the model ran beside) is not the
    // model's: not compared.
    let sat = found(&d, "queue_saturation");
    assert!(!sat.claim.contains("queue limit"), "{}", sat.claim);
    // Bounded: a handful of findings for one group, not one per run.
    assert!(
        d.findings.len() <= 8,
        "{} findings: {:#?}",
        d.findings.len(),
        d.findings
    );
}

#[test]
fn a_simulated_sweep_does_not_place_production() {
    let mut s = sim_sweep();
    s.simulated = Some("8 servers × 1.00 ms fixed service".into());
    let prod = ramp_capture(8.0, 1e6, &[24.0, 32.0, 40.0], 0.0, 4096.0);
    let c = characterize(
        &prod,
        &CharOptions {
            busy_queue: 0.0,
            ..Default::default()
        },
    )
    .unwrap();
    let d = diagnose(
        &Inputs {
            sweeps: vec![("sweep.json".into(), s)],
            characterizations: vec![("prod.json".into(), c)],
            ..Default::default()
        },
        &Options::default(),
    );
    let p: Vec<_> = d
        .findings
        .iter()
        .filter(|f| f.rule == "production_on_curve")
        .collect();
    assert_eq!(p.len(), 1, "{:#?}", d.findings);
    assert_eq!(p[0].status, Status::Undecided);
    assert!(p[0].claim.contains("simulated device"), "{}", p[0].claim);
}

#[test]
fn an_idle_device_is_idle_not_latency_bound() {
    // A Windows disk 99.5 % idle: a few I/Os now and then, queue 0.004, most intervals empty.
    let mut obs = Observation::new(SourceKind::Perfmon, vec!["perfmon.csv".into()]);
    let d = obs.device_mut("C:");
    for i in 0..60 {
        let busy = i % 6 == 0;
        let iops = if busy { 2.0 } else { 0.0 };
        d.intervals.push(DeviceInterval {
            t_s: (i + 1) as f64,
            duration_s: 1.0,
            read: DirCounters {
                iops: Some(iops),
                bytes_per_sec: Some(iops * 4096.0),
                latency_mean_ns: busy.then_some(2e6),
                ..Default::default()
            },
            write: DirCounters {
                iops: Some(0.0),
                ..Default::default()
            },
            queue_mean: Some(if busy { 0.004 } else { 0.0 }),
            util_pct: Some(if busy { 0.5 } else { 0.0 }),
            ..Default::default()
        });
    }
    let d = run_obs(&obs, &Options::default());
    let b = found(&d, "bound");
    assert!(b.claim.starts_with("idle:"), "{}", b.claim);
    assert!(evidence(b, "busy share") < 1.0);
    assert!(
        d.findings
            .iter()
            .all(|f| !f.claim.contains("latency-bound")),
        "{:#?}",
        d.findings
    );
    assert!(b.next.iter().all(|n| !n.contains("more I/O in parallel")));
}

/// A sweep of the fixed-service model with `servers`, with `iops_runs` repeats per depth
/// scaled by `noise` (one factor per repeat), analysed as `oio sweep` does.
fn model_sweep(servers: f64, noise: &[f64]) -> Sweep {
    let mut s = sim_sweep();
    s.points = [1u32, 2, 4, 8, 16, 32, 64]
        .iter()
        .map(|&qd| {
            let iops = (qd as f64).min(servers) / 1e6 * 1e9;
            let runs: Vec<f64> = noise.iter().map(|n| iops * n).collect();
            let mean = runs.iter().sum::<f64>() / runs.len() as f64;
            let lat = qd as f64 / mean * 1e9;
            SweepPoint {
                qd,
                bs: None,
                read_pct: None,
                runs: runs.len(),
                iops: mean,
                iops_runs: runs,
                bytes_per_sec: mean * 4096.0,
                latency_ns: LatencySummary {
                    mean: Some(lat),
                    p50: Some(lat as u64),
                    p90: Some((lat * 1.5) as u64),
                    p99: Some((lat * 2.0) as u64),
                    ..Default::default()
                },
                outstanding_mean: qd as f64,
                interval_cv_pct: Some(2.0),
                interval_se_pct: None,
                steady: Steady {
                    reached: None,
                    drift_pct: Some(1.0),
                    runs_made: noise.len() as u32,
                },
                sources: vec![],
                noisy_runs: 0,
            }
        })
        .collect();
    s.knee = None;
    sweep::analyse(&mut s, None);
    s
}

fn production_at(q: f64) -> oio_analysis::characterize::Characterization {
    let prod = ramp_capture(64.0, 1e6, &[q, q, q], 0.0, 4096.0);
    characterize(
        &prod,
        &CharOptions {
            busy_queue: 0.0,
            ..Default::default()
        },
    )
    .unwrap()
}

#[test]
fn two_sweeps_of_one_experiment_that_disagree_are_undecided() {
    // The same workload on the same file swept twice: once saturating at 4, once at 16.
    let a = model_sweep(4.0, &[1.0, 1.01, 0.99]);
    let b = model_sweep(16.0, &[1.0, 1.01, 0.99]);
    assert_eq!(a.knee.as_ref().unwrap().saturation_qd, Some(4));
    assert_eq!(b.knee.as_ref().unwrap().saturation_qd, Some(16));
    let prod = production_at(5.2);
    let one = |s: &Sweep| {
        diagnose(
            &Inputs {
                sweeps: vec![("a.json".into(), s.clone())],
                characterizations: vec![("prod.json".into(), prod.clone())],
                ..Default::default()
            },
            &Options::default(),
        )
    };
    // Each alone decides, opposite ways.
    assert!(found(&one(&a), "production_on_curve")
        .claim
        .contains("beyond"));
    assert!(found(&one(&b), "production_on_curve")
        .claim
        .contains("below the knee"));
    let d = diagnose(
        &Inputs {
            sweeps: vec![("a.json".into(), a), ("b.json".into(), b)],
            characterizations: vec![("prod.json".into(), prod)],
            ..Default::default()
        },
        &Options::default(),
    );
    assert_eq!(d.groups[0].same_experiment_as, ["g2"]);
    for rule in ["production_on_curve", "queue_saturation", "bound"] {
        let f: Vec<_> = d.findings.iter().filter(|f| f.rule == rule).collect();
        assert_eq!(f.len(), 1, "{rule}: {:#?}", d.findings);
        assert_eq!(f[0].status, Status::Undecided, "{:#?}", f[0]);
        assert!(f[0].claim.starts_with("contradicting: "), "{}", f[0].claim);
        assert!(f[0].claim.contains("undecided"), "{}", f[0].claim);
        assert_eq!(f[0].conflicting.len(), 2, "{:?}", f[0].conflicting);
        assert!(f[0].conflicting[0].starts_with("a.json"));
        assert!(f[0].conflicting[1].starts_with("b.json"));
        assert_eq!(f[0].group, "g1, g2");
        assert_eq!(f[0].confidence, Confidence::Low);
        assert!(f[0].is_contradiction());
    }
    // Contradictions rank right after what was found: shown, not buried.
    assert!(d.headline().any(|f| f.is_contradiction()));
}

#[test]
fn production_within_the_knees_range_is_undecided() {
    // Knee at 8, somewhere in (4, 8]: production at 5.2 could be either side.
    let s = model_sweep(8.0, &[1.0, 1.01, 0.99]);
    let k = s.knee.as_ref().unwrap();
    let (lo, hi) = oio_analysis::diagnose::knee_range(k);
    assert!(lo < 5.2 && 5.2 < hi, "{lo}–{hi}");
    let d = diagnose(
        &Inputs {
            sweeps: vec![("s.json".into(), s.clone())],
            characterizations: vec![("prod.json".into(), production_at(5.2))],
            ..Default::default()
        },
        &Options::default(),
    );
    assert_eq!(status(&d, "production_on_curve"), Status::Undecided);
    let p = d
        .findings
        .iter()
        .find(|f| f.rule == "production_on_curve")
        .unwrap();
    assert!(
        p.claim.contains("within the knee's uncertainty"),
        "{}",
        p.claim
    );
    // Outside the range it decides, and states that a device queue is compared with oio's
    // outstanding I/O, and under which assumption; never more than medium for it.
    let d = diagnose(
        &Inputs {
            sweeps: vec![("s.json".into(), s)],
            characterizations: vec![("prod.json".into(), production_at(32.0))],
            ..Default::default()
        },
        &Options::default(),
    );
    let p = found(&d, "production_on_curve");
    assert!(
        p.claim.contains("the device's queue") && p.claim.contains("O_DIRECT"),
        "{}",
        p.claim
    );
    assert!(p.confidence <= Confidence::Medium);
    assert!(
        d.notes.iter().any(|n| n.contains("oio's outstanding I/O")),
        "{:?}",
        d.notes
    );
}

#[test]
fn confidence_is_capped_by_the_measured_noise() {
    // Repeats spread ±50 %: the saturation the sweep names rests on noise as large as it.
    let noisy = model_sweep(8.0, &[1.0, 0.4, 1.6]);
    let d = diagnose(
        &Inputs {
            sweeps: vec![("noisy.json".into(), noisy)],
            ..Default::default()
        },
        &Options::default(),
    );
    let f = d
        .findings
        .iter()
        .find(|f| f.rule == "queue_saturation")
        .unwrap();
    assert_eq!(f.confidence, Confidence::Low, "{f:#?}");
    assert!(evidence(f, "largest spread of IOPS") > 40.0);
    assert!(d.groups[0].noise_pct.unwrap() > 30.0, "{:#?}", d.groups);
    // The same sweep with repeats within 1 %: not capped.
    let quiet = model_sweep(8.0, &[1.0, 1.01, 0.99]);
    let d = diagnose(
        &Inputs {
            sweeps: vec![("quiet.json".into(), quiet)],
            ..Default::default()
        },
        &Options::default(),
    );
    assert!(found(&d, "queue_saturation").confidence > Confidence::Low);
}

#[test]
fn saturation_never_says_iops_stay_near_beside_much_more_deeper() {
    // The walk's sweep: a neighbour's burst faked a dip at qd 8, the sweep named saturation at
    // 4 with 22,709 IOPS, and qd 64 did 31,119.
    let mut s = model_sweep(64.0, &[1.0, 1.01, 0.99]);
    let iops = [
        6_000.0, 12_000.0, 22_709.0, 12_736.0, 24_000.0, 28_000.0, 31_119.0,
    ];
    for (p, v) in s.points.iter_mut().zip(iops) {
        p.iops = v;
        p.iops_runs = vec![v; 3];
        p.latency_ns.mean = Some(p.qd as f64 / v * 1e9);
    }
    s.knee.as_mut().unwrap().saturation_qd = Some(4);
    let d = diagnose(
        &Inputs {
            sweeps: vec![("s.json".into(), s)],
            ..Default::default()
        },
        &Options::default(),
    );
    let f = d
        .findings
        .iter()
        .find(|f| f.rule == "queue_saturation")
        .unwrap();
    assert!(!f.claim.contains("stay near"), "{}", f.claim);
    assert!(f.claim.contains("31119"), "{}", f.claim);
    assert_eq!(evidence(f, "most IOPS beyond saturation"), 31_119.0);
}

/// A Windows disk doing 12 reads and 4 writes a second whose latency counters were not
/// recorded (or not recognised: a localized name): with the queue length, `queue`.
fn perfmon_without_latency(queue: Option<f64>) -> Observation {
    let mut obs = Observation::new(SourceKind::Perfmon, vec!["perfmon.csv".into()]);
    let d = obs.device_mut("PhysicalDisk(0 C:)");
    for i in 0..60 {
        let dir = |n: f64, size: f64| DirCounters {
            iops: Some(n),
            bytes_per_sec: Some(n * size),
            ..Default::default()
        };
        d.intervals.push(DeviceInterval {
            t_s: (i + 1) as f64,
            duration_s: 1.0,
            read: dir(12.0, 4096.0),
            write: dir(4.0, 8192.0),
            queue_mean: queue,
            ..Default::default()
        });
    }
    obs
}

#[test]
fn intervals_with_io_but_no_latency_counter_are_not_idle() {
    // Issue 24: 16 IOPS without a latency column were called "no intervals with I/O".
    // With the queue length, Little's law gives the latency: 0.0092 / 16 = 575 µs.
    let obs = perfmon_without_latency(Some(0.0092));
    let s = &samples_from_observation("cap", &obs)[0];
    assert_eq!(
        (s.samples.len(), s.idle_intervals, s.latency_from_queue),
        (60, 0, 60)
    );
    assert!((s.samples[0].latency_ns - 575_000.0).abs() < 1e-6);
    let d = run_obs(&obs, &Options::default());
    let b = found(&d, "bound");
    assert!(
        b.claim.starts_with("idle: the device was busy 0.9 %"),
        "{}",
        b.claim
    );
    assert_eq!(evidence(b, "intervals without I/O"), 0.0);
    assert!(
        d.notes.iter().any(|n| n
            .contains("latency of 60 of its 60 intervals with I/O is the queue length over IOPS")),
        "{:#?}",
        d.notes
    );
    // Without a queue length either, nothing can be said: undecided, and why, not idle.
    let obs = perfmon_without_latency(None);
    let s = &samples_from_observation("cap", &obs)[0];
    assert_eq!(
        (s.samples.len(), s.idle_intervals, s.unmeasured_intervals),
        (0, 0, 60)
    );
    let d = run_obs(&obs, &Options::default());
    let b = d.findings.iter().find(|f| f.rule == "bound").unwrap();
    assert_eq!(b.status, Status::Undecided);
    assert!(
        b.claim
            .starts_with("60 intervals had I/O but neither a latency nor a queue length counter"),
        "{}",
        b.claim
    );
    assert!(
        d.findings.iter().all(|f| !f.claim.contains("idle")),
        "{:#?}",
        d.findings
    );
    assert!(
        d.groups.iter().any(|g| g.label.ends_with("(60 intervals)")),
        "{:#?}",
        d.groups
    );
}

#[test]
fn a_knee_open_above_the_second_deepest_depth_is_restated_as_no_saturation_up_to_there() {
    // No saturation in the grid (1000 servers), repeats 12 % apart: the last step (32 → 64)
    // still doubles beyond the noise, but whether it gains like the steps before cannot be
    // told, so the knee is undecided, "above qd 32". Diagnose says what that range says: no
    // saturation up to 32, at low confidence, rather than nothing.
    let s = model_sweep(1000.0, &[1.0, 1.12, 0.88]);
    let k = s.knee.as_ref().unwrap();
    assert_eq!(
        k.confidence,
        Some(KneeConfidence::Undecided),
        "{}",
        k.summary
    );
    let r = k.range.unwrap();
    assert_eq!((r.above, r.up_to), (32, None), "{}", k.summary);
    let d = diagnose(
        &Inputs {
            sweeps: vec![("s.json".into(), s.clone())],
            ..Default::default()
        },
        &Options::default(),
    );
    let f = d
        .findings
        .iter()
        .find(|f| f.rule == "queue_saturation")
        .unwrap();
    assert_eq!(f.status, Status::NotFound, "{:#?}", f);
    assert_eq!(f.confidence, Confidence::Low);
    assert_eq!(evidence(f, "deepest queue shown not saturated"), 32.0);
    assert!(
        f.claim.contains("no queue saturation up to a queue of 32"),
        "{}",
        f.claim
    );
}
