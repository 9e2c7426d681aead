//! The query: a key's equations checked against the filter's windows, one key at a time or in
//! batches that read the filter's shape once.

use xxhash_rust::xxh3::xxh3_64;

use super::row::Row;
use super::shape::{Equation, Shape};

/// A ribbon filter's bytes as a query reads them: at least 8 (shorter filters, which no
/// builder writes, are read from a zero-padded copy of their payload), with the shape its
/// trailer gives.
struct Readable<'f> {
    bytes: &'f [u8],
    shape: Shape,
}

impl<'f> Readable<'f> {
    /// `None` when the filter has no main slot (every key may match) or is under 8 bytes.
    #[inline(always)]
    fn new(filter: &'f [u8]) -> Option<Readable<'f>> {
        let (shape, _) = Shape::read(filter)?;
        (shape.slots > 0 && filter.len() >= 8).then_some(Readable {
            bytes: filter,
            shape,
        })
    }

    /// Whether the key of `hash` may be in the filter, whose rows are `R`. Format rule: in
    /// every main column `j`, the parity of the bits `j * m + start + i` over the set bits `i`
    /// of the main coefficients is bit `j` of the main result; and, for a key the extra part
    /// holds, the parity of the bits `r * m + start + i` over its extra coefficients is its
    /// extra result.
    #[inline(always)]
    fn may_match<R: Row>(&self, hash: u64) -> bool {
        let key = self.shape.key::<R>(hash);
        macro_rules! for_each_r {
            ($($r:literal)*) => {
                match self.shape.result_bits {
                    $($r => self.parities(&key.main, $r),)*
                    r => self.parities(&key.main, r),
                }
            };
        }
        let main = for_each_r!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16) ^ key.main.result;
        let extra_window = R::window(self.bytes, self.shape.extra_base() + key.extra.start);
        let extra = (extra_window & key.extra.coefficients).parity() ^ key.extra.result;
        main | (extra & u32::from(key.selected)) == 0
    }

    /// The parities of the main equation's `columns` windows, column `j`'s in bit `j`, the
    /// last column first.
    #[inline(always)]
    fn parities<R: Row>(&self, equation: &Equation<R>, columns: u32) -> u32 {
        let mut bit = equation.start + u64::from(columns - 1) * self.shape.slots;
        let mut found = 0;
        for _ in 0..columns {
            found = found << 1 | (R::main_window(self.bytes, bit) & equation.coefficients).parity();
            bit = bit.wrapping_sub(self.shape.slots);
        }
        found
    }

    /// [`Readable::may_match`] with the filter's rows.
    #[inline(always)]
    fn may_match_either(&self, hash: u64) -> bool {
        if self.shape.wide {
            self.may_match::<u128>(hash)
        } else {
            self.may_match::<u64>(hash)
        }
    }
}

/// Whether the key of `hash` may be in `filter`, a whole ribbon filter (its last byte
/// [`MARKER`]). A filter with no main slot answers "may match".
#[inline(always)]
pub(super) fn may_match(hash: u64, filter: &[u8]) -> bool {
    if filter.len() < 8 {
        return short_may_match(hash, filter);
    }
    Readable::new(filter).is_none_or(|readable| readable.may_match_either(hash))
}

/// [`may_match`] for filters under 8 bytes (never built: the least payload is 64 bits).
#[cold]
#[inline(never)]
fn short_may_match(hash: u64, filter: &[u8]) -> bool {
    let Some((shape, payload)) = Shape::read(filter) else {
        return true;
    };
    if shape.slots == 0 {
        return true;
    }
    let mut padded = [0u8; 8];
    padded[..payload.len()].copy_from_slice(payload);
    // Under 8 bytes: the short form, narrow.
    Readable {
        bytes: &padded,
        shape,
    }
    .may_match::<u64>(hash)
}

/// Keys hashed this many at a time before their queries, so that the hashes and the
/// queries of neighbouring keys overlap.
const BATCH: usize = 8;

#[inline(always)]
pub(super) fn batch_may_match<'k>(
    keys: impl IntoIterator<Item = &'k [u8]>,
    filter: &[u8],
    results: &mut [bool],
) {
    let keys = keys.into_iter();
    let Some(readable) = Readable::new(filter) else {
        for (result, key) in results.iter_mut().zip(keys) {
            *result = may_match(xxh3_64(key), filter);
        }
        return;
    };
    if readable.shape.wide {
        readable_batch::<u128>(keys, &readable, results)
    } else {
        readable_batch::<u64>(keys, &readable, results)
    }
}

/// [`batch_may_match`] on a filter with at least one main slot, whose rows are `R`.
#[inline(always)]
fn readable_batch<'k, R: Row>(
    mut keys: impl Iterator<Item = &'k [u8]>,
    readable: &Readable,
    results: &mut [bool],
) {
    for chunk in results.chunks_mut(BATCH) {
        let mut hashes = [0u64; BATCH];
        let mut filled = 0;
        for (hash, key) in hashes[..chunk.len()].iter_mut().zip(&mut keys) {
            *hash = xxh3_64(key);
            filled += 1;
        }
        for (result, &hash) in chunk[..filled].iter_mut().zip(&hashes) {
            *result = readable.may_match::<R>(hash);
        }
        if filled < chunk.len() {
            return;
        }
    }
}
