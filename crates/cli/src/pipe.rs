//! Printing into a closed pipe (`rsc describe … | head`): the operator verbs end quietly, as Unix tools do,
//! instead of panicking in `println!`. Rust ignores SIGPIPE so that a write to a closed pipe is an error;
//! the verbs that only print restore the default action, so the process ends at the first such write.
//! `rsc serve`, `demo` and `bench` keep Rust's default (a socket write must never end the server).

/// Restores the default SIGPIPE action for this process. The crate's one unsafe item: std has no safe way
/// to set a signal's disposition.
#[allow(unsafe_code)]
pub fn end_quietly_on_closed_stdout() {
    #[cfg(unix)]
    // SAFETY: `signal` with SIG_DFL changes only this process's disposition for SIGPIPE; it is called at
    // start-up, before any thread that could be writing exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
