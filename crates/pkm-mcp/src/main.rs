//! The `stratum-mcp` binary: parses the command line and runs one of its commands.

/// mimalloc instead of glibc's malloc: the vault scan allocates on the parsing threads and frees
/// on the writing one, which glibc's per-thread arenas turn into retained memory.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // mimalloc asks for transparent huge pages on its arenas, and the kernel then zeroes a whole
    // 2 MiB page at the first touch of each, however little of it is used: a sixth of a cold
    // index's CPU went to that zeroing. Regular pages cost 4 % less wall time for a cold index
    // (docs/benchmarks.md). A kernel without the flag just keeps huge pages.
    #[cfg(target_os = "linux")]
    let _ = rustix::thread::disable_transparent_huge_pages(true);
    std::process::exit(pkm_mcp::cli::main());
}
