//! The savings model: how many table reads compact filters saved the program against
//! Bloom filters of the same size, from their expected false-positive rates.

use leveldb_bloom::BloomPolicy;

/// For compact filters (`compact`: all the program's were) at a known bits per key: the
/// table reads saved against Bloom filters of the same size (absent keys Bloom's expected
/// rate would let through, less those compact filters let through), of the queries they
/// ruled out (`no_match`).
pub(super) fn table_reads_saved(
    compact: bool,
    bits_per_key: Option<f64>,
    no_match: u64,
) -> Option<u64> {
    if !compact {
        return None;
    }
    let bits = bits_per_key?;
    let compact = leveldb_bloom::compact::false_positive_rate_at(bits);
    // LevelDB takes whole bits per key.
    let bloom = BloomPolicy::new(bits.round() as i32).map_or(1.0, |p| p.modelled_rate());
    // The absent keys asked: those ruled out, and the share compact filters let through.
    let absent = no_match as f64 / (1.0 - compact).max(f64::MIN_POSITIVE);
    Some((absent * (bloom - compact)).max(0.0).round() as u64)
}
