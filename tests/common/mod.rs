//! Helpers shared by the integration tests, this crate's and the C API's
//! (`capi/tests/common`): random inputs and a child test process. (Not
//! every test uses every helper.)
#![allow(dead_code)]

/// Random bytes, as many as `len` picks, from the tests' one generator (seeded by each
/// test: the same inputs on every run).
pub fn random_bytes(rng: &mut fastrand::Rng, len: std::ops::Range<usize>) -> Vec<u8> {
    let len = rng.usize(len);
    std::iter::repeat_with(|| rng.u8(..)).take(len).collect()
}

/// A command that runs this test binary again (for tests that need a child process with
/// another environment or limits). Where the tests run under an emulator (scripts/cross),
/// `LEVELDB_BLOOM_TEST_RUNNER` names it and the child starts through it too: the kernel
/// cannot start a foreign binary by itself.
pub fn this_test_binary() -> std::process::Command {
    let exe = std::env::current_exe().expect("test binary path");
    match std::env::var_os("LEVELDB_BLOOM_TEST_RUNNER") {
        Some(runner) if !runner.is_empty() => {
            let mut cmd = std::process::Command::new(runner);
            cmd.arg(exe);
            cmd
        }
        _ => std::process::Command::new(exe),
    }
}
