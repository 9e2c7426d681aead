//! Which filter format the drop-in builds, chosen from the environment once per process:
//!
//! - `LEVELDB_BLOOM_FORMAT`: `bloom` (the default: LevelDB's own filters, bit for bit) or
//!   `compact` (leveldb-bloom's compact filters, under the same policy name);
//! - `LEVELDB_BLOOM_BITS_PER_KEY`: replaces the bits per key the program asked for, as
//!   `Format::policy` takes a setting: a whole number from 0 to 1000 for `bloom`, a number
//!   from 0 to 32 for `compact`.
//!
//! Unset or empty means the default. A value that is not one of these gets one line on
//! standard error and the default for that variable: never an abort, and never a filter
//! that a reader would answer wrongly. Either format's policy answers both formats' filters.

use std::ffi::OsString;
use std::sync::OnceLock;

use leveldb_bloom::Format;

/// What the environment asked for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Choice {
    pub(crate) format: Format,
    /// Bits per key that replace the program's, already valid for `format`.
    pub(crate) bits_per_key: Option<f64>,
}

/// The process's choice, read from the environment at the first call; the lines about
/// invalid values are written then, once.
pub(crate) fn choice() -> Choice {
    static CHOICE: OnceLock<Choice> = OnceLock::new();
    *CHOICE.get_or_init(|| {
        let (choice, complaints) = parse(
            std::env::var_os("LEVELDB_BLOOM_FORMAT"),
            std::env::var_os("LEVELDB_BLOOM_BITS_PER_KEY"),
        );
        for complaint in complaints {
            crate::stats::warn(&complaint);
        }
        choice
    })
}

/// The choice the two variables' values make, and a line for each value that is ignored.
pub(crate) fn parse(format: Option<OsString>, bits: Option<OsString>) -> (Choice, Vec<String>) {
    let mut complaints = Vec::new();
    let chosen = match format.as_ref().map(|v| v.to_str()) {
        None | Some(Some("")) => Some(Format::Bloom),
        Some(name) => name.and_then(Format::from_name),
    };
    let format = chosen.unwrap_or_else(|| {
        complaints.push(format!(
            "LEVELDB_BLOOM_FORMAT={:?} is not bloom or compact; building bloom filters",
            format.unwrap_or_default()
        ));
        Format::Bloom
    });
    let bits_per_key = match bits.as_ref().map(|v| v.to_str()) {
        None | Some(Some("")) => None,
        Some(value) => {
            let parsed = value.and_then(|v| bits_per_key(format, v));
            if parsed.is_none() {
                complaints.push(format!(
                    "LEVELDB_BLOOM_BITS_PER_KEY={:?} is not {} for {} filters; using the \
                     program's bits per key",
                    bits.unwrap_or_default(),
                    format.settings(),
                    format.name()
                ));
            }
            parsed
        }
    };
    (
        Choice {
            format,
            bits_per_key,
        },
        complaints,
    )
}

/// `value` as bits per key for `format`, if the format takes it as a setting
/// (`Format::policy`; -0 is 0).
fn bits_per_key(format: Format, value: &str) -> Option<f64> {
    let bits: f64 = value.trim().parse().ok()?;
    format.policy(bits).ok().map(|_| bits + 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(format: Option<&str>, bits: Option<&str>) -> (Choice, Vec<String>) {
        parse(format.map(OsString::from), bits.map(OsString::from))
    }

    fn chosen(format: Format, bits_per_key: Option<f64>) -> Choice {
        Choice {
            format,
            bits_per_key,
        }
    }

    #[test]
    fn unset_or_empty_is_bloom_at_the_program_s_bits() {
        for (format, bits) in [(None, None), (Some(""), Some("")), (Some("bloom"), None)] {
            assert_eq!(env(format, bits), (chosen(Format::Bloom, None), vec![]));
        }
    }

    #[test]
    fn valid_values_are_taken() {
        assert_eq!(env(Some("compact"), None).0, chosen(Format::Compact, None));
        assert_eq!(
            env(Some("compact"), Some("7.5")).0,
            chosen(Format::Compact, Some(7.5))
        );
        assert_eq!(
            env(Some("bloom"), Some("16")).0,
            chosen(Format::Bloom, Some(16.0))
        );
        assert_eq!(env(None, Some(" 0 ")).0, chosen(Format::Bloom, Some(0.0)));
    }

    #[test]
    fn each_invalid_value_is_one_line_and_the_default() {
        let (choice, complaints) = env(Some("Compact"), Some("ten"));
        assert_eq!(choice, chosen(Format::Bloom, None));
        assert_eq!(complaints.len(), 2, "{complaints:?}");
        assert!(complaints[0].contains("LEVELDB_BLOOM_FORMAT=\"Compact\""));
        assert!(complaints[1].contains("LEVELDB_BLOOM_BITS_PER_KEY=\"ten\""));

        // Fractional bits are for compact filters only; out-of-range values for neither.
        for (format, bits) in [
            ("bloom", "10.5"),
            ("bloom", "-1"),
            ("bloom", "1001"),
            ("bloom", "2147483647"),
            ("compact", "33"),
            ("compact", "-0.5"),
            ("compact", "NaN"),
        ] {
            let (choice, complaints) = env(Some(format), Some(bits));
            assert_eq!(choice.bits_per_key, None, "{format} {bits}");
            assert_eq!(complaints.len(), 1, "{format} {bits}: {complaints:?}");
        }
    }

    #[test]
    fn a_value_that_is_not_unicode_is_invalid() {
        use std::os::unix::ffi::OsStringExt;
        let (choice, complaints) = parse(Some(OsString::from_vec(vec![0xff])), None);
        assert_eq!(choice, chosen(Format::Bloom, None));
        assert_eq!(complaints.len(), 1);
    }

    /// What `leveldb-bloom run --bits-per-key` refuses is what the drop-in would ignore: both
    /// ask `Format::policy`, and a value written as Rust writes it reads back bit for bit.
    #[test]
    fn the_drop_in_takes_what_format_policy_takes() {
        let values = [
            -0.0,
            0.0,
            5e-324,
            0.5,
            7.25,
            10.0,
            32.0,
            32.0f64.next_up(),
            999.0,
            1000.0,
            1000.0f64.next_up(),
            1001.0,
            1e300,
            f64::MAX,
            -1.0,
            f64::NAN,
            f64::INFINITY,
        ];
        for format in Format::ALL {
            for bits in values {
                let written = bits.to_string();
                let (choice, _) = env(Some(format.name()), Some(&written));
                assert_eq!(
                    choice.bits_per_key.is_some(),
                    format.policy(bits).is_ok(),
                    "{format:?} {written}"
                );
                if let Some(taken) = choice.bits_per_key {
                    assert_eq!(taken.to_bits(), (bits + 0.0).to_bits(), "{written}");
                }
            }
        }
    }

    /// Any spelling of a whole number is that number for Bloom filters; no spelling of
    /// something else is.
    #[test]
    fn spellings_of_a_whole_number_are_that_number() {
        for (written, bits) in [
            ("10.0", 10.0),
            ("1e1", 10.0),
            ("+5", 5.0),
            ("-0", 0.0),
            ("1e3", 1000.0),
            (" 16\t", 16.0),
        ] {
            let (choice, complaints) = env(Some("bloom"), Some(written));
            assert_eq!(
                choice.bits_per_key.map(f64::to_bits),
                Some(f64::to_bits(bits)),
                "{written:?}"
            );
            assert!(complaints.is_empty(), "{written:?}");
        }
        for written in [
            "inf", "-inf", "infinity", "NaN", "1e400", "1e-1", "0x10", "1_0",
        ] {
            let (choice, complaints) = env(Some("bloom"), Some(written));
            assert_eq!(choice.bits_per_key, None, "{written:?}");
            assert_eq!(complaints.len(), 1, "{written:?}");
        }
    }
}
