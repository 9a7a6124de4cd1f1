//! Where the generator's choices come from.

/// A source of choices. Every choice is made by [`below`](Entropy::below); when a source runs
/// out it answers 0, the first option, which the generator keeps the simplest.
pub trait Entropy {
    /// The next 64 bits.
    fn next(&mut self) -> u64;

    /// A number in `0..n` (0 when `n` is 0).
    fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        (self.next() % n as u64) as usize
    }

    /// True `percent` times in a hundred.
    fn chance(&mut self, percent: u32) -> bool {
        self.below(100) < percent as usize
    }

    /// One of `items` (which must not be empty).
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// A seeded generator (SplitMix64): the same seed, the same choices, on every platform.
#[derive(Debug, Clone)]
pub struct Seeded(u64);

impl Seeded {
    /// Choices from `seed`.
    pub fn new(seed: u64) -> Seeded {
        Seeded(seed)
    }
}

impl Entropy for Seeded {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Choices read from bytes (a fuzzer's input), a byte at a time so every byte steers one choice;
/// 0 once they run out.
#[derive(Debug, Clone)]
pub struct Bytes<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Bytes<'a> {
    /// Choices from `bytes`.
    pub fn new(bytes: &'a [u8]) -> Bytes<'a> {
        Bytes { bytes, at: 0 }
    }
}

impl Entropy for Bytes<'_> {
    fn next(&mut self) -> u64 {
        let byte = self.bytes.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        u64::from(byte)
    }
}
