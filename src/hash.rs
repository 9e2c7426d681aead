//! LevelDB's key hash (`util/hash.cc`): a variant of MurmurHash1.

/// The seed LevelDB's Bloom filter hashes every key with.
pub(crate) const BLOOM_HASH_SEED: u32 = 0xbc9f_1d34;

/// The hash's multiplier.
pub(crate) const M: u32 = 0xc6a4_a793;
const R: u32 = 24;

/// Hashes `data` exactly as LevelDB 1.18 and later do.
///
/// Format rule: `h = seed ^ (len * m)`; each whole 4-byte group, read little-endian, is added,
/// multiplied by `m` and folded with `h >> 16`; 1 to 3 tail bytes are added as **unsigned**
/// bytes (byte 2 << 16, byte 1 << 8, byte 0), then `h *= m; h ^= h >> 24`. All arithmetic
/// wraps at 32 bits, including the length, which is taken modulo 2^32.
pub(crate) fn hash(data: &[u8], seed: u32) -> u32 {
    // Truncating the length first gives the same low 32 bits as LevelDB's size_t product.
    let mut h = seed ^ (data.len() as u32).wrapping_mul(M);
    // Two words a turn of the loop: the loop's own instructions, paid per turn, halve.
    let mut pairs = data.chunks_exact(8);
    for pair in &mut pairs {
        h = mix(mix(h, word(&pair[..4])), word(&pair[4..]));
    }
    let mut words = pairs.remainder().chunks_exact(4);
    if let Some(last) = words.next() {
        h = mix(h, word(last));
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        let mut w = 0u32;
        for (i, &byte) in tail.iter().enumerate() {
            w |= u32::from(byte) << (8 * i);
        }
        h = h.wrapping_add(w).wrapping_mul(M);
        h ^= h >> R;
    }
    h
}

/// One whole 4-byte group `w` into `h`.
#[inline(always)]
fn mix(h: u32, w: u32) -> u32 {
    let h = h.wrapping_add(w).wrapping_mul(M);
    h ^ (h >> 16)
}

/// The little-endian word in the first 4 bytes of `bytes`.
#[inline(always)]
fn word(bytes: &[u8]) -> u32 {
    u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

/// The hash LevelDB's Bloom filter uses for a key: [`hash`] with [`BLOOM_HASH_SEED`].
pub(crate) fn bloom_hash(key: &[u8]) -> u32 {
    hash(key, BLOOM_HASH_SEED)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Vectors from LevelDB's own util/hash_test.cc (SignedUnsignedIssue).
    #[test]
    fn leveldb_hash_test_vectors() {
        assert_eq!(hash(&[], 0xbc9f1d34), 0xbc9f1d34);
        assert_eq!(hash(&[0x62], 0xbc9f1d34), 0xef1345c4);
        assert_eq!(hash(&[0xc3, 0x97], 0xbc9f1d34), 0x5b663814);
        assert_eq!(hash(&[0xe2, 0x99, 0xa5], 0xbc9f1d34), 0x323c078f);
        assert_eq!(hash(&[0xe1, 0x80, 0xb9, 0x32], 0xbc9f1d34), 0xed21633a);
        let data5: [u8; 48] = [
            0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
            0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, //
            0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00, //
            0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        ];
        assert_eq!(hash(&data5, 0x12345678), 0xf333dabb);
    }
}
