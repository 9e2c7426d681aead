//! `--format` on the command line: the library's filter formats by their names.

use leveldb_bloom::Format;

/// `--format`: the library's formats by their names, each with its help line.
pub fn format_parser() -> impl clap::builder::TypedValueParser<Value = Format> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let help = |format| match format {
        Format::Bloom => "LevelDB's own Bloom filters (leveldb.BuiltinBloomFilter2)",
        Format::Compact => {
            "leveldb-bloom's compact filters (read by stock LevelDB as \"may match\")"
        }
    };
    PossibleValuesParser::new(
        Format::ALL.map(|format| PossibleValue::new(format.name()).help(help(format))),
    )
    .map(|name| Format::from_name(&name).expect("one of the possible values"))
}
