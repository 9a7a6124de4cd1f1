//! How many of the machine's cores are idle, so one tool's mutants can spread over the cores
//! other tools are not using.
//!
//! `toolgate test` and `toolgate mutate` give each tool to a worker (one per core). A repository
//! of many small tools keeps every core busy that way, but one tool with thousands of fixtures
//! runs on one core while the others wait: its mutants are most of the run. Each worker counts
//! itself busy; a family's mutant run takes the cores nobody counts as helpers for its seeds,
//! and gives them back when it ends, so the machine is never asked for more threads than cores.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

static BUSY: AtomicUsize = AtomicUsize::new(0);

fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
}

/// A core counted busy until this is dropped.
#[derive(Debug)]
pub struct Busy(usize);

impl Busy {
    /// How many cores this holds.
    pub fn count(&self) -> usize {
        self.0
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        BUSY.fetch_sub(self.0, Ordering::AcqRel);
    }
}

/// Counts the calling thread's core busy (a worker, while it works).
pub fn busy() -> Busy {
    BUSY.fetch_add(1, Ordering::AcqRel);
    Busy(1)
}

/// Takes up to `wanted` of the cores nobody counts busy; the guard says how many (maybe none).
pub fn take_idle(wanted: usize) -> Busy {
    let mut busy = BUSY.load(Ordering::Acquire);
    loop {
        let taken = cores().saturating_sub(busy).min(wanted);
        if taken == 0 {
            return Busy(0);
        }
        match BUSY.compare_exchange_weak(busy, busy + taken, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return Busy(taken),
            Err(now) => busy = now,
        }
    }
}
