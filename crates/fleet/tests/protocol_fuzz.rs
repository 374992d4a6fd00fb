//! Structured random inputs to the agent protocol's decoder, both directions (issue 22): every
//! message kind, mutated (bytes flipped, cut, spliced, numbers made extreme, histograms with
//! hostile headers), read by the same `Reader` both sides use and decoded as the controller
//! decodes intervals. No input may panic, and none may make the decoder allocate more than a
//! bound proportional to its length (measured by a counting allocator in this test binary).
//!
//! Time budget: `OIO_FUZZ_SECS` (default 5); the seed is printed, `OIO_FUZZ_SEED` replays one.

use base64::Engine as _;
use oio_fleet::protocol::{
    send, Hello, Message, Reader, TargetCheck, WireDir, WireHistogram, WireInterval,
    WireTpccInterval,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Counts live bytes and their peak since the last reset.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn plan() -> oio_engine::RunPlan {
    oio_engine::RunPlan {
        workload: oio_core::profiles::profile("oltp-data").unwrap(),
        bindings: vec![oio_engine::TargetBinding {
            role: String::new(),
            paths: vec!["/data/t.dat".into()],
        }],
        target_options: oio_engine::TargetOptions {
            write: false,
            direct: false,
            size: Some(1 << 20),
            allow_overwrite: false,
            destroy_data: false,
            fill_seed: 0,
            wait: false,
        },
        engine: oio_engine::EngineKind::Sync,
        submit: oio_engine::SubmitMode::PerIo,
        time: Duration::from_secs(10),
        ramp: Duration::ZERO,
        interval: Duration::from_secs(1),
        seed: 1,
        latency_tracking: true,
        io_limit: None,
        verify: false,
        track_order: false,
        sim: None,
        lat_log: None,
        hdr_log: None,
        memory_limit: None,
    }
}

fn histogram() -> WireHistogram {
    let mut h = oio_core::histogram::LatencyHistogram::new();
    for v in [1, 10, 999, 5_000, 70_000, 3_000_000, 9_000_000_000] {
        h.record(v);
    }
    WireHistogram::from_sparse(&h.to_sparse())
}

/// One valid line of every message kind, both directions.
fn corpus() -> Vec<Vec<u8>> {
    let dir = WireDir {
        ios: 7,
        bytes: 7 * 4096,
        iops: 7.0,
        bytes_per_sec: 28672.0,
        latency: Some(histogram()),
    };
    let messages = vec![
        Message::Hello(Hello::current("0.1.0 (commit abc)")),
        Message::Time { seq: 3 },
        Message::TimeReply {
            seq: 3,
            agent_ns: 1_700_000_000_000_000_000,
        },
        Message::Check {
            plan: Box::new(plan()),
        },
        Message::Checked {
            targets: vec![TargetCheck {
                path: "/data/t.dat".into(),
                role: String::new(),
                status: "ok".into(),
                detail: "file".into(),
            }],
        },
        Message::Prepare {
            plan: Box::new(plan()),
        },
        Message::Ready {
            targets: vec![],
            identities: vec!["b0:file:8:1:12".into()],
        },
        Message::ReadyTpcc {
            db: "postgres://x@h/db".into(),
            warehouses: 4,
            identity: Some("postgres:7300000000000000001/16384".into()),
        },
        Message::Arm,
        Message::Armed,
        Message::Go { start_agent_ns: 5 },
        Message::Started { agent_ns: 6 },
        Message::Interval(Box::new(WireInterval {
            index: 0,
            t_s: 1.0,
            duration_s: 1.0,
            read: dir.clone(),
            write: WireDir {
                latency: None,
                ..dir.clone()
            },
            total: dir,
            errors: Some(2),
        })),
        Message::TpccInterval(Box::new(WireTpccInterval {
            index: 0,
            t_s: 1.0,
            duration_s: 1.0,
            new_orders: 12,
            completed: [("new_order".to_string(), 12u64)].into_iter().collect(),
            latency: Some(histogram()),
            new_order_latency: Some(histogram()),
            errors: None,
        })),
        Message::Stop {
            reason: "Ctrl-C".into(),
        },
        Message::Progress {
            phase: "prepare".into(),
            done: 1 << 20,
            total: 1 << 30,
            detail: "filling /data/t.dat".into(),
        },
        Message::Error {
            phase: "prepare".into(),
            message: "refused".into(),
        },
    ];
    let mut out: Vec<Vec<u8>> = messages
        .iter()
        .map(|m| {
            let mut v = Vec::new();
            send(&mut v, m).unwrap();
            v
        })
        .collect();
    out.push(b"{\"msg\":\"result\",\"result\":{}}\n".to_vec());
    out.push(b"{\"msg\":\"tpcc_result\",\"result\":{}}\n".to_vec());
    out
}

const EXTREMES: &[&str] = &[
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775809",
    "-1",
    "0",
    "1e308",
    "-1e308",
    "1e999",
    "null",
    "\"\"",
    "[]",
    "{}",
    "true",
    "4294967296",
];

/// A V2 histogram whose header is oio's layout but whose payload length, cookie or payload
/// lies.
fn hostile_histogram(rng: &mut fastrand::Rng) -> String {
    let mut b = base64::engine::general_purpose::STANDARD
        .decode(histogram().v2)
        .unwrap();
    match rng.u8(0..4) {
        0 => b[4..8].copy_from_slice(&rng.u32(..).to_be_bytes()),
        1 => b[0..4].copy_from_slice(&(0x1c84_9304u32 | 0x10).to_be_bytes()),
        2 => {
            let n = b.len();
            for _ in 0..rng.usize(1..8) {
                b[rng.usize(40..n)] = rng.u8(..);
            }
        }
        _ => {
            let extra = rng.usize(0..64);
            b.extend((0..extra).map(|_| rng.u8(..)));
        }
    }
    base64::engine::general_purpose::STANDARD.encode(b)
}

/// Changes `line` in one of several ways.
fn mutate(line: &[u8], corpus: &[Vec<u8>], rng: &mut fastrand::Rng) -> Vec<u8> {
    if line.is_empty() {
        return corpus[rng.usize(..corpus.len())].clone();
    }
    let mut v = line.to_vec();
    let text = String::from_utf8_lossy(line).into_owned();
    match rng.u8(0..9) {
        0 => {
            for _ in 0..rng.usize(1..6) {
                let i = rng.usize(..v.len());
                v[i] = rng.u8(..);
            }
        }
        1 => v.truncate(rng.usize(..v.len())),
        2 => {
            let other = &corpus[rng.usize(..corpus.len())];
            let cut = rng.usize(..v.len());
            v.truncate(cut);
            v.extend_from_slice(&other[rng.usize(..other.len())..]);
        }
        3 => {
            // A number replaced by an extreme value.
            let digits: Vec<usize> = text
                .char_indices()
                .filter(|(_, c)| c.is_ascii_digit())
                .map(|(i, _)| i)
                .collect();
            if let Some(&at) = digits.get(rng.usize(..digits.len().max(1))) {
                let end = text[at..]
                    .find(|c: char| !c.is_ascii_digit() && c != '.' && c != 'e')
                    .map_or(text.len(), |e| at + e);
                let x = EXTREMES[rng.usize(..EXTREMES.len())];
                v = format!("{}{}{}", &text[..at], x, &text[end..]).into_bytes();
            }
        }
        4 => {
            // Histograms with lying headers.
            let h = histogram().v2;
            v = text.replace(&h, &hostile_histogram(rng)).into_bytes();
        }
        5 => {
            // Deep nesting.
            let n = rng.usize(1..5000);
            v = format!(
                "{{\"msg\":\"hello\",\"x\":{}{}}}\n",
                "[".repeat(n),
                "]".repeat(n)
            )
            .into_bytes();
        }
        6 => v = (0..rng.usize(0..4096)).map(|_| rng.u8(..)).collect(),
        7 => {
            // A long array where a short one is expected.
            let n = rng.usize(1..3000);
            v = format!(
                "{{\"msg\":\"checked\",\"targets\":[{}]}}\n",
                vec!["{\"path\":\"p\",\"role\":\"\",\"status\":\"ok\",\"detail\":\"d\"}"; n]
                    .join(",")
            )
            .into_bytes();
        }
        _ => {
            // A field removed or duplicated.
            if let Some(i) = text.find(",\"") {
                let j = text[i + 1..].find(",\"").map_or(text.len(), |j| i + 1 + j);
                v = if rng.bool() {
                    format!("{}{}", &text[..i], &text[j..]).into_bytes()
                } else {
                    format!("{}{}", &text[..j], &text[i..]).into_bytes()
                };
            }
        }
    }
    if rng.u8(0..4) == 0 {
        v.push(b'\n');
    }
    v
}

/// Decodes everything in `input` as either side would: messages, then intervals' histograms.
fn decode(input: &[u8]) -> usize {
    let me = Hello::current("0.1.0 (commit abc)");
    let mut r = Reader::with_limit(input, 1 << 20);
    let mut n = 0;
    while let Ok(Some(m)) = r.next_message() {
        n += 1;
        match m {
            Message::Interval(w) => {
                let _ = w.to_interval();
            }
            Message::TpccInterval(w) => {
                for h in [&w.latency, &w.new_order_latency].into_iter().flatten() {
                    let _ = h.to_sparse();
                }
            }
            Message::Hello(peer) => {
                let _ = me.check_agent(&peer);
            }
            _ => {}
        }
    }
    n
}

#[test]
fn the_protocol_decoder_survives_hostile_input_with_bounded_allocation() {
    let secs: f64 = std::env::var("OIO_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5.0);
    let seed: u64 = std::env::var("OIO_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    println!("seed {seed} (OIO_FUZZ_SEED replays it), {secs} s");
    let mut rng = fastrand::Rng::with_seed(seed);
    let corpus = corpus();
    // The valid lines decode.
    for line in &corpus[..corpus.len() - 2] {
        assert_eq!(decode(line), 1, "{}", String::from_utf8_lossy(line));
    }
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let (mut inputs, mut decoded, mut worst) = (0u64, 0usize, 0f64);
    while Instant::now() < deadline {
        let base = &corpus[rng.usize(..corpus.len())];
        let mut input = mutate(base, &corpus, &mut rng);
        for _ in 0..rng.usize(0..3) {
            input = mutate(&input, &corpus, &mut rng);
        }
        let before = LIVE.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        decoded += decode(&input);
        let grew = PEAK.load(Ordering::Relaxed).saturating_sub(before);
        // The line buffer, the parsed message (a few times its text) and one histogram of
        // oio's layout being decoded (its counts array and buckets) at most.
        let bound = 16 * input.len() + (2 << 20);
        worst = worst.max(grew as f64 / bound as f64);
        assert!(
            grew <= bound,
            "{grew} bytes allocated for an input of {} bytes (bound {bound}): {}",
            input.len(),
            String::from_utf8_lossy(&input[..input.len().min(300)])
        );
        inputs += 1;
    }
    println!(
        "{inputs} inputs, {decoded} messages decoded from them; no panic; the largest allocation was {:.0} % of its bound",
        worst * 100.0
    );
    assert!(inputs > 100, "only {inputs} inputs in {secs} s");
}
