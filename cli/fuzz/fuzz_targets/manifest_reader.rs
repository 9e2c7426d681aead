//! Fuzz target: the MANIFEST reader of the `leveldb-bloom` command (`cli/src/manifest.rs`:
//! the log's blocks, fragments and checksums, version edits and their fields, the live set),
//! on arbitrary bytes read as a MANIFEST.
//!
//! Checks: no panic, hang or unbounded allocation (built with debug assertions and overflow
//! checks; libFuzzer's -rss_limit_mb and -malloc_limit_mb bound memory), and that the
//! answer does not depend on where the bytes lie in memory.
#![no_main]

use leveldb_bloom_cli::manifest::live_tables;
use libfuzzer_sys::fuzz_target;

/// The reader's answer: the live tables' count, or whether the MANIFEST is damaged (rather
/// than readable but not this tool's).
fn answer(bytes: &[u8]) -> Result<usize, bool> {
    live_tables(bytes).map(|tables| tables.len()).map_err(|e| e.damaged)
}

fuzz_target!(|data: &[u8]| {
    let first = answer(data);
    let again = answer(&data.to_vec());
    assert_eq!(first, again, "the same bytes read two ways");
});
