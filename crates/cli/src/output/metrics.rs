//! `oio fleet run --metrics ADDR`: the live figures in Prometheus' text exposition format
//! (version 0.0.4, which OpenMetrics scrapers read too), served over plain HTTP on ADDR while
//! the run lasts, so an existing Prometheus (and a Grafana on it) can watch a fleet run.
//!
//! Per host and merged: the last complete interval's IOPS (NOPM for TPC-C) and index, I/Os
//! since the start as a counter, how late each host's interval arrived, and latency as a
//! cumulative histogram with fixed `le` bounds. A bucket of oio's histogram (about 1 %
//! wide) counts under the first bound at or above its highest value, so a count near a bound
//! may sit one bound higher: bounds are never overstated.

use oio_fleet::controller::Progress;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Upper bounds of the latency buckets, seconds.
const BOUNDS_S: [f64; 19] = [
    1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0,
];

/// Counts since the start of one host or of the merged fleet.
#[derive(Default)]
struct Acc {
    ios: u64,
    /// Per bound of [`BOUNDS_S`] (and one more for +Inf), not yet cumulative.
    buckets: [u64; BOUNDS_S.len() + 1],
    sum_ns: f64,
    count: u64,
}

impl Acc {
    fn add(&mut self, count: u64, h: Option<&oio_core::histogram::SparseHistogram>) {
        // Saturating: a host's claimed counts never wrap or panic the endpoint.
        self.ios = self.ios.saturating_add(count);
        let Some(h) = h else { return };
        for [v, c] in &h.buckets {
            let s = *v as f64 / 1e9;
            let k = BOUNDS_S
                .iter()
                .position(|b| s <= *b)
                .unwrap_or(BOUNDS_S.len());
            self.buckets[k] = self.buckets[k].saturating_add(*c);
        }
        self.sum_ns += h.sum;
        self.count = self.count.saturating_add(h.count);
    }

    fn histogram(&self, o: &mut String, name: &str, label: &str) {
        let mut cum = 0;
        let sep = if label.is_empty() { "" } else { "," };
        for (k, b) in BOUNDS_S.iter().enumerate() {
            cum = u64::saturating_add(cum, self.buckets[k]);
            o.push_str(&format!("{name}_bucket{{{label}{sep}le=\"{b}\"}} {cum}\n"));
        }
        cum = u64::saturating_add(cum, self.buckets[BOUNDS_S.len()]);
        o.push_str(&format!("{name}_bucket{{{label}{sep}le=\"+Inf\"}} {cum}\n"));
        let braces = |l: &str| {
            if l.is_empty() {
                String::new()
            } else {
                format!("{{{l}}}")
            }
        };
        o.push_str(&format!(
            "{name}_sum{} {}\n",
            braces(label),
            self.sum_ns / 1e9
        ));
        o.push_str(&format!("{name}_count{} {}\n", braces(label), self.count));
    }
}

#[derive(Default)]
struct State {
    hosts: BTreeMap<String, Acc>,
    merged: Acc,
    last: Option<Progress>,
    text: String,
}

/// The metrics endpoint of one run: updated with every merged interval, served on its own
/// thread until dropped.
pub struct Metrics {
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Where it listens.
    pub addr: SocketAddr,
}

impl Metrics {
    /// Listens on `addr` (e.g. 127.0.0.1:9464); the address in use or refused is an error.
    pub fn serve(addr: &str) -> anyhow::Result<Metrics> {
        let l = TcpListener::bind(addr).map_err(|e| {
            anyhow::anyhow!("--metrics {addr}: cannot listen there: {e}; give ADDRESS:PORT, e.g. 127.0.0.1:9464")
        })?;
        l.set_nonblocking(true)?;
        let addr = l.local_addr()?;
        let state = Arc::new(Mutex::new(State {
            text: "# no interval yet\n".into(),
            ..State::default()
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (Arc::clone(&state), Arc::clone(&stop));
        let thread = std::thread::Builder::new()
            .name("oio-metrics".into())
            .spawn(move || accept_loop(&l, &s, &st))?;
        Ok(Metrics {
            state,
            stop,
            thread: Some(thread),
            addr,
        })
    }

    /// One merged interval.
    pub fn update(&self, p: &Progress) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        for h in &p.per_host {
            s.hosts
                .entry(h.host.clone())
                .or_default()
                .add(h.count, h.histogram.as_ref());
            s.merged.add(h.count, h.histogram.as_ref());
        }
        s.last = Some(p.clone());
        s.text = render(&s);
    }
}

impl Drop for Metrics {
    /// Stops accepting; the accepting thread waits on no client, so this returns at once
    /// (scrapes being answered end by their own deadline).
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn render(s: &State) -> String {
    let Some(p) = &s.last else {
        return String::new();
    };
    let unit = p.unit.to_ascii_lowercase();
    let mut o = String::new();
    o.push_str("# HELP oio_fleet_interval The last merged interval (1-based) the interval figures are of.\n# TYPE oio_fleet_interval gauge\n");
    o.push_str(&format!("oio_fleet_interval {}\n", p.index + 1));
    o.push_str(&format!(
        "# HELP oio_fleet_interval_{unit} {} of the last merged interval, per host.\n# TYPE oio_fleet_interval_{unit} gauge\n",
        p.unit
    ));
    for h in &p.per_host {
        o.push_str(&format!(
            "oio_fleet_interval_{unit}{{host=\"{}\"}} {}\n",
            h.host, h.value
        ));
    }
    // Summed in the order of the hosts, as the merged result sums them.
    let merged = p.per_host.iter().fold(0.0, |a, h| a + h.value);
    o.push_str(&format!(
        "# HELP oio_fleet_merged_interval_{unit} {} of the last merged interval, summed over the hosts that sent it.\n# TYPE oio_fleet_merged_interval_{unit} gauge\noio_fleet_merged_interval_{unit} {merged}\n",
        p.unit
    ));
    tpm(&mut o, p);
    errors(&mut o, p);
    o.push_str("# HELP oio_fleet_merged_hosts Hosts in the last merged interval.\n# TYPE oio_fleet_merged_hosts gauge\n");
    o.push_str(&format!("oio_fleet_merged_hosts {}\n", p.hosts));
    o.push_str("# HELP oio_fleet_interval_lag_seconds How much later than the first host's the host's last interval arrived.\n# TYPE oio_fleet_interval_lag_seconds gauge\n");
    for h in &p.per_host {
        o.push_str(&format!(
            "oio_fleet_interval_lag_seconds{{host=\"{}\"}} {}\n",
            h.host,
            h.lag_ms / 1e3
        ));
    }
    let what = if p.unit == "NOPM" {
        "New orders"
    } else {
        "I/Os"
    };
    o.push_str(&format!("# HELP oio_fleet_ios {what} completed in the merged intervals so far.\n# TYPE oio_fleet_ios counter\n"));
    for (h, a) in &s.hosts {
        o.push_str(&format!("oio_fleet_ios_total{{host=\"{h}\"}} {}\n", a.ios));
    }
    o.push_str(&format!("# HELP oio_fleet_merged_ios {what} completed in the merged intervals so far, every host.\n# TYPE oio_fleet_merged_ios counter\noio_fleet_merged_ios_total {}\n", s.merged.ios));
    o.push_str("# HELP oio_fleet_latency_seconds Latency in the merged intervals so far, per host.\n# TYPE oio_fleet_latency_seconds histogram\n");
    for (h, a) in &s.hosts {
        a.histogram(
            &mut o,
            "oio_fleet_latency_seconds",
            &format!("host=\"{h}\""),
        );
    }
    o.push_str("# HELP oio_fleet_merged_latency_seconds Latency in the merged intervals so far, every host (summed buckets).\n# TYPE oio_fleet_merged_latency_seconds histogram\n");
    s.merged
        .histogram(&mut o, "oio_fleet_merged_latency_seconds", "");
    o
}

/// TPC-C: each host's and the merged transactions per minute of the last interval (as the
/// driver counts them, committed and intentionally rolled back), summed as the merged result
/// sums them.
fn tpm(o: &mut String, p: &Progress) {
    if p.per_host.iter().all(|h| h.tpm.is_none()) {
        return;
    }
    o.push_str("# HELP oio_fleet_interval_tpm Transactions per minute of the last merged interval (driver-counted), per host.\n# TYPE oio_fleet_interval_tpm gauge\n");
    let mut merged = 0.0;
    for h in &p.per_host {
        if let Some(t) = h.tpm {
            o.push_str(&format!(
                "oio_fleet_interval_tpm{{host=\"{}\"}} {t}\n",
                h.host
            ));
            merged += t;
        }
    }
    o.push_str(&format!("# HELP oio_fleet_merged_interval_tpm Transactions per minute of the last merged interval (driver-counted), summed over the hosts that sent it.\n# TYPE oio_fleet_merged_interval_tpm gauge\noio_fleet_merged_interval_tpm {merged}\n"));
}

/// Each host's errors in the last interval, for the hosts whose agents count them.
fn errors(o: &mut String, p: &Progress) {
    if p.per_host.iter().all(|h| h.errors.is_none()) {
        return;
    }
    o.push_str("# HELP oio_fleet_interval_errors Failed I/Os (TPC-C: transactions failed for good) in the last merged interval, per host that counts them.\n# TYPE oio_fleet_interval_errors gauge\n");
    for h in &p.per_host {
        if let Some(e) = h.errors {
            o.push_str(&format!(
                "oio_fleet_interval_errors{{host=\"{}\"}} {e}\n",
                h.host
            ));
        }
    }
}

/// Longest a scrape may take, from its connection to the last byte of the answer: a client
/// that sends or reads slowly (or not at all) is dropped then, never holding the server.
const SCRAPE_DEADLINE: Duration = Duration::from_secs(3);
/// Scrapes served at once; more connections are closed at once (Prometheus scrapes one at a
/// time per target).
const MAX_SCRAPES: usize = 8;

/// Accepts until `stop`, each connection served on a thread of its own within
/// [`SCRAPE_DEADLINE`]: the accepting thread never waits on a client, so it ends as soon as it
/// is told to.
fn accept_loop(l: &TcpListener, state: &Arc<Mutex<State>>, stop: &AtomicBool) {
    let serving = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    while !stop.load(Ordering::SeqCst) {
        match l.accept() {
            Ok((c, _)) => {
                if serving.fetch_add(1, Ordering::SeqCst) >= MAX_SCRAPES {
                    serving.fetch_sub(1, Ordering::SeqCst);
                    continue;
                }
                let (state, count) = (Arc::clone(state), Arc::clone(&serving));
                let served = std::thread::Builder::new()
                    .name("oio-metrics-scrape".into())
                    .spawn(move || {
                        let text = state.lock().unwrap_or_else(|e| e.into_inner()).text.clone();
                        let _ = answer(c, &text, std::time::Instant::now() + SCRAPE_DEADLINE);
                        count.fetch_sub(1, Ordering::SeqCst);
                    });
                if served.is_err() {
                    serving.fetch_sub(1, Ordering::SeqCst);
                }
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Time left until `deadline`, or a timeout error when none is.
fn left(deadline: std::time::Instant) -> std::io::Result<Duration> {
    deadline
        .checked_duration_since(std::time::Instant::now())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::TimedOut, "scrape deadline"))
}

/// Reads one request's head (at most 8 KiB) and answers it, all by `deadline`: `GET /metrics`
/// (or `/`) with the figures, anything else 404.
fn answer(mut c: TcpStream, text: &str, deadline: std::time::Instant) -> std::io::Result<()> {
    c.set_nonblocking(false)?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    while buf.len() < 8192 && !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        c.set_read_timeout(Some(left(deadline)?))?;
        let n = c.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buf);
    let path = head.split_whitespace().nth(1).unwrap_or("");
    let (status, body) = if head.starts_with("GET ") && (path == "/metrics" || path == "/") {
        ("200 OK", text)
    } else {
        ("404 Not Found", "GET /metrics\n")
    };
    let out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    // Each write waits at most until the deadline: a client reading a byte at a time cannot
    // stretch the answer past it.
    let mut rest = out.as_bytes();
    while !rest.is_empty() {
        c.set_write_timeout(Some(left(deadline)?))?;
        match c.write(rest) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => rest = &rest[n..],
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
