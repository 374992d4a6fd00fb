//! Seed 002 round trip and seed 003 periods, through the real perfmon parser.
//!
//! Perfmon CSVs are synthesized whose intervals reproduce the seed's TEMPDB and LOGS
//! workloads: each busy interval has one mean read size and one mean write size drawn so the
//! I/O-count shares match the seed, a minor size outside the 80 % cover, queue lengths around
//! 600 and 4, and idle periods (queue < 2, other sizes) that the busy filter must drop. Only the
//! five counters the seed recorded are present.

use oio_analysis::characterize::{characterize, Options};
use oio_core::workload::Workload;
use oio_telemetry::perfmon;

/// A small deterministic generator (tests must not depend on a crate's RNG stream).
struct Lcg(u64);
impl Lcg {
    fn unit(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Picks from `(value, weight)` by weight.
    fn pick(&mut self, items: &[(f64, f64)]) -> f64 {
        let total: f64 = items.iter().map(|i| i.1).sum();
        let mut u = self.unit() * total;
        for &(v, w) in items {
            if u < w {
                return v;
            }
            u -= w;
        }
        items[items.len() - 1].0
    }
}

struct Spec {
    read_pct: f64,
    reads: Vec<(f64, f64)>,
    writes: Vec<(f64, f64)>,
    queue: f64,
    iops: f64,
}

/// One perfmon CSV: `busy` intervals of `spec` mixed with `idle` quiet ones, 15 s apart.
fn synthesize(instance: &str, spec: &Spec, busy: usize, idle: usize, seed: u64) -> String {
    let mut rng = Lcg(seed);
    let path = |c: &str| format!("\"\\\\SQLPROD\\PhysicalDisk({instance})\\{c}\"");
    let mut out = String::from("\"(PDH-CSV 4.0) (Eastern Daylight Time)(240)\"");
    for c in [
        "Avg. Disk Bytes/Read",
        "Avg. Disk Bytes/Write",
        "Avg. Disk Queue Length",
        "Disk Reads/sec",
        "Disk Writes/sec",
    ] {
        out.push(',');
        out.push_str(&path(c));
    }
    out.push_str("\r\n\"10/20/2008 08:00:00.000\",\" \",\" \",\" \",\" \",\" \"\r\n");
    let total = busy + idle;
    let mut t = 8 * 3600 + 15;
    for k in 0..total {
        // Idle stretches in blocks: nights, lunch.
        let is_idle = (k / 20) % ((total / idle.max(1)).max(2)) == 0 && idle > 0;
        let (r_iops, w_iops, r_size, w_size, q) = if is_idle {
            let iops = 5.0 + rng.unit() * 10.0;
            (
                iops * 0.5,
                iops * 0.5,
                4096.0,
                4096.0,
                0.2 + rng.unit() * 1.2,
            )
        } else {
            let iops = spec.iops * (0.7 + rng.unit() * 0.6);
            // Jitter sizes within ±8 %: bucketing must absorb it.
            let j = |s: f64, r: &mut Lcg| s * (0.92 + r.unit() * 0.16);
            let rs = rng.pick(&spec.reads);
            let ws = rng.pick(&spec.writes);
            (
                iops * spec.read_pct / 100.0,
                iops * (100.0 - spec.read_pct) / 100.0,
                j(rs, &mut rng),
                j(ws, &mut rng),
                spec.queue * (0.8 + rng.unit() * 0.4),
            )
        };
        let (h, m, s) = (t / 3600 % 24, t / 60 % 60, t % 60);
        out.push_str(&format!(
            "\"10/20/2008 {h:02}:{m:02}:{s:02}.000\",\"{r_size:.3}\",\"{w_size:.3}\",\"{q:.6}\",\"{r_iops:.6}\",\"{w_iops:.6}\"\r\n"
        ));
        t += 15;
    }
    out
}

fn sizes(p: &oio_analysis::characterize::DirProfile) -> Vec<(u64, f64)> {
    p.sizes.iter().map(|s| (s.bytes, s.pct)).collect()
}

fn assert_mix(got: Vec<(u64, f64)>, want: &[(u64, f64)], tol: f64) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for ((gb, gp), (wb, wp)) in got.iter().zip(want) {
        assert_eq!(gb, wb, "{got:?} vs {want:?}");
        assert!((gp - wp).abs() <= tol, "{got:?} vs {want:?}");
    }
}

#[test]
fn seed_002_tempdb_and_logs_round_trip() {
    let tempdb = Spec {
        read_pct: 2.0,
        // 8 % of reads at 16k, 10 % of writes at 4k: outside the 80 % cover, so the chosen
        // buckets renormalize to the seed's 68/32 and 83/17 (64k alone is < 80 % of writes).
        reads: vec![
            (65536.0, 68.0 * 0.92),
            (8192.0, 32.0 * 0.92),
            (16384.0, 8.0),
        ],
        writes: vec![(65536.0, 83.0 * 0.9), (512.0, 17.0 * 0.9), (4096.0, 10.0)],
        queue: 600.0,
        iops: 3000.0,
    };
    let logs = Spec {
        read_pct: 36.0,
        reads: vec![
            (131072.0, 87.0 * 0.9),
            (1048576.0, 13.0 * 0.9),
            (8192.0, 10.0),
        ],
        writes: vec![(65536.0, 81.0 * 0.9), (16384.0, 19.0 * 0.9), (4096.0, 10.0)],
        queue: 4.0,
        iops: 800.0,
    };
    for (name, spec, instance, want_r, want_w, want_q) in [
        (
            "tempdb",
            &tempdb,
            "2 T:",
            vec![(65536, 68.0), (8192, 32.0)],
            vec![(65536, 83.0), (512, 17.0)],
            600,
        ),
        (
            "logs",
            &logs,
            "3 L:",
            vec![(131072, 87.0), (1048576, 13.0)],
            vec![(65536, 81.0), (16384, 19.0)],
            4,
        ),
    ] {
        let csv = synthesize(instance, spec, 1500, 300, 42);
        let obs = perfmon::parse(&format!("{name}.csv"), &csv).unwrap();
        let c = characterize(
            &obs,
            &Options {
                name: Some(name.into()),
                ..Options::default()
            },
        )
        .unwrap();
        assert!(
            (c.read_pct - spec.read_pct).abs() <= 1.0,
            "{name}: read_pct {}",
            c.read_pct
        );
        assert_mix(sizes(&c.read), &want_r, 3.0);
        assert_mix(sizes(&c.write), &want_w, 3.0);
        assert_eq!(
            c.outstanding.mean.round() as u32,
            want_q,
            "{name}: {:?}",
            c.outstanding
        );
        assert!(c.outstanding.p90 > c.outstanding.mean);
        // The idle intervals were filtered out, and the output says so.
        assert!(c.intervals_used < c.intervals_total, "{name}");
        assert!(c.intervals_used >= 1400, "{name}: {}", c.intervals_used);
        assert!(c.assumptions.iter().any(|a| a.contains("interval means")));
        assert_eq!(c.method, "interval_means");
        // The workload file is accepted unchanged, and carries the spec.
        let toml = c.workload.to_toml();
        let w = Workload::from_toml(&toml, "characterized.toml")
            .unwrap_or_else(|e| panic!("{e}\n{toml}"));
        let s = &w.streams[0];
        assert_eq!(s.outstanding, Some(want_q));
        // Counters give a mean size per interval, so the workload takes the mean (to the
        // sector), not a mix the data cannot show (issue 24); the distribution of the means
        // stays in the characterization (asserted above).
        let mix: Vec<u64> = s
            .read_mix()
            .unwrap()
            .shares()
            .iter()
            .map(|x| x.bytes)
            .collect();
        let mean = c.read.mean_bytes.unwrap();
        assert_eq!(mix, [((mean / 512.0).round() as u64) * 512], "{name}");
        assert!(w
            .description
            .contains("counters cannot tell a mix from its mean"));
        assert!(w.description.contains("Assumption"), "{}", w.description);
        // JSON contract paths.
        let j = serde_json::to_value(&c).unwrap();
        for p in [
            "/read_pct",
            "/outstanding/mean",
            "/outstanding/p90",
            "/intervals_used",
            "/read/mean_bytes",
            "/write/sizes/0/bytes",
            "/write/sizes/0/pct",
            "/read/iops/mean",
            "/schema",
            "/schema_version",
        ] {
            assert!(j.pointer(p).is_some(), "{name}: missing {p}");
        }
    }
}

#[test]
fn busy_filter_changes_the_answer_and_can_be_disabled() {
    let spec = Spec {
        read_pct: 36.0,
        reads: vec![(131072.0, 87.0), (1048576.0, 13.0)],
        writes: vec![(65536.0, 81.0), (16384.0, 19.0)],
        queue: 4.0,
        iops: 800.0,
    };
    // Mostly idle: without the filter the idle 4k I/Os dominate the count.
    let csv = synthesize("3 L:", &spec, 200, 1600, 7);
    let obs = perfmon::parse("logs.csv", &csv).unwrap();
    let busy = characterize(&obs, &Options::default()).unwrap();
    let all = characterize(
        &obs,
        &Options {
            busy_queue: 0.0,
            ..Options::default()
        },
    )
    .unwrap();
    assert!(all.intervals_used > busy.intervals_used);
    assert!(all.outstanding.mean < busy.outstanding.mean);
    let e = characterize(
        &obs,
        &Options {
            busy_queue: 1000.0,
            ..Options::default()
        },
    )
    .unwrap_err();
    assert!(e.0.contains("--busy-queue"), "{e}");
}

#[test]
fn seed_003_backup_then_dss_are_two_periods() {
    // 10 minutes at 15 s: a backup (large reads, a fixed queue of 8) then a DSS load
    // (mixed sizes, some writes, queues of 100 to 800).
    let mut rng = Lcg(3);
    let mut csv = String::from(
        "\"(PDH-CSV 4.0) (UTC)(0)\",\"\\\\VM\\LogicalDisk(_Total)\\Avg. Disk Bytes/Read\",\"\\\\VM\\LogicalDisk(_Total)\\Avg. Disk Bytes/Write\",\"\\\\VM\\LogicalDisk(_Total)\\Avg. Disk Queue Length\",\"\\\\VM\\LogicalDisk(_Total)\\Disk Reads/sec\",\"\\\\VM\\LogicalDisk(_Total)\\Disk Writes/sec\",\"\\\\VM\\LogicalDisk(_Total)\\Avg. Disk sec/Read\"\n",
    );
    for k in 1..=80 {
        let backup = k <= 40;
        let (rs, ws, q, r, w, lat) = if backup {
            (
                1048576.0 * (0.9 + rng.unit() * 0.1),
                65536.0,
                7.5 + rng.unit(),
                200.0 + rng.unit() * 60.0,
                1.0,
                0.005,
            )
        } else {
            (
                65536.0 * (0.5 + rng.unit()),
                8192.0,
                100.0 + rng.unit() * 700.0,
                900.0 + rng.unit() * 500.0,
                150.0,
                0.4 + rng.unit() * 1.6,
            )
        };
        let t = 15 * k;
        csv.push_str(&format!(
            "\"03/01/2016 10:{:02}:{:02}.000\",\"{rs}\",\"{ws}\",\"{q}\",\"{r}\",\"{w}\",\"{lat}\"\n",
            t / 60,
            t % 60
        ));
    }
    let obs = perfmon::parse("dss.csv", &csv).unwrap();
    let c = characterize(&obs, &Options::default()).unwrap();
    assert_eq!(c.periods.len(), 2, "{:#?}", c.periods);
    assert!(
        (c.periods[0].to_s - 600.0).abs() <= 15.0,
        "{:?}",
        c.periods[0]
    );
    assert!(c.periods[0].outstanding_mean.unwrap() < 10.0);
    assert!(c.periods[1].outstanding_mean.unwrap() > 100.0);
    // Characterizing the first period alone gives the backup's fixed read queue.
    let p1 = characterize(
        &obs,
        &Options {
            period: Some(1),
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(p1.workload.streams[0].outstanding, Some(8));
    assert_eq!(p1.read.sizes[0].bytes, 1 << 20);
    assert!(p1.read_pct > 99.0);
    let p2 = characterize(
        &obs,
        &Options {
            period: Some(2),
            ..Options::default()
        },
    )
    .unwrap();
    assert!(p2.outstanding.mean > 100.0);
    assert!(characterize(
        &obs,
        &Options {
            period: Some(3),
            ..Options::default()
        }
    )
    .is_err());
}
