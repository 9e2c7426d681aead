//! Criterion benchmarks of the Rust core: building filters, single and batch queries, and
//! filter block queries, for 16-byte keys at 10 bits per key. (The comparison with LevelDB
//! itself is benches/filter_bench.cc, which runs both in one process.)

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use leveldb_bloom::{BloomPolicy, FilterBlockBuilder, FilterBlockReader, FilterPolicy};

/// Seeded random 16-byte keys.
fn keys(n: usize, seed: u64) -> Vec<[u8; 16]> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..n).map(|_| rng.u128(..).to_le_bytes()).collect()
}

fn filters(c: &mut Criterion) {
    let policy = BloomPolicy::new(10).expect("valid bits per key");
    let mut group = c.benchmark_group("bloom");
    for keys_per_filter in [30, 100, 1000] {
        let present = keys(keys_per_filter, 1);
        let absent = keys(keys_per_filter, 2);
        let mut filter = Vec::new();
        policy.create_filter(&present, &mut filter).expect("filter");
        group.throughput(Throughput::Elements(keys_per_filter as u64));

        group.bench_function(BenchmarkId::new("create", keys_per_filter), |b| {
            let mut out = Vec::with_capacity(filter.len());
            b.iter(|| {
                out.clear();
                policy
                    .create_filter(black_box(&present), &mut out)
                    .expect("filter");
                black_box(&out);
            })
        });
        for (name, probe) in [("query_present", &present), ("query_absent", &absent)] {
            group.bench_function(BenchmarkId::new(name, keys_per_filter), |b| {
                b.iter(|| {
                    probe
                        .iter()
                        .filter(|k| policy.key_may_match(black_box(*k), &filter))
                        .count()
                })
            });
        }
        group.bench_function(BenchmarkId::new("batch_absent", keys_per_filter), |b| {
            let mut results = vec![false; absent.len()];
            b.iter(|| {
                policy.keys_may_match(
                    absent.iter().map(|k| &k[..]),
                    black_box(&filter),
                    &mut results,
                );
                black_box(&results);
            })
        });
    }
    group.finish();
}

fn filter_blocks(c: &mut Criterion) {
    let policy = BloomPolicy::new(10).expect("valid bits per key");
    // A table's worth: 1000 data blocks of 4 KiB, 30 keys each.
    let keys = keys(30_000, 3);
    let mut builder = FilterBlockBuilder::new(policy);
    for (i, chunk) in keys.chunks(30).enumerate() {
        builder
            .start_block(i as u64 * 4096)
            .expect("offsets increase");
        for key in chunk {
            builder.add_key(key).expect("open builder");
        }
    }
    let block = builder.finish().expect("finish").to_vec();
    let reader = FilterBlockReader::new(&policy, &block);
    let mut group = c.benchmark_group("filter_block");
    group.throughput(Throughput::Elements(keys.len() as u64));
    group.bench_function("query_present", |b| {
        b.iter(|| {
            keys.iter()
                .enumerate()
                .filter(|(i, k)| reader.key_may_match((i / 30) as u64 * 4096, black_box(*k)))
                .count()
        })
    });
    group.finish();
}

criterion_group!(benches, filters, filter_blocks);
criterion_main!(benches);
