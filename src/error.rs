//! The errors of the Rust API.

use std::fmt;

/// Why an operation was refused. Nothing is changed when an error is returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// `bits_per_key` was negative (undefined behaviour in LevelDB).
    NegativeBitsPerKey(i32),
    /// A size does not fit in memory addresses, or a filter block would pass 4 GiB (the
    /// 32-bit offsets its format stores).
    TooLarge,
    /// The allocator could not provide the buffer.
    OutOfMemory,
    /// The caller's buffer is shorter than the filter.
    BufferTooSmall {
        /// The length the filter needs.
        needed: usize,
    },
    /// `start_block` was given an offset in a 2 KiB window before one already started.
    OffsetBackwards {
        /// The offset passed to `start_block`.
        block_offset: u64,
        /// How many filters the block already holds (the first window still open).
        filters: usize,
    },
    /// The filter block builder was finished; it takes no more blocks or keys.
    AlreadyFinished,
    /// A bits per key the format does not take: a compact policy's negative, not finite, or
    /// above [`MAX_BITS_PER_KEY`](crate::compact::MAX_BITS_PER_KEY); a Bloom setting
    /// ([`Format::policy`](crate::Format::policy)) not a whole number from 0 to
    /// [`Format::MAX_BLOOM_SETTING`](crate::Format::MAX_BLOOM_SETTING).
    InvalidBitsPerKey,
    /// A target false-positive rate was not in `(0, 1)` or is out of the format's reach.
    InvalidFalsePositiveRate,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NegativeBitsPerKey(bpk) => write!(f, "bits_per_key must be >= 0, got {bpk}"),
            Error::TooLarge => f.write_str("size overflows what the filter format can hold"),
            Error::OutOfMemory => f.write_str("out of memory"),
            Error::BufferTooSmall { needed } => {
                write!(f, "buffer too small: {needed} bytes needed")
            }
            Error::OffsetBackwards {
                block_offset,
                filters,
            } => write!(
                f,
                "block offset {block_offset} falls before filter window {filters} already started"
            ),
            Error::AlreadyFinished => f.write_str("filter block builder already finished"),
            Error::InvalidBitsPerKey => f.write_str("bits_per_key is not one the format takes"),
            Error::InvalidFalsePositiveRate => {
                f.write_str("false-positive rate must be in (0, 1) and reachable")
            }
        }
    }
}

impl std::error::Error for Error {}
