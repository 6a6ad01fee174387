//! Charts drawn on the server as SVG: a campaign's tokens per day, one line per type. Only
//! numbers and dates go into the markup; colours come from the stylesheet (`.series-*`).

use std::fmt::Write;

/// One line of a chart: its name (a CSS class `series-<name>`), its label, and a value per day.
pub struct Series<'a> {
    pub name: &'a str,
    pub label: &'a str,
    pub values: Vec<f64>,
}

const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 240.0;
const LEFT: f64 = 64.0;
const BOTTOM: f64 = 24.0;
const TOP: f64 = 12.0;

/// A round top for the vertical axis: 1, 2 or 5 times a power of ten, at least `max` (and at
/// least 4, so that its four steps are whole numbers).
fn top_of(max: f64) -> f64 {
    if max <= 4.0 {
        return 4.0;
    }
    let power = 10f64.powf(max.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|step| step * power)
        .find(|top| *top >= max)
        .unwrap_or(10.0 * power)
}

/// A line chart of `series` over `days` (their labels, oldest first), as SVG markup.
pub fn lines(days: &[String], series: &[Series<'_>], description: &str) -> String {
    let max = series
        .iter()
        .flat_map(|s| s.values.iter().copied())
        .fold(0.0, f64::max);
    let top = top_of(max);
    let plot_w = WIDTH - LEFT - 8.0;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x = |i: usize| LEFT + plot_w * i as f64 / (days.len().max(2) - 1) as f64;
    let y = |v: f64| TOP + plot_h * (1.0 - v / top);
    let mut svg = String::new();
    let _ = write!(
        svg,
        "<svg class=\"chart\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\" aria-label=\"{description}\" xmlns=\"http://www.w3.org/2000/svg\">"
    );
    for step in 0..=4 {
        let value = top * f64::from(step) / 4.0;
        let at = y(value);
        let _ = write!(
            svg,
            "<line class=\"axis\" x1=\"{LEFT}\" y1=\"{at:.1}\" x2=\"{:.1}\" y2=\"{at:.1}\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            WIDTH - 8.0,
            LEFT - 6.0,
            at + 3.0,
            crate::format::number(&format!("{value:.0}"))
        );
    }
    let label_every = (days.len() / 6).max(1);
    for (i, day) in days.iter().enumerate() {
        if i % label_every == 0 || i + 1 == days.len() {
            let anchor = match i {
                0 => "start",
                i if i + 1 == days.len() => "end",
                _ => "middle",
            };
            let _ = write!(
                svg,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\">{day}</text>",
                x(i),
                HEIGHT - 6.0
            );
        }
    }
    for line in series {
        let points: Vec<String> = line
            .values
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{:.1},{:.1}", x(i), y(*v)))
            .collect();
        let _ = write!(
            svg,
            "<polyline class=\"series series-{}\" fill=\"none\" stroke-width=\"2\" points=\"{}\"><title>{}</title></polyline>",
            line.name,
            points.join(" "),
            line.label
        );
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_axis_tops_at_a_round_number() {
        assert_eq!(top_of(0.0), 4.0);
        assert_eq!(top_of(3.0), 4.0);
        assert_eq!(top_of(7.0), 10.0);
        assert_eq!(top_of(130.0), 200.0);
        assert_eq!(top_of(4_800.0), 5_000.0);
        assert_eq!(top_of(10_000.0), 10_000.0);
    }

    #[test]
    fn a_chart_has_a_line_per_series_and_nothing_else_of_the_caller() {
        let days: Vec<String> = (1..=3).map(|d| format!("12-0{d}")).collect();
        let series = [
            Series {
                name: "earned",
                label: "Earned",
                values: vec![1.0, 5.0, 3.0],
            },
            Series {
                name: "burned",
                label: "Burned",
                values: vec![0.0, 2.0, 0.0],
            },
        ];
        let svg = lines(&days, &series, "Tokens per day");
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("series-earned") && svg.contains(">12-03<"));
        assert!(
            !svg.contains("style="),
            "no inline style: the policy forbids it"
        );
    }
}
