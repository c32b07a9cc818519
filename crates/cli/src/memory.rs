//! The allocator of the `rsc` process: mimalloc.
//!
//! Under steady heartbeats glibc's malloc took about a quarter of the coordinator's CPU (`_int_malloc`,
//! `_int_free`, `malloc_consolidate`, and lock waits between the tokio workers on its arenas, which showed up
//! as futex calls and context switches; BENCHMARKS.md, "Where the time goes"), and without a cap on its arenas
//! a join storm left each thread's arena grown. mimalloc keeps a heap per thread without locks and returns
//! freed pages to the system.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
