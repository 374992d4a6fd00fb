//! PNG charts, rasterised by a headless Chromium (Debian package `chromium`).
//!
//! Why a browser: the charts are SVG made for browsers; rasterising them with the same engine
//! that shows the HTML report gives identical pictures without shipping a font stack and a
//! renderer in oio. All charts are stacked on one page (a few pages for hundreds of charts)
//! at known offsets, screenshot by one browser start, and cut apart: one start costs
//! ~1.5 s, so a browser per chart would make `--png` on a large report take minutes. The browser runs with a fresh profile directory and no background networking
//! (it would otherwise wait on a closed network).

use crate::charts;
use crate::model::Report;
use crate::svg::{HEIGHT, WIDTH};
use crate::{Artifact, Renderer, ReportError};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Renders every chart to `<id>.png` with Chromium.
#[derive(Clone, Debug)]
pub struct PngRenderer {
    /// The browser binary.
    pub chromium: PathBuf,
}

/// Finds a Chromium: `$OIO_CHROMIUM`, else `chromium`, `chromium-browser` or
/// `google-chrome` on PATH.
pub fn find_chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("OIO_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// The flags oio runs Chromium with (headless, no sandbox for root, no network chatter).
pub fn headless_args(profile: &Path) -> Vec<String> {
    let mut args: Vec<String> = Vec::new();
    // Chromium refuses to start as root with its sandbox; anyone else keeps it.
    if rustix::process::geteuid().is_root() {
        args.push("--no-sandbox".into());
    }
    args.extend([
        "--headless".into(),
        "--disable-gpu".into(),
        "--disable-quic".into(),
        "--no-first-run".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--disable-sync".into(),
        "--hide-scrollbars".into(),
        format!("--user-data-dir={}", profile.display()),
    ]);
    args
}

/// How long one screenshot may take before Chromium is stopped (a page of charts takes
/// about a second; a browser that hangs must not hang `oio report`): 90 s, or
/// `OIO_CHROMIUM_TIMEOUT` seconds.
fn chromium_deadline() -> std::time::Duration {
    let secs = std::env::var("OIO_CHROMIUM_TIMEOUT")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|s| (1..=3600).contains(s))
        .unwrap_or(90);
    std::time::Duration::from_secs(secs)
}

/// Runs `cmd` (Chromium) in a process group of its own with its output in `dir`, and stops
/// the whole group (the browser's helpers too) at the deadline. Returns its exit status and
/// the end of what it printed on stderr.
fn run_with_deadline(
    mut cmd: Command,
    dir: &Path,
    deadline: std::time::Duration,
) -> std::io::Result<(Option<std::process::ExitStatus>, String)> {
    use std::os::unix::process::CommandExt;
    let err_path = dir.join("chromium.stderr");
    let err = std::fs::File::create(&err_path)?;
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(err)
        .process_group(0)
        .spawn()?;
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break Some(st);
        }
        if start.elapsed() >= deadline {
            if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
                let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            }
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let text = std::fs::read_to_string(&err_path).unwrap_or_default();
    let tail: Vec<&str> = text.lines().rev().take(3).collect();
    Ok((status, tail.join(" | ")))
}

/// The `height` attribute of the outer `<svg>` (charts grow with their legends).
fn svg_height(svg: &str) -> f64 {
    svg.split_once("height=\"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .and_then(|(v, _)| v.parse().ok())
        .unwrap_or(HEIGHT)
}

impl PngRenderer {
    /// Screenshots one SVG (of the standard chart size) to PNG bytes.
    pub fn rasterise(&self, svg: &str) -> Result<Vec<u8>, ReportError> {
        let html = format!(
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>html,body{{margin:0;padding:0;background:#fff}}</style></head><body>{svg}</body></html>"
        );
        self.screenshot(&html, WIDTH as u32, svg_height(svg) as u32)
    }
}

/// Most page height one screenshot covers, px (Chromium's compositor limits large surfaces).
const MAX_PAGE: f64 = 8000.0;

/// The `width` attribute of the outer `<svg>`.
fn svg_width(svg: &str) -> f64 {
    svg.split_once("width=\"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .and_then(|(v, _)| v.parse().ok())
        .unwrap_or(WIDTH)
}

impl PngRenderer {
    /// Rasterises many SVGs with few browser starts: they are stacked on one page (up to
    /// [`MAX_PAGE`] px high), screenshot once, and cut apart.
    pub fn rasterise_all(&self, svgs: &[&str]) -> Result<Vec<Vec<u8>>, ReportError> {
        let mut out = Vec::with_capacity(svgs.len());
        let mut start = 0;
        while start < svgs.len() {
            let mut end = start;
            let mut h = 0.0;
            while end < svgs.len() && (end == start || h + svg_height(svgs[end]) <= MAX_PAGE) {
                h += svg_height(svgs[end]).ceil();
                end += 1;
            }
            out.extend(self.one_page(&svgs[start..end])?);
            start = end;
        }
        Ok(out)
    }

    fn one_page(&self, svgs: &[&str]) -> Result<Vec<Vec<u8>>, ReportError> {
        let boxes: Vec<(u32, u32, u32)> = {
            let mut y = 0u32;
            svgs.iter()
                .map(|s| {
                    let (w, h) = (svg_width(s).ceil() as u32, svg_height(s).ceil() as u32);
                    let b = (y, w, h);
                    y += h;
                    b
                })
                .collect()
        };
        let width = boxes.iter().map(|b| b.1).max().unwrap_or(WIDTH as u32);
        let height: u32 = boxes.iter().map(|b| b.2).sum();
        let mut body = String::new();
        for (s, (y, w, h)) in svgs.iter().zip(&boxes) {
            body.push_str(&format!(
                "<div style=\"position:absolute;left:0;top:{y}px;width:{w}px;height:{h}px\">{s}</div>"
            ));
        }
        let page = format!(
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>html,body{{margin:0;padding:0;background:#fff}}svg{{display:block}}</style></head><body>{body}</body></html>"
        );
        let full = self.screenshot(&page, width, height)?;
        let (pix, pw, ph) = decode_rgba(&full)?;
        boxes
            .iter()
            .map(|(y, w, h)| {
                let (w, h) = ((*w).min(pw), (*h).min(ph.saturating_sub(*y)));
                let mut buf = Vec::with_capacity((w * h * 4) as usize);
                for row in *y..*y + h {
                    let a = ((row * pw) * 4) as usize;
                    buf.extend_from_slice(&pix[a..a + (w * 4) as usize]);
                }
                encode_rgba(&buf, w, h)
            })
            .collect()
    }

    fn screenshot(&self, html: &str, w: u32, h: u32) -> Result<Vec<u8>, ReportError> {
        let dir = tempfile::tempdir().map_err(|e| ReportError::Io {
            what: "creating a temporary directory for Chromium".into(),
            source: e,
        })?;
        let page = dir.path().join("charts.html");
        let png = dir.path().join("charts.png");
        std::fs::write(&page, html).map_err(|e| ReportError::Io {
            what: format!("writing '{}'", page.display()),
            source: e,
        })?;
        let mut cmd = Command::new(&self.chromium);
        cmd.args(headless_args(&dir.path().join("profile")))
            .arg(format!("--window-size={w},{h}"))
            .arg(format!("--screenshot={}", png.display()))
            .arg(format!("file://{}", page.display()));
        let deadline = chromium_deadline();
        let (status, stderr) =
            run_with_deadline(cmd, dir.path(), deadline).map_err(|e| ReportError::Io {
                what: format!("starting '{}'", self.chromium.display()),
                source: e,
            })?;
        let Some(status) = status else {
            return Err(ReportError::Browser(format!(
                "'{}' did not finish a screenshot within {} s and was stopped: {stderr}",
                self.chromium.display(),
                deadline.as_secs()
            )));
        };
        std::fs::read(&png).map_err(|_| {
            ReportError::Browser(format!(
                "'{}' wrote no screenshot (exit {status}): {stderr}",
                self.chromium.display(),
            ))
        })
    }
}

fn decode_rgba(bytes: &[u8]) -> Result<(Vec<u8>, u32, u32), ReportError> {
    let bad = |e: String| ReportError::Browser(format!("unreadable screenshot: {e}"));
    let mut dec = png::Decoder::new(std::io::Cursor::new(bytes));
    dec.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = dec.read_info().map_err(|e| bad(e.to_string()))?;
    let mut buf = vec![
        0;
        reader
            .output_buffer_size()
            .ok_or_else(|| bad("too large".into()))?
    ];
    let info = reader
        .next_frame(&mut buf)
        .map_err(|e| bad(e.to_string()))?;
    buf.truncate(info.buffer_size());
    let rgba = match info.color_type {
        png::ColorType::Rgba => buf,
        png::ColorType::Rgb => buf
            .chunks(3)
            .flat_map(|p| [p[0], p[1], p[2], 255])
            .collect(),
        png::ColorType::GrayscaleAlpha => buf
            .chunks(2)
            .flat_map(|p| [p[0], p[0], p[0], p[1]])
            .collect(),
        png::ColorType::Grayscale => buf.iter().flat_map(|&g| [g, g, g, 255]).collect(),
        png::ColorType::Indexed => return Err(bad("indexed colour after expansion".into())),
    };
    Ok((rgba, info.width, info.height))
}

fn encode_rgba(pix: &[u8], w: u32, h: u32) -> Result<Vec<u8>, ReportError> {
    let mut out = Vec::new();
    let bad = |e: png::EncodingError| ReportError::Browser(format!("encoding a PNG: {e}"));
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgba);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Fast);
        let mut wr = enc.write_header().map_err(bad)?;
        wr.write_image_data(pix).map_err(bad)?;
    }
    Ok(out)
}

impl Renderer for PngRenderer {
    fn render(&self, report: &Report) -> Result<Vec<Artifact>, ReportError> {
        let charts = charts::build(report);
        let svgs: Vec<&str> = charts.iter().map(|c| c.svg.as_str()).collect();
        let pngs = self.rasterise_all(&svgs)?;
        Ok(charts
            .iter()
            .zip(pngs)
            .map(|(c, bytes)| Artifact {
                name: format!("{}.png", c.id),
                bytes,
            })
            .collect())
    }
}
