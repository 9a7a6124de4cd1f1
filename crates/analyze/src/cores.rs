//! How many of the machine's cores are idle, so one tool's mutants can spread over the cores
//! other tools are not using.
//!
//! `toolgate test` and `toolgate mutate` give each tool to a worker (one per core). A repository
//! of many small tools keeps every core busy that way, but one tool with thousands of fixtures
//! runs on one core while the others wait: its mutants are most of the run. Each worker counts
//! itself busy; a family's mutant run takes the cores nobody counts as helpers for its seeds,
//! and gives them back when it ends, so the machine is never asked for more threads than cores.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

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

/// Runs `judge` over `items` a chunk of `chunk` at a time, on this thread and on `helpers` more,
/// and gives the chunks' results in the items' order: the same results however many threads ran
/// them. `judge` is given the index of its chunk's first item.
pub fn in_chunks<S: Sync, T: Send>(
    items: &[S],
    chunk: usize,
    helpers: usize,
    judge: impl Fn(usize, &[S]) -> T + Sync,
) -> Vec<T> {
    let chunk = chunk.max(1);
    let chunks = items.len().div_ceil(chunk);
    let judge_chunk = |index: usize| {
        let first = index * chunk;
        judge(first, &items[first..(first + chunk).min(items.len())])
    };
    if helpers == 0 || chunks < 2 {
        return (0..chunks).map(judge_chunk).collect();
    }
    let next = AtomicUsize::new(0);
    let parts = Mutex::new(Vec::with_capacity(chunks));
    let work = || {
        loop {
            let index = next.fetch_add(1, Ordering::Relaxed);
            if index >= chunks {
                return;
            }
            let part = judge_chunk(index);
            parts
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((index, part));
        }
    };
    std::thread::scope(|scope| {
        for _ in 0..helpers.min(chunks - 1) {
            scope.spawn(work);
        }
        work();
    });
    let mut parts = parts.into_inner().unwrap_or_else(PoisonError::into_inner);
    parts.sort_by_key(|(index, _)| *index);
    parts.into_iter().map(|(_, part)| part).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::time::Duration;

    /// With helpers forced (whatever else the machine runs), every item is judged once and the
    /// results come back in the items' order, as they do on one thread.
    #[test]
    fn chunks_judged_on_several_threads_come_back_in_item_order() {
        let items: Vec<usize> = (0..101).collect();
        let threads = Mutex::new(HashSet::new());
        let arrived = std::sync::Condvar::new();
        let judge = |first: usize, chunk: &[usize]| {
            let mut seen = threads.lock().unwrap();
            seen.insert(std::thread::current().id());
            arrived.notify_all();
            // The first thread waits (a while at most) for a second one to take a chunk, so the
            // helped run really is judged on more than one thread.
            let _ = arrived
                .wait_timeout_while(seen, Duration::from_secs(5), |seen| seen.len() < 2)
                .unwrap();
            // Later chunks finish first when they can, so arrival order is not item order.
            std::thread::sleep(Duration::from_micros(100 * (13 - (first / 8) as u64)));
            (first, chunk.to_vec())
        };
        let helped = in_chunks(&items, 8, 3, judge);
        assert!(threads.lock().unwrap().len() >= 2, "no helper ran");
        // Alone, the one thread would wait for a second one at every chunk: give it one seen.
        let alone = in_chunks(&items, 8, 0, judge);
        assert_eq!(alone, helped);
        assert_eq!(helped.len(), 13);
        assert!(helped.iter().all(|(first, chunk)| chunk[0] == *first));
        let judged: Vec<usize> = helped.into_iter().flat_map(|(_, chunk)| chunk).collect();
        assert_eq!(judged, items);
    }

    #[test]
    fn no_items_no_chunks() {
        let none: Vec<Vec<u8>> = in_chunks(&[] as &[u8], 8, 2, |_, chunk| chunk.to_vec());
        assert!(none.is_empty());
    }
}
