//! Filter statistics: a policy that counts what it does ([`Counted`]), and the process-wide
//! totals of every counting policy ([`global_stats`]).
//!
//! Counting sits on the query path, so it must cost little even when every thread queries
//! the same policy. Every [`Stats`] has 64 stripes of counters, each on cache lines of its
//! own; a thread counts in the stripe its stack's address picks, with relaxed atomic adds.
//! Threads whose stacks hash apart share no line; threads that share a stripe still lose no
//! count. (docs/performance-notes.md, "Statistics", compares this design with owned,
//! unlocked shards at 1 to 32 threads.) Reading sums the stripes; a reset records
//! a baseline instead of zeroing, so the process-wide totals keep what was counted.

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release, SeqCst};
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize};

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
    stats: Stats,
}

impl<P> Counted<P> {
    /// `policy`, counting from zero.
    pub fn new(policy: P) -> Self {
        Counted::with_stats(policy, Stats::new())
    }

    /// `policy`, counting into `stats` (shared with whatever else counts there).
    pub fn with_stats(policy: P, stats: Stats) -> Self {
        Counted { policy, stats }
    }

    /// The policy that answers.
    pub fn policy(&self) -> &P {
        &self.policy
    }

    /// The counts since creation or the last [`reset_stats`](Self::reset_stats), this
    /// policy's clones' included. Counting is thread-safe; a snapshot taken while other
    /// threads count sees each counter at some moment during the call.
    pub fn stats(&self) -> StatsSnapshot {
        self.stats.snapshot()
    }

    /// Restarts this policy's counts from zero; the process-wide counts keep theirs.
    pub fn reset_stats(&self) {
        self.stats.reset();
    }

    /// Counts a filter of `num_keys` keys that other code wrote, in this policy's format, for
    /// this policy (the drop-in's Bloom filters, which LevelDB's own Bloom policy writes).
    pub fn record_filter_written_elsewhere(&self, num_keys: usize) {
        self.stats.record_filter(num_keys);
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
        self.stats.record_filter(num_keys);
        Ok(())
    }

    fn answered_without_filter(&self, answers: usize) {
        self.policy.answered_without_filter(answers);
        self.stats.record_answers(answers, 0);
    }
}

impl<P: FilterPolicy> FilterPolicy for Counted<P> {
    fn filter_len(&self, num_keys: usize) -> Result<usize, Error> {
        self.policy.filter_len(num_keys)
    }

    #[inline]
    fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
        let may_match = self.policy.key_may_match(key, filter);
        self.stats.record_query(may_match);
        may_match
    }

    fn keys_may_match<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k [u8]>,
        filter: &[u8],
        results: &mut [bool],
    ) {
        let mut answered = 0;
        let keys = keys.into_iter().inspect(|_| answered += 1);
        self.policy.keys_may_match(keys, filter, results);
        self.stats
            .record_queries(&results[..answered.min(results.len())]);
    }
}

/// Stripes per [`Stats`]: a power of two, so that the stripe index is a shift of a hash.
const STRIPES: usize = 64;

/// One stripe of counters, padded to 128 bytes: adjacent-line prefetch must not pair
/// stripes.
#[repr(align(128))]
#[derive(Default)]
struct Stripe {
    filters_built: AtomicU64,
    keys_added: AtomicU64,
    no_match: AtomicU64,
    may_match: AtomicU64,
}

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

/// The counters as kept: queries by their answers, so that a count derived from counters
/// read at different moments (a read racing a reset or a retirement) still has no more
/// "no match" answers than queries.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    filters_built: u64,
    keys_added: u64,
    may_match: u64,
    no_match: u64,
}

impl Tally {
    fn since(self, baseline: Tally) -> Tally {
        Tally {
            filters_built: self.filters_built.saturating_sub(baseline.filters_built),
            keys_added: self.keys_added.saturating_sub(baseline.keys_added),
            may_match: self.may_match.saturating_sub(baseline.may_match),
            no_match: self.no_match.saturating_sub(baseline.no_match),
        }
    }

    fn plus(self, other: Tally) -> Tally {
        Tally {
            filters_built: self.filters_built.wrapping_add(other.filters_built),
            keys_added: self.keys_added.wrapping_add(other.keys_added),
            may_match: self.may_match.wrapping_add(other.may_match),
            no_match: self.no_match.wrapping_add(other.no_match),
        }
    }

    fn snapshot(self) -> StatsSnapshot {
        StatsSnapshot {
            filters_built: self.filters_built,
            keys_added: self.keys_added,
            queries: self.may_match.wrapping_add(self.no_match),
            no_match: self.no_match,
        }
    }
}

/// Counters of filter work: a handle that clones cheaply, its clones counting into the same
/// counts. The counts join the process-wide totals ([`global_stats`]) and stay there after
/// the last handle is dropped. [`Counted`] counts into one; callers that answer for a
/// policy by other means (a filter block with no filter for a block) count here directly.
///
/// Making and dropping counters takes no lock (the process-wide registry is a list that
/// only grows, whose entries are reused once their last handle is gone), so that a `fork`
/// in another thread can leave nothing held that a child would wait on.
pub struct Stats {
    counts: &'static Counts,
}

struct Counts {
    /// Inline, so that a count is one load away from the handle.
    stripes: [Stripe; STRIPES],
    /// What [`Stats::reset`] left behind: the counts since are above it.
    baseline: AtomicTally,
    /// Live `Stats` handles; the last one to go moves the counts into the retired totals and
    /// frees the entry for reuse (0: free; `RETIRING` while its counts move).
    handles: AtomicUsize,
    /// The next entry of the registry.
    next: AtomicPtr<Counts>,
}

/// `Counts::handles` while the last handle moves the counts out.
const RETIRING: usize = usize::MAX;

impl Default for Stats {
    fn default() -> Self {
        Stats::new()
    }
}

impl Stats {
    /// New counters at zero, registered in the process-wide totals.
    pub fn new() -> Self {
        let mut entry = REGISTRY.head.load(Acquire);
        while !entry.is_null() {
            let counts = registered(entry);
            if counts
                .handles
                .compare_exchange(0, 1, Acquire, Relaxed)
                .is_ok()
            {
                counts.baseline.set(Tally::default());
                return Stats { counts };
            }
            entry = counts.next.load(Acquire);
        }
        // Made in place on the heap: its 8 KiB of stripes must not pass through the stack
        // (a policy may be made in a signal handler, on a small alternate stack).
        let counts: &'static Counts = Box::leak(zeroed_counts());
        counts.handles.store(1, Relaxed);
        let mut head = REGISTRY.head.load(Relaxed);
        loop {
            counts.next.store(head, Relaxed);
            match REGISTRY.head.compare_exchange_weak(
                head,
                std::ptr::from_ref(counts).cast_mut(),
                Release,
                Relaxed,
            ) {
                Ok(_) => return Stats { counts },
                Err(now) => head = now,
            }
        }
    }

    /// Counts a filter built over `keys` keys.
    pub(crate) fn record_filter(&self, keys: usize) {
        let stripe = self.counts.stripe();
        stripe.filters_built.fetch_add(1, Relaxed);
        stripe.keys_added.fetch_add(keys as u64, Relaxed);
    }

    /// Counts a query and its answer.
    #[inline]
    pub(crate) fn record_query(&self, may_match: bool) {
        let stripe = self.counts.stripe();
        if may_match {
            stripe.may_match.fetch_add(1, Relaxed);
        } else {
            stripe.no_match.fetch_add(1, Relaxed);
        }
    }

    /// Counts a batch of queries by their answers.
    pub(crate) fn record_queries(&self, answers: &[bool]) {
        let may_match = answers.iter().filter(|&&a| a).count();
        self.record_answers(may_match, answers.len() - may_match);
    }

    /// Counts `may_match` queries answered "may match" and `no_match` answered "no match".
    pub(crate) fn record_answers(&self, may_match: usize, no_match: usize) {
        let stripe = self.counts.stripe();
        stripe.may_match.fetch_add(may_match as u64, Relaxed);
        stripe.no_match.fetch_add(no_match as u64, Relaxed);
    }

    /// The counts since creation or the last [`reset`](Self::reset) (a reset during the
    /// call may leave a count at 0, never above what was counted, and never with more "no
    /// match" answers than queries).
    pub fn snapshot(&self) -> StatsSnapshot {
        self.counts
            .total()
            .since(self.counts.baseline.get())
            .snapshot()
    }

    /// Restarts these counts from zero; the process-wide totals keep theirs.
    pub fn reset(&self) {
        self.counts.baseline.set(self.counts.total());
    }
}

impl Clone for Stats {
    fn clone(&self) -> Self {
        self.counts.handles.fetch_add(1, Relaxed);
        Stats {
            counts: self.counts,
        }
    }
}

impl Drop for Stats {
    fn drop(&mut self) {
        // One handle fewer; the last one marks the entry as being retired, so that no new
        // `Stats` takes it before its counts have moved.
        let mut handles = self.counts.handles.load(Acquire);
        loop {
            let next = if handles == 1 { RETIRING } else { handles - 1 };
            match self
                .counts
                .handles
                .compare_exchange_weak(handles, next, AcqRel, Acquire)
            {
                Ok(_) if handles == 1 => break,
                Ok(_) => return,
                Err(now) => handles = now,
            }
        }
        // The last handle: its counts move into the retired totals, announced to readers
        // (`global_stats`) so that none sees them twice or not at all, and the entry is
        // zeroed and freed for reuse.
        REGISTRY.moving.fetch_add(1, SeqCst);
        let total = self.counts.total();
        REGISTRY.retired.add(total);
        for stripe in &self.counts.stripes {
            stripe.filters_built.store(0, Relaxed);
            stripe.keys_added.store(0, Relaxed);
            stripe.no_match.store(0, Relaxed);
            stripe.may_match.store(0, Relaxed);
        }
        REGISTRY.generation.fetch_add(1, SeqCst);
        REGISTRY.moving.fetch_sub(1, SeqCst);
        self.counts.handles.store(0, Release);
    }
}

impl std::fmt::Debug for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.snapshot().fmt(f)
    }
}

impl Counts {
    /// The stripe of the calling thread: picked by a hash of its stack's page, which costs
    /// no thread-local lookup (in a shared library, a call).
    #[inline]
    fn stripe(&self) -> &Stripe {
        let here = 0u8;
        let page = (std::ptr::addr_of!(here).addr() >> 12) as u64;
        let index = page.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - STRIPES.trailing_zeros());
        &self.stripes[index as usize]
    }

    fn total(&self) -> Tally {
        let sum = |counter: fn(&Stripe) -> &AtomicU64| {
            self.stripes.iter().fold(0u64, |sum, stripe| {
                sum.wrapping_add(counter(stripe).load(Relaxed))
            })
        };
        Tally {
            filters_built: sum(|s| &s.filters_built),
            keys_added: sum(|s| &s.keys_added),
            may_match: sum(|s| &s.may_match),
            no_match: sum(|s| &s.no_match),
        }
    }
}

/// The process-wide counts since start or the last [`reset_global_stats`]: every [`Stats`]'
/// (every [`Counted`] policy's, the C library's counting policies'), the dropped ones'
/// included. Policies that do not count add nothing. Exact when no counters are dropped
/// meanwhile; while they are, a few retries wait for a sum that no move crossed (never a
/// lock: a thread stopped by a `fork` mid-move leaves the child's sums approximate, not
/// stuck).
pub fn global_stats() -> StatsSnapshot {
    sum_all().since(REGISTRY.baseline.get()).snapshot()
}

/// Restarts the process-wide counts from zero; per-policy counts keep theirs.
pub fn reset_global_stats() {
    REGISTRY.baseline.set(sum_all());
}

/// Every entry's counts and the retired ones.
fn sum_all() -> Tally {
    let mut total = Tally::default();
    for _ in 0..1000 {
        let generation = REGISTRY.generation.load(SeqCst);
        if REGISTRY.moving.load(SeqCst) != 0 {
            std::thread::yield_now();
            continue;
        }
        total = REGISTRY.retired.get();
        let mut entry = REGISTRY.head.load(Acquire);
        while !entry.is_null() {
            let counts = registered(entry);
            total = total.plus(counts.total());
            entry = counts.next.load(Acquire);
        }
        if REGISTRY.moving.load(SeqCst) == 0 && REGISTRY.generation.load(SeqCst) == generation {
            break;
        }
    }
    total
}

/// Four counters kept as atomics (the retired totals, the global baseline).
struct AtomicTally([AtomicU64; 4]);

impl AtomicTally {
    const fn new() -> Self {
        AtomicTally([
            AtomicU64::new(0),
            AtomicU64::new(0),
            AtomicU64::new(0),
            AtomicU64::new(0),
        ])
    }

    fn get(&self) -> Tally {
        Tally {
            filters_built: self.0[0].load(SeqCst),
            keys_added: self.0[1].load(SeqCst),
            may_match: self.0[2].load(SeqCst),
            no_match: self.0[3].load(SeqCst),
        }
    }

    fn set(&self, s: Tally) {
        for (cell, v) in self
            .0
            .iter()
            .zip([s.filters_built, s.keys_added, s.may_match, s.no_match])
        {
            cell.store(v, SeqCst);
        }
    }

    fn add(&self, s: Tally) {
        for (cell, v) in self
            .0
            .iter()
            .zip([s.filters_built, s.keys_added, s.may_match, s.no_match])
        {
            cell.fetch_add(v, SeqCst);
        }
    }
}

/// Every [`Stats`] entry ever made (reused once free), what freed ones had counted, and
/// the baseline of [`reset_global_stats`].
struct Registry {
    head: AtomicPtr<Counts>,
    retired: AtomicTally,
    baseline: AtomicTally,
    /// Moves into `retired` in progress, and moves done.
    moving: AtomicUsize,
    generation: AtomicU64,
}

static REGISTRY: Registry = Registry {
    head: AtomicPtr::new(std::ptr::null_mut()),
    retired: AtomicTally::new(),
    baseline: AtomicTally::new(),
    moving: AtomicUsize::new(0),
    generation: AtomicU64::new(0),
};

/// The registry entry at `entry` (not NULL: a pointer read from the registry).
#[allow(unsafe_code)] // a lock-free list: the one way to share leaked entries without a lock
fn registered(entry: *mut Counts) -> &'static Counts {
    // SAFETY: every pointer in the registry comes from `Box::leak` (`Stats::new`) and is
    // never freed or moved; the entries are only changed through their atomics.
    unsafe { &*entry }
}

/// A new registry entry, all zero: no handle, no next entry, every count 0.
#[allow(unsafe_code)] // made zeroed in place: `Box::new` may build 8 KiB on the stack first
fn zeroed_counts() -> Box<Counts> {
    let layout = std::alloc::Layout::new::<Counts>();
    // SAFETY: `Counts` is not zero-sized.
    let memory = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<Counts>();
    if memory.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    // SAFETY: memory of `Counts`' layout from the global allocator, which `Box` frees with
    // that layout; every field of `Counts` is an atomic integer or pointer, for which
    // all-zero bytes are a valid value (0, null).
    unsafe { Box::from_raw(memory) }
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

    /// A read that races a reset sums the counters at one moment and may take each field of
    /// the baseline from before or after the reset: every such mix still answers no more
    /// "no match" answers than queries.
    #[test]
    fn a_baseline_torn_by_a_reset_keeps_no_match_within_queries() {
        let before = Tally {
            filters_built: 1,
            keys_added: 10,
            may_match: 5,
            no_match: 3,
        };
        let read = Tally {
            filters_built: 4,
            keys_added: 40,
            may_match: 20,
            no_match: 30,
        };
        let after = Tally {
            filters_built: 9,
            keys_added: 90,
            may_match: 50,
            no_match: 60,
        };
        for mix in 0..16u32 {
            let pick = |bit: u32, old: u64, new: u64| if mix & (1 << bit) == 0 { old } else { new };
            let torn = Tally {
                filters_built: pick(0, before.filters_built, after.filters_built),
                keys_added: pick(1, before.keys_added, after.keys_added),
                may_match: pick(2, before.may_match, after.may_match),
                no_match: pick(3, before.no_match, after.no_match),
            };
            let seen = read.since(torn).snapshot();
            assert!(
                seen.no_match <= seen.queries,
                "{seen:?} from baseline {torn:?}"
            );
            assert!(seen.queries <= read.since(before).snapshot().queries);
        }
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
            // The checks mean something only while the counters move. (Under Miri, which
            // interprets each instruction and checks each access for a race, fewer.)
            let (counted, snapshots) = if cfg!(miri) {
                (300, 100)
            } else {
                (100_000, 20_000)
            };
            let started = std::time::Instant::now();
            while stats.snapshot().queries < counted {
                assert!(
                    started.elapsed().as_secs() < 60,
                    "the counting threads stopped"
                );
                std::hint::spin_loop();
            }
            let mut last = StatsSnapshot::default();
            for _ in 0..snapshots {
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
        let threads = STRIPES * 4 + 3; // several share each stripe
        // Under Miri, which interprets each instruction and checks each access for a race,
        // fewer counts a thread.
        let each = if cfg!(miri) { 30 } else { 10_000 };
        std::thread::scope(|scope| {
            for t in 0..threads {
                let stats = &stats;
                scope.spawn(move || {
                    for i in 0..each {
                        stats.record_query((i + t) % 3 == 0);
                    }
                });
            }
        });
        let snapshot = stats.snapshot();
        assert_eq!(snapshot.queries, (threads * each) as u64);
        let expected_no_match: usize = (0..threads)
            .map(|t| (0..each).filter(|i| (i + t) % 3 != 0).count())
            .sum();
        assert_eq!(snapshot.no_match, expected_no_match as u64);
    }
}
