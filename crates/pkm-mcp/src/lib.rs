//! stratum-mcp: the MCP server over a Stratum vault.
//!
//! One table of tools (`tools::TOOLS`) behind two doors: stdio (rmcp) and Streamable HTTP (axum).
//! Architecture invariant: only this crate knows MCP and JSON-RPC; only `errors` picks codes.

mod channel;
pub mod cli;
pub mod errors;
mod forward;
pub mod host;
pub mod http;
pub mod notify;
pub mod oauth;
pub mod protocol;
pub mod schema;
pub mod scope;
pub mod server;
pub mod stdio;
pub mod tokens;
pub mod tools;
pub mod wire;

pub use server::StratumServer;
