//! `oio fleet run --metrics ADDR`: the live figures in the OpenMetrics text format (1.0.0),
//! or Prometheus' text format 0.0.4 for a scraper that does not ask for OpenMetrics in its
//! `Accept` header, served over plain HTTP on ADDR while the run lasts, so an existing
//! Prometheus (and a Grafana on it) can watch a fleet run. Every family is typed; counters are
//! named `…_total` in their samples, and in the 0.0.4 format's `# TYPE` line too (where a
//! family is named as its samples are).
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

/// Which exposition format a scrape gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    /// OpenMetrics 1.0.0: families named without `_total`, ended by `# EOF`.
    OpenMetrics,
    /// Prometheus text 0.0.4: a counter's family named as its samples (`…_total`).
    Text004,
}

impl Format {
    fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Text004 => "text/plain; version=0.0.4; charset=utf-8",
        }
    }

    /// The `# HELP` and `# TYPE` lines of a counter whose samples are `{name}_total`.
    fn counter(self, o: &mut String, name: &str, help: &str) {
        let family = match self {
            Format::OpenMetrics => name.to_string(),
            Format::Text004 => format!("{name}_total"),
        };
        o.push_str(&format!(
            "# HELP {family} {help}\n# TYPE {family} counter\n"
        ));
    }
}

/// A label value as both formats write it: backslash, double quote and newline escaped (a
/// host's name is the user's, and would otherwise end the value or the line).
fn esc(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

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
    /// The exposition in each format: OpenMetrics, Prometheus text 0.0.4.
    text: [String; 2],
}

/// The metrics endpoint of one run: updated with every merged interval, served on its own
/// thread until dropped.
pub struct Metrics {
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Where it listens.
    pub addr: SocketAddr,
    /// How long it keeps serving the final figures once dropped.
    linger: Duration,
}

impl Metrics {
    /// Listens on `addr` (e.g. 127.0.0.1:9464); the address in use or refused is an error.
    pub fn serve(addr: &str, linger: Duration) -> anyhow::Result<Metrics> {
        let l = TcpListener::bind(addr).map_err(|e| {
            anyhow::anyhow!("--metrics {addr}: cannot listen there: {e}; give ADDRESS:PORT, e.g. 127.0.0.1:9464")
        })?;
        l.set_nonblocking(true)?;
        let addr = l.local_addr()?;
        let state = Arc::new(Mutex::new(State {
            // Nothing yet: an empty exposition, valid in both formats.
            text: ["# EOF\n".into(), String::new()],
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
            linger,
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
        s.text = [render(&s, Format::OpenMetrics), render(&s, Format::Text004)];
    }
}

impl Drop for Metrics {
    /// Serves the final figures for its linger (until Ctrl-C), then stops accepting; the
    /// accepting thread waits on no client, so this returns then at once (scrapes being
    /// answered end by their own deadline).
    fn drop(&mut self) {
        if !self.linger.is_zero() {
            if !super::style::quiet() {
                let _ = writeln!(
                    super::terminal::stderr(),
                    "oio fleet: serving the final figures at http://{}/metrics for {:.1} s more (--metrics-linger; Ctrl-C ends it)",
                    self.addr,
                    self.linger.as_secs_f64()
                );
            }
            let end = std::time::Instant::now() + self.linger;
            let stop = crate::interrupt::stop_flag();
            while std::time::Instant::now() < end && !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn render(s: &State, f: Format) -> String {
    let Some(p) = &s.last else {
        return if f == Format::OpenMetrics {
            "# EOF\n".into()
        } else {
            String::new()
        };
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
            esc(&h.host),
            h.value
        ));
    }
    o.push_str(&format!(
        "# HELP oio_fleet_merged_interval_{unit} {} of the last merged interval, as the merged result sums it (a database several hosts drive counted once).\n# TYPE oio_fleet_merged_interval_{unit} gauge\noio_fleet_merged_interval_{unit} {}\n",
        p.unit, p.value
    ));
    tpm(&mut o, p);
    errors(&mut o, p);
    o.push_str("# HELP oio_fleet_merged_hosts Hosts in the last merged interval.\n# TYPE oio_fleet_merged_hosts gauge\n");
    o.push_str(&format!("oio_fleet_merged_hosts {}\n", p.hosts));
    o.push_str("# HELP oio_fleet_interval_lag_seconds How much later than the first host's the host's last interval arrived.\n# TYPE oio_fleet_interval_lag_seconds gauge\n");
    for h in &p.per_host {
        o.push_str(&format!(
            "oio_fleet_interval_lag_seconds{{host=\"{}\"}} {}\n",
            esc(&h.host),
            h.lag_ms / 1e3
        ));
    }
    liveness(&mut o, p);
    let what = match p.unit {
        "NOPM" => "New orders",
        "TPS" => "Transactions committed",
        _ => "I/Os",
    };
    f.counter(
        &mut o,
        "oio_fleet_ios",
        &format!("{what} completed in the merged intervals so far, per host (an interval shown without a stalled host is not counted here when it comes later; the result counts it)."),
    );
    for (h, a) in &s.hosts {
        o.push_str(&format!(
            "oio_fleet_ios_total{{host=\"{}\"}} {}\n",
            esc(h),
            a.ios
        ));
    }
    f.counter(
        &mut o,
        "oio_fleet_merged_ios",
        &format!("{what} completed in the merged intervals so far, every host."),
    );
    o.push_str(&format!("oio_fleet_merged_ios_total {}\n", s.merged.ios));
    o.push_str("# HELP oio_fleet_latency_seconds Latency in the merged intervals so far, per host.\n# TYPE oio_fleet_latency_seconds histogram\n");
    for (h, a) in &s.hosts {
        a.histogram(
            &mut o,
            "oio_fleet_latency_seconds",
            &format!("host=\"{}\"", esc(h)),
        );
    }
    o.push_str("# HELP oio_fleet_merged_latency_seconds Latency in the merged intervals so far, every host (summed buckets).\n# TYPE oio_fleet_merged_latency_seconds histogram\n");
    s.merged
        .histogram(&mut o, "oio_fleet_merged_latency_seconds", "");
    if f == Format::OpenMetrics {
        o.push_str("# EOF\n");
    }
    o
}

/// Each host's last word and whether it is stalled, so a dashboard sees a host fall silent
/// while the others' figures go on.
fn liveness(o: &mut String, p: &Progress) {
    if p.heard.is_empty() {
        return;
    }
    o.push_str("# HELP oio_fleet_host_last_heard_timestamp_seconds When the host's last message (a keepalive too) reached the controller, Unix time.\n# TYPE oio_fleet_host_last_heard_timestamp_seconds gauge\n");
    for h in &p.heard {
        o.push_str(&format!(
            "oio_fleet_host_last_heard_timestamp_seconds{{host=\"{}\"}} {}\n",
            esc(&h.host),
            h.at_unix_s
        ));
    }
    o.push_str("# HELP oio_fleet_host_stalled 1 when the host sent no interval for two of its intervals and a second while others did (left out of the merged interval), else 0.\n# TYPE oio_fleet_host_stalled gauge\n");
    for h in &p.heard {
        o.push_str(&format!(
            "oio_fleet_host_stalled{{host=\"{}\"}} {}\n",
            esc(&h.host),
            u8::from(h.stalled)
        ));
    }
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
                esc(&h.host)
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
                esc(&h.host)
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
                        let _ = answer(c, &state, std::time::Instant::now() + SCRAPE_DEADLINE);
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

/// The format a request asks for: OpenMetrics when its `Accept` header names it (as
/// Prometheus' does), else the 0.0.4 text format every scraper reads.
fn negotiate(head: &str) -> Format {
    let accepts_om = head.lines().any(|l| {
        l.split_once(':').is_some_and(|(k, v)| {
            k.trim().eq_ignore_ascii_case("accept")
                && v.to_ascii_lowercase()
                    .contains("application/openmetrics-text")
        })
    });
    if accepts_om {
        Format::OpenMetrics
    } else {
        Format::Text004
    }
}

/// Reads one request's head (at most 8 KiB) and answers it, all by `deadline`: `GET /metrics`
/// (or `/`) with the figures in the format it asks for, anything else 404.
fn answer(
    mut c: TcpStream,
    state: &Mutex<State>,
    deadline: std::time::Instant,
) -> std::io::Result<()> {
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
    let format = negotiate(&head);
    let (status, body) = if head.starts_with("GET ") && (path == "/metrics" || path == "/") {
        let s = state.lock().unwrap_or_else(|e| e.into_inner());
        (
            "200 OK",
            s.text[usize::from(format == Format::Text004)].clone(),
        )
    } else {
        ("404 Not Found", "GET /metrics\n".to_string())
    };
    let out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        format.content_type(),
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
