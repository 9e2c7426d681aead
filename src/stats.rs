//! Filter statistics: a policy that counts what it does ([`Counted`]), and the process-wide
//! totals of every counting policy ([`global_stats`]).
//!
//! Counting sits on the query path, so it must cost next to nothing even when every thread
//! queries the same policy. Every [`Stats`] has 64 shards of two cache lines each. A thread
//! claims a shard (one of two picked by hashing its thread pointer) and then bumps it with a
//! plain load and store: no locked instruction, no line shared between threads, no
//! thread-local lookup (which in a shared library is a call to `__tls_get_addr`). A thread
//! whose two shards are taken by others counts in a shared shard with atomic adds. Reading
//! sums the shards; a reset records a baseline instead of zeroing, so it cannot race with
//! the owners' stores.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::error::Error;
use crate::policy::{FilterPolicy, sealed::WriteFilter};

/// A policy that counts what it does, in counts of its own and in the process-wide ones
/// ([`global_stats`]). Clones share the counts: a
/// [`FilterBlockBuilder`](crate::FilterBlockBuilder) given a clone counts as its policy.
/// Policies count only when so wrapped: an uncounted query does no work for statistics.
///
/// ```
/// use leveldb_bloom::{BloomPolicy, Counted, FilterPolicy};
///
/// let policy = Counted::new(BloomPolicy::new(10)?);
/// let mut filter = Vec::new();
/// policy.create_filter(["a", "b", "c"], &mut filter)?;
/// policy.key_may_match(b"a", &filter);
/// let stats = policy.stats();
/// assert_eq!((stats.filters_built, stats.keys_added, stats.queries), (1, 3, 1));
/// assert_eq!(stats.no_match, 0); // "a" is in the filter
/// # Ok::<(), leveldb_bloom::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Counted<P> {
    policy: P,
    /// `None` only for the C API's policies that were not asked to count.
    stats: Option<Stats>,
}

impl<P> Counted<P> {
    /// `policy`, counting from zero.
    pub fn new(policy: P) -> Self {
        Counted {
            policy,
            stats: Some(Stats::new()),
        }
    }

    /// `policy`, counting nothing (the C API's policies until asked to count).
    pub(crate) fn uncounted(policy: P) -> Self {
        Counted {
            policy,
            stats: None,
        }
    }

    /// Whether this policy counts.
    pub(crate) fn counts(&self) -> bool {
        self.stats.is_some()
    }

    /// The policy that answers.
    pub fn policy(&self) -> &P {
        &self.policy
    }

    /// The counts since creation or the last [`reset_stats`](Self::reset_stats), this
    /// policy's clones' included. Counting is thread-safe; a snapshot taken while other
    /// threads count sees each counter at some moment during the call.
    pub fn stats(&self) -> StatsSnapshot {
        self.stats
            .as_ref()
            .map_or_else(StatsSnapshot::default, Stats::snapshot)
    }

    /// Restarts this policy's counts from zero; the process-wide counts keep theirs.
    pub fn reset_stats(&self) {
        if let Some(stats) = &self.stats {
            stats.reset();
        }
    }

    /// Counts one query answered for this policy without asking it (the C API's queries of
    /// a policy whose format it knows); returns the answer.
    #[inline(always)]
    pub(crate) fn count_query(&self, may_match: bool) -> bool {
        if let Some(stats) = &self.stats {
            stats.record_query(may_match);
        }
        may_match
    }

    /// Counts queries answered for this policy without asking it (the C API's filter block
    /// queries where the block has no filter).
    #[inline]
    pub(crate) fn count_queries(&self, answers: &[bool]) {
        if let Some(stats) = &self.stats {
            stats.record_queries(answers);
        }
    }
}

impl<P: FilterPolicy> WriteFilter for Counted<P> {
    fn write_filter<I>(&self, keys: I, filter: &mut [u8]) -> Result<(), Error>
    where
        I: ExactSizeIterator,
        I::Item: AsRef<[u8]>,
    {
        let num_keys = keys.len();
        self.policy.write_filter(keys, filter)?;
        if let Some(stats) = &self.stats {
            stats.record_filter(num_keys);
        }
        Ok(())
    }
}

impl<P: FilterPolicy> FilterPolicy for Counted<P> {
    fn filter_len(&self, num_keys: usize) -> Result<usize, Error> {
        self.policy.filter_len(num_keys)
    }

    #[inline]
    fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
        let may_match = self.policy.key_may_match(key, filter);
        if let Some(stats) = &self.stats {
            stats.record_query(may_match);
        }
        may_match
    }

    fn keys_may_match<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k [u8]>,
        filter: &[u8],
        results: &mut [bool],
    ) {
        let Some(stats) = &self.stats else {
            return self.policy.keys_may_match(keys, filter, results);
        };
        let mut answered = 0;
        let keys = keys.into_iter().inspect(|_| answered += 1);
        self.policy.keys_may_match(keys, filter, results);
        stats.record_queries(&results[..answered.min(results.len())]);
    }
}

/// Shards a thread can own: a power of two, so that masking an index proves it in bounds.
const SHARDS: usize = 64;
/// Words per shard, padded to 128 bytes: adjacent-line prefetch must not pair shards.
const STRIDE: usize = 16;
/// The shard after the owned ones, shared with atomic adds by threads that own none.
const SHARED: usize = SHARDS;

// A word's place inside a shard: the owner's thread id, then the counters. A query adds its
// answer to the two answer counters, 1 to one and 0 to the other.
const OWNER: usize = 0;
const FILTERS_BUILT: usize = 1;
const KEYS_ADDED: usize = 2;
const NO_MATCH: usize = 3;
const MAY_MATCH: usize = 4;

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

/// Every shard's words, back to back, `STRIDE` apart.
#[repr(align(128))]
struct Shards([AtomicU64; (SHARDS + 1) * STRIDE]);

/// The counters of one policy: a handle that clones cheaply. The counts join the
/// process-wide totals ([`global_stats`]) and stay there after the last handle is dropped.
pub(crate) struct Stats {
    counts: Arc<Counts>,
}

struct Counts {
    /// Inline, so that a count is one load away from the handle.
    shards: Shards,
    baseline: Mutex<StatsSnapshot>,
    /// Live `Stats` handles; the last one to go moves the counts into the retired totals.
    handles: AtomicUsize,
}

impl Stats {
    /// New counters at zero, registered in the process-wide totals.
    pub(crate) fn new() -> Self {
        let counts = Arc::new(Counts {
            shards: Shards(std::array::from_fn(|_| AtomicU64::new(0))),
            baseline: Mutex::new(StatsSnapshot::default()),
            handles: AtomicUsize::new(1),
        });
        registry().live.push(Arc::clone(&counts));
        Stats { counts }
    }

    /// Counts a filter built over `keys` keys.
    pub(crate) fn record_filter(&self, keys: usize) {
        self.counts
            .add([(FILTERS_BUILT, 1), (KEYS_ADDED, keys as u64)]);
    }

    /// Counts a query and its answer.
    #[inline]
    pub(crate) fn record_query(&self, may_match: bool) {
        // A branch, not a counter chosen by the answer: that store's address would wait for
        // the probes (docs/performance-notes.md, "Statistics"). The compiler fence, which
        // emits nothing, keeps the compiler from folding the two arms into that index.
        if may_match {
            self.counts.add([(MAY_MATCH, 1)]);
        } else {
            std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::Acquire);
            self.counts.add([(NO_MATCH, 1)]);
        }
    }

    /// Counts a batch of queries by their answers.
    pub(crate) fn record_queries(&self, answers: &[bool]) {
        let may_match = answers.iter().filter(|&&a| a).count();
        self.counts.add([
            (MAY_MATCH, may_match as u64),
            (NO_MATCH, (answers.len() - may_match) as u64),
        ]);
    }

    /// The counts since creation or the last [`reset`](Self::reset).
    pub(crate) fn snapshot(&self) -> StatsSnapshot {
        // The baseline lock is held while summing: a reset in between would otherwise store a
        // baseline above the sum, and the difference would wrap to near 2^64.
        let baseline = lock(&self.counts.baseline);
        self.counts.total().since(*baseline)
    }

    /// Restarts these counts from zero; the process-wide totals keep theirs.
    pub(crate) fn reset(&self) {
        let mut baseline = lock(&self.counts.baseline);
        *baseline = self.counts.total();
    }
}

impl Clone for Stats {
    fn clone(&self) -> Self {
        self.counts.handles.fetch_add(1, Relaxed);
        Stats {
            counts: Arc::clone(&self.counts),
        }
    }
}

impl Drop for Stats {
    fn drop(&mut self) {
        let mut registry = registry();
        // Under the registry lock, so that no reader sees the counts twice or not at all.
        if self.counts.handles.fetch_sub(1, Relaxed) == 1 {
            registry.retired = registry.retired.plus(self.counts.total());
            registry.live.retain(|c| !Arc::ptr_eq(c, &self.counts));
        }
    }
}

impl std::fmt::Debug for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.snapshot().fmt(f)
    }
}

impl Counts {
    #[inline]
    fn add<const N: usize>(&self, adds: [(usize, u64); N]) {
        let thread = thread_id();
        let shard = &self.shards.0[preferred_shard(thread) * STRIDE..][..STRIDE];
        if shard[OWNER].load(Relaxed) == thread {
            // This thread is the shard's only writer, so load-then-store loses nothing.
            for (counter, n) in adds {
                shard[counter].store(shard[counter].load(Relaxed).wrapping_add(n), Relaxed);
            }
        } else {
            for (counter, n) in adds {
                self.add_elsewhere(thread, counter, n);
            }
        }
    }

    /// Counts for a thread that does not own its preferred shard: in its second-choice
    /// shard if it owns that, else it claims one of the two if free (for next time) and
    /// counts this time with an atomic add in the shared shard.
    #[cold]
    fn add_elsewhere(&self, thread: u64, counter: usize, n: u64) {
        let word = |shard: usize, word: usize| &self.shards.0[shard * STRIDE + word];
        let second = second_shard(thread);
        if word(second, OWNER).load(Relaxed) == thread {
            let cell = word(second, counter);
            cell.store(cell.load(Relaxed).wrapping_add(n), Relaxed);
            return;
        }
        for shard in [preferred_shard(thread), second] {
            if word(shard, OWNER)
                .compare_exchange(0, thread, Relaxed, Relaxed)
                .is_ok()
            {
                break;
            }
        }
        word(SHARED, counter).fetch_add(n, Relaxed);
    }

    fn total(&self) -> StatsSnapshot {
        let sum = |counter: usize| {
            (0..=SHARED).fold(0u64, |sum, shard| {
                sum.wrapping_add(self.shards.0[shard * STRIDE + counter].load(Relaxed))
            })
        };
        let no_match = sum(NO_MATCH);
        StatsSnapshot {
            filters_built: sum(FILTERS_BUILT),
            keys_added: sum(KEYS_ADDED),
            queries: no_match.wrapping_add(sum(MAY_MATCH)),
            no_match,
        }
    }
}

/// The process-wide counts since start or the last [`reset_global_stats`]: every counting
/// policy's ([`Counted`], and the C API's that were asked to count), the dropped ones'
/// included. Policies that do not count add nothing.
pub fn global_stats() -> StatsSnapshot {
    let registry = registry();
    let total = registry
        .live
        .iter()
        .fold(registry.retired, |sum, c| sum.plus(c.total()));
    total.since(registry.baseline)
}

/// Restarts the process-wide counts from zero; per-policy counts keep theirs.
pub fn reset_global_stats() {
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

/// The shard a thread tries first. Thread pointers of live threads are at least a stack
/// apart, and stacks span an odd number of pages (a guard page), so the page number keeps
/// consecutive threads apart.
#[inline]
fn preferred_shard(thread: u64) -> usize {
    (thread >> 12) as usize % SHARDS
}

/// The shard a thread tries when its preferred one belongs to another thread.
fn second_shard(thread: u64) -> usize {
    ((thread >> 4).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) as usize % SHARDS
}

/// A non-zero number unique to each live thread: its thread pointer, where the platform ABI
/// defines one, read in one instruction.
///
/// A thread pointer is reused only after its thread has exited, and the new thread was
/// created after that exit (a happens-before edge), so the new thread may continue the old
/// one's plain stores. The same holds for the thread-local fallback's address.
#[inline]
#[allow(unsafe_code)] // one register or thread-control-block read, no memory written
fn thread_id() -> u64 {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        let tp: u64;
        // SAFETY: on x86-64 Linux the thread control block's first word holds its own
        // address (the TLS ABI's `tcb` self-pointer), readable through %fs at offset 0 by
        // every thread; the load has no side effect.
        unsafe {
            std::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp,
                options(nostack, readonly, preserves_flags, pure));
        }
        tp
    }
    #[cfg(all(target_arch = "aarch64", target_os = "linux"))]
    {
        let tp: u64;
        // SAFETY: reading TPIDR_EL0, the thread pointer register, has no side effect.
        unsafe {
            std::arch::asm!("mrs {}, tpidr_el0", out(reg) tp,
                options(nostack, nomem, preserves_flags, pure));
        }
        tp
    }
    #[cfg(not(all(
        any(target_arch = "x86_64", target_arch = "aarch64"),
        target_os = "linux"
    )))]
    {
        thread_local! {
            static ID: u8 = const { 0 };
        }
        ID.with(|id| id as *const u8 as u64)
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

    /// Snapshots taken while other threads count never show more "no match" answers than
    /// queries, and never go backwards.
    #[test]
    fn snapshots_during_counting_are_consistent() {
        let stats = Stats::new();
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            for t in 0..2 {
                let (stats, done) = (&stats, &done);
                scope.spawn(move || {
                    let mut i = 0u64;
                    while !done.load(Relaxed) {
                        stats.record_query((i.wrapping_mul(0x9e37_79b9_7f4a_7c15) + t) >> 63 == 0);
                        i += 1;
                    }
                });
            }
            // Stops the counting threads however the checks end, a failure included.
            struct Stop<'a>(&'a std::sync::atomic::AtomicBool);
            impl Drop for Stop<'_> {
                fn drop(&mut self) {
                    self.0.store(true, Relaxed);
                }
            }
            let _stop = Stop(&done);
            // The checks mean something only while the counters move.
            let started = std::time::Instant::now();
            while stats.snapshot().queries < 100_000 {
                assert!(
                    started.elapsed().as_secs() < 60,
                    "the counting threads stopped"
                );
                std::hint::spin_loop();
            }
            let mut last = StatsSnapshot::default();
            for _ in 0..20_000 {
                let now = stats.snapshot();
                assert!(now.no_match <= now.queries, "{now:?}");
                assert!(
                    now.queries >= last.queries && now.no_match >= last.no_match,
                    "{last:?} then {now:?}"
                );
                last = now;
            }
        });
    }

    #[test]
    fn many_threads_lose_no_count() {
        let stats = Stats::new();
        let threads = SHARDS + 8; // some share the atomic shard
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
