//! What `run` says on standard error: the summary at exit (as text, or JSON), in `--stats`'s
//! file too, and its own lines on the way.

use std::fmt::Write as _;
use std::path::Path;

use super::summary::Summary;
use crate::files::shown;

/// The summary on standard error (as text, or JSON with `--json`), and as JSON in `--stats`'s
/// file: also for a program that could not be run, so that a script always finds one.
pub(super) fn report(summary: &Summary, name: &str, stats: Option<&Path>, as_json: bool) {
    let json = || serde_json::to_string_pretty(summary).map(|j| j + "\n");
    if let Some(file) = stats
        && let Err(e) = json()
            .map_err(std::io::Error::other)
            .and_then(|text| std::fs::write(file, text))
    {
        say(&format!("{}: the summary not written: {e}", shown(file)));
    }
    let text = if as_json {
        json().unwrap_or_default()
    } else {
        said(summary, name)
    };
    // The summary is a courtesy: a standard error that cannot be written changes nothing.
    let _ = std::io::Write::write_all(&mut std::io::stderr(), text.as_bytes());
}

/// A line on standard error, from the command.
pub(super) fn say(line: &str) {
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("leveldb-bloom run: {line}\n").as_bytes(),
    );
}

/// The summary as a person reads it: how the program ended, then (where a process
/// reported) the policies, the filters and what compact filters saved.
fn said(summary: &Summary, program: &str) -> String {
    let mut text = String::new();
    let status = match summary.signal {
        Some(signal) => format!("was killed by signal {signal}"),
        None => format!("exited {}", summary.status),
    };
    let _ = writeln!(text, "leveldb-bloom run: {program} {status}");
    if let Some(why) = &summary.unreachable {
        let _ = writeln!(text, "  not reached: {why}; it ran without the drop-in");
    }
    if summary.processes == 0 {
        if summary.unreachable.is_none() {
            let _ = writeln!(
                text,
                "  no process reported: none loaded the drop-in (statically linked programs \
                 only, or LD_PRELOAD cleared), or each ended without exit (_exit, a signal)"
            );
        }
        return text;
    }
    policies(summary, &mut text);
    filters(summary, &mut text);
    savings(summary, &mut text);
    text
}

/// The processes that reported, and the policies served, declined and refused.
fn policies(summary: &Summary, text: &mut String) {
    let _ = writeln!(
        text,
        "  the drop-in reported from {} {}; policies: {} served, {} declined (the LevelDB's \
         own kept), {} refused",
        summary.processes,
        if summary.processes == 1 {
            "process"
        } else {
            "processes"
        },
        summary.counters.policies_served,
        summary.counters.policies_declined,
        summary.counters.policies_refused,
    );
    for line in &summary.served {
        let _ = writeln!(text, "    {line}");
    }
    for why in &summary.declined {
        let _ = writeln!(text, "    declined {why}");
    }
    for why in &summary.refused {
        let _ = writeln!(text, "    refused: {why}");
    }
}

/// The filters' format and bits per key, what was built and asked, and the share ruled out.
fn filters(summary: &Summary, text: &mut String) {
    let ruled_out = if summary.counters.queries > 0 {
        format!(
            "{} ({:.1}%)",
            summary.counters.no_match,
            100.0 * summary.counters.no_match as f64 / summary.counters.queries as f64
        )
    } else {
        "0".into()
    };
    let _ = writeln!(
        text,
        "  format {} at {}: filters built {}, keys {}, queries {}, ruled out {ruled_out}",
        summary.format_names().as_deref().unwrap_or("?"),
        summary
            .bits_per_key
            .map_or("the program's bits per key".to_owned(), |b| format!(
                "{b} bits per key"
            )),
        summary.counters.filters_built,
        summary.counters.keys_added,
        summary.counters.queries
    );
}

/// For compact filters: the table reads they saved, or how to have that estimated.
fn savings(summary: &Summary, text: &mut String) {
    match summary.table_reads_saved {
        Some(saved) => {
            let _ = writeln!(
                text,
                "  compact filters: about {saved} table reads saved against Bloom filters of \
                 the same size (their expected false-positive rate)"
            );
        }
        None if summary.compact_only() => {
            let _ = writeln!(
                text,
                "  compact filters at the program's bits per key: give --bits-per-key for an \
                 estimate of the table reads saved"
            );
        }
        None => {}
    }
}
