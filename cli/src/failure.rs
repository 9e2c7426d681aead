//! How a command ends: its exit status, the [`Failure`] that ends it early, and what it
//! writes to standard output ([`emit`]).

/// All is well.
pub const OK: u8 = 0;
/// A check found a problem.
pub const PROBLEM: u8 = 1;
/// Usage or I/O error.
pub const ERROR: u8 = 2;

/// What ends a command early: its message (for standard error) and exit status.
#[derive(Debug)]
pub struct Failure {
    pub message: String,
    pub status: u8,
}

impl Failure {
    /// A usage or I/O error: [`ERROR`].
    pub fn error(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            status: ERROR,
        }
    }

    /// Damage that stops the command from reading on (a corrupt MANIFEST): [`PROBLEM`].
    pub fn damaged(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            status: PROBLEM,
        }
    }
}

/// Writes `text` to standard output. A reader that went away (`| head`) only ends the
/// output; any other write error is a failure.
pub(crate) fn emit(text: &str) -> Result<(), Failure> {
    use std::io::Write as _;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Failure::error(format!("writing the output: {e}")))
        }
        _ => Ok(()),
    }
}
