//! A small SVG writer for the cost curve: one log-log panel per quantity,
//! side by side under one title. Hand-written rather than a plotting crate,
//! since lines, ticks and labels on log axes are all the curve needs.

use std::fmt::Write;

/// One line of a panel.
#[derive(Debug, Clone)]
pub struct Series {
    /// What the legend calls it.
    pub name: String,
    /// `(x, y)` points; those not above zero cannot sit on a log axis and are left out.
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed and grey: a reference, not a measurement.
    pub reference: bool,
}

/// One quantity against x, on log-log axes.
#[derive(Debug, Clone)]
pub struct Panel {
    /// Above the panel.
    pub title: String,
    /// Beside the y axis.
    pub y_label: String,
    /// Its lines.
    pub series: Vec<Series>,
}

const COLUMNS: usize = 3;
const PANEL_W: f64 = 320.0;
const PANEL_H: f64 = 250.0;
const TITLE_H: f64 = 44.0;
const LEGEND_H: f64 = 28.0;
/// Plot area inside a panel: left for y ticks, bottom for x ticks and label.
const LEFT: f64 = 62.0;
const RIGHT: f64 = 14.0;
const TOP: f64 = 34.0;
const BOTTOM: f64 = 48.0;

/// The panels in rows of three under `title`, each with `x_label` under its x axis.
pub fn small_multiples(title: &str, x_label: &str, panels: &[Panel]) -> String {
    let rows = panels.len().div_ceil(COLUMNS).max(1);
    let width = PANEL_W * COLUMNS.min(panels.len().max(1)) as f64;
    let height = TITLE_H + PANEL_H * rows as f64 + LEGEND_H;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"sans-serif\" font-size=\"11\">"
    );
    let _ = writeln!(
        out,
        "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{:.0}\" y=\"26\" text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\">{}</text>",
        width / 2.0,
        escape(title)
    );
    for (i, panel) in panels.iter().enumerate() {
        let x0 = PANEL_W * (i % COLUMNS) as f64;
        let y0 = TITLE_H + PANEL_H * (i / COLUMNS) as f64;
        draw_panel(&mut out, panel, x_label, x0, y0);
    }
    legend(&mut out, height - LEGEND_H / 2.0);
    out.push_str("</svg>\n");
    out
}

/// `text` safe inside an SVG element or attribute.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A log axis over whole decades covering `values`.
struct LogAxis {
    lo: i32,
    hi: i32,
}

impl LogAxis {
    fn covering(values: impl Iterator<Item = f64>) -> LogAxis {
        let (min, max) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
        if !min.is_finite() || !max.is_finite() {
            return LogAxis { lo: 0, hi: 1 };
        }
        let lo = min.log10().floor() as i32;
        let hi = (max.log10().ceil() as i32).max(lo + 1);
        LogAxis { lo, hi }
    }

    /// Where `v` falls, 0.0 at the low end and 1.0 at the high end.
    fn fraction(&self, v: f64) -> f64 {
        (v.log10() - f64::from(self.lo)) / f64::from(self.hi - self.lo)
    }

    fn decades(&self) -> impl Iterator<Item = i32> {
        self.lo..=self.hi
    }
}

fn draw_panel(out: &mut String, panel: &Panel, x_label: &str, x0: f64, y0: f64) {
    let plotted: Vec<Vec<(f64, f64)>> = panel
        .series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .copied()
                .filter(|&(x, y)| x > 0.0 && y > 0.0 && x.is_finite() && y.is_finite())
                .collect()
        })
        .collect();
    let xs = LogAxis::covering(plotted.iter().flatten().map(|p| p.0));
    let ys = LogAxis::covering(plotted.iter().flatten().map(|p| p.1));
    let (left, top) = (x0 + LEFT, y0 + TOP);
    let (w, h) = (PANEL_W - LEFT - RIGHT, PANEL_H - TOP - BOTTOM);
    let px = |x: f64| left + xs.fraction(x) * w;
    let py = |y: f64| top + h - ys.fraction(y) * h;
    let _ = writeln!(
        out,
        "<g>\n<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-weight=\"bold\">{}</text>",
        left + w / 2.0,
        y0 + 20.0,
        escape(&panel.title)
    );
    for k in xs.decades() {
        let x = px(10f64.powi(k));
        let _ = writeln!(
            out,
            "<line x1=\"{x:.1}\" y1=\"{top:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#e4e4e4\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            top + h,
            top + h + 15.0,
            decade(k)
        );
    }
    for k in ys.decades() {
        let y = py(10f64.powi(k));
        let _ = writeln!(
            out,
            "<line x1=\"{left:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#e4e4e4\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left + w,
            left - 5.0,
            y + 4.0,
            decade(k)
        );
    }
    let _ = writeln!(
        out,
        "<rect x=\"{left:.1}\" y=\"{top:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" fill=\"none\" stroke=\"#555\"/>\n\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n\
         <text transform=\"translate({:.1} {:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        left + w / 2.0,
        top + h + 32.0,
        escape(x_label),
        x0 + 14.0,
        top + h / 2.0,
        escape(&panel.y_label)
    );
    for (series, points) in panel.series.iter().zip(&plotted) {
        let coords: Vec<String> = points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let style = if series.reference {
            "stroke=\"#999\" stroke-dasharray=\"5 4\""
        } else {
            "stroke=\"#1f5fa8\" stroke-width=\"2\""
        };
        let _ = writeln!(
            out,
            "<polyline fill=\"none\" {style} points=\"{}\"><title>{}</title></polyline>",
            coords.join(" "),
            escape(&series.name)
        );
        if !series.reference {
            for &(x, y) in points {
                let _ = writeln!(
                    out,
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"#1f5fa8\"/>",
                    px(x),
                    py(y)
                );
            }
        }
    }
    out.push_str("</g>\n");
}

fn legend(out: &mut String, y: f64) {
    let _ = writeln!(
        out,
        "<line x1=\"20\" y1=\"{y:.1}\" x2=\"50\" y2=\"{y:.1}\" stroke=\"#1f5fa8\" stroke-width=\"2\"/>\
         <text x=\"56\" y=\"{:.1}\">measured (median)</text>\
         <line x1=\"190\" y1=\"{y:.1}\" x2=\"220\" y2=\"{y:.1}\" stroke=\"#999\" stroke-dasharray=\"5 4\"/>\
         <text x=\"226\" y=\"{:.1}\">linear from the first point (slope 1)</text>",
        y + 4.0,
        y + 4.0
    );
}

/// `10^k` as a tick label: 0.01, 0.1, 1, 10, 100, 1k … 1M.
fn decade(k: i32) -> String {
    match k {
        k if k < 0 => format!("{}", 10f64.powi(k)),
        0..=2 => format!("{}", 10i64.pow(k as u32)),
        3..=5 => format!("{}k", 10i64.pow(k as u32 - 3)),
        k => format!("{}M", 10i64.pow((k - 6) as u32)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn panel(title: &str) -> Panel {
        Panel {
            title: title.into(),
            y_label: "ms".into(),
            series: vec![
                Series {
                    name: "measured".into(),
                    points: vec![(1.0, 2.0), (10.0, 30.0), (100.0, 0.0), (1000.0, 900.0)],
                    reference: false,
                },
                Series {
                    name: "linear".into(),
                    points: vec![(1.0, 2.0), (1000.0, 2000.0)],
                    reference: true,
                },
            ],
        }
    }

    #[test]
    fn chart_has_a_polyline_per_series_and_escapes_text() {
        let svg = small_multiples("a <b> & \"c\"", "servers", &[panel("x<y"), panel("z")]);
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 4);
        assert_eq!(
            svg.matches("<polyline").count(),
            svg.matches("</polyline>").count()
        );
        assert_eq!(svg.matches("<g>").count(), svg.matches("</g>").count());
        assert!(svg.contains("a &lt;b&gt; &amp; &quot;c&quot;") && svg.contains("x&lt;y"));
        assert!(!svg.contains("x<y") && !svg.contains("NaN") && !svg.contains("inf"));
        // The zero cannot sit on a log axis: three markers per measured line.
        assert_eq!(svg.matches("<circle").count(), 6);
    }

    #[test]
    fn decades_are_labelled_short() {
        let labels: Vec<String> = (-2..=6).map(decade).collect();
        assert_eq!(
            labels,
            ["0.01", "0.1", "1", "10", "100", "1k", "10k", "100k", "1M"]
        );
    }
}
