//! Start-up work split between the calling thread and one more.

/// Calls `each` for every item of `items`, on this thread and one more,
/// each taking the next item from a shared cursor: the two finish together
/// however unequal the items are (put the costliest first), where halves
/// fixed in advance can leave one thread with most of the work. `scratch`
/// makes each thread's own working state. Returns what both pushed, this
/// thread's first; a panic on the other thread is resumed here, so nothing
/// it found is dropped in silence.
pub(crate) fn on_two_threads<T: Sync, S, R: Send>(
    items: &[T],
    scratch: impl Fn() -> S + Sync,
    each: impl Fn(&T, &mut S, &mut Vec<R>) + Sync,
) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let take = || {
        let (mut state, mut out) = (scratch(), Vec::new());
        while let Some(item) = items.get(next.fetch_add(1, Ordering::Relaxed)) {
            each(item, &mut state, &mut out);
        }
        out
    };
    std::thread::scope(|s| {
        let other = s.spawn(take);
        let mut out = take();
        out.extend(other.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        out
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_item_is_taken_once_with_each_threads_own_scratch() {
        let items: Vec<u32> = (0..1000).collect();
        let mut got = super::on_two_threads(&items, Vec::new, |&n, seen: &mut Vec<u32>, out| {
            // The scratch is this thread's alone: what it saw only grows.
            assert!(seen.last().is_none_or(|&l| l < n));
            seen.push(n);
            out.push(n * 2);
        });
        got.sort();
        assert_eq!(got, items.iter().map(|n| n * 2).collect::<Vec<_>>());
    }
}
