//! Filters of the compact format's first version, stored with the answers the version that
//! built them gave (`tests/vectors/compact_v1.txt`): a newer reader must answer them alike,
//! damaged ones included, since tables written before hold them.

use leveldb_bloom::compact::key_may_match;
use leveldb_bloom::{CompactPolicy, FilterFormat};

struct Record {
    bits_per_key: String,
    keys: usize,
    filter: Vec<u8>,
    absent_answers: Vec<bool>,
    present_answers: Option<Vec<bool>>,
}

fn records() -> Vec<Record> {
    let text = include_str!("vectors/compact_v1.txt");
    let answers = |field: &str| field.bytes().map(|b| b == b'1').collect::<Vec<bool>>();
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            assert!(fields.len() == 4 || fields.len() == 5, "{line}");
            let hex = fields[2];
            Record {
                bits_per_key: fields[0].to_string(),
                keys: fields[1].parse().unwrap(),
                filter: (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                    .collect(),
                absent_answers: answers(fields[3]),
                present_answers: fields.get(4).map(|field| answers(field)),
            }
        })
        .collect()
}

#[test]
fn first_version_filters_are_answered_as_they_were() {
    let records = records();
    assert_eq!(records.len(), 112);
    let policy = CompactPolicy::new(10.0).unwrap();
    for record in &records {
        let keys: Vec<String> = (0..record.keys)
            .map(|i| format!("key-{}-{}-{i}", record.bits_per_key, record.keys))
            .collect();
        let expected_present = record
            .present_answers
            .clone()
            .unwrap_or_else(|| vec![true; keys.len()]);
        for (key, &expected) in keys.iter().zip(&expected_present) {
            assert_eq!(
                key_may_match(key.as_bytes(), &record.filter),
                expected,
                "{key}"
            );
            assert_eq!(
                policy.key_may_match(key.as_bytes(), &record.filter),
                expected
            );
        }
        assert_eq!(record.absent_answers.len(), 400);
        for (j, &expected) in record.absent_answers.iter().enumerate() {
            let key = format!("absent-{j}");
            assert_eq!(
                key_may_match(key.as_bytes(), &record.filter),
                expected,
                "{key} in the {}-bit {}-key filter",
                record.bits_per_key,
                record.keys
            );
        }
    }
}
