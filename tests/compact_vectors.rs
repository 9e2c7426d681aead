//! The compact format's filters pinned: for fixed key sets, what the builder writes must stay
//! what it wrote when `tests/vectors/compact_filters.txt` was made, byte for byte, whatever
//! the builder's code becomes (its shape choices, its elimination, its vector code); databases
//! written before and after must hold the same filters. The file is the builder's own output,
//! a pin and not a proof: `tests/compact_spec.rs` holds every filter to the format's document.
//!
//! `LEVELDB_BLOOM_WRITE_VECTORS=1` writes the file anew (only when a change of the format
//! itself, said in `docs/compact-format.md`, means to change the filters).

use leveldb_bloom::{CompactPolicy, FilterPolicy};

const FILE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/vectors/compact_filters.txt"
);

/// Key `i` of the sets: 8 to 32 bytes of a counter's mix (lengths vary with `i`).
fn key(i: u64) -> Vec<u8> {
    let mixed = i.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    mixed.to_le_bytes().repeat(1 + (i % 4) as usize)
}

/// The pinned cases: (bits per key, keys).
fn cases() -> Vec<(f64, u64)> {
    let mut cases = Vec::new();
    for bits_per_key in [1.5, 6.0, 10.0, 16.0, 25.0] {
        for keys in [0, 1, 2, 3, 10, 20, 37, 50, 100, 200, 500, 1000, 1700, 3000] {
            cases.push((bits_per_key, keys));
        }
    }
    cases.push((10.0, 20_000));
    cases
}

/// Each case's line: its bits per key, its keys, the filter in hex.
fn lines() -> Vec<String> {
    cases()
        .into_iter()
        .map(|(bits_per_key, keys)| {
            let policy = CompactPolicy::new(bits_per_key).unwrap();
            let set: Vec<Vec<u8>> = (0..keys).map(key).collect();
            let mut filter = Vec::new();
            policy.create_filter(&set, &mut filter).unwrap();
            let hex: String = filter.iter().map(|b| format!("{b:02x}")).collect();
            format!("{bits_per_key} {keys} {hex}")
        })
        .collect()
}

#[test]
fn the_builder_writes_the_pinned_filters() {
    let made = lines();
    if std::env::var_os("LEVELDB_BLOOM_WRITE_VECTORS").is_some() {
        std::fs::write(FILE, made.join("\n") + "\n").unwrap();
        return;
    }
    let pinned = std::fs::read_to_string(FILE).expect("tests/vectors/compact_filters.txt");
    let pinned: Vec<&str> = pinned.lines().collect();
    assert_eq!(
        pinned.len(),
        made.len(),
        "the cases changed: write the file anew"
    );
    for (made, pinned) in made.iter().zip(pinned) {
        let case: Vec<&str> = pinned.splitn(3, ' ').take(2).collect();
        assert!(
            made == pinned,
            "{case:?}: the builder writes another filter"
        );
    }
}
