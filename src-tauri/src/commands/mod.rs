//! The commands, grouped as the desktop app groups them. Each takes `&App` and `VaultPath`s and
//! returns a contract DTO or a `KbError`.

pub mod edit;
pub mod graph;
pub mod move_page;
pub mod page;
pub mod properties;
pub mod recent;
pub mod search;
pub mod tags;
pub mod vault;
