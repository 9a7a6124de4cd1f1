//! Work spread over every core, results in a fixed order: `toolgate test`'s tools and cases,
//! `toolgate mutate`'s tools.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

/// Applies `work` to every item on every core and hands the results to `sink` in item order,
/// holding only the results that finished ahead of their turn. A panic in `work` becomes
/// `on_panic`'s result for that item, so every item gets a result and no lock is ever held while
/// waiting for a worker.
pub(crate) fn in_parallel<T: Sync, R: Send>(
    items: &[T],
    work: impl Fn(&T) -> R + Sync,
    on_panic: impl Fn(&T, String) -> R + Sync,
    mut sink: impl FnMut(R),
) {
    let guarded = |item: &T| {
        // Counted busy while it works, so a tool's mutants take only the cores left idle.
        let _busy = toolgate_analyze::cores::busy();
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(item)))
            .unwrap_or_else(|payload| on_panic(item, panic_message(payload.as_ref())))
    };
    let workers = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(items.len());
    if workers <= 1 {
        items.iter().for_each(|item| sink(guarded(item)));
        return;
    }
    let next = AtomicUsize::new(0);
    let (sender, receiver) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let (sender, next, guarded) = (sender.clone(), &next, &guarded);
            scope.spawn(move || {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(index) else { return };
                    if sender.send((index, guarded(item))).is_err() {
                        return;
                    }
                }
            });
        }
        drop(sender);
        let mut early = BTreeMap::new();
        let mut turn = 0;
        for (index, result) in receiver {
            early.insert(index, result);
            while let Some(result) = early.remove(&turn) {
                sink(result);
                turn += 1;
            }
        }
    });
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_item_gets_its_own_result_and_the_rest_run_in_order() {
        let items: Vec<usize> = (0..40).collect();
        let mut seen = Vec::new();
        in_parallel(
            &items,
            |item| {
                assert!(item % 7 != 3, "item {item} breaks");
                format!("ok {item}")
            },
            |item, message| format!("panicked {item}: {message}"),
            |result| seen.push(result),
        );
        assert_eq!(seen.len(), 40);
        assert_eq!(seen[0], "ok 0");
        assert_eq!(seen[3], "panicked 3: item 3 breaks");
        assert_eq!(seen[39], "ok 39");
    }
}
