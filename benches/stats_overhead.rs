//! What counting costs on the query path: the same queries with and without
//! `Stats::record_query`, on 1 and on 2 threads sharing one policy's counters.
//! Run with `cargo bench --bench stats_overhead`. Reports medians and the overhead in percent;
//! it asserts nothing (timings are not pass/fail).

use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use leveldb_bloom::{BloomPolicy, Stats};

const FILTERS: usize = 64;
const KEYS_PER_FILTER: usize = 100;
const QUERIES_PER_RUN: usize = 2_000_000;
const REPETITIONS: usize = 21;

fn key(i: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes());
    k[8..].copy_from_slice(&i.to_le_bytes());
    k
}

struct Workload {
    filters: Vec<Vec<u8>>,
    policy: BloomPolicy,
}

impl Workload {
    fn new() -> Self {
        let policy = BloomPolicy::new(10).expect("valid bits per key");
        let filters = (0..FILTERS)
            .map(|f| {
                let keys: Vec<[u8; 16]> = (0..KEYS_PER_FILTER)
                    .map(|i| key((f * KEYS_PER_FILTER + i) as u64))
                    .collect();
                let mut filter = Vec::new();
                policy.create_filter(&keys, &mut filter).expect("filter");
                filter
            })
            .collect();
        Workload { filters, policy }
    }

    /// Half present, half absent keys, spread over all filters.
    fn run(&self, thread: u64, stats: Option<&Stats>) -> usize {
        let mut matches = 0;
        for q in 0..QUERIES_PER_RUN as u64 {
            let f = (q as usize) % FILTERS;
            let i = if q % 2 == 0 {
                (f * KEYS_PER_FILTER) as u64 + (q / 2) % KEYS_PER_FILTER as u64
            } else {
                1 << 40 | thread << 32 | q
            };
            let k = key(black_box(i));
            let answer = match stats {
                Some(stats) => query_counted(&self.policy, stats, &k, &self.filters[f]),
                None => query_plain(&self.policy, &k, &self.filters[f]),
            };
            matches += usize::from(answer);
        }
        matches
    }
}

// Each query is a call, as through the C API or LevelDB's FilterPolicy interface, so that
// neither side is folded into the benchmark loop differently.
#[inline(never)]
fn query_plain(policy: &BloomPolicy, key: &[u8], filter: &[u8]) -> bool {
    policy.key_may_match(key, filter)
}

#[inline(never)]
fn query_counted(policy: &BloomPolicy, stats: &Stats, key: &[u8], filter: &[u8]) -> bool {
    let answer = policy.key_may_match(key, filter);
    stats.record_query(answer);
    answer
}

/// Wall time for `threads` threads each doing one run.
fn timed(work: &Workload, threads: usize, stats: Option<&Stats>) -> Duration {
    let barrier = Barrier::new(threads + 1);
    std::thread::scope(|scope| {
        for t in 0..threads {
            let barrier = &barrier;
            scope.spawn(move || {
                barrier.wait();
                black_box(work.run(t as u64, stats));
                barrier.wait();
            });
        }
        barrier.wait();
        let start = Instant::now();
        barrier.wait();
        start.elapsed()
    })
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let work = Workload::new();
    let stats = Stats::new();
    println!(
        "stats overhead: {QUERIES_PER_RUN} queries per thread per run, 16-byte keys, \
         {KEYS_PER_FILTER} keys per filter, 10 bits per key, median of {REPETITIONS}"
    );
    println!("threads,ns_per_query_plain,ns_per_query_counted,overhead_percent");
    for threads in [1, 2] {
        let (mut plain, mut counted) = (Vec::new(), Vec::new());
        timed(&work, threads, Some(&stats)); // warm-up
        for _ in 0..REPETITIONS {
            // Interleaved, so that drift in machine speed hits both sides alike.
            plain.push(timed(&work, threads, None));
            counted.push(timed(&work, threads, Some(&stats)));
        }
        let per_query = |d: Duration| d.as_nanos() as f64 / QUERIES_PER_RUN as f64;
        let (p, c) = (per_query(median(plain)), per_query(median(counted)));
        println!("{threads},{p:.2},{c:.2},{:.2}", (c - p) / p * 100.0);
    }
    black_box(stats.snapshot());
}
