//! The query: a key's equations checked against the filter's windows, one key at a time or in
//! batches that read the filter's shape once.

use xxhash_rust::xxh3::xxh3_64;

use super::columns::{Columns, columns_hold};
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

    /// Whether the key of `hash` may be in the filter, whose rows are `R`, its main columns
    /// checked by `hold`. Format rule: in every main column `j`, the parity of the bits
    /// `j * m + start + i` over the set bits `i` of the main coefficients is bit `j` of the
    /// main result; and, for a key the extra part holds, the parity of the bits
    /// `r * m + start + i` over its extra coefficients is its extra result.
    #[inline(always)]
    fn may_match<R: Row>(&self, hash: u64, hold: impl FnOnce(&Equation<R>) -> bool) -> bool {
        let shape = &self.shape;
        let main = shape.main_equation::<R>(hash);
        if !hold(&main.equation) {
            return false;
        }
        // Checked for every key and taken only for the keys it holds: cheaper than a branch
        // on `selected`, which a present key's query cannot predict.
        let extra = shape.extra_equation::<R>(&main);
        let window = R::window(self.bytes, shape.extra_base() + extra.start);
        let extra_holds = (window & extra.coefficients).parity() == extra.result;
        !main.selected | extra_holds
    }

    /// [`Readable::may_match`] with the filter's rows, a narrow filter's columns checked by
    /// `columns`.
    #[inline(always)]
    fn may_match_either<C: Columns>(&self, hash: u64, columns: C) -> bool {
        if self.shape.wide {
            self.may_match::<u128>(hash, |equation| {
                columns_hold(self.bytes, &self.shape, equation)
            })
        } else {
            self.may_match::<u64>(hash, |equation| {
                columns.hold(self.bytes, &self.shape, equation)
            })
        }
    }
}

/// Whether the key of `hash` may be in `filter`, a whole ribbon filter (its last byte
/// [`MARKER`]), a narrow filter's columns checked by `columns`. A filter with no main slot
/// answers "may match".
#[inline(always)]
pub(super) fn may_match<C: Columns>(hash: u64, filter: &[u8], columns: C) -> bool {
    if filter.len() < 8 {
        return short_may_match(hash, filter);
    }
    Readable::new(filter).is_none_or(|readable| readable.may_match_either(hash, columns))
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
    let readable = Readable {
        bytes: &padded,
        shape,
    };
    readable.may_match::<u64>(hash, |equation| columns_hold(&padded, &shape, equation))
}

/// Keys hashed this many at a time before their queries, so that the hashes and the
/// queries of neighbouring keys overlap.
const BATCH: usize = 8;

/// Answers `keys` against `filter` into `results` (pairs in order, as many as the shorter
/// has), a narrow filter's columns checked by `columns`: the filter's shape is read once.
#[inline(always)]
pub(super) fn batch_may_match<'k, C: Columns>(
    keys: impl IntoIterator<Item = &'k [u8]>,
    filter: &[u8],
    results: &mut [bool],
    columns: C,
) {
    let mut keys = keys.into_iter();
    let Some(readable) = Readable::new(filter) else {
        for (result, key) in results.iter_mut().zip(keys) {
            *result = may_match(xxh3_64(key), filter, columns);
        }
        return;
    };
    for chunk in results.chunks_mut(BATCH) {
        let mut hashes = [0u64; BATCH];
        let mut filled = 0;
        for (hash, key) in hashes[..chunk.len()].iter_mut().zip(&mut keys) {
            *hash = xxh3_64(key);
            filled += 1;
        }
        for (result, &hash) in chunk[..filled].iter_mut().zip(&hashes) {
            *result = readable.may_match_either(hash, columns);
        }
        if filled < chunk.len() {
            return;
        }
    }
}
