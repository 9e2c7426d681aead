//! `leveldb-bloom`: inspect, verify and upgrade the filters of a LevelDB database.
//! Exit status: 0 all is well, 1 a check found a problem, 2 usage or I/O error.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use leveldb_bloom::Format;
use leveldb_bloom_cli::failure::ERROR;
#[cfg(not(feature = "upgrade"))]
use leveldb_bloom_cli::failure::{Failure, Kind};
use leveldb_bloom_cli::format_arg::format_parser;
use leveldb_bloom_cli::inspect::inspect;
#[cfg(feature = "upgrade")]
use leveldb_bloom_cli::leveldb::new_policy;
use leveldb_bloom_cli::report::Keys;
use leveldb_bloom_cli::run;
#[cfg(feature = "upgrade")]
use leveldb_bloom_cli::upgrade;
use leveldb_bloom_cli::verify::verify;

#[derive(Parser)]
#[command(
    name = "leveldb-bloom",
    version,
    about,
    after_help = "Exit status: 0 all is well, 1 a check found a problem (damage, a table not \
                  rewritten), 2 usage or I/O error."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum KeyKind {
    /// Internal keys (user key and an 8-byte tag), as in a database's tables.
    Internal,
    /// User keys, as in tables written with LevelDB's TableBuilder directly.
    User,
}

#[derive(Subcommand)]
enum Command {
    /// Counts, filter formats, bits per key, and expected against measured false positives.
    ///
    /// PATH is a database directory (the tables of its current version, from CURRENT and
    /// its MANIFEST; other table files are listed apart and not counted) or one table file.
    /// The measured rate is over neighbours of the table's own keys (each key with its last
    /// byte one higher and one lower) that the table does not hold.
    Inspect {
        /// A database directory, or one table file (.ldb or .sst).
        path: PathBuf,
        /// One JSON object: {"tables": [...], "total": {...}, "not_live": [...]}.
        #[arg(long)]
        json: bool,
        /// How a table file's keys are stored (default: as the table's keys show; a
        /// database's tables always hold internal keys).
        #[arg(long, value_enum)]
        keys: Option<KeyKind>,
    },
    /// Checks every block's checksum, key order and every key against its block's filter.
    ///
    /// Each problem is printed with its table, block offset and count; exit status 1 if any.
    Verify {
        /// A database directory, or one table file (.ldb or .sst).
        path: PathBuf,
        /// How a table file's keys are stored (default: as the table's keys show; a
        /// database's tables always hold internal keys).
        #[arg(long, value_enum)]
        keys: Option<KeyKind>,
    },
    /// Rewrites every table's filters with LevelDB's own compaction.
    ///
    /// Opens the database with the new policy (refused while another process holds it),
    /// and has LevelDB compact the whole key range, writing every table and the MANIFEST
    /// anew. Prints inspect's totals before and after. Proves its result: LevelDB must
    /// read the same records after it as before (count and a hash of every key and value),
    /// or the database is put back exactly as it was (its files are kept as hard links in
    /// the leveldb-bloom-way-back folder until then).
    #[cfg_attr(
        not(feature = "upgrade"),
        command(
            about = "Not in this build (it has no LevelDB): the command built with LevelDB \
                     rewrites every table's filters with LevelDB's own compaction.",
            long_about = None
        )
    )]
    Upgrade {
        /// A database directory.
        path: PathBuf,
        #[arg(long, value_parser = format_parser(), required_unless_present = "undo")]
        format: Option<Format>,
        /// Bits per key of the new filters (whole numbers for Bloom; default 10).
        #[arg(long, default_value_t = 10.0)]
        bits_per_key: f64,
        /// Put back the files an upgrade that did not finish kept (in the database's
        /// leveldb-bloom-way-back folder), instead of upgrading.
        #[arg(long, conflicts_with = "format")]
        undo: bool,
    },
    /// Runs a program with the drop-in preloaded, and says at exit what it did.
    ///
    /// The drop-in (libleveldb_bloom_dropin.so, beside the command or named by --dropin)
    /// reaches every process the program starts. The program's input, output and exit
    /// status are its own (a signal n as 128 + n). At exit, a summary on standard error:
    /// the policies served, declined (the LevelDB's own kept) and refused, each LevelDB
    /// served and whose code writes its filters, filters built, queries and the share ruled
    /// out.
    Run(run::Run),
}

fn keys(kind: Option<KeyKind>) -> Option<Keys> {
    kind.map(|k| match k {
        KeyKind::Internal => Keys::Internal,
        KeyKind::User => Keys::User,
    })
}

/// The caller's standard streams and SIGPIPE disposition, recorded before Rust's runtime
/// changes them (`run` gives the program what the caller gave).
#[used]
#[unsafe(link_section = ".init_array")]
static RECORD_AT_START: extern "C" fn() = run::record_at_start;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help, the version, or a usage error: clap's text, and its status unless the text
        // could not be written (`--help > /dev/full`), which is an I/O error.
        Err(e) => {
            let status = if e.print().is_ok() && std::io::stdout().flush().is_ok() {
                e.exit_code()
            } else {
                i32::from(ERROR)
            };
            return ExitCode::from(u8::try_from(status).unwrap_or(ERROR));
        }
    };
    let result = match cli.command {
        Command::Inspect {
            path,
            json,
            keys: k,
        } => inspect(&path, json, keys(k)),
        Command::Verify { path, keys: k } => verify(&path, keys(k)),
        Command::Run(request) => run::run(request),
        #[cfg(not(feature = "upgrade"))]
        Command::Upgrade { .. } => Err(Failure::new(
            Kind::Usage,
            "upgrade: this build of the command has no LevelDB (the Python package's has \
             none), and upgrade has LevelDB itself write every table: use the command built \
             with LevelDB (`cargo install --path cli` in the source, with libleveldb-dev)",
        )),
        #[cfg(feature = "upgrade")]
        Command::Upgrade {
            path, undo: true, ..
        } => upgrade::undo(&path),
        #[cfg(feature = "upgrade")]
        Command::Upgrade {
            path,
            format,
            bits_per_key,
            undo: false,
        } => new_policy(format.expect("required without --undo"), bits_per_key)
            .and_then(|policy| upgrade::upgrade(&path, policy)),
    };
    match result {
        Ok(status) => ExitCode::from(status),
        Err(failure) => {
            // A standard error that cannot be written changes nothing but this message.
            let _ = writeln!(std::io::stderr(), "leveldb-bloom: {failure}");
            ExitCode::from(failure.status())
        }
    }
}
