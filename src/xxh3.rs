//! XXH3-64 (xxHash's `XXH3_64bits`, no seed), the key hash of the compact filter format.
//!
//! The compact format is ours, so it is free to use a hash with full avalanche; LevelDB's
//! 32-bit hash has no final mixing and gives some key shapes 5-15% false positives. XXH3 is
//! specified (`doc/xxhash_spec.md` in the xxHash repository, "XXH3 algorithm description"),
//! available in every language, and for the key lengths of a database (up to a few dozen
//! bytes) costs one or two 128-bit multiplications. `tests/xxh3_oracle.rs` checks this one
//! against Debian's `libxxhash` at every length class.

const P32_1: u64 = 0x9E37_79B1;
const P32_2: u64 = 0x85EB_CA77;
const P32_3: u64 = 0xC2B2_AE3D;
const P64_1: u64 = 0x9E37_79B1_85EB_CA87;
const P64_2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const P64_3: u64 = 0x1656_67B1_9E37_79F9;
const P64_4: u64 = 0x85EB_CA77_C2B2_AE63;
const P64_5: u64 = 0x27D4_EB2F_1656_67C5;

/// The default secret (the specification's `kSecret`).
const SECRET: [u8; 192] = [
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
];

/// Inputs up to this many bytes take the short paths; longer ones the striped loop.
const MIDSIZE_MAX: usize = 240;
const STRIPE: usize = 64;
/// Stripes per block: one per 8 secret bytes past the first stripe's 64.
const STRIPES_PER_BLOCK: usize = (SECRET.len() - STRIPE) / 8;

/// XXH3-64 of `data` with seed 0 (`XXH3_64bits(data, len)`).
///
/// ```
/// use leveldb_bloom::xxh3::xxh3_64;
///
/// // The empty input's hash, from xxHash's self-test values.
/// assert_eq!(xxh3_64(b""), 0x2D06_8005_38D3_94C2);
/// ```
#[inline(always)]
pub fn xxh3_64(data: &[u8]) -> u64 {
    // Inlined up to 128 bytes, where a call would be a noticeable part of the hash.
    match data.len() {
        0 => xxh64_avalanche(read64(&SECRET[56..]) ^ read64(&SECRET[64..])),
        1..=3 => len_1to3(data),
        4..=8 => len_4to8(data),
        9..=16 => len_9to16(data),
        17..=128 => len_17to128(data),
        _ => over_128(data),
    }
}

#[inline(never)]
fn over_128(data: &[u8]) -> u64 {
    if data.len() <= MIDSIZE_MAX {
        len_129to240(data)
    } else {
        long(data)
    }
}

fn read64(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"))
}

fn read32(bytes: &[u8]) -> u64 {
    u64::from(u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")))
}

/// The low and high halves of the 128-bit product, XORed.
fn mul128_fold64(a: u64, b: u64) -> u64 {
    let product = u128::from(a) * u128::from(b);
    (product as u64) ^ ((product >> 64) as u64)
}

/// XXH64's finaliser, which XXH3 keeps for inputs of 0 to 3 bytes.
fn xxh64_avalanche(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(P64_2);
    h ^= h >> 29;
    h = h.wrapping_mul(P64_3);
    h ^ (h >> 32)
}

fn avalanche(mut h: u64) -> u64 {
    h ^= h >> 37;
    h = h.wrapping_mul(0x1656_6791_9E37_79F9);
    h ^ (h >> 32)
}

fn len_1to3(data: &[u8]) -> u64 {
    let len = data.len();
    let combined = u64::from(data[0]) << 16
        | u64::from(data[len >> 1]) << 24
        | u64::from(data[len - 1])
        | (len as u64) << 8;
    xxh64_avalanche(combined ^ read32(&SECRET) ^ read32(&SECRET[4..]))
}

fn len_4to8(data: &[u8]) -> u64 {
    let len = data.len();
    let input = read32(&data[len - 4..]) | read32(data) << 32;
    let mut h = read64(&SECRET[8..]) ^ read64(&SECRET[16..]) ^ input;
    // rrmxmx: the 4-8 byte path's own finaliser instead of `avalanche`.
    h ^= h.rotate_left(49) ^ h.rotate_left(24);
    h = h.wrapping_mul(0x9FB2_1C65_1E98_DF25);
    h ^= (h >> 35).wrapping_add(len as u64);
    h = h.wrapping_mul(0x9FB2_1C65_1E98_DF25);
    h ^ (h >> 28)
}

fn len_9to16(data: &[u8]) -> u64 {
    let len = data.len();
    let low = read64(&SECRET[24..]) ^ read64(&SECRET[32..]) ^ read64(data);
    let high = read64(&SECRET[40..]) ^ read64(&SECRET[48..]) ^ read64(&data[len - 8..]);
    let h = (len as u64)
        .wrapping_add(low.swap_bytes())
        .wrapping_add(high)
        .wrapping_add(mul128_fold64(low, high));
    avalanche(h)
}

/// 16 input bytes against 16 secret bytes.
fn mix16(input: &[u8], secret: &[u8]) -> u64 {
    mul128_fold64(
        read64(input) ^ read64(secret),
        read64(&input[8..]) ^ read64(&secret[8..]),
    )
}

fn len_17to128(data: &[u8]) -> u64 {
    let len = data.len();
    let mut h = (len as u64).wrapping_mul(P64_1);
    // Pairs of 16-byte blocks from both ends, innermost pair first.
    for i in (0..=(len - 1) / 32).rev() {
        h = h
            .wrapping_add(mix16(&data[16 * i..], &SECRET[32 * i..]))
            .wrapping_add(mix16(&data[len - 16 * (i + 1)..], &SECRET[32 * i + 16..]));
    }
    avalanche(h)
}

fn len_129to240(data: &[u8]) -> u64 {
    let len = data.len();
    let mut h = (len as u64).wrapping_mul(P64_1);
    for i in 0..8 {
        h = h.wrapping_add(mix16(&data[16 * i..], &SECRET[16 * i..]));
    }
    h = avalanche(h);
    for i in 8..len / 16 {
        h = h.wrapping_add(mix16(&data[16 * i..], &SECRET[16 * (i - 8) + 3..]));
    }
    // The last 16 bytes, against the secret's bytes 119..135.
    h = h.wrapping_add(mix16(&data[len - 16..], &SECRET[136 - 17..]));
    avalanche(h)
}

/// One 64-byte stripe into the eight accumulators (each input word also goes to its
/// neighbouring lane).
fn accumulate(acc: &mut [u64; 8], stripe: &[u8], secret: &[u8]) {
    for i in 0..8 {
        let input = read64(&stripe[8 * i..]);
        let keyed = input ^ read64(&secret[8 * i..]);
        acc[i ^ 1] = acc[i ^ 1].wrapping_add(input);
        acc[i] = acc[i].wrapping_add((keyed & 0xFFFF_FFFF).wrapping_mul(keyed >> 32));
    }
}

fn scramble(acc: &mut [u64; 8], secret: &[u8]) {
    for (i, lane) in acc.iter_mut().enumerate() {
        *lane = ((*lane ^ (*lane >> 47)) ^ read64(&secret[8 * i..])).wrapping_mul(P32_1);
    }
}

/// Inputs over 240 bytes: whole blocks of 16 stripes, the accumulators scrambled after each
/// (a block ending exactly at the input's end counts as partial), then the remaining whole
/// stripes, always the input's last 64 bytes as one more stripe, and the merge.
fn long(data: &[u8]) -> u64 {
    let mut acc = [P32_3, P64_1, P64_2, P64_3, P64_4, P32_2, P64_5, P32_1];
    let block_len = STRIPE * STRIPES_PER_BLOCK;
    let blocks = (data.len() - 1) / block_len;
    for block in data.chunks_exact(block_len).take(blocks) {
        for (n, stripe) in block.chunks_exact(STRIPE).enumerate() {
            accumulate(&mut acc, stripe, &SECRET[8 * n..]);
        }
        scramble(&mut acc, &SECRET[SECRET.len() - STRIPE..]);
    }
    let rest = &data[blocks * block_len..];
    for (n, stripe) in rest[..rest.len() - 1].chunks_exact(STRIPE).enumerate() {
        accumulate(&mut acc, stripe, &SECRET[8 * n..]);
    }
    // Secret offset 7 off the scrambler's, so the two never coincide.
    let last = &data[data.len() - STRIPE..];
    accumulate(&mut acc, last, &SECRET[SECRET.len() - STRIPE - 7..]);
    let mut h = (data.len() as u64).wrapping_mul(P64_1);
    for i in 0..4 {
        let secret = &SECRET[11 + 16 * i..];
        h = h.wrapping_add(mul128_fold64(
            acc[2 * i] ^ read64(secret),
            acc[2 * i + 1] ^ read64(&secret[8..]),
        ));
    }
    avalanche(h)
}
