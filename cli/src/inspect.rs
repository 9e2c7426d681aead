//! `inspect`: each table's counts, filter formats, bits per key, and expected against
//! measured false positives, as a table to read or as JSON.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::analysis::{Analysis, analyze_read_only, log_damage};
use crate::failure::{Failure, Kind, OK, PROBLEM, emit};
use crate::report::{self, Keys, TableReport};
use crate::wal::LogReport;

#[derive(Serialize)]
struct InspectJson<'a> {
    tables: &'a [TableReport],
    total: &'a TableReport,
    not_live: Vec<String>,
    logs: &'a [LogReport],
}

/// `inspect PATH [--json]`.
pub fn inspect(path: &Path, json: bool, keys: Option<Keys>) -> Result<u8, Failure> {
    let (_lock, analysis) = analyze_read_only(path, keys)?;
    let total = report::total(&analysis.tables);
    let text = if json {
        as_json(&analysis, &total)?
    } else {
        as_text(&analysis, &total)
    };
    emit(&text)?;
    let damaged = analysis.tables.iter().any(|t| !t.problems.is_empty())
        || analysis.damaged_logs().next().is_some()
        || !analysis.hazards.is_empty();
    Ok(if damaged { PROBLEM } else { OK })
}

/// One JSON object: the tables, their total, the files left out and the logs.
fn as_json(analysis: &Analysis, total: &TableReport) -> Result<String, Failure> {
    let doc = InspectJson {
        tables: &analysis.tables,
        total,
        not_live: (analysis.not_live.iter())
            .map(|p| p.display().to_string())
            .collect(),
        logs: &analysis.logs,
    };
    let json =
        serde_json::to_string_pretty(&doc).map_err(|e| Failure::new(Kind::Io, e.to_string()))?;
    Ok(json + "\n")
}

/// The table of the tables, then what the logs hold and what is wrong with the database.
fn as_text(analysis: &Analysis, total: &TableReport) -> String {
    let mut text = report::render(&analysis.tables, total, &analysis.not_live);
    if let Some(logged) = analysis.logged(("log", "logs")) {
        let _ = writeln!(text, "write-ahead logs: {logged} (not yet in a table)");
    }
    for (log, damage) in analysis.damaged_logs() {
        let _ = writeln!(text, "{}", log_damage(log, damage));
    }
    for hazard in &analysis.hazards {
        let _ = writeln!(text, "{hazard}");
    }
    for line in analysis.skipped_lines().chain(analysis.way_back_line()) {
        let _ = writeln!(text, "{line}");
    }
    text
}
