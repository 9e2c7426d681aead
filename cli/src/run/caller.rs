//! What the caller gave the command before Rust's runtime started, which the runtime then
//! changes, and which the program gets back as the caller gave it: the standard streams it
//! had closed (the runtime opens /dev/null on them) and whether SIGPIPE was ignored (the
//! runtime ignores it, and spawning restores the default).

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// The standard streams closed at start: bit n, fd n.
static CLOSED_AT_START: AtomicU8 = AtomicU8::new(0);
static SIGPIPE_IGNORED_AT_START: AtomicBool = AtomicBool::new(false);

/// Records the caller's standard streams and SIGPIPE disposition; called by the command's
/// binary from its `.init_array`, before Rust's runtime starts (`main.rs`).
pub extern "C" fn record_at_start() {
    for fd in 0..3 {
        // SAFETY: F_GETFD on any number only asks.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            CLOSED_AT_START.fetch_or(1 << fd, Ordering::Relaxed);
        }
    }
    // SAFETY: a zeroed sigaction is valid; a NULL new action only asks.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
        {
            SIGPIPE_IGNORED_AT_START.store(true, Ordering::Relaxed);
        }
    }
}

/// Has `command`'s process close the streams and ignore SIGPIPE as the caller did, between
/// fork and exec.
pub(super) fn given_back_in(command: &mut Command) {
    let closed = CLOSED_AT_START.load(Ordering::Relaxed);
    let ignore_sigpipe = SIGPIPE_IGNORED_AT_START.load(Ordering::Relaxed);
    // SAFETY: the closure runs in the child between fork and exec and only calls
    // async-signal-safe functions (close, signal).
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(command, move || {
            for fd in 0..3 {
                if closed & (1 << fd) != 0 {
                    libc::close(fd);
                }
            }
            if ignore_sigpipe {
                libc::signal(libc::SIGPIPE, libc::SIG_IGN);
            }
            Ok(())
        });
    }
}
