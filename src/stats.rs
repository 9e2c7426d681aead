//! Filter statistics: per-policy counters and process-wide totals.
//!
//! Counting sits on the query path, so it must cost next to nothing even when every thread
//! queries the same policy. Each live thread owns one cache-line-sized shard of every
//! [`Stats`] and bumps it with a plain load and store (no locked instruction, no line shared
//! between threads); reading sums the shards. Threads beyond [`OWNED_SHARDS`] share one
//! shard updated with atomic adds. A reset records a baseline instead of zeroing, so it
//! cannot race with the owners' stores.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// How many threads at once get a shard of their own.
pub const OWNED_SHARDS: usize = 32;
const SHARED_SHARD: usize = OWNED_SHARDS;

/// Counter values at one moment.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Filters created (each `create_filter` call, however many keys).
    pub filters_built: u64,
    /// Keys added to those filters (duplicates count).
    pub keys_added: u64,
    /// Filter queries answered.
    pub queries: u64,
    /// Queries answered "no match": table reads avoided.
    pub no_match: u64,
}

impl StatsSnapshot {
    fn since(self, baseline: StatsSnapshot) -> StatsSnapshot {
        StatsSnapshot {
            filters_built: self.filters_built.wrapping_sub(baseline.filters_built),
            keys_added: self.keys_added.wrapping_sub(baseline.keys_added),
            queries: self.queries.wrapping_sub(baseline.queries),
            no_match: self.no_match.wrapping_sub(baseline.no_match),
        }
    }

    fn plus(self, other: StatsSnapshot) -> StatsSnapshot {
        StatsSnapshot {
            filters_built: self.filters_built.wrapping_add(other.filters_built),
            keys_added: self.keys_added.wrapping_add(other.keys_added),
            queries: self.queries.wrapping_add(other.queries),
            no_match: self.no_match.wrapping_add(other.no_match),
        }
    }
}

/// The raw counts of one thread's shard. A query bumps exactly one of `matches` and
/// `no_match`, so counting it is a single store.
#[derive(Default)]
#[repr(align(128))] // two cache lines: adjacent-line prefetch must not pair shards
struct Shard {
    filters_built: AtomicU64,
    keys_added: AtomicU64,
    /// Indexed by the answer: `[no_match, may_match]`.
    answers: [AtomicU64; 2],
}

/// The counters of one policy. Every `Stats` also counts into the process-wide totals
/// ([`global_snapshot`]), including after it is dropped.
pub struct Stats {
    counts: Arc<Counts>,
}

struct Counts {
    shards: [Shard; OWNED_SHARDS + 1],
    baseline: Mutex<StatsSnapshot>,
}

impl Stats {
    /// New counters at zero, registered in the process-wide totals.
    pub fn new() -> Self {
        let counts = Arc::new(Counts {
            shards: std::array::from_fn(|_| Shard::default()),
            baseline: Mutex::new(StatsSnapshot::default()),
        });
        registry().live.push(Arc::clone(&counts));
        Stats { counts }
    }

    /// Counts a filter built over `keys` keys.
    pub fn record_filter(&self, keys: usize) {
        self.counts.add(|s| &s.filters_built, 1);
        self.counts.add(|s| &s.keys_added, keys as u64);
    }

    /// Counts a query and its answer.
    #[inline]
    pub fn record_query(&self, may_match: bool) {
        self.counts.add(|s| &s.answers[usize::from(may_match)], 1);
    }

    /// The counts since creation or the last [`reset`](Self::reset).
    pub fn snapshot(&self) -> StatsSnapshot {
        self.counts.total().since(*lock(&self.counts.baseline))
    }

    /// Restarts this policy's counts from zero; the process-wide totals keep theirs.
    pub fn reset(&self) {
        let mut baseline = lock(&self.counts.baseline);
        *baseline = self.counts.total();
    }
}

impl Default for Stats {
    fn default() -> Self {
        Stats::new()
    }
}

impl Drop for Stats {
    fn drop(&mut self) {
        let mut registry = registry();
        registry.retired = registry.retired.plus(self.counts.total());
        registry.live.retain(|c| !Arc::ptr_eq(c, &self.counts));
    }
}

impl std::fmt::Debug for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.snapshot().fmt(f)
    }
}

impl Counts {
    #[inline]
    fn add(&self, counter: impl Fn(&Shard) -> &AtomicU64, n: u64) {
        let slot = THREAD_SHARD.try_with(|s| s.0).unwrap_or(SHARED_SHARD);
        let counter = counter(&self.shards[slot]);
        if slot == SHARED_SHARD {
            counter.fetch_add(n, Relaxed);
        } else {
            // This thread is the shard's only writer, so load-then-store loses nothing.
            counter.store(counter.load(Relaxed).wrapping_add(n), Relaxed);
        }
    }

    fn total(&self) -> StatsSnapshot {
        self.shards.iter().fold(StatsSnapshot::default(), |sum, s| {
            let no_match = s.answers[0].load(Relaxed);
            sum.plus(StatsSnapshot {
                filters_built: s.filters_built.load(Relaxed),
                keys_added: s.keys_added.load(Relaxed),
                queries: no_match.wrapping_add(s.answers[1].load(Relaxed)),
                no_match,
            })
        })
    }
}

/// The process-wide counts since start or the last [`global_reset`]: every policy's, the
/// dropped ones' included.
pub fn global_snapshot() -> StatsSnapshot {
    let registry = registry();
    let total = registry
        .live
        .iter()
        .fold(registry.retired, |sum, c| sum.plus(c.total()));
    total.since(registry.baseline)
}

/// Restarts the process-wide counts from zero; per-policy counts keep theirs.
pub fn global_reset() {
    let mut registry = registry();
    let total = registry
        .live
        .iter()
        .fold(registry.retired, |sum, c| sum.plus(c.total()));
    registry.baseline = total;
}

struct Registry {
    live: Vec<Arc<Counts>>,
    /// What dropped policies had counted.
    retired: StatsSnapshot,
    baseline: StatsSnapshot,
}

fn registry() -> MutexGuard<'static, Registry> {
    const ZERO: StatsSnapshot = StatsSnapshot {
        filters_built: 0,
        keys_added: 0,
        queries: 0,
        no_match: 0,
    };
    static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
        live: Vec::new(),
        retired: ZERO,
        baseline: ZERO,
    });
    lock(&REGISTRY)
}

/// Counters stay usable after a panic elsewhere: the data is plain numbers.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A thread's shard index, owned while the thread lives and then handed to the next.
struct ThreadShard(usize);

thread_local! {
    static THREAD_SHARD: ThreadShard = ThreadShard::acquire();
}

/// Free shard indexes; the mutex also orders a finished owner's stores before the next
/// owner's loads.
static FREE_SHARDS: Mutex<Vec<usize>> = Mutex::new(Vec::new());
static NEXT_SHARD: Mutex<usize> = Mutex::new(0);

impl ThreadShard {
    fn acquire() -> Self {
        if let Some(free) = lock(&FREE_SHARDS).pop() {
            return ThreadShard(free);
        }
        let mut next = lock(&NEXT_SHARD);
        if *next < OWNED_SHARDS {
            *next += 1;
            ThreadShard(*next - 1)
        } else {
            ThreadShard(SHARED_SHARD)
        }
    }
}

impl Drop for ThreadShard {
    fn drop(&mut self) {
        if self.0 != SHARED_SHARD {
            lock(&FREE_SHARDS).push(self.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_resets() {
        let stats = Stats::new();
        stats.record_filter(3);
        stats.record_query(true);
        stats.record_query(false);
        stats.record_query(false);
        let expected = StatsSnapshot {
            filters_built: 1,
            keys_added: 3,
            queries: 3,
            no_match: 2,
        };
        assert_eq!(stats.snapshot(), expected);
        stats.reset();
        assert_eq!(stats.snapshot(), StatsSnapshot::default());
        stats.record_query(false);
        assert_eq!(stats.snapshot().no_match, 1);
    }

    #[test]
    fn many_threads_lose_no_count() {
        let stats = Stats::new();
        let threads = OWNED_SHARDS + 8; // some share the atomic shard
        std::thread::scope(|scope| {
            for t in 0..threads {
                let stats = &stats;
                scope.spawn(move || {
                    for i in 0..10_000 {
                        stats.record_query((i + t) % 3 == 0);
                    }
                });
            }
        });
        let snapshot = stats.snapshot();
        assert_eq!(snapshot.queries, threads as u64 * 10_000);
        let expected_no_match: usize = (0..threads)
            .map(|t| (0..10_000).filter(|i| (i + t) % 3 != 0).count())
            .sum();
        assert_eq!(snapshot.no_match, expected_no_match as u64);
    }
}
