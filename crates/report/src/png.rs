//! PNG charts, rasterised by a headless Chromium (Debian package `chromium`).
//!
//! Why a browser: the charts are SVG made for browsers; rasterising them with the same engine
//! that shows the HTML report gives identical pictures without shipping a font stack and a
//! renderer in oio. Each chart is wrapped in a one-element page of its exact size and
//! screenshot. The browser runs with a fresh profile directory and no background networking
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
    vec![
        "--headless".into(),
        "--no-sandbox".into(),
        "--disable-gpu".into(),
        "--disable-quic".into(),
        "--no-first-run".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--disable-sync".into(),
        "--hide-scrollbars".into(),
        format!("--user-data-dir={}", profile.display()),
    ]
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
        let dir = tempfile::tempdir().map_err(|e| ReportError::Io {
            what: "creating a temporary directory for Chromium".into(),
            source: e,
        })?;
        let page = dir.path().join("chart.html");
        let png = dir.path().join("chart.png");
        let html = format!(
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>html,body{{margin:0;padding:0;background:#fff}}</style></head><body>{svg}</body></html>"
        );
        std::fs::write(&page, html).map_err(|e| ReportError::Io {
            what: format!("writing '{}'", page.display()),
            source: e,
        })?;
        let out = Command::new(&self.chromium)
            .args(headless_args(&dir.path().join("profile")))
            .arg(format!(
                "--window-size={},{}",
                WIDTH as u32,
                svg_height(svg) as u32
            ))
            .arg(format!("--screenshot={}", png.display()))
            .arg(format!("file://{}", page.display()))
            .output()
            .map_err(|e| ReportError::Io {
                what: format!("starting '{}'", self.chromium.display()),
                source: e,
            })?;
        std::fs::read(&png).map_err(|_| {
            ReportError::Browser(format!(
                "'{}' wrote no screenshot (exit {}): {}",
                self.chromium.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .rev()
                    .take(3)
                    .collect::<Vec<_>>()
                    .join(" | ")
            ))
        })
    }
}

impl Renderer for PngRenderer {
    fn render(&self, report: &Report) -> Result<Vec<Artifact>, ReportError> {
        charts::build(report)
            .into_iter()
            .map(|c| {
                Ok(Artifact {
                    name: format!("{}.png", c.id),
                    bytes: self.rasterise(&c.svg)?,
                })
            })
            .collect()
    }
}
