//! Allocator settings of the coordinator process.
//!
//! glibc's malloc gives threads their own arenas (up to eight per core) and keeps what they freed. The
//! coordinator's work moves between tokio workers and blocking threads (deciding batches), so each of
//! them grows an arena during a join storm and keeps it: at 10,000 members the resident memory was 181 MiB
//! with the default and 109 MiB with two arenas, at the same throughput (BENCHMARKS.md). Two arenas are
//! enough for two busy threads per core of lock-free allocation in practice; `MALLOC_ARENA_MAX` in the
//! environment still wins, for anyone who measured otherwise.

/// Caps glibc's malloc arenas unless `MALLOC_ARENA_MAX` is set. Does nothing on other C libraries.
pub fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only changes allocator parameters; it is called before any other thread exists.
        let ok = unsafe { libc::mallopt(libc::M_ARENA_MAX, 2) };
        if ok != 1 {
            tracing::warn!(
                "could not limit malloc arenas (mallopt failed); memory use may be higher"
            );
        }
    }
}
