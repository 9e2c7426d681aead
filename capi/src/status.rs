//! Status codes returned by the C API, and what each means.

use std::ffi::{CStr, c_int};

use leveldb_bloom::Error;

/// What an `int`-returning function of the C API reports. `LEVELDB_BLOOM_OK` (0) is success;
/// every other value is an error, and the call changed nothing unless its documentation
/// says otherwise. `leveldb_bloom_status_message` describes each value.
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub enum leveldb_bloom_status {
    /// Success.
    LEVELDB_BLOOM_OK = 0,
    /// A pointer argument that must point to something was NULL.
    LEVELDB_BLOOM_ERR_NULL_ARGUMENT = 1,
    /// An argument is out of range: a negative count, a misaligned pointer, or a length no
    /// object can have.
    LEVELDB_BLOOM_ERR_INVALID_ARGUMENT = 2,
    /// The output buffer is too small; the length it needs was stored.
    LEVELDB_BLOOM_ERR_BUFFER_TOO_SMALL = 3,
    /// `start_block` was given an offset in a 2 KiB window before one already started.
    LEVELDB_BLOOM_ERR_OFFSET_BACKWARDS = 4,
    /// The filter block builder was finished and takes no more blocks or keys.
    LEVELDB_BLOOM_ERR_ALREADY_FINISHED = 5,
    /// A bug inside the library was caught at the boundary; the object involved should not
    /// be used again, except to destroy it.
    LEVELDB_BLOOM_ERR_PANIC = 6,
    /// A size overflows what memory or the filter format can hold.
    LEVELDB_BLOOM_ERR_TOO_LARGE = 7,
    /// Memory could not be allocated.
    LEVELDB_BLOOM_ERR_OUT_OF_MEMORY = 8,
    /// The policy does not count: statistics are kept only by the policies
    /// `leveldb_bloom_policy_counted` makes.
    LEVELDB_BLOOM_ERR_NOT_COUNTED = 9,
}

use leveldb_bloom_status::*;

impl leveldb_bloom_status {
    /// Every status, for the message table and its test.
    pub(crate) const ALL: [leveldb_bloom_status; 10] = [
        LEVELDB_BLOOM_OK,
        LEVELDB_BLOOM_ERR_NULL_ARGUMENT,
        LEVELDB_BLOOM_ERR_INVALID_ARGUMENT,
        LEVELDB_BLOOM_ERR_BUFFER_TOO_SMALL,
        LEVELDB_BLOOM_ERR_OFFSET_BACKWARDS,
        LEVELDB_BLOOM_ERR_ALREADY_FINISHED,
        LEVELDB_BLOOM_ERR_PANIC,
        LEVELDB_BLOOM_ERR_TOO_LARGE,
        LEVELDB_BLOOM_ERR_OUT_OF_MEMORY,
        LEVELDB_BLOOM_ERR_NOT_COUNTED,
    ];

    /// A static, NUL-terminated description.
    pub(crate) fn message(self) -> &'static CStr {
        match self {
            LEVELDB_BLOOM_OK => c"ok",
            LEVELDB_BLOOM_ERR_NULL_ARGUMENT => c"a required pointer argument was NULL",
            LEVELDB_BLOOM_ERR_INVALID_ARGUMENT => c"an argument is out of range",
            LEVELDB_BLOOM_ERR_BUFFER_TOO_SMALL => c"the output buffer is too small",
            LEVELDB_BLOOM_ERR_OFFSET_BACKWARDS => {
                c"block offset falls before a filter window already started"
            }
            LEVELDB_BLOOM_ERR_ALREADY_FINISHED => c"the filter block builder is already finished",
            LEVELDB_BLOOM_ERR_PANIC => c"internal error (a panic was caught)",
            LEVELDB_BLOOM_ERR_TOO_LARGE => c"size overflows what the filter format can hold",
            LEVELDB_BLOOM_ERR_OUT_OF_MEMORY => c"out of memory",
            LEVELDB_BLOOM_ERR_NOT_COUNTED => c"the policy does not count statistics",
        }
    }
}

impl TryFrom<c_int> for leveldb_bloom_status {
    type Error = c_int;

    /// The status with this code, or the code back if it is not one.
    fn try_from(code: c_int) -> Result<Self, c_int> {
        Self::ALL
            .into_iter()
            .find(|s| *s as c_int == code)
            .ok_or(code)
    }
}

impl From<Error> for leveldb_bloom_status {
    fn from(error: Error) -> Self {
        match error {
            Error::NegativeBitsPerKey(_)
            | Error::InvalidBitsPerKey
            | Error::InvalidFalsePositiveRate => LEVELDB_BLOOM_ERR_INVALID_ARGUMENT,
            Error::TooLarge => LEVELDB_BLOOM_ERR_TOO_LARGE,
            Error::OutOfMemory => LEVELDB_BLOOM_ERR_OUT_OF_MEMORY,
            Error::BufferTooSmall { .. } => LEVELDB_BLOOM_ERR_BUFFER_TOO_SMALL,
            Error::OffsetBackwards { .. } => LEVELDB_BLOOM_ERR_OFFSET_BACKWARDS,
            Error::AlreadyFinished => LEVELDB_BLOOM_ERR_ALREADY_FINISHED,
            // `Error` is non-exhaustive: a refusal the Rust library adds later is an invalid
            // argument here until it gets a code of its own.
            _ => LEVELDB_BLOOM_ERR_INVALID_ARGUMENT,
        }
    }
}
