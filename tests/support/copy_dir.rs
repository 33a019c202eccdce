//! Copies a vault's notes (the example vault into a temp dir). Test support shared by several
//! crates' tests and the fuzz targets through `#[path]`, so that there is one copy of it.

use std::path::Path;

/// Copies every file and folder under `from` to `to`, creating `to`, except `.pkm/` folders: a
/// server run on the source vault leaves its store and index there, and a test must start from
/// the notes alone. Panics on any I/O error.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the target folder");
    for entry in std::fs::read_dir(from).expect("read the source folder") {
        let entry = entry.expect("read a folder entry");
        if entry.file_name() == ".pkm" {
            continue;
        }
        let target = to.join(entry.file_name());
        if entry.file_type().expect("read a file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a file");
        }
    }
}
