//! Signals while the program runs: those sent to the command are passed on to the
//! program, and the command ends at last by the signal that ended the program.

use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicI32, Ordering};

/// The program's process, for the signal handler (0: none yet).
static CHILD: AtomicI32 = AtomicI32::new(0);
/// A signal sent to the command before the program's process existed, to pass on once it
/// does (0: none).
static PENDING: AtomicI32 = AtomicI32::new(0);

extern "C" fn pass_on(signal: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // A signal a process sent the command (kill, sigqueue, tgkill) is passed on.
    // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler.
    let code = unsafe { (*info).si_code };
    // A code above zero is the kernel's. What the terminal sends (Ctrl-C, Ctrl-\) reaches
    // the program's group too, so it is not sent twice; but a hangup reaches only the
    // session's leader, which the command may be (`ssh -t host leveldb-bloom run ...`).
    // SAFETY: getsid and getpid are async-signal-safe.
    let leader = unsafe { libc::getsid(0) == libc::getpid() };
    if code > 0 && !(signal == libc::SIGHUP && leader) {
        return;
    }
    let child = CHILD.load(Ordering::Relaxed);
    if child > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(child, signal) };
    } else {
        PENDING.store(signal, Ordering::Relaxed);
    }
}

/// Records the program's process for the signal handler, and passes on a signal that came
/// before it existed. The handler runs on this thread (the command has no other), so it
/// ran either wholly before the store or sees the process.
fn program_started(child: i32) {
    CHILD.store(child, Ordering::Relaxed);
    let pending = PENDING.swap(0, Ordering::Relaxed);
    if pending != 0 {
        // SAFETY: the program's process, which the command has not waited for yet.
        unsafe { libc::kill(child, pending) };
    }
}

/// Catches the signals a process sends to stop or tell a program (each would end the
/// command while the program runs; a caught signal's handler is reset in the program at
/// exec), and the terminal's resizing.
pub(super) fn pass_signals_on() {
    let realtime = libc::SIGRTMIN()..=libc::SIGRTMAX();
    let named = [
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGALRM,
        libc::SIGWINCH,
    ];
    for signal in named.into_iter().chain(realtime) {
        // SAFETY: a zeroed sigaction is valid; the handler only calls async-signal-safe
        // functions. A signal the caller ignores stays ignored (`nohup`): the program
        // inherits that.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(signal, std::ptr::null(), &mut old);
            if old.sa_sigaction == libc::SIG_IGN {
                continue;
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = pass_on as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// Waits for the program's process, passing signals on to it meanwhile.
pub(super) fn wait_for(mut child: Child) -> std::io::Result<ExitStatus> {
    program_started(child.id() as i32);
    let status = child.wait();
    // The program's process ID is no longer its own once waited for.
    CHILD.store(0, Ordering::Relaxed);
    status
}

/// Ends the command by the signal that ended the program, so that its caller sees what it
/// would have seen of the program (a shell stops its loop on Ctrl-C); no core dump of the
/// command. Returns if the signal does not end it.
pub(super) fn die_by(signal: i32) {
    // SAFETY: plain system calls on this process; a zeroed rlimit is valid.
    unsafe {
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(signal, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(signal);
    }
}
