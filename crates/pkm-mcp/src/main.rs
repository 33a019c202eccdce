//! The `stratum-mcp` binary: parses the command line and runs one of its commands.

/// mimalloc instead of glibc's malloc: the vault scan allocates on the parsing threads and frees
/// on the writing one, which glibc's per-thread arenas turn into retained memory.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(pkm_mcp::cli::main());
}
