//! What counting queries costs under two designs of the counters, at 1, 2, 8 and 32 threads
//! sharing one set of counters, in one process: the library's `Stats` (16 cache-padded
//! stripes, a stripe picked by the thread's stack address, relaxed atomic adds) against the
//! design it replaced, owned shards (each thread claims a shard of its own, found from its
//! thread pointer, and bumps it with a plain load and store: no locked instruction; a
//! thread without one adds atomically in a shared shard). Both count around the same query,
//! LevelDB's Bloom query ([`bloom::key_may_match`]) of 16-byte keys against 64 filters of
//! 100 keys at 10 bits per key, keys all present, all absent, or each a coin toss; the
//! uncounted query is the baseline. Run by `scripts/bench stats`.
//!
//! Prints CSV: threads,keys,design,ns_per_query,overhead_percent (the best of ROUNDS rounds,
//! the designs alternating; a round is 4,000,000 queries split among the threads, so the
//! time per query is the process's throughput on however many cores run the threads).
//!
//! Usage: stats_designs [ROUNDS]

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use leveldb_bloom::{BloomPolicy, Counted, FilterPolicy, bloom};

const FILTERS: usize = 64;
const KEYS_PER_FILTER: u64 = 100;
const QUERIES: u64 = 4_000_000;
const THREADS: [u64; 4] = [1, 2, 8, 32];

#[derive(Clone, Copy, PartialEq)]
enum Keys {
    Present,
    Absent,
    Mixed,
}

fn key(i: u64) -> [u8; 16] {
    let mut key = [0; 16];
    key[..8].copy_from_slice(&i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes());
    key[8..].copy_from_slice(&i.to_le_bytes());
    key
}

/// The owned-shard design: 64 shards of 128 bytes and a shared one; a thread claims one of
/// two shards picked from its thread pointer and then bumps it with a plain load and store.
struct OwnedShards {
    words: Box<[AtomicU64]>,
}

const SHARDS: usize = 64;
const STRIDE: usize = 16;
const OWNER: usize = 0;
const NO_MATCH: usize = 1;
const MAY_MATCH: usize = 2;

impl OwnedShards {
    fn new() -> Self {
        OwnedShards {
            words: (0..(SHARDS + 1) * STRIDE)
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }

    fn word(&self, shard: usize, word: usize) -> &AtomicU64 {
        &self.words[shard * STRIDE + word]
    }

    #[inline]
    fn record_query(&self, may_match: bool) {
        let counter = if may_match { MAY_MATCH } else { NO_MATCH };
        let thread = thread_id();
        let shard = (thread >> 12) as usize % SHARDS;
        if self.word(shard, OWNER).load(Relaxed) == thread {
            let cell = self.word(shard, counter);
            cell.store(cell.load(Relaxed) + 1, Relaxed);
        } else {
            self.add_elsewhere(thread, counter);
        }
    }

    #[cold]
    fn add_elsewhere(&self, thread: u64, counter: usize) {
        let second = ((thread >> 4).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) as usize % SHARDS;
        if self.word(second, OWNER).load(Relaxed) == thread {
            let cell = self.word(second, counter);
            cell.store(cell.load(Relaxed) + 1, Relaxed);
            return;
        }
        for shard in [(thread >> 12) as usize % SHARDS, second] {
            let claimed = self
                .word(shard, OWNER)
                .compare_exchange(0, thread, Relaxed, Relaxed);
            if claimed.is_ok() {
                break;
            }
        }
        self.word(SHARDS, counter).fetch_add(1, Relaxed);
    }

    fn queries(&self) -> u64 {
        (0..=SHARDS)
            .map(|s| self.word(s, NO_MATCH).load(Relaxed) + self.word(s, MAY_MATCH).load(Relaxed))
            .sum()
    }
}

/// The thread pointer: on x86-64 Linux the thread control block's self-pointer, else the
/// address of a thread-local.
#[inline]
fn thread_id() -> u64 {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        let tp: u64;
        // SAFETY: on x86-64 Linux the thread control block's first word holds its own
        // address, readable through %fs at offset 0 by every thread; no side effect.
        unsafe {
            std::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp,
                options(nostack, readonly, preserves_flags, pure));
        }
        tp
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        thread_local! {
            static ID: u8 = const { 0 };
        }
        ID.with(|id| std::ptr::from_ref(id).addr() as u64)
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Design {
    Uncounted,
    Library,
    OwnedShards,
}

impl Design {
    fn name(self) -> &'static str {
        match self {
            Design::Uncounted => "uncounted",
            Design::Library => "striped-atomic",
            Design::OwnedShards => "owned-shards",
        }
    }
}

struct Setup {
    filters: Vec<Vec<u8>>,
    /// LevelDB's Bloom policy counted by the library's [`Counted`] (its `Stats`).
    library: Counted<BloomPolicy>,
    owned: OwnedShards,
}

/// The queries of one thread; returns how many matched.
#[inline(never)]
fn query_loop(setup: &Setup, design: Design, keys: Keys, thread: u64, queries: u64) -> u64 {
    let mut matches = 0;
    for q in 0..queries {
        let f = (q % FILTERS as u64) as usize;
        let present = match keys {
            Keys::Present => true,
            Keys::Absent => false,
            Keys::Mixed => (q.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 63) == 1,
        };
        let i = if present {
            f as u64 * KEYS_PER_FILTER + (q / 2) % KEYS_PER_FILTER
        } else {
            (1 << 40) | (thread << 32) | q
        };
        let key = key(i);
        let answer = match design {
            Design::Uncounted => bloom::key_may_match(black_box(&key), &setup.filters[f]),
            Design::Library => setup
                .library
                .key_may_match(black_box(&key), &setup.filters[f]),
            Design::OwnedShards => {
                let answer = bloom::key_may_match(black_box(&key), &setup.filters[f]);
                setup.owned.record_query(answer);
                answer
            }
        };
        matches += u64::from(answer);
    }
    matches
}

/// Nanoseconds per query of one round.
fn round_ns(setup: &Setup, design: Design, keys: Keys, threads: u64) -> f64 {
    let per_thread = QUERIES / threads;
    let start = Instant::now();
    let matches: u64 = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| scope.spawn(move || query_loop(setup, design, keys, t, per_thread)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    let ns = start.elapsed().as_secs_f64() * 1e9 / (per_thread * threads) as f64;
    if keys == Keys::Present {
        assert_eq!(matches, per_thread * threads, "a present key did not match");
    }
    ns
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map_or(5, |r| r.parse().expect("ROUNDS is a number"));
    let policy = BloomPolicy::new(10).unwrap();
    let filters = (0..FILTERS as u64)
        .map(|f| {
            let keys: Vec<_> = (0..KEYS_PER_FILTER)
                .map(|i| key(f * KEYS_PER_FILTER + i))
                .collect();
            let mut filter = Vec::new();
            policy.create_filter(&keys, &mut filter).unwrap();
            filter
        })
        .collect();
    let setup = Setup {
        filters,
        library: Counted::new(BloomPolicy::new(10).unwrap()),
        owned: OwnedShards::new(),
    };
    let designs = [Design::Uncounted, Design::Library, Design::OwnedShards];
    println!("threads,keys,design,ns_per_query,overhead_percent");
    for threads in THREADS {
        for (keys, keys_name) in [
            (Keys::Present, "present"),
            (Keys::Absent, "absent"),
            (Keys::Mixed, "mixed"),
        ] {
            let mut best = [f64::MAX; 3];
            for round in 0..rounds {
                // Each design first in a third of the rounds.
                for d in 0..designs.len() {
                    let d = (d + round) % designs.len();
                    best[d] = best[d].min(round_ns(&setup, designs[d], keys, threads));
                }
            }
            for (design, ns) in designs.iter().zip(best) {
                println!(
                    "{threads},{keys_name},{},{ns:.3},{:+.2}",
                    design.name(),
                    (ns - best[0]) / best[0] * 100.0
                );
            }
        }
    }
    // Both designs counted every query they were asked to (a design that lost counts would
    // look cheaper than it is).
    let counted = setup.library.stats().queries;
    assert_eq!(
        counted,
        setup.owned.queries(),
        "the designs counted differently"
    );
}
