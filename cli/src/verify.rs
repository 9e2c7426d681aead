//! `verify`: the current version as LevelDB's recovery reads it, each problem on a line,
//! then one line of what was checked.

use std::fmt::Write as _;
use std::path::Path;

use crate::analysis::{Analysis, analyze_read_only, counted, log_damage};
use crate::failure::{Failure, OK, PROBLEM, emit};
use crate::report::{Keys, TableReport};

/// The write-ahead logs, as `verify` names them.
const LOGS: (&str, &str) = ("write-ahead log", "write-ahead logs");

/// `verify PATH`: the current version as LevelDB's recovery reads it, each table against
/// the MANIFEST, checksums and false negatives; each problem on a line, then what was
/// checked. Warnings (what LevelDB reads anyway) do not change the exit status.
pub fn verify(path: &Path, keys: Option<Keys>) -> Result<u8, Failure> {
    let (_lock, analysis) = analyze_read_only(path, keys)?;
    let problems = emit_findings(&analysis)?;
    if problems > 0 {
        emit(&(problems_line(&analysis, problems) + "\n"))?;
        return Ok(PROBLEM);
    }
    emit(&(checked_line(&analysis) + "\n"))?;
    Ok(OK)
}

/// Each problem and warning on a line of its own; how many problems.
fn emit_findings(analysis: &Analysis) -> Result<u64, Failure> {
    let mut problems = 0;
    for hazard in &analysis.hazards {
        emit(&(hazard.clone() + "\n"))?;
        problems += 1;
    }
    for (log, damage) in analysis.damaged_logs() {
        emit(&(log_damage(log, damage) + "\n"))?;
        problems += 1;
    }
    for (problem, line) in analysis.orphan_lines() {
        emit(&(line + "\n"))?;
        problems += u64::from(problem);
    }
    for line in analysis.skipped_lines().chain(analysis.way_back_line()) {
        emit(&(line + "\n"))?;
    }
    for t in &analysis.tables {
        for p in &t.problems {
            emit(&format!(
                "{}: at offset {}: {} ({})\n",
                t.file, p.offset, p.what, p.count
            ))?;
            problems += 1;
        }
        for w in &t.warnings {
            emit(&format!(
                "warning: {}: at offset {}: {}\n",
                t.file, w.offset, w.what
            ))?;
        }
    }
    Ok(problems)
}

/// How many problems, and where: the closing line of a `verify` that found some.
fn problems_line(analysis: &Analysis, problems: u64) -> String {
    let tables = &analysis.tables;
    let damaged = tables.iter().filter(|t| !t.problems.is_empty()).count();
    let mut line = format!(
        "{} in {damaged} of {}",
        counted(problems, "problem", "problems"),
        counted(tables.len() as u64, "table", "tables"),
    );
    let damaged_logs = analysis.damaged_logs().count();
    if damaged_logs > 0 {
        let logs = counted(analysis.logs.len() as u64, LOGS.0, LOGS.1);
        let _ = write!(line, " and {damaged_logs} of {logs}");
    }
    if !analysis.hazards.is_empty() {
        let _ = write!(
            line,
            "; {} LevelDB turns into loss",
            counted(analysis.hazards.len() as u64, "state", "states")
        );
    }
    let lost = analysis.lost_at_open().count();
    if lost > 0 {
        let _ = write!(
            line,
            "; {} outside the current version holding records it lacks",
            counted(lost as u64, "table file", "table files")
        );
    }
    line
}

/// What was checked: the closing line of a `verify` that found no problem.
fn checked_line(analysis: &Analysis) -> String {
    let tables = &analysis.tables;
    let (checked, unchecked): (Vec<&TableReport>, Vec<&TableReport>) =
        tables.iter().partition(|t| t.filters_read);
    let entries = |ts: &[&TableReport]| ts.iter().map(|t| t.entries).sum::<u64>();
    let blocks = tables.iter().map(|t| t.blocks_checked).sum();
    let mut line = format!(
        "ok: {}, {} checksummed",
        counted(tables.len() as u64, "table", "tables"),
        counted(blocks, "block", "blocks"),
    );
    if !checked.is_empty() {
        let found = counted(entries(&checked), "entry", "entries");
        let _ = write!(line, "; {found} found by their filters");
    }
    if !unchecked.is_empty() {
        let _ = write!(
            line,
            "; {} in {} without filters LevelDB reads, not checked against filters",
            counted(entries(&unchecked), "entry", "entries"),
            counted(unchecked.len() as u64, "table", "tables"),
        );
    }
    if let Some(logged) = analysis.logged(LOGS) {
        let _ = write!(line, "; {logged}, checksummed");
    }
    line
}
