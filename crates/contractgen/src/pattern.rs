//! Patterns from a grammar of ECMA-262 features, each with strings it matches: literals (Unicode
//! among them), classes and negated classes, `\d`, `\w`, `\s`, `.`, groups with alternation,
//! every quantifier, anchors. Half of them have the shape the gate's positional matcher takes
//! (an anchored run of classes with counts, and a repeated tail), so both matchers are exercised.

use crate::entropy::Entropy;

/// A pattern and strings that match it.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    pub(crate) text: String,
    pub(crate) samples: Vec<String>,
}

/// One piece of a pattern: how it is written, and how to write a string it matches.
#[derive(Debug, Clone)]
enum Piece {
    /// A character, escaped where the syntax needs it.
    Literal(char),
    /// A class (`[a-z0-9]`, `\d`, `.`, …) and characters it matches.
    Class(&'static str, &'static [char]),
    /// `(a|b…)`.
    Group(Vec<Vec<(Piece, Quantifier)>>),
}

#[derive(Debug, Clone, Copy)]
enum Quantifier {
    One,
    Optional,
    Star,
    Plus,
    Exactly(u32),
    Between(u32, u32),
}

/// Classes the gate must read exactly as ECMA-262 does (jsonschema's translation): ASCII-only
/// `\d` and `\w`, Unicode `\s`, `.` that stops at line terminators.
const CLASSES: [(&str, &[char]); 12] = [
    ("[a-z]", &['a', 'q', 'z']),
    ("[A-Z]", &['A', 'M', 'Z']),
    ("[0-9]", &['0', '5', '9']),
    ("[A-Za-z0-9]", &['a', 'Z', '7']),
    ("[a-z0-9_-]", &['b', '3', '_', '-']),
    ("\\d", &['0', '4', '9']),
    ("\\w", &['a', 'Z', '_', '8']),
    ("\\s", &[' ', '\t', '\u{a0}']),
    (".", &['x', 'é', '日', ' ', '"']),
    ("[^\\n\"]", &['a', 'é', '\\']),
    ("[àéîõü]", &['à', 'ü']),
    ("[\\u0041-\\u0046]", &['A', 'F']),
];

/// Literal characters, some of which need escaping and some of which are outside ASCII.
const LITERALS: [char; 10] = ['a', 'R', '-', '.', '_', ':', 'é', 'ß', '日', '/'];

pub(crate) fn pattern(entropy: &mut impl Entropy) -> Pattern {
    let pieces = if entropy.chance(50) {
        positional(entropy)
    } else {
        general(entropy, 2)
    };
    let anchored = entropy.below(4);
    let mut text = String::new();
    if anchored != 1 {
        text.push('^');
    }
    for (piece, quantifier) in &pieces {
        write(piece, *quantifier, &mut text);
    }
    if anchored != 2 {
        text.push('$');
    }
    let samples = (0..3)
        .map(|round| {
            let mut sample = String::new();
            for (piece, quantifier) in &pieces {
                sample_of(piece, *quantifier, round, entropy, &mut sample);
            }
            sample
        })
        .collect();
    Pattern { text, samples }
}

/// An identifier-like pattern: a literal prefix, classes with counts, a repeated tail class.
fn positional(entropy: &mut impl Entropy) -> Vec<(Piece, Quantifier)> {
    let mut pieces = Vec::new();
    for _ in 0..entropy.below(4) {
        pieces.push((
            Piece::Literal(*entropy.pick(&['r', 'u', 'n', '_', 'C', 'R', '-'])),
            Quantifier::One,
        ));
    }
    for _ in 0..=entropy.below(3) {
        let (class, chars) = *entropy.pick(&CLASSES[..5]);
        let count = 1 + entropy.below(6) as u32;
        pieces.push((Piece::Class(class, chars), Quantifier::Exactly(count)));
    }
    if entropy.chance(60) {
        let (class, chars) = *entropy.pick(&CLASSES[..5]);
        let low = entropy.below(3) as u32;
        let high = low + 1 + entropy.below(40) as u32;
        pieces.push((Piece::Class(class, chars), Quantifier::Between(low, high)));
    }
    pieces
}

fn general(entropy: &mut impl Entropy, depth: usize) -> Vec<(Piece, Quantifier)> {
    let mut pieces = Vec::new();
    for _ in 0..=entropy.below(4) {
        let piece = match entropy.below(if depth > 0 { 3 } else { 2 }) {
            0 => Piece::Literal(*entropy.pick(&LITERALS)),
            1 => {
                let (class, chars) = *entropy.pick(&CLASSES);
                Piece::Class(class, chars)
            }
            _ => Piece::Group(
                (0..2 + entropy.below(2))
                    .map(|_| general(entropy, depth - 1))
                    .collect(),
            ),
        };
        let quantifier = match entropy.below(7) {
            0 | 1 => Quantifier::One,
            2 => Quantifier::Optional,
            3 => Quantifier::Star,
            4 => Quantifier::Plus,
            5 => Quantifier::Exactly(1 + entropy.below(4) as u32),
            _ => {
                let low = entropy.below(3) as u32;
                Quantifier::Between(low, low + entropy.below(5) as u32)
            }
        };
        pieces.push((piece, quantifier));
    }
    pieces
}

fn write(piece: &Piece, quantifier: Quantifier, out: &mut String) {
    match piece {
        Piece::Literal(ch) => {
            if "\\^$.|?*+()[]{}/-".contains(*ch) {
                out.push('\\');
            }
            out.push(*ch);
        }
        Piece::Class(class, _) => out.push_str(class),
        Piece::Group(alternatives) => {
            out.push('(');
            for (index, alternative) in alternatives.iter().enumerate() {
                if index > 0 {
                    out.push('|');
                }
                for (piece, quantifier) in alternative {
                    write(piece, *quantifier, out);
                }
            }
            out.push(')');
        }
    }
    match quantifier {
        Quantifier::One => {}
        Quantifier::Optional => out.push('?'),
        Quantifier::Star => out.push('*'),
        Quantifier::Plus => out.push('+'),
        Quantifier::Exactly(count) => out.push_str(&format!("{{{count}}}")),
        Quantifier::Between(low, high) => out.push_str(&format!("{{{low},{high}}}")),
    }
}

/// A string `piece` repeated as `quantifier` says matches; `round` varies the repetitions.
fn sample_of(
    piece: &Piece,
    quantifier: Quantifier,
    round: usize,
    entropy: &mut impl Entropy,
    out: &mut String,
) {
    let (low, high) = match quantifier {
        Quantifier::One => (1, 1),
        Quantifier::Optional => (0, 1),
        Quantifier::Star => (0, 3),
        Quantifier::Plus => (1, 3),
        Quantifier::Exactly(count) => (count, count),
        Quantifier::Between(low, high) => (low, high),
    };
    let times = match round {
        0 => low,
        1 => high,
        _ => low + entropy.below((high - low + 1) as usize) as u32,
    };
    for _ in 0..times {
        match piece {
            Piece::Literal(ch) => out.push(*ch),
            Piece::Class(_, chars) => out.push(*entropy.pick(chars)),
            Piece::Group(alternatives) => {
                let alternative = entropy.pick(alternatives);
                for (piece, quantifier) in alternative {
                    sample_of(piece, *quantifier, round, entropy, out);
                }
            }
        }
    }
}
