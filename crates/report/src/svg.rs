//! Small SVG charts written by hand: line/scatter plots with linear or log axes, whiskers,
//! marked points and shaded bands; grouped bars with confidence whiskers; heat maps.
//!
//! Why by hand: every chart must be a self-contained inline `<svg>` (no fonts, scripts or
//! URLs to fetch), readable in a browser and as a file on its own; a charting crate would
//! bring font loading and rasterisation we do not need. Text uses the viewer's sans-serif.
//! Every data mark carries `class="mark"` so a test (or a reader's script) can tell a drawn
//! chart from an empty frame.

use std::fmt::Write;

/// Width of a chart, px.
pub const WIDTH: f64 = 760.0;
/// Height of a chart, px.
pub const HEIGHT: f64 = 380.0;
const LEFT: f64 = 78.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 52.0;
const BOTTOM: f64 = 48.0;

/// Colours of series, in order (colour-blind-safe Okabe–Ito palette, then greys).
pub const PALETTE: [&str; 10] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000",
    "#777777", "#AAAAAA",
];

/// Escapes text for XML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// How values on an axis are printed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fmt {
    /// Plain number with k/M suffixes.
    Count,
    /// Nanoseconds as ns/µs/ms/s.
    Ns,
    /// Bytes as KiB/MiB.
    Bytes,
    /// Percent.
    Pct,
    /// "Nines" of a percentile axis: x = -log10(1 - q).
    Nines,
    /// Seconds.
    Secs,
}

/// Formats `v` the way `fmt` says.
pub fn fmt_value(v: f64, fmt: Fmt) -> String {
    match fmt {
        Fmt::Count => {
            let a = v.abs();
            if a >= 1e9 {
                format!("{:.3}G", v / 1e9)
            } else if a >= 1e6 {
                format!("{:.3}M", v / 1e6)
            } else if a >= 1e4 {
                format!("{:.1}k", v / 1e3)
            } else if a >= 100.0 || v == v.round() {
                format!("{v:.0}")
            } else {
                format!("{v:.2}")
            }
        }
        Fmt::Ns => oio_core::units::format_ns(v),
        Fmt::Bytes => oio_core::units::format_bytes(v),
        Fmt::Pct => format!("{v:.0} %"),
        Fmt::Nines => {
            let q = 100.0 * (1.0 - 10f64.powf(-v));
            let s = format!("{q:.4}");
            let s = s.trim_end_matches('0').trim_end_matches('.');
            format!("p{s}")
        }
        Fmt::Secs if v == v.round() => format!("{v:.0} s"),
        Fmt::Secs => format!("{v:.1} s"),
    }
}

/// One axis.
#[derive(Clone, Debug)]
pub struct Axis {
    /// Label with unit.
    pub label: String,
    /// Logarithmic (base 10 spacing; values ≤ 0 are dropped).
    pub log: bool,
    /// Value format.
    pub fmt: Fmt,
    /// Fixed tick positions (e.g. the queue depths swept); None: automatic.
    pub ticks: Option<Vec<f64>>,
    /// Start the axis at zero (linear only).
    pub from_zero: bool,
    /// Values the axis must include whatever the data (small multiples share one scale).
    pub span: Option<(f64, f64)>,
}

impl Axis {
    /// A linear axis starting at zero.
    pub fn linear(label: &str, fmt: Fmt) -> Axis {
        Axis {
            label: label.into(),
            log: false,
            fmt,
            ticks: None,
            from_zero: true,
            span: None,
        }
    }

    /// A logarithmic axis.
    pub fn log(label: &str, fmt: Fmt) -> Axis {
        Axis {
            label: label.into(),
            log: true,
            fmt,
            ticks: None,
            from_zero: false,
            span: None,
        }
    }

    /// Spanning at least `lo..=hi`.
    pub fn with_span(mut self, lo: f64, hi: f64) -> Axis {
        self.span = Some((lo, hi));
        self
    }

    /// With fixed ticks.
    pub fn with_ticks(mut self, ticks: Vec<f64>) -> Axis {
        self.ticks = Some(ticks);
        self
    }
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    /// Connected line.
    Line,
    /// Dots.
    Points,
    /// Line with dots.
    LinePoints,
}

/// One series.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend name.
    pub name: String,
    /// (x, y) values.
    pub points: Vec<(f64, f64)>,
    /// Drawing mode.
    pub mode: Mode,
    /// Optional (low, high) per point, drawn as vertical whiskers.
    pub whiskers: Option<Vec<(f64, f64)>>,
    /// Optional label per point (e.g. "qd 16").
    pub labels: Option<Vec<String>>,
    /// Dashed line.
    pub dashed: bool,
    /// Its own colour instead of the palette's next (runs of one candidate share one).
    pub colour: Option<&'static str>,
    /// Its own dash pattern (`stroke-dasharray`), drawn in the legend too (a study's rounds).
    pub dash: Option<&'static str>,
    /// Shown when the pointer rests on the line (`<title>`): what the legend cannot hold.
    pub tooltip: Option<String>,
}

impl Series {
    /// A series drawn in `mode`.
    pub fn new(name: &str, points: Vec<(f64, f64)>, mode: Mode) -> Series {
        Series {
            name: name.into(),
            points,
            mode,
            whiskers: None,
            labels: None,
            dashed: false,
            colour: None,
            dash: None,
            tooltip: None,
        }
    }
}

/// A highlighted point.
#[derive(Clone, Debug)]
pub struct Marker {
    /// Position.
    pub x: f64,
    /// Position.
    pub y: f64,
    /// Text beside it.
    pub label: String,
}

/// Bars stacked over an x range each (a share of something per interval, over time): one
/// column per `spans` entry, one layer per name, each layer's values in column order.
#[derive(Clone, Debug, Default)]
pub struct Stack {
    /// (from, to) of each column on the x axis.
    pub spans: Vec<(f64, f64)>,
    /// (legend name, value per column), drawn bottom to top.
    pub layers: Vec<(String, Vec<f64>)>,
}

impl Stack {
    /// Top of each column.
    fn tops(&self) -> Vec<f64> {
        (0..self.spans.len())
            .map(|c| {
                self.layers
                    .iter()
                    .map(|(_, v)| v.get(c).copied().unwrap_or(0.0).max(0.0))
                    .sum()
            })
            .collect()
    }
}

/// An x/y plot.
#[derive(Clone, Debug)]
pub struct Plot {
    /// Title.
    pub title: String,
    /// Horizontal axis.
    pub x: Axis,
    /// Vertical axis.
    pub y: Axis,
    /// Series.
    pub series: Vec<Series>,
    /// Highlighted points.
    pub markers: Vec<Marker>,
    /// Shaded x ranges (from, to).
    pub bands: Vec<(f64, f64)>,
    /// Legend entry for the bands.
    pub band_label: Option<String>,
    /// Size in px (small multiples are smaller than [`WIDTH`] × [`HEIGHT`]).
    pub size: (f64, f64),
    /// Stacked bars drawn under the series (their layers take the first colours).
    pub stack: Option<Stack>,
}

struct Map {
    lo: f64,
    hi: f64,
    log: bool,
    a: f64,
    b: f64,
}

impl Map {
    fn new(values: impl Iterator<Item = f64>, axis: &Axis, a: f64, b: f64) -> Option<Map> {
        let mut lo = f64::INFINITY;
        let mut hi = f64::NEG_INFINITY;
        for v in values.filter(|v| v.is_finite() && (!axis.log || *v > 0.0)) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if let Some(t) = &axis.ticks {
            for &v in t.iter().filter(|v| !axis.log || **v > 0.0) {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
        if !lo.is_finite() {
            return None;
        }
        if let Some((a, b)) = axis.span {
            for v in [a, b]
                .into_iter()
                .filter(|v| v.is_finite() && (!axis.log || *v > 0.0))
            {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
        if axis.log {
            let (l, h) = (lo.log10(), hi.log10());
            let (l, h) = if h - l < 1e-9 {
                (l - 0.5, h + 0.5)
            } else {
                let pad = (h - l) * 0.04;
                (l - pad, h + pad)
            };
            return Some(Map {
                lo: l,
                hi: h,
                log: true,
                a,
                b,
            });
        }
        if axis.from_zero {
            lo = lo.min(0.0);
        }
        if hi - lo < 1e-12 {
            hi = lo + if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        } else {
            hi += (hi - lo) * 0.05;
        }
        Some(Map {
            lo,
            hi,
            log: false,
            a,
            b,
        })
    }

    fn px(&self, v: f64) -> f64 {
        let t = if self.log { v.max(1e-300).log10() } else { v };
        self.a + (t - self.lo) / (self.hi - self.lo) * (self.b - self.a)
    }

    fn ticks(&self, axis: &Axis) -> Vec<f64> {
        if let Some(t) = &axis.ticks {
            let mut t: Vec<f64> = t
                .iter()
                .copied()
                .filter(|v| !self.log || *v > 0.0)
                .collect();
            if t.len() > 12 {
                let step = t.len().div_ceil(12);
                t = t.into_iter().step_by(step).collect();
            }
            return t;
        }
        if self.log {
            let (l, h) = (self.lo.ceil() as i32, self.hi.floor() as i32);
            let mut v: Vec<f64> = (l..=h).map(|e| 10f64.powi(e)).collect();
            if v.len() <= 2 {
                let mut more = Vec::new();
                for e in (self.lo.floor() as i32)..=(self.hi.ceil() as i32) {
                    for m in [1.0, 2.0, 5.0] {
                        let x = m * 10f64.powi(e);
                        let lx = x.log10();
                        if lx >= self.lo && lx <= self.hi {
                            more.push(x);
                        }
                    }
                }
                v = more;
            }
            if v.is_empty() {
                // A range narrower than 1-2-5 steps: label its middle so the axis has a scale.
                v.push(10f64.powf((self.lo + self.hi) / 2.0));
            }
            return v;
        }
        let span = self.hi - self.lo;
        let raw = span / 6.0;
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 2.5, 5.0, 10.0]
            .iter()
            .map(|m| m * mag)
            .find(|s| span / s <= 7.0)
            .unwrap_or(10.0 * mag);
        let mut v = Vec::new();
        let mut t = (self.lo / step).ceil() * step;
        while t <= self.hi + step * 1e-9 {
            v.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
            t += step;
        }
        v
    }
}

/// Font size and forced length of a title so it fits `w` (estimated at 0.6 em per bold
/// character; when even 11 px is too wide the browser squeezes it to the width).
fn title_fit(title: &str, w: f64) -> (f64, Option<f64>) {
    let room = w - 16.0;
    let chars = title.chars().count().max(1) as f64;
    let size = (room / (0.6 * chars)).clamp(11.0, 15.0);
    let squeeze = (0.6 * size * chars > room).then_some(room);
    (size, squeeze)
}

fn open(out: &mut String, id: &str, title: &str, w: f64, h: f64) {
    let (size, squeeze) = title_fit(title, w);
    let _ = write!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" class="oio-chart" data-chart="{id}" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" font-family="sans-serif" font-size="12"><title>{t}</title><rect width="{w}" height="{h}" fill="#ffffff"/><text class="title" x="{tx}" y="20" text-anchor="middle" font-size="{size:.1}" font-weight="bold"{sq}>{t}</text>"##,
        t = esc(title),
        tx = w / 2.0,
        sq = squeeze
            .map(|l| format!(r#" textLength="{l:.0}" lengthAdjust="spacingAndGlyphs""#))
            .unwrap_or_default(),
    );
}

fn legend_width(name: &str) -> f64 {
    24.0 + 6.5 * name.chars().count() as f64 + 14.0
}

/// Rows the legend needs.
fn legend_rows(names: &[String], w: f64) -> usize {
    let mut rows = 1;
    let mut x = LEFT;
    for n in names {
        let width = legend_width(n);
        if x + width > w - RIGHT && x > LEFT {
            rows += 1;
            x = LEFT;
        }
        x += width;
    }
    rows
}

/// How a legend entry is drawn.
#[derive(Clone, Copy, PartialEq)]
enum Key {
    /// A line (a series), with its dash pattern.
    Line(Option<&'static str>),
    /// A pale box (a shaded band).
    Band,
    /// A solid box (a bar or a stacked layer).
    Box,
}

fn legend(out: &mut String, entries: &[(String, &str, Key)], w: f64) {
    // One row (wrapping) under the title.
    let mut x = LEFT;
    let mut y = 38.0;
    for (name, colour, band) in entries {
        let width = legend_width(name);
        if x + width > w - RIGHT && x > LEFT {
            x = LEFT;
            y += 14.0;
        }
        if let Key::Line(dash) = band {
            let _ = write!(
                out,
                r#"<line x1="{x}" y1="{yy}" x2="{}" y2="{yy}" stroke="{colour}" stroke-width="2.5"{}/>"#,
                x + 14.0,
                dash.map(|d| format!(r#" stroke-dasharray="{d}""#))
                    .unwrap_or_default(),
                yy = y - 4.0
            );
        } else {
            let _ = write!(
                out,
                r#"<rect x="{x}" y="{}" width="14" height="10" fill="{colour}" fill-opacity="{}"/>"#,
                y - 9.0,
                if *band == Key::Band { "0.18" } else { "0.85" }
            );
        }
        let _ = write!(
            out,
            r#"<text x="{}" y="{y}" font-size="11">{}</text>"#,
            x + 18.0,
            esc(name)
        );
        x += width;
    }
}

impl Plot {
    /// A plot without series yet.
    pub fn new(title: &str, x: Axis, y: Axis) -> Plot {
        Plot {
            title: title.into(),
            x,
            y,
            series: Vec::new(),
            markers: Vec::new(),
            bands: Vec::new(),
            band_label: None,
            size: (WIDTH, HEIGHT),
            stack: None,
        }
    }

    /// True when there is something to draw.
    pub fn has_data(&self) -> bool {
        self.series.iter().any(|s| !s.points.is_empty())
            || self
                .stack
                .as_ref()
                .is_some_and(|s| s.tops().iter().any(|t| *t > 0.0))
    }

    /// The chart as an `<svg>` element with `data-chart="{id}"`.
    pub fn to_svg(&self, id: &str) -> String {
        let layers: &[(String, Vec<f64>)] = self.stack.as_ref().map_or(&[], |s| &s.layers);
        let mut names: Vec<String> = layers
            .iter()
            .map(|l| l.0.clone())
            .chain(self.series.iter().map(|s| s.name.clone()))
            .collect();
        if let Some(b) = &self.band_label {
            names.push(b.clone());
        }
        // The legend takes rows under the title; the chart grows by them.
        let extra = (legend_rows(&names, self.size.0) as f64 - 1.0) * 14.0;
        let top = TOP + extra;
        let (w, h) = (self.size.0, self.size.1 + extra);
        let mut o = String::with_capacity(8192);
        open(&mut o, id, &self.title, w, h);
        let Some(f) = self.frame(w, h, top) else {
            let _ = write!(
                o,
                r##"<text x="{}" y="{}" text-anchor="middle" fill="#777">no data</text></svg>"##,
                w / 2.0,
                h / 2.0
            );
            return o;
        };
        self.draw_bands(&mut o, &f);
        self.draw_axes(&mut o, &f);
        let mut entries = Vec::new();
        self.draw_stack(&mut o, &f, &mut entries);
        self.draw_series(&mut o, &f, &mut entries);
        self.draw_markers(&mut o, &f);
        if let Some(b) = &self.band_label {
            if !self.bands.is_empty() {
                entries.push((b.clone(), "#E69F00", Key::Band));
            }
        }
        if entries.len() > 1 || self.band_label.is_some() {
            legend(&mut o, &entries, w);
        }
        o.push_str("</svg>");
        o
    }

    /// The plotting area of a chart `w` × `h` whose plot starts at `top`, and the axes' maps
    /// over every value drawn; None when there is nothing to draw.
    fn frame(&self, w: f64, h: f64, top: f64) -> Option<Frame> {
        let xs = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .chain(self.markers.iter().map(|m| m.x))
            .chain(
                self.stack
                    .iter()
                    .flat_map(|s| s.spans.iter().flat_map(|(a, b)| [*a, *b])),
            );
        let tops = self.stack.as_ref().map(Stack::tops).unwrap_or_default();
        let ys = self
            .series
            .iter()
            .flat_map(|s| {
                s.points.iter().map(|p| p.1).chain(
                    s.whiskers
                        .iter()
                        .flat_map(|w| w.iter().flat_map(|(a, b)| [*a, *b])),
                )
            })
            .chain(self.markers.iter().map(|m| m.y))
            .chain(tops.iter().copied())
            .chain(self.stack.as_ref().map(|_| 0.0));
        Some(Frame {
            w,
            h,
            top,
            mx: Map::new(xs, &self.x, LEFT, w - RIGHT)?,
            my: Map::new(ys, &self.y, h - BOTTOM, top)?,
        })
    }

    /// The highlighted x ranges (behind everything).
    fn draw_bands(&self, o: &mut String, f: &Frame) {
        let (w, h, top, mx) = (f.w, f.h, f.top, &f.mx);
        for (a, b) in &self.bands {
            let (x0, x1) = (mx.px(*a).max(LEFT), mx.px(*b).min(w - RIGHT));
            if x1 > x0 {
                let _ = write!(
                    o,
                    r##"<rect x="{x0:.1}" y="{top}" width="{:.1}" height="{:.1}" fill="#E69F00" fill-opacity="0.18"/>"##,
                    x1 - x0,
                    h - BOTTOM - top
                );
            }
        }
    }

    /// Grid, ticks, the frame and the axis labels.
    fn draw_axes(&self, o: &mut String, f: &Frame) {
        let (w, h, top, mx, my) = (f.w, f.h, f.top, &f.mx, &f.my);
        let _ = write!(o, r##"<g stroke="#e3e3e3" stroke-width="1">"##);
        let yt = my.ticks(&self.y);
        let xt = mx.ticks(&self.x);
        for t in &yt {
            let y = my.px(*t);
            let _ = write!(
                o,
                r#"<line x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}"/>"#,
                w - RIGHT
            );
        }
        for t in &xt {
            let x = mx.px(*t);
            let _ = write!(
                o,
                r#"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{}"/>"#,
                h - BOTTOM
            );
        }
        o.push_str("</g>");
        let _ = write!(
            o,
            r##"<rect x="{LEFT}" y="{top}" width="{}" height="{}" fill="none" stroke="#888"/>"##,
            w - RIGHT - LEFT,
            h - BOTTOM - top
        );
        for t in &yt {
            let _ = write!(
                o,
                r#"<text x="{}" y="{:.1}" text-anchor="end" font-size="11">{}</text>"#,
                LEFT - 5.0,
                my.px(*t) + 4.0,
                esc(&fmt_value(*t, self.y.fmt))
            );
        }
        for t in &xt {
            let _ = write!(
                o,
                r#"<text x="{:.1}" y="{}" text-anchor="middle" font-size="11">{}</text>"#,
                mx.px(*t),
                h - BOTTOM + 15.0,
                esc(&fmt_value(*t, self.x.fmt))
            );
        }
        let _ = write!(
            o,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
            (LEFT + w - RIGHT) / 2.0,
            h - 10.0,
            esc(&self.x.label)
        );
        let _ = write!(
            o,
            r#"<text transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
            (top + h - BOTTOM) / 2.0,
            esc(&self.y.label)
        );
    }

    /// A stacked-column chart's columns, and its layers' legend entries.
    fn draw_stack(
        &self,
        o: &mut String,
        f: &Frame,
        entries: &mut Vec<(String, &'static str, Key)>,
    ) {
        let (w, mx, my) = (f.w, &f.mx, &f.my);
        if let Some(st) = &self.stack {
            for (k, (name, _)) in st.layers.iter().enumerate() {
                entries.push((name.clone(), PALETTE[k % PALETTE.len()], Key::Box));
            }
            for (c, (a, b)) in st.spans.iter().enumerate() {
                // A thin gap between columns, so neighbours stay apart.
                let (x0, x1) = (mx.px(*a), mx.px(*b));
                let gap = ((x1 - x0) * 0.08).min(2.0);
                let (x0, x1) = (x0.max(LEFT) + gap / 2.0, x1.min(w - RIGHT) - gap / 2.0);
                if x1.partial_cmp(&x0) != Some(std::cmp::Ordering::Greater) {
                    continue;
                }
                let mut base = 0.0;
                for (k, (_, v)) in st.layers.iter().enumerate() {
                    let v = v.get(c).copied().unwrap_or(0.0).max(0.0);
                    if v <= 0.0 || !v.is_finite() {
                        continue;
                    }
                    let (y0, y1) = (my.px(base), my.px(base + v));
                    let _ = write!(
                        o,
                        r#"<rect class="mark" x="{x0:.1}" y="{y1:.1}" width="{:.1}" height="{:.1}" fill="{}" fill-opacity="0.85"/>"#,
                        x1 - x0,
                        (y0 - y1).max(0.5),
                        PALETTE[k % PALETTE.len()]
                    );
                    base += v;
                }
            }
        }
    }

    /// Each series as a line, points, whiskers and point labels, and its legend entry.
    fn draw_series(
        &self,
        o: &mut String,
        f: &Frame,
        entries: &mut Vec<(String, &'static str, Key)>,
    ) {
        let (w, top, mx, my) = (f.w, f.top, &f.mx, &f.my);
        let first = self.stack.as_ref().map_or(0, |s| s.layers.len());
        for (i, s) in self.series.iter().enumerate() {
            let colour = s.colour.unwrap_or(PALETTE[(first + i) % PALETTE.len()]);
            entries.push((s.name.clone(), colour, Key::Line(s.dash)));
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .filter(|(x, y)| plottable(*x, *y, mx, my))
                .map(|(x, y)| (mx.px(*x), my.px(*y)))
                .collect();
            if let Some(wh) = &s.whiskers {
                for ((x, _), (lo, hi)) in s.points.iter().zip(wh) {
                    if plottable(*x, *lo, mx, my) && plottable(*x, *hi, mx, my) {
                        let px = mx.px(*x);
                        let _ = write!(
                            o,
                            r#"<path class="mark" d="M{px:.1} {:.1}V{:.1}M{:.1} {:.1}h8M{:.1} {:.1}h8" stroke="{colour}" fill="none"/>"#,
                            my.px(*lo),
                            my.px(*hi),
                            px - 4.0,
                            my.px(*lo),
                            px - 4.0,
                            my.px(*hi)
                        );
                    }
                }
            }
            if matches!(s.mode, Mode::Line | Mode::LinePoints) && pts.len() > 1 {
                let mut d = String::with_capacity(pts.len() * 14);
                for (j, (x, y)) in pts.iter().enumerate() {
                    let _ = write!(d, "{}{x:.1} {y:.1}", if j == 0 { "M" } else { "L" });
                }
                let dash = s.dash.or(s.dashed.then_some("5 3"));
                let _ = write!(
                    o,
                    r#"<path class="mark" d="{d}" fill="none" stroke="{colour}" stroke-width="1.8"{}{}"#,
                    dash.map(|d| format!(r#" stroke-dasharray="{d}""#))
                        .unwrap_or_default(),
                    match &s.tooltip {
                        Some(t) => format!("><title>{}</title></path>", esc(t)),
                        None => "/>".into(),
                    }
                );
            }
            if matches!(s.mode, Mode::Points | Mode::LinePoints) || pts.len() == 1 {
                let r = if pts.len() > 300 { 1.8 } else { 3.0 };
                for (x, y) in &pts {
                    let _ = write!(
                        o,
                        r#"<circle class="mark" cx="{x:.1}" cy="{y:.1}" r="{r}" fill="{colour}" fill-opacity="0.8"/>"#
                    );
                }
            }
            if let Some(labels) = &s.labels {
                for ((x, y), l) in s.points.iter().zip(labels) {
                    if plottable(*x, *y, mx, my) {
                        let px = mx.px(*x);
                        // Near the right edge the label goes left of its point, inside the box.
                        let (lx, anchor) = if px > w * 0.8 {
                            (px - 5.0, "end")
                        } else {
                            (px + 5.0, "start")
                        };
                        let _ = write!(
                            o,
                            r##"<text x="{lx:.1}" y="{:.1}" font-size="10" fill="#333" text-anchor="{anchor}">{}</text>"##,
                            (my.px(*y) - 5.0).max(top + 10.0),
                            esc(l)
                        );
                    }
                }
            }
        }
    }

    /// The markers (knees), their labels stacked.
    fn draw_markers(&self, o: &mut String, f: &Frame) {
        let (w, h, top, mx, my) = (f.w, f.h, f.top, &f.mx, &f.my);
        for (k, m) in self.markers.iter().enumerate() {
            if plottable(m.x, m.y, mx, my) {
                let (x, y) = (mx.px(m.x), my.px(m.y));
                // Several markers (knee rules) stack their labels; near the bottom they go up.
                let below = y + 16.0 + 13.0 * k as f64;
                let ly = if below > h - BOTTOM - 4.0 {
                    y - 12.0 - 13.0 * k as f64
                } else {
                    below
                };
                let _ = write!(
                    o,
                    r##"<circle class="mark knee" cx="{x:.1}" cy="{y:.1}" r="7" fill="none" stroke="#D00000" stroke-width="2.5"/><text x="{:.1}" y="{:.1}" font-size="11" font-weight="bold" fill="#D00000" text-anchor="{}">{}</text>"##,
                    if x > w * 0.7 { x - 10.0 } else { x + 10.0 },
                    ly.max(top + 10.0),
                    if x > w * 0.7 { "end" } else { "start" },
                    esc(&m.label)
                );
            }
        }
    }
}

/// Where a chart draws: its size, the top of the plot (under the legend) and the axes' maps.
struct Frame {
    w: f64,
    h: f64,
    top: f64,
    mx: Map,
    my: Map,
}

/// A point that can be drawn on these axes (finite, and positive on a log axis).
fn plottable(x: f64, y: f64, m: &Map, n: &Map) -> bool {
    x.is_finite() && y.is_finite() && (!m.log || x > 0.0) && (!n.log || y > 0.0)
}

/// A bar's value and optional (low, high) whisker.
pub type BarValue = (f64, Option<(f64, f64)>);

/// One bar series of a bar chart.
#[derive(Clone, Debug)]
pub struct BarSeries {
    /// Legend name.
    pub name: String,
    /// Per category: value and optional (low, high) whisker.
    pub values: Vec<Option<BarValue>>,
}

/// Grouped vertical bars.
#[derive(Clone, Debug)]
pub struct Bars {
    /// Title.
    pub title: String,
    /// Value axis label.
    pub y_label: String,
    /// Value format.
    pub fmt: Fmt,
    /// Category names.
    pub categories: Vec<String>,
    /// Series.
    pub series: Vec<BarSeries>,
}

impl Bars {
    /// The chart as an `<svg>` element.
    pub fn to_svg(&self, id: &str) -> String {
        let (w, h) = (WIDTH, HEIGHT);
        let mut o = String::with_capacity(4096);
        open(&mut o, id, &self.title, w, h);
        let vals = self.series.iter().flat_map(|s| {
            s.values.iter().flatten().flat_map(|(v, wh)| {
                let mut x = vec![*v];
                if let Some((a, b)) = wh {
                    x.push(*a);
                    x.push(*b);
                }
                x
            })
        });
        let axis = Axis::linear(&self.y_label, self.fmt);
        let Some(my) = Map::new(vals.chain([0.0]), &axis, h - BOTTOM, TOP) else {
            o.push_str("</svg>");
            return o;
        };
        let yt = my.ticks(&axis);
        for t in &yt {
            let y = my.px(*t);
            let _ = write!(
                o,
                r##"<line x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="{}"/><text x="{}" y="{:.1}" text-anchor="end" font-size="11">{}</text>"##,
                w - RIGHT,
                if *t == 0.0 { "#555" } else { "#e3e3e3" },
                LEFT - 5.0,
                y + 4.0,
                esc(&fmt_value(*t, self.fmt))
            );
        }
        let _ = write!(
            o,
            r#"<text transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
            (TOP + h - BOTTOM) / 2.0,
            esc(&self.y_label)
        );
        let nc = self.categories.len().max(1) as f64;
        let ns = self.series.len().max(1) as f64;
        let slot = (w - LEFT - RIGHT) / nc;
        let bw = (slot * 0.8 / ns).min(60.0);
        let zero = my.px(0.0);
        for (ci, c) in self.categories.iter().enumerate() {
            let cx = LEFT + slot * (ci as f64 + 0.5);
            // Crowded labels alternate between two rows; one still wider than two slots is
            // squeezed to fit (its full text is in the table beside the chart).
            let est = 6.2 * c.chars().count() as f64;
            let crowded = self
                .categories
                .iter()
                .any(|c| 6.2 * c.chars().count() as f64 > slot - 4.0);
            let room = if crowded {
                2.0 * slot - 6.0
            } else {
                slot - 4.0
            };
            let room = room.min(2.0 * (cx - 2.0)).min(2.0 * (w - cx - 2.0));
            let _ = write!(
                o,
                r#"<text x="{cx:.1}" y="{}" text-anchor="middle" font-size="11"{}>{}</text>"#,
                h - BOTTOM + if crowded && ci % 2 == 1 { 29.0 } else { 15.0 },
                if est > room {
                    format!(r#" textLength="{room:.0}" lengthAdjust="spacingAndGlyphs""#)
                } else {
                    String::new()
                },
                esc(c)
            );
            for (si, s) in self.series.iter().enumerate() {
                let Some(Some((v, wh))) = s.values.get(ci) else {
                    continue;
                };
                let colour = PALETTE[si % PALETTE.len()];
                let x = cx - bw * ns / 2.0 + bw * si as f64;
                let y = my.px(*v);
                let _ = write!(
                    o,
                    r#"<rect class="mark" x="{x:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{colour}" fill-opacity="0.85"/>"#,
                    y.min(zero),
                    bw - 2.0,
                    (y - zero).abs().max(1.0)
                );
                if let Some((lo, hi)) = wh {
                    let mid = x + (bw - 2.0) / 2.0;
                    let _ = write!(
                        o,
                        r##"<path class="mark" d="M{mid:.1} {:.1}V{:.1}M{:.1} {:.1}h8M{:.1} {:.1}h8" stroke="#000" stroke-width="1.3" fill="none"/>"##,
                        my.px(*lo),
                        my.px(*hi),
                        mid - 4.0,
                        my.px(*lo),
                        mid - 4.0,
                        my.px(*hi)
                    );
                }
            }
        }
        let entries: Vec<(String, &str, Key)> = self
            .series
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.clone(), PALETTE[i % PALETTE.len()], Key::Box))
            .collect();
        legend(&mut o, &entries, w);
        o.push_str("</svg>");
        o
    }
}

/// A heat map of values on a grid of labelled rows and columns.
#[derive(Clone, Debug)]
pub struct Heatmap {
    /// Title.
    pub title: String,
    /// Column axis label.
    pub x_label: String,
    /// Row axis label.
    pub y_label: String,
    /// Column names.
    pub columns: Vec<String>,
    /// Row names.
    pub rows: Vec<String>,
    /// values[row][column].
    pub values: Vec<Vec<Option<f64>>>,
    /// Value format.
    pub fmt: Fmt,
}

impl Heatmap {
    /// The chart as an `<svg>` element.
    pub fn to_svg(&self, id: &str) -> String {
        let (w, h) = (WIDTH, HEIGHT);
        let mut o = String::with_capacity(4096);
        open(&mut o, id, &self.title, w, h);
        let all: Vec<f64> = self.values.iter().flatten().flatten().copied().collect();
        let max = all.iter().copied().fold(0.0f64, f64::max).max(1e-12);
        let nc = self.columns.len().max(1) as f64;
        let nr = self.rows.len().max(1) as f64;
        let cw = (w - LEFT - RIGHT) / nc;
        let ch = (h - TOP - BOTTOM) / nr;
        for (ri, row) in self.values.iter().enumerate() {
            for (ci, v) in row.iter().enumerate() {
                let x = LEFT + cw * ci as f64;
                let y = TOP + ch * ri as f64;
                match v {
                    Some(v) => {
                        let t = (v / max).clamp(0.0, 1.0);
                        // White to deep blue.
                        let (r, g, b) = (
                            (247.0 - t * 239.0) as u8,
                            (251.0 - t * 203.0) as u8,
                            (255.0 - t * 148.0) as u8,
                        );
                        let _ = write!(
                            o,
                            r##"<rect class="mark" x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="rgb({r},{g},{b})" stroke="#fff"/><text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="12" fill="{}">{}</text>"##,
                            cw,
                            ch,
                            x + cw / 2.0,
                            y + ch / 2.0 + 4.0,
                            if t > 0.55 { "#fff" } else { "#000" },
                            esc(&fmt_value(*v, self.fmt))
                        );
                    }
                    None => {
                        let _ = write!(
                            o,
                            r##"<rect x="{x:.1}" y="{y:.1}" width="{cw:.1}" height="{ch:.1}" fill="#f2f2f2" stroke="#fff"/>"##
                        );
                    }
                }
            }
        }
        for (ci, c) in self.columns.iter().enumerate() {
            let _ = write!(
                o,
                r#"<text x="{:.1}" y="{}" text-anchor="middle" font-size="11">{}</text>"#,
                LEFT + cw * (ci as f64 + 0.5),
                h - BOTTOM + 15.0,
                esc(c)
            );
        }
        for (ri, r) in self.rows.iter().enumerate() {
            let _ = write!(
                o,
                r#"<text x="{}" y="{:.1}" text-anchor="end" font-size="11">{}</text>"#,
                LEFT - 5.0,
                TOP + ch * (ri as f64 + 0.5) + 4.0,
                esc(r)
            );
        }
        let _ = write!(
            o,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text><text transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">{}</text></svg>"#,
            (LEFT + w - RIGHT) / 2.0,
            h - 10.0,
            esc(&self.x_label),
            (TOP + h - BOTTOM) / 2.0,
            esc(&self.y_label)
        );
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plot_is_well_formed_and_marks_data() {
        let mut p = Plot::new(
            "IOPS <by> depth",
            Axis::log("queue depth", Fmt::Count).with_ticks(vec![1.0, 2.0, 4.0, 8.0]),
            Axis::linear("IOPS", Fmt::Count),
        );
        p.series.push(Series::new(
            "a&b",
            vec![(1.0, 10.0), (2.0, 20.0), (4.0, 35.0), (8.0, 36.0)],
            Mode::LinePoints,
        ));
        p.series
            .push(Series::new("c", vec![(1.0, 5.0), (8.0, 6.0)], Mode::Line));
        p.markers.push(Marker {
            x: 4.0,
            y: 35.0,
            label: "knee".into(),
        });
        let s = p.to_svg("t");
        assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
        assert!(s.contains("IOPS &lt;by&gt; depth") && s.contains("a&amp;b"));
        // One line and four dots, then one line.
        assert_eq!(s.matches("class=\"mark\"").count(), 1 + 4 + 1);
        assert!(s.contains("class=\"mark knee\""));
        assert!(!s.contains("http://") || s.matches("http://").count() == 1); // only xmlns
        assert!(!s.contains("NaN") && !s.contains("inf"));
    }

    #[test]
    fn long_titles_and_crowded_labels_are_fitted_not_clipped() {
        // A short title keeps its size; a long one shrinks, then is squeezed to the width.
        assert_eq!(title_fit("IOPS", WIDTH), (15.0, None));
        let long = "x".repeat(200);
        let (size, squeeze) = title_fit(&long, WIDTH);
        assert_eq!(size, 11.0);
        assert_eq!(squeeze, Some(WIDTH - 16.0));
        let svg = Plot::new(
            &long,
            Axis::linear("t", Fmt::Secs),
            Axis::linear("v", Fmt::Count),
        )
        .to_svg("t");
        assert!(svg.contains(r#"textLength="744""#));
        let bars = Bars {
            title: "b".into(),
            y_label: "IOPS".into(),
            fmt: Fmt::Count,
            categories: (0..20)
                .map(|i| format!("a rather long run name {i}"))
                .collect(),
            series: vec![BarSeries {
                name: "IOPS".into(),
                values: (0..20).map(|i| Some((i as f64, None))).collect(),
            }],
        }
        .to_svg("b");
        // Crowded: every label is squeezed into at most two slots, odd ones on a second row.
        let slot = (WIDTH - LEFT - RIGHT) / 20.0;
        for l in bars.split("textLength=\"").skip(1) {
            let v: f64 = l.split('"').next().unwrap().parse().unwrap();
            assert!(v <= 2.0 * slot - 6.0 + 0.5, "{v} > two slots");
        }
        assert!(bars.contains(&format!("y=\"{}\"", HEIGHT - BOTTOM + 29.0)));
    }

    #[test]
    fn stacked_layers_draw_one_box_per_value_and_reach_the_sum() {
        let mut p = Plot::new(
            "waits",
            Axis::linear("time (s)", Fmt::Secs),
            Axis::linear("average active sessions", Fmt::Count),
        );
        p.stack = Some(Stack {
            spans: vec![(0.0, 1.0), (1.0, 2.0), (2.0, 3.0)],
            layers: vec![
                ("io".into(), vec![1.0, 2.0, 0.0]),
                ("log".into(), vec![1.0, 0.0, 3.0]),
            ],
        });
        assert!(p.has_data());
        let svg = p.to_svg("w");
        // Zero values draw nothing: 2 + 1 + 1 boxes, and both names in the legend.
        assert_eq!(svg.matches("<rect class=\"mark\"").count(), 4);
        assert!(svg.contains(">io<") && svg.contains(">log<"));
        // Every column reaches 2 or 3 sessions on one scale: the tallest column (3) is the
        // top of the data, so its box starts higher than the others'.
        let ys: Vec<f64> = svg
            .split("<rect class=\"mark\"")
            .skip(1)
            .map(|r| {
                r.split("y=\"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect();
        let top = ys.iter().copied().fold(f64::INFINITY, f64::min);
        assert_eq!(ys.iter().filter(|y| (**y - top).abs() < 0.05).count(), 1);
        let empty = Plot {
            stack: Some(Stack {
                spans: vec![(0.0, 1.0)],
                layers: vec![("io".into(), vec![0.0])],
            }),
            ..Plot::new(
                "e",
                Axis::linear("t", Fmt::Secs),
                Axis::linear("v", Fmt::Count),
            )
        };
        assert!(!empty.has_data());
    }

    #[test]
    fn empty_plot_says_so() {
        let p = Plot::new("x", Axis::linear("a", Fmt::Count), Axis::log("b", Fmt::Ns));
        assert!(p.to_svg("e").contains("no data"));
    }

    #[test]
    fn value_formats() {
        assert_eq!(fmt_value(2.0, Fmt::Nines), "p99");
        assert_eq!(fmt_value(3.0, Fmt::Nines), "p99.9");
        assert_eq!(fmt_value(std::f64::consts::LOG10_2, Fmt::Nines), "p50");
        assert_eq!(fmt_value(123_456.0, Fmt::Count), "123.5k");
    }
}
