//! The `stratum-mcp` binary: parses the command line and runs one of its commands.

fn main() {
    std::process::exit(pkm_mcp::cli::main());
}
