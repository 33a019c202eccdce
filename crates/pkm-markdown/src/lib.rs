//! Markdown in, page model out: frontmatter, the outliner block tree, links and tags.
//!
//! Architecture invariant: this crate does no IO. Every function takes text and returns values;
//! none panics on any input, and none recurses in proportion to the input's nesting.

pub mod block_parser;
pub mod dialect;
pub mod diff;
pub mod edit;
pub mod error;
pub mod frontmatter;
mod inline_tags;
mod lines;
pub mod linker;
mod outline;
mod page_props;
pub mod properties;
mod regions;
pub mod relink;
pub mod sections;
pub mod serialize;
mod splice;
pub mod tags;

pub use dialect::{Dialect, Flavor};
pub use error::{FrontmatterError, MarkdownError, TagEditError};
