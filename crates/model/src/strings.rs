//! Which strings one set of string constraints admits and another refuses, decided exactly where
//! both sides are regular: each `pattern` becomes a DFA (regex-automata, the engine family the
//! gate's own `pattern` keyword runs on), lengths are counted in characters as JSON Schema
//! counts them, and a breadth-first search over the product automaton finds the shortest string
//! in the difference, or proves there is none.

use crate::Undecided;
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::rc::Rc;

use regex_automata::dfa::Automaton;
use regex_automata::dfa::dense::{self, DFA};
use regex_automata::nfa::thompson;
use regex_automata::util::primitives::StateID;
use regex_automata::util::start;
use regex_automata::{Anchored, MatchKind};

/// String constraints of one side: lengths in characters and patterns that must all match
/// somewhere in the string (JSON Schema's `pattern` is a search, not a full match).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Strings {
    /// `minLength`.
    pub min_length: u64,
    /// `maxLength`.
    pub max_length: Option<u64>,
    /// Every `pattern` that applies.
    pub patterns: Vec<String>,
}

/// Most product states the search visits before it gives up and says it cannot decide.
const STATE_BUDGET: usize = 400_000;
/// Largest DFA built for one pattern (and the most its determinization may use on the way).
const DFA_BYTES: usize = 4 << 20;
/// Largest NFA compiled for one pattern, the step before the DFA: without it a Unicode class
/// repeated many times (`^\w{1,20000}$`) costs a gigabyte before the DFA limit is even reached.
const NFA_BYTES: usize = 4 << 20;

/// The shortest string `a` admits and `b` refuses; `Ok(None)` when every string `a` admits `b`
/// admits too; `Err` with the reason when that cannot be decided.
pub fn difference(a: &Strings, b: &Strings) -> Result<Option<String>, Undecided> {
    let dfas_a = build_all(&a.patterns)?;
    let dfas_b = build_all(&b.patterns)?;
    let search = Search::new(&dfas_a, &dfas_b, a, b)?;
    search.run()
}

/// The shortest string `side` admits (readable where there is a choice); `Ok(None)` when it
/// admits none.
pub fn example(side: &Strings) -> Result<Option<String>, Undecided> {
    let nothing = Strings {
        min_length: 0,
        max_length: None,
        patterns: vec![r"[^\s\S]".to_owned()],
    };
    difference(side, &nothing)
}

/// The longest match a pattern may have and still be a bound: an identifier, a code or a request
/// id is a token, never a paragraph; a longer value is bounded by `maxLength`. The lint and
/// `toolgate new` decide by this one figure.
pub const LONGEST_BOUNDED_PATTERN: u64 = 256;

/// Whether `patterns` bound a string's length: no string longer than `longest` characters
/// matches them all, decided on their DFAs (a pattern is searched, so `^B[A-Z0-9]{8,}$` or `^ok`
/// matches strings of any length). Patterns the DFAs cannot decide bound nothing anyone can vouch
/// for, and no pattern bounds nothing.
pub fn patterns_bound(patterns: &[String], longest: u64) -> bool {
    !patterns.is_empty()
        && example(&Strings {
            min_length: longest + 1,
            max_length: None,
            patterns: patterns.to_vec(),
        }) == Ok(None)
}

/// Whether `text` satisfies `side` (patterns searched with the same DFAs).
pub fn admits(side: &Strings, text: &str) -> Result<bool, Undecided> {
    let length = text.chars().count() as u64;
    if length < side.min_length || side.max_length.is_some_and(|max| length > max) {
        return Ok(false);
    }
    for dfa in build_all(&side.patterns)? {
        let mut state = start_state(&dfa)?;
        let mut matched = dfa.is_match_state(state);
        for byte in text.bytes() {
            state = dfa.next_state(state, byte);
            matched |= dfa.is_match_state(state);
        }
        matched |= dfa.is_match_state(dfa.next_eoi_state(state));
        if !matched {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A compiled pattern, shared: the same patterns are compared and searched again and again (a
/// mutant run asks about each string of each fixture), and building a DFA costs far more than
/// running it.
type Dfa = Rc<DFA<Vec<u32>>>;

thread_local! {
    static DFAS: RefCell<HashMap<String, Result<Dfa, Undecided>>> = RefCell::new(HashMap::new());
}

fn build_all(patterns: &[String]) -> Result<Vec<Dfa>, Undecided> {
    if patterns.len() > 2 {
        return Err(Undecided::new("more than two patterns apply to one string"));
    }
    patterns
        .iter()
        .map(|pattern| {
            DFAS.with(|cache| {
                cache
                    .borrow_mut()
                    .entry(pattern.clone())
                    .or_insert_with(|| build(pattern).map(Rc::new))
                    .clone()
            })
        })
        .collect()
}

fn build(pattern: &str) -> Result<DFA<Vec<u32>>, Undecided> {
    // The gate runs ECMA-262 patterns through jsonschema's translation (`.` excludes `\r` and
    // U+2028, `\d` is ASCII): read as Rust regexes, `^.{1,6}$` and `^[^\n]{1,6}$` would be one
    // language, and a diff verdict would be wrong.
    let translated = toolgate_gate::internals::pattern_as_regex(pattern).ok_or_else(|| {
        Undecided::new(format!(
            "pattern {:?} uses ECMA-262 syntax the gate does not translate",
            shorten(pattern)
        ))
    })?;
    dense::Builder::new()
        .thompson(thompson::Config::new().nfa_size_limit(Some(NFA_BYTES)))
        .configure(
            dense::Config::new()
                .match_kind(MatchKind::All)
                .start_kind(regex_automata::dfa::StartKind::Unanchored)
                .dfa_size_limit(Some(DFA_BYTES))
                .determinize_size_limit(Some(DFA_BYTES)),
        )
        .build(&translated)
        .map_err(|error| {
            Undecided::new(format!(
                "pattern {:?} has no automaton within the model's limits ({error})",
                shorten(pattern)
            ))
        })
}

fn shorten(pattern: &str) -> String {
    let mut shown: String = pattern.chars().take(60).collect();
    if shown.len() < pattern.len() {
        shown.push('…');
    }
    shown
}

fn start_state(dfa: &DFA<Vec<u32>>) -> Result<StateID, Undecided> {
    dfa.start_state(&start::Config::new().anchored(Anchored::No))
        .map_err(|error| Undecided::new(format!("a pattern cannot start here ({error})")))
}

/// Where a UTF-8 decoder is: how many continuation bytes it still needs, and the range the next
/// one must fall in (RFC 3629: no overlongs, no surrogates, nothing past U+10FFFF).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Utf8 {
    remaining: u8,
    low: u8,
    high: u8,
}

impl Utf8 {
    const BOUNDARY: Utf8 = Utf8 {
        remaining: 0,
        low: 0x80,
        high: 0xBF,
    };

    /// The decoder after `byte`, and whether `byte` began a new character; `None` when the byte
    /// is not valid here.
    fn step(self, byte: u8) -> Option<(Utf8, bool)> {
        if self.remaining > 0 {
            if !(self.low..=self.high).contains(&byte) {
                return None;
            }
            let next = Utf8 {
                remaining: self.remaining - 1,
                ..Utf8::BOUNDARY
            };
            return Some((next, false));
        }
        let (remaining, low, high) = match byte {
            0x00..=0x7F => (0, 0x80, 0xBF),
            0xC2..=0xDF => (1, 0x80, 0xBF),
            0xE0 => (2, 0xA0, 0xBF),
            0xE1..=0xEC | 0xEE..=0xEF => (2, 0x80, 0xBF),
            0xED => (2, 0x80, 0x9F),
            0xF0 => (3, 0x90, 0xBF),
            0xF1..=0xF3 => (3, 0x80, 0xBF),
            0xF4 => (3, 0x80, 0x8F),
            _ => return None,
        };
        Some((
            Utf8 {
                remaining,
                low,
                high,
            },
            true,
        ))
    }
}

/// One side's progress: a state per pattern DFA, and whether that pattern has matched yet.
type Progress = Vec<(StateID, bool)>;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Node {
    a: Progress,
    b: Progress,
    utf8: Utf8,
    /// Characters so far, capped where no bound can tell longer strings apart.
    length: u64,
}

struct Search<'d> {
    dfas_a: &'d [Dfa],
    dfas_b: &'d [Dfa],
    a: &'d Strings,
    b: &'d Strings,
    /// Representative bytes: one per class of bytes no DFA and no UTF-8 rule tells apart.
    alphabet: Vec<u8>,
    length_cap: u64,
}

impl<'d> Search<'d> {
    fn new(
        dfas_a: &'d [Dfa],
        dfas_b: &'d [Dfa],
        a: &'d Strings,
        b: &'d Strings,
    ) -> Result<Search<'d>, Undecided> {
        let bounds = [a.min_length, b.min_length]
            .into_iter()
            .chain(a.max_length)
            .chain(b.max_length);
        let length_cap = bounds.max().unwrap_or(0) + 1;
        if length_cap > 10_000 {
            return Err(Undecided::new("a length bound too large to search"));
        }
        Ok(Search {
            dfas_a,
            dfas_b,
            a,
            b,
            alphabet: alphabet(dfas_a.iter().chain(dfas_b).map(|dfa| &**dfa)),
            length_cap,
        })
    }

    fn start(&self, dfas: &[Dfa]) -> Result<Progress, Undecided> {
        dfas.iter()
            .map(|dfa| {
                let state = start_state(dfa)?;
                Ok((state, dfa.is_match_state(state)))
            })
            .collect()
    }

    fn run(&self) -> Result<Option<String>, Undecided> {
        let first = Node {
            a: self.start(self.dfas_a)?,
            b: self.start(self.dfas_b)?,
            utf8: Utf8::BOUNDARY,
            length: 0,
        };
        let mut seen: HashSet<Node> = HashSet::new();
        // Each entry: the node, and the bytes that led to it.
        let mut queue: VecDeque<(Node, Vec<u8>)> = VecDeque::new();
        seen.insert(first.clone());
        queue.push_back((first, Vec::new()));
        while let Some((node, bytes)) = queue.pop_front() {
            if node.utf8.remaining == 0 && self.is_witness(&node) {
                return Ok(Some(
                    String::from_utf8(bytes).expect("the search only walks valid UTF-8"),
                ));
            }
            for &byte in &self.alphabet {
                let Some((utf8, starts_char)) = node.utf8.step(byte) else {
                    continue;
                };
                let a = advance(self.dfas_a, &node.a, byte);
                // A pattern of `a` that can no longer match prunes the branch: nothing below it
                // is admitted by `a`.
                if a.iter()
                    .zip(self.dfas_a)
                    .any(|((state, matched), dfa)| !matched && dfa.is_dead_state(*state))
                {
                    continue;
                }
                let length = (node.length + u64::from(starts_char)).min(self.length_cap);
                if self.a.max_length.is_some_and(|max| length > max) {
                    continue;
                }
                let next = Node {
                    a,
                    b: advance(self.dfas_b, &node.b, byte),
                    utf8,
                    length,
                };
                if seen.contains(&next) {
                    continue;
                }
                if seen.len() >= STATE_BUDGET {
                    return Err(Undecided::new(
                        "the patterns are too large to compare exactly",
                    ));
                }
                seen.insert(next.clone());
                let mut longer = bytes.clone();
                longer.push(byte);
                queue.push_back((next, longer));
            }
        }
        Ok(None)
    }

    /// Whether the string that led to `node` (ended here) is admitted by `a` and refused by `b`.
    fn is_witness(&self, node: &Node) -> bool {
        let ends = |dfas: &[Dfa], progress: &Progress| {
            progress.iter().zip(dfas).all(|((state, matched), dfa)| {
                *matched || dfa.is_match_state(dfa.next_eoi_state(*state))
            })
        };
        let within = |side: &Strings| {
            node.length >= side.min_length && side.max_length.is_none_or(|max| node.length <= max)
        };
        ends(self.dfas_a, &node.a)
            && within(self.a)
            && !(ends(self.dfas_b, &node.b) && within(self.b))
    }
}

fn advance(dfas: &[Dfa], progress: &Progress, byte: u8) -> Progress {
    progress
        .iter()
        .zip(dfas)
        .map(|((state, matched), dfa)| {
            let next = dfa.next_state(*state, byte);
            (next, *matched || dfa.is_match_state(next))
        })
        .collect()
}

/// One byte per class of bytes that neither any DFA nor the UTF-8 rules tell apart, preferring a
/// readable one (a letter, then a digit, then printable ASCII) so witnesses are legible.
fn alphabet<'d>(dfas: impl Iterator<Item = &'d DFA<Vec<u32>>>) -> Vec<u8> {
    // Bytes whose UTF-8 role differs start a new class.
    let mut boundaries: BTreeSet<u8> = [
        0x00, 0x30, 0x3A, 0x41, 0x5B, 0x61, 0x7B, 0x80, 0x90, 0xA0, 0xC0, 0xC2, 0xE0, 0xE1, 0xED,
        0xEE, 0xF0, 0xF1, 0xF4, 0xF5,
    ]
    .into_iter()
    .collect();
    for dfa in dfas {
        let classes = dfa.byte_classes();
        for byte in 1..=255u8 {
            if classes.get(byte) != classes.get(byte - 1) {
                boundaries.insert(byte);
            }
        }
    }
    let starts: Vec<u8> = boundaries.into_iter().collect();
    let mut chosen = Vec::new();
    for (index, &start) in starts.iter().enumerate() {
        let end = starts.get(index + 1).map_or(255, |next| next - 1);
        let range = start..=end;
        let readable = range
            .clone()
            .find(|byte| byte.is_ascii_alphabetic())
            .or_else(|| range.clone().find(u8::is_ascii_digit))
            .or_else(|| range.clone().find(|byte| byte.is_ascii_graphic()))
            .unwrap_or(start);
        chosen.push(readable);
    }
    // Readable bytes first: breadth-first search then finds legible strings among the shortest.
    chosen.sort_by_key(|byte| {
        (
            !byte.is_ascii_lowercase(),
            !byte.is_ascii_alphanumeric(),
            !byte.is_ascii_graphic(),
            *byte,
        )
    });
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(pattern: Option<&str>, min: u64, max: Option<u64>) -> Strings {
        Strings {
            min_length: min,
            max_length: max,
            patterns: pattern.into_iter().map(str::to_owned).collect(),
        }
    }

    #[test]
    fn a_narrower_pattern_is_included_in_a_wider_one_and_not_the_reverse() {
        let narrow = side(Some("^run_[A-Za-z0-9]{12,48}$"), 0, None);
        let wide = side(Some("^run_[A-Za-z0-9]+$"), 0, None);
        assert_eq!(difference(&narrow, &wide), Ok(None));
        let witness = difference(&wide, &narrow).unwrap().unwrap();
        assert!(admits(&wide, &witness).unwrap() && !admits(&narrow, &witness).unwrap());
        assert_eq!(witness, "run_a", "the shortest, most readable witness");
    }

    #[test]
    fn patterns_are_searches_not_full_matches() {
        let anywhere = side(Some("ab"), 0, None);
        let anchored = side(Some("^ab$"), 0, None);
        assert_eq!(difference(&anchored, &anywhere), Ok(None));
        let witness = difference(&anywhere, &anchored).unwrap().unwrap();
        assert!(witness.contains("ab") && witness != "ab", "{witness}");
    }

    #[test]
    fn lengths_are_counted_in_characters() {
        let up_to_three = side(None, 0, Some(3));
        let up_to_two = side(None, 0, Some(2));
        assert_eq!(difference(&up_to_two, &up_to_three), Ok(None));
        assert_eq!(
            difference(&up_to_three, &up_to_two)
                .unwrap()
                .unwrap()
                .chars()
                .count(),
            3
        );
        // Three two-byte characters are three characters, not six.
        let greek = side(Some("^[α-ω]+$"), 0, Some(3));
        let shorter_greek = side(Some("^[α-ψ]+$"), 0, Some(3));
        let witness = difference(&greek, &shorter_greek).unwrap().unwrap();
        assert_eq!(witness, "ω");
        assert_eq!(difference(&shorter_greek, &greek), Ok(None));
    }

    #[test]
    fn a_pattern_with_a_length_bound_against_a_pattern() {
        let date_like = side(Some("^[0-9]{4}-[0-9]{2}$"), 0, None);
        let short = side(None, 0, Some(6));
        let witness = difference(&date_like, &short).unwrap().unwrap();
        assert_eq!(witness.len(), 7);
        assert_eq!(difference(&side(Some("^x{2}$"), 0, None), &short), Ok(None));
    }

    #[test]
    fn no_constraint_admits_everything() {
        let any = Strings::default();
        assert_eq!(difference(&side(Some("^a+$"), 1, Some(5)), &any), Ok(None));
        assert_eq!(
            difference(&any, &side(None, 1, None)).unwrap().as_deref(),
            Some("")
        );
    }

    #[test]
    fn a_pattern_too_large_to_build_is_undecided_at_once() {
        // Every character but one, 20,000 times: large in UTF-8 whichever way `\w` is read.
        let huge = side(Some(r"^[^a]{1,20000}$"), 0, None);
        let error = admits(&huge, "word").unwrap_err();
        assert!(
            error.to_string().contains("within the model's limits"),
            "{error}"
        );
        assert!(difference(&huge, &side(None, 0, None)).is_err());
        assert!(example(&huge).is_err());
    }
}
