//! What `inspect` and `upgrade` print of the reports: `inspect`'s table of the tables, and
//! `upgrade`'s one-line totals.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::TableReport;

fn percent(rate: Option<f64>) -> String {
    rate.map_or_else(|| "-".into(), |r| format!("{:.3}%", 100.0 * r))
}

fn row(r: &TableReport) -> String {
    format!(
        "{:<12} {:>5} {:>10} {:>9} {:>7}  {:<28} {:>8} {:>7} {:>7} {:>5}  {:>11} {:>8}  {:>9} {:>9}",
        r.file,
        r.level.map_or_else(|| "-".into(), |l| l.to_string()),
        r.entries,
        r.deletions,
        r.data_blocks,
        r.filter_policy.as_deref().unwrap_or("none"),
        r.filters,
        r.bloom_filters,
        r.compact_filters,
        r.other_filters,
        r.filter_bytes,
        r.bits_per_key
            .map_or_else(|| "-".into(), |b| format!("{b:.2}")),
        percent(r.expected_fp),
        percent(r.measured_fp),
    )
}

/// The readable table `inspect` prints: one row per table, the total, warnings, and the
/// files left out.
pub fn render(tables: &[TableReport], total: &TableReport, not_live: &[PathBuf]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<12} {:>5} {:>10} {:>9} {:>7}  {:<28} {:>8} {:>7} {:>7} {:>5}  {:>11} {:>8}  {:>9} {:>9}",
        "table",
        "level",
        "entries",
        "deletions",
        "blocks",
        "filter policy",
        "filters",
        "bloom",
        "compact",
        "other",
        "filter bytes",
        "bits/key",
        "expect fp",
        "measured"
    );
    for r in tables {
        let _ = writeln!(out, "{}", row(r));
    }
    let _ = writeln!(out, "{}", row(total));
    // The total's warning only adds something when there are several tables.
    let total_if_several = (tables.len() > 1).then_some(total);
    for r in tables.iter().chain(total_if_several) {
        if r.fp_well_above_expected() {
            let _ = writeln!(
                out,
                "warning: {}: {} false positives on neighbours of its keys, {:.1} times the {} \
                 its filters' layout predicts (keys that differ only in their last bytes \
                 defeat LevelDB's Bloom hash); compact filters of the same size: about {}",
                r.file,
                percent(r.measured_fp),
                r.measured_fp.unwrap_or(0.0) / r.expected_fp.unwrap_or(1.0),
                percent(r.expected_fp),
                percent(r.compact_fp_same_size),
            );
        }
    }
    for r in tables {
        for p in &r.problems {
            let _ = writeln!(
                out,
                "problem: {}: offset {}: {} ({})",
                r.file, p.offset, p.what, p.count
            );
        }
        for w in &r.warnings {
            let _ = writeln!(out, "warning: {}: offset {}: {}", r.file, w.offset, w.what);
        }
    }
    for path in not_live {
        let _ = writeln!(
            out,
            "not part of the current version (not counted): {}",
            crate::files::shown(path)
        );
    }
    out
}

/// The one-line totals `upgrade` prints before and after.
pub fn summary(label: &str, t: &TableReport) -> String {
    format!(
        "{label}: {} entries, {} filters ({} bloom, {} compact, {} other), {} filter bytes, \
         {} bits/key, expected fp {}, measured fp {}\n",
        t.entries,
        t.filters,
        t.bloom_filters,
        t.compact_filters,
        t.other_filters,
        t.filter_bytes,
        t.bits_per_key
            .map_or_else(|| "-".into(), |b| format!("{b:.2}")),
        percent(t.expected_fp),
        percent(t.measured_fp),
    )
}
