//! The savings model: how many table reads compact filters saved the program against
//! Bloom filters of the same size, from their expected false-positive rates.

use leveldb_bloom::FilterPolicy;

/// For compact filters (`format`) at a known bits per key: the table reads saved against
/// Bloom filters of the same size (absent keys Bloom's expected rate would let through,
/// less those compact filters let through), of the queries they ruled out (`no_match`).
pub(super) fn table_reads_saved(
    format: Option<&str>,
    bits_per_key: Option<f64>,
    no_match: u64,
) -> Option<u64> {
    if format != Some("compact") {
        return None;
    }
    let bits = bits_per_key?;
    let compact = leveldb_bloom::compact::false_positive_rate_at(bits);
    let bloom = bloom_rate_at(bits);
    // The absent keys asked: those ruled out, and the share compact filters let through.
    let absent = no_match as f64 / (1.0 - compact).max(f64::MIN_POSITIVE);
    Some((absent * (bloom - compact)).max(0.0).round() as u64)
}

/// The false-positive rate the Bloom model expects of LevelDB's filters at `bits_per_key`
/// (whole bits, as LevelDB takes them), for 1,000 keys.
fn bloom_rate_at(bits_per_key: f64) -> f64 {
    const KEYS: usize = 1000;
    let Ok(policy) = leveldb_bloom::BloomPolicy::new(bits_per_key.round() as i32) else {
        return 1.0;
    };
    match policy.filter_len(KEYS) {
        Ok(len) if len > 1 => {
            // The model reads the filter's size and probe count only.
            let mut filter = vec![0u8; len];
            filter[len - 1] = policy.probes();
            leveldb_bloom::bloom::expected_false_positive_rate(&filter, KEYS).unwrap_or(1.0)
        }
        _ => 1.0,
    }
}
