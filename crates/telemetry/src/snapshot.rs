//! The metrics as data, for a host process that publishes them with its own library (the
//! Python binding's `Metrics.snapshot()`, `toolgate serve`'s `metrics` request): every sample
//! of the exposition, read back from the Prometheus text the scrape endpoint serves, so the
//! host sees exactly what a scraper would (buckets included), by one encoder.
//!
//! `prometheus-client` offers no way to list a family's label sets, so the exposition is the
//! one complete view; reading it back costs a scrape, which a host asks for every few seconds
//! at most.

use serde::Serialize;

use crate::metrics::Metrics;

/// One sample: a series' name (with its `_total`, `_bucket`, `_sum` or `_count` suffix), its
/// labels in exposition order, and its value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sample {
    /// The series' name, as exposed.
    pub name: String,
    /// Its labels, name and value, in the order exposed (a JSON object when serialized).
    #[serde(serialize_with = "as_map")]
    pub labels: Vec<(String, String)>,
    /// Its value.
    pub value: f64,
}

fn as_map<S: serde::Serializer>(
    labels: &[(String, String)],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_map(labels.iter().map(|(name, value)| (name, value)))
}

impl Metrics {
    /// Every sample the scrape endpoint would serve now.
    pub fn samples(&self) -> Vec<Sample> {
        parse_exposition(&self.prometheus_text())
    }
}

/// The samples of a Prometheus text exposition (version 0.0.4); comments and lines that are not
/// a sample are skipped.
pub fn parse_exposition(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(parse_sample)
        .collect()
}

fn parse_sample(line: &str) -> Option<Sample> {
    let name_end = line.find(['{', ' '])?;
    let name = &line[..name_end];
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(inner) = rest.strip_prefix('{') {
        rest = inner;
        loop {
            rest = rest.trim_start_matches(',');
            if let Some(after) = rest.strip_prefix('}') {
                rest = after;
                break;
            }
            let equals = rest.find('=')?;
            let label = rest[..equals].to_owned();
            let (value, after) = quoted(rest[equals + 1..].strip_prefix('"')?)?;
            labels.push((label, value));
            rest = after;
        }
    }
    let value = rest.split_whitespace().next()?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        other => other.parse().ok()?,
    };
    Some(Sample {
        name: name.to_owned(),
        labels,
        value,
    })
}

/// A label value up to its closing quote, unescaped (`\\`, `\"`, `\n`), and what follows it.
fn quoted(text: &str) -> Option<(String, &str)> {
    let mut value = String::new();
    let mut chars = text.char_indices();
    while let Some((at, character)) = chars.next() {
        match character {
            '"' => return Some((value, &text[at + 1..])),
            '\\' => match chars.next()?.1 {
                'n' => value.push('\n'),
                other => value.push(other),
            },
            other => value.push(other),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_read_back_with_escaped_labels_and_special_values() {
        let text = "# HELP x_total help\n# TYPE x_total counter\nx_total{tool=\"a\\\"b\\\\c\\nd\",code=\"none\"} 3\ny_bucket{le=\"+Inf\"} 7\ny_sum 0.25\nz +Inf\n";
        let samples = parse_exposition(text);
        assert_eq!(samples.len(), 4);
        assert_eq!(samples[0].name, "x_total");
        assert_eq!(
            samples[0].labels,
            vec![
                ("tool".to_owned(), "a\"b\\c\nd".to_owned()),
                ("code".to_owned(), "none".to_owned())
            ]
        );
        assert_eq!(samples[0].value, 3.0);
        assert_eq!(samples[1].labels[0].1, "+Inf");
        assert_eq!(samples[2].value, 0.25);
        assert!(samples[3].value.is_infinite());
    }

    #[test]
    fn a_cut_line_is_skipped_not_misread() {
        assert!(parse_exposition("x{tool=\"unterminated} 1\n").is_empty());
        assert!(parse_exposition("x{tool=\"a\"} not-a-number\n").is_empty());
    }
}
