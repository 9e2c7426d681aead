//! The ribbon module's unit tests: the format's arithmetic, built filters' rates, every
//! processor level against the portable code.

use super::builder::*;
use super::query::*;
use super::row::*;
use super::shape::*;
use super::*;
use crate::policy::FilterPolicy;
use crate::{CompactPolicy, cpu};

fn hashes(seed: u64, count: usize) -> Vec<u64> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..count).map(|_| rng.u64(..)).collect()
}

/// How many of `count` random hashes (from `seed`) `filter` answers "may match", and how
/// many its expected rate says.
fn hits_and_expected(filter: &[u8], seed: u64, count: usize) -> (f64, f64) {
    let probes = hashes(seed, count);
    let hits = probes
        .iter()
        .filter(|&&h| may_match(h, filter, OneAtATime))
        .count() as f64;
    let expected = expected_false_positive_rate(filter).unwrap();
    (hits, probes.len() as f64 * expected)
}

#[test]
fn slots_by_reciprocal_equal_division() {
    let mut payload_bits = 0u64;
    while payload_bits < 1 << 58 {
        for p in [
            payload_bits,
            payload_bits + 1,
            payload_bits * 3 + 7,
            (1 << 58) - 1,
        ] {
            for r in 1..=MAX_RESULT_BITS {
                assert_eq!(whole_slots(p, r), p / u64::from(r), "P {p} r {r}");
            }
        }
        payload_bits = payload_bits * 9 / 8 + 1;
    }
    assert_eq!(whole_slots(u64::MAX, 7), u64::MAX / 7);
}

/// Every trailer value of both forms gives a shape whose parts fit the payload and whose
/// parameters write back to the same bytes.
#[test]
fn every_trailer_fits_its_payload_and_round_trips() {
    for len in [3usize, 8, 9, 20, 47, 48, 49, 126, 1251, 2047, 2048, 100_000] {
        // Under Miri, which interprets each instruction, every 401st value and the last.
        let step = if cfg!(miri) { 401 } else { 1 };
        let values: Box<dyn Iterator<Item = u16>> = if len < SHORT_BELOW {
            Box::new((0..=255).step_by(step).chain((step > 1).then_some(255)))
        } else {
            Box::new(
                (0..=u16::MAX)
                    .step_by(step)
                    .chain((step > 1).then_some(u16::MAX)),
            )
        };
        for v in values {
            let mut filter = vec![0u8; len];
            let trailer = trailer_len(len);
            filter[len - trailer..len - 1].copy_from_slice(&v.to_le_bytes()[..trailer - 1]);
            filter[len - 1] = MARKER;
            let (shape, payload) = Shape::read(&filter).expect("3 bytes or more");
            let bits = payload.len() as u64 * 8;
            assert_eq!(payload.len(), len - trailer);
            assert!(
                shape.extra_base() + shape.extra_slots == bits,
                "len {len} v {v}"
            );
            let max_width = if len < WIDE_FROM { 57 } else { 120 };
            assert!(shape.width <= shape.slots.max(1) && shape.width <= max_width);
            assert!(shape.extra_width <= max_width && shape.wide == (len >= WIDE_FROM));
            let (params, params_len) = shape.params();
            assert_eq!(params_len, trailer - 1);
            let mut rebuilt = filter.clone();
            rebuilt[len - trailer..len - 1].copy_from_slice(&params[..params_len]);
            // Bits of `v` the short form does not read (none) come back as written.
            assert_eq!(Shape::read(&rebuilt).unwrap().0, shape, "len {len} v {v}");
        }
    }
}

#[test]
fn built_filters_answer_every_key_and_their_expected_rate() {
    // Under Miri, which interprets each instruction, the narrow filters and fewer probes.
    let (sizes, probe_count) = if cfg!(miri) { (3, 300) } else { (5, 1_000_000) };
    for (keys, bytes) in [(10, 14), (50, 64), (100, 126), (1000, 1251), (3000, 3751)]
        .into_iter()
        .take(sizes)
    {
        let present = hashes(keys as u64, keys);
        let mut filter = vec![0u8; bytes];
        assert!(build_filter(&present, &mut filter));
        assert_eq!(filter[bytes - 1], MARKER);
        for &hash in &present {
            assert!(may_match(hash, &filter, OneAtATime), "{keys} keys");
        }
        let expected = expected_false_positive_rate(&filter).unwrap();
        let (hits, want) = hits_and_expected(&filter, 1 << 40 | keys as u64, probe_count);
        // One filter's solution is one draw: its rate scatters around the expectation by
        // more than the probes' binomial spread, so the bound is loose.
        assert!(
            (hits - want).abs() < 6.0 * want.sqrt() + 0.25 * want,
            "{keys} keys: {hits} hits, expected {want} (rate {expected})"
        );
    }
}

/// The keys the extra part holds are the share the format says, in narrow and wide
/// filters.
#[test]
fn the_extra_part_holds_its_share_of_keys() {
    // Under Miri, which interprets each instruction, the narrow filter only.
    let sizes = if cfg!(miri) { 1 } else { 2 };
    for (keys, len) in [(1000, 1251), (3000, 3751)].into_iter().take(sizes) {
        let present = hashes(7, keys);
        let mut filter = vec![0u8; len];
        assert!(build_filter(&present, &mut filter));
        let (shape, _) = Shape::read(&filter).unwrap();
        let selected = present
            .iter()
            .filter(|&&h| shape.main_equation::<u128>(h).selected)
            .count() as f64;
        let share = shape.extra_slots as f64 * SHARES[shape.share as usize] as f64
            / (16.0 * shape.slots as f64);
        assert!(shape.extra_slots > 0 && selected > 0.0);
        assert!(
            (selected / keys as f64 - share).abs() < 0.06,
            "{keys}: {selected} {share}"
        );
    }
}

/// Format rule: wide coefficients of at most 57 bits are the narrow ones, so that one
/// rule states both.
#[test]
fn narrow_coefficients_are_the_top_of_the_wide_ones() {
    let mut rng = fastrand::Rng::with_seed(0x3c);
    for _ in 0..if cfg!(miri) { 100 } else { 10_000 } {
        let x = rng.u64(..);
        for width in 1..=57 {
            let narrow = <u64 as Row>::coefficients(x, width);
            assert_eq!(u128::from(narrow), <u128 as Row>::coefficients(x, width));
            assert!(narrow >> (width - 1) <= 1);
        }
        let wide = <u128 as Row>::coefficients(x, 120);
        assert!(wide >> 119 <= 1 && wide & 1 == 1);
    }
}

/// Filters of up to ten million keys build, in the length asked, with the rate the model
/// gives for their size (within the spread of one filter), never all zero.
#[test]
#[cfg_attr(
    miri,
    ignore = "a million keys; Miri runs the same code on the filters of the tests above"
)]
fn large_filters_build_with_their_modelled_rate() {
    for keys in [100_000usize, 1_000_000] {
        let policy = CompactPolicy::new(10.0).unwrap();
        let len = policy.filter_len(keys).unwrap();
        let present = hashes(keys as u64, keys);
        let mut filter = vec![0u8; len];
        assert!(
            build(cpu::instructions(), &present, &mut filter),
            "{keys} keys"
        );
        for &hash in present.iter().step_by(97) {
            assert!(may_match(hash, &filter, OneAtATime));
        }
        let expected = expected_false_positive_rate(&filter).unwrap();
        let modelled = modelled_rate(len, keys as u64);
        assert!(
            expected <= modelled * 1.25,
            "{keys}: {expected} vs {modelled}"
        );
        let (hits, want) = hits_and_expected(&filter, 1 << 41 | keys as u64, 2_000_000);
        assert!(
            (hits - want).abs() < 6.0 * want.sqrt(),
            "{keys}: {hits} vs {want}"
        );
    }
}

/// The versions of `level` build the same bytes as the portable ones, and answer alike,
/// one key at a time and in batches, on built filters and with bits flipped.
fn builds_and_answers_as_the_portable_version(level: Instructions) {
    let mut rng = fastrand::Rng::with_seed(0x71b6);
    let mut compared = 0;
    // Under Miri, which interprets each instruction, a sample of the sizes and settings and
    // fewer probes: each shape (empty, narrow, with an extra part, wide) still.
    let (counts, probe_count, least): (Vec<usize>, usize, usize) = if cfg!(miri) {
        (vec![0, 1, 2, 13, 129, 700], 8, 100)
    } else {
        (
            (0..40)
                .chain([64, 100, 129, 500, 1000, 1100, 3000])
                .collect(),
            60,
            10_000,
        )
    };
    for n in counts {
        for bits_per_key in [1.5, 3.0, 6.0, 10.0, 16.0, 25.0] {
            if cfg!(miri) && n != 0 && (n == 700) != (bits_per_key == 25.0) {
                continue; // under Miri, the wide filter at 25 bits per key only,
            }
            if cfg!(miri) && n == 700 && !level.has_avx2() {
                continue; // and at the highest level (its portable twin runs beside it)
            }
            if cfg!(miri) && n == 129 && ![6.0, 16.0].contains(&bits_per_key) {
                continue;
            }
            let keys: Vec<[u8; 8]> = (0..n).map(|_| rng.u64(..).to_le_bytes()).collect();
            let hashes: Vec<u64> = keys.iter().map(|key| xxh3_64(key)).collect();
            let len = CompactPolicy::new(bits_per_key)
                .unwrap()
                .filter_len(n)
                .unwrap();
            let build_at = |level| {
                let mut filter = vec![0u8; len];
                let built = build(level, &hashes, &mut filter);
                assert!(built || bits_per_key < 3.0, "n {n}, bpk {bits_per_key}");
                filter
            };
            let mut filter = build_at(level);
            // Every level builds with the same code, compiled for its instructions; Miri,
            // which interprets that code rather than the instructions, would run it twice.
            if !cfg!(miri) {
                assert_eq!(
                    filter,
                    build_at(Instructions::PORTABLE),
                    "n {n}, bpk {bits_per_key}"
                );
            }
            let last = filter.len() - 1;
            filter[last] = MARKER;
            for flips in 0..3 {
                for _ in 0..flips {
                    let at = rng.usize(..filter.len() - 1);
                    filter[at] ^= 1 << rng.u32(..8);
                }
                // Absent keys, which most often fail in the first columns, and the filter's
                // own keys, which take every column and the extra part.
                let probes: Vec<[u8; 8]> = (0..probe_count)
                    .map(|_| rng.u64(..).to_le_bytes())
                    .chain(keys.iter().copied().take(probe_count))
                    .collect();
                let probe_count = probes.len();
                let mut batch = [vec![false; probe_count], vec![false; probe_count]];
                for (answers, level) in batch.iter_mut().zip([level, Instructions::PORTABLE]) {
                    keys_may_match(level, probes.iter().map(|p| &p[..]), &filter, answers);
                }
                for (i, probe) in probes.iter().enumerate() {
                    let one = key_may_match(level, probe, &filter);
                    assert_eq!(
                        one,
                        key_may_match(Instructions::PORTABLE, probe, &filter),
                        "n {n}"
                    );
                    assert_eq!([one, one], [batch[0][i], batch[1][i]], "n {n}");
                    compared += 1;
                }
            }
        }
    }
    assert!(compared > least);
}

/// The versions of `level` answer as the portable ones on filters of every length up to
/// 300 bytes whose bytes are random but for the marker: every trailer, every length the
/// vector code reads whole or gathers from.
fn answers_random_filters_as_the_portable_version(level: Instructions) {
    let mut rng = fastrand::Rng::with_seed(0x5eed);
    let lens = if cfg!(miri) { 0..20 } else { 0..300 };
    for len in lens {
        for _ in 0..if cfg!(miri) { 1 } else { 8 } {
            let mut filter: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
            if let Some(last) = filter.last_mut() {
                *last = MARKER;
            }
            for _ in 0..if cfg!(miri) { 4 } else { 64 } {
                let probe = rng.u64(..).to_le_bytes();
                assert_eq!(
                    key_may_match(level, &probe, &filter),
                    key_may_match(Instructions::PORTABLE, &probe, &filter),
                    "len {len}"
                );
            }
        }
    }
}

#[test]
#[cfg_attr(
    all(miri, leveldb_bloom_test_avx2),
    ignore = "under Miri, the AVX2 level's test runs every portable call this one makes"
)]
fn portable_versions_answer_alike_one_by_one_and_in_batches() {
    builds_and_answers_as_the_portable_version(Instructions::PORTABLE);
}

/// The lowest level this processor runs that passes `has`.
fn level_with(has: fn(Instructions) -> bool) -> Instructions {
    let level = cpu::supported().into_iter().find(|&level| has(level));
    level.expect("the processor has the level (else the test is ignored)")
}

/// A test of the versions compiled for one level, ignored where the processor that built
/// the tests lacks it (build.rs).
macro_rules! level_test {
    ($(#[$attr:meta])* $test:ident, $built_with:ident, $has:expr, $lacking:literal) => {
        #[test]
        #[cfg_attr(not($built_with), ignore = $lacking)]
        $(#[$attr])*
        fn $test() {
            builds_and_answers_as_the_portable_version(level_with($has));
            answers_random_filters_as_the_portable_version(level_with($has));
        }
    };
}

level_test!(
    // The popcnt level's code is the portable code compiled for popcnt: the same code to
    // Miri, which interprets it, and which meets its dispatch in the popcnt build's run
    // (scripts/miri).
    #[cfg_attr(
        all(miri, leveldb_bloom_test_avx2),
        ignore = "under Miri, the same code as the portable calls of the AVX2 level's test"
    )]
    popcnt_versions_build_and_answer_as_the_portable_ones,
    leveldb_bloom_test_popcnt,
    Instructions::has_popcnt,
    "the processor that built the tests has no popcnt"
);
level_test!(
    avx2_versions_build_and_answer_as_the_portable_ones,
    leveldb_bloom_test_avx2,
    Instructions::has_avx2,
    "the processor that built the tests has no AVX2"
);
level_test!(
    avx512_versions_build_and_answer_as_the_portable_ones,
    leveldb_bloom_test_avx512,
    Instructions::has_avx512,
    "the processor that built the tests has no AVX-512 (F, DQ, BW, VL, VBMI, VPOPCNTDQ)"
);
