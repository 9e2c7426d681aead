//! XXH64 (xxHash, 64-bit), the key hash of the compact filter format.
//!
//! The compact format is ours, so it is free to use a hash with full avalanche; LevelDB's
//! 32-bit hash has no final mixing and gives some key shapes 5-15% false positives. XXH64 is
//! specified (`xxhash_spec.md` in the xxHash repository) and available in every language, so
//! a reimplementation of the format needs nothing of ours; `cpp_tests/xxh64_test.cc` checks
//! this one against Debian's `libxxhash`.

const P1: u64 = 0x9E37_79B1_85EB_CA87;
const P2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const P3: u64 = 0x1656_67B1_9E37_79F9;
const P4: u64 = 0x85EB_CA77_C2B2_AE63;
const P5: u64 = 0x27D4_EB2F_1656_67C5;

fn round(acc: u64, input: u64) -> u64 {
    acc.wrapping_add(input.wrapping_mul(P2))
        .rotate_left(31)
        .wrapping_mul(P1)
}

fn merge_round(acc: u64, value: u64) -> u64 {
    (acc ^ round(0, value)).wrapping_mul(P1).wrapping_add(P4)
}

fn read_u64(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"))
}

fn read_u32(bytes: &[u8]) -> u32 {
    u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes"))
}

/// XXH64 of `data` with `seed`, as the reference `XXH64(data, len, seed)` computes it.
///
/// ```
/// use leveldb_bloom::xxh64::xxh64;
///
/// // The empty input's hash, from the xxHash specification.
/// assert_eq!(xxh64(b"", 0), 0xEF46_DB37_51D8_E999);
/// ```
pub fn xxh64(data: &[u8], seed: u64) -> u64 {
    let mut rest = data;
    let mut h = if data.len() >= 32 {
        let mut v = [
            seed.wrapping_add(P1).wrapping_add(P2),
            seed.wrapping_add(P2),
            seed,
            seed.wrapping_sub(P1),
        ];
        let mut stripes = data.chunks_exact(32);
        for stripe in &mut stripes {
            for (lane, acc) in v.iter_mut().enumerate() {
                *acc = round(*acc, read_u64(&stripe[8 * lane..]));
            }
        }
        rest = stripes.remainder();
        let h = v[0]
            .rotate_left(1)
            .wrapping_add(v[1].rotate_left(7))
            .wrapping_add(v[2].rotate_left(12))
            .wrapping_add(v[3].rotate_left(18));
        v.iter().fold(h, |h, &lane| merge_round(h, lane))
    } else {
        seed.wrapping_add(P5)
    };
    h = h.wrapping_add(data.len() as u64);
    let mut words = rest.chunks_exact(8);
    for word in &mut words {
        h ^= round(0, read_u64(word));
        h = h.rotate_left(27).wrapping_mul(P1).wrapping_add(P4);
    }
    rest = words.remainder();
    if rest.len() >= 4 {
        h ^= u64::from(read_u32(rest)).wrapping_mul(P1);
        h = h.rotate_left(23).wrapping_mul(P2).wrapping_add(P3);
        rest = &rest[4..];
    }
    for &byte in rest {
        h ^= u64::from(byte).wrapping_mul(P5);
        h = h.rotate_left(11).wrapping_mul(P1);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(P2);
    h ^= h >> 29;
    h = h.wrapping_mul(P3);
    h ^ (h >> 32)
}
