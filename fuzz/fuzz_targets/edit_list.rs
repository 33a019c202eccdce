//! Edit lists (`kb_edit_page`): no panic, and every byte outside what an edit addresses stays;
//! the check and the input format are `crates/pkm-markdown/tests/it/edit_list_check.rs`, which the
//! crate's tests also run on this target's seeds.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/pkm-markdown/tests/it/edit_list_check.rs"]
mod edit_list_check;

fuzz_target!(|data: &[u8]| edit_list_check::check(data));
