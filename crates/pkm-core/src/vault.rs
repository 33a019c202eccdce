//! The vault on disk: a folder of markdown notes, with the server's state under `.pkm/`.
//!
//! ```text
//! <vault>/**/*.md                the notes: always the source of truth
//! <vault>/.pkm/blocks.db         SQLite store (WAL)
//! <vault>/.pkm/search/           Tantivy index
//! <vault>/.pkm/mcp-tokens.json   hashed personal access tokens
//! <vault>/.pkm/write.lock        advisory lock held by the process that leads the vault (writes)
//! <vault>/.pkm/leader.sock       where the leader answers the vault's other processes (0600)
//! ```

use std::path::{Path, PathBuf};

use crate::path::{PathError, SEGMENT_MAX_BYTES, VaultPath};

/// The folder that holds the server's state inside a vault.
pub const PKM_DIR: &str = ".pkm";

#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    #[error("vault path {0} does not exist")]
    Missing(String),
    #[error("vault path {0} is not a directory")]
    NotADirectory(String),
    #[error("vault path {0} cannot be read: {1}")]
    Unreadable(String, std::io::Error),
    #[error("cannot create {0}: {1}")]
    CannotCreateState(String, std::io::Error),
}

/// An opened vault: its canonical root and the layout of `.pkm/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vault {
    root: PathBuf,
}

impl Vault {
    /// Opens a vault at `path`, creating `.pkm/` when absent. A plain folder of markdown is a
    /// valid vault. Fails with a one-line reason when the folder is missing or unreadable.
    pub fn open(path: &Path) -> Result<Vault, VaultError> {
        let shown = path.display().to_string();
        let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => VaultError::Missing(shown.clone()),
            _ => VaultError::Unreadable(shown.clone(), e),
        })?;
        if !meta.is_dir() {
            return Err(VaultError::NotADirectory(shown));
        }
        std::fs::read_dir(path).map_err(|e| VaultError::Unreadable(shown.clone(), e))?;
        let root = path
            .canonicalize()
            .map_err(|e| VaultError::Unreadable(shown.clone(), e))?;
        let vault = Vault { root };
        let pkm = vault.pkm_dir();
        std::fs::create_dir_all(&pkm)
            .map_err(|e| VaultError::CannotCreateState(pkm.display().to_string(), e))?;
        Ok(vault)
    }

    /// The canonical absolute root.
    pub fn root(&self) -> &Path {
        &self.root
    }
    pub fn pkm_dir(&self) -> PathBuf {
        self.root.join(PKM_DIR)
    }
    pub fn db_path(&self) -> PathBuf {
        self.pkm_dir().join("blocks.db")
    }
    pub fn search_dir(&self) -> PathBuf {
        self.pkm_dir().join("search")
    }
    /// The vault's settings for the server (`.pkm/config.json`), optional.
    pub fn config_path(&self) -> PathBuf {
        self.pkm_dir().join("config.json")
    }
    pub fn tokens_path(&self) -> PathBuf {
        self.pkm_dir().join("mcp-tokens.json")
    }
    pub fn write_lock_path(&self) -> PathBuf {
        self.pkm_dir().join("write.lock")
    }
    /// Where a note lives on disk.
    /// Where a note lives on disk. Pushed one segment at a time: on Windows the canonical root is
    /// a `\\?\` path, in which `/` separates nothing.
    pub fn abs(&self, note: &VaultPath) -> PathBuf {
        let mut p = self.root.clone();
        p.extend(note.as_str().split('/'));
        p
    }
}

/// A note's path checked against the vault on disk: the two ways a path from outside the
/// server's own listing becomes a [`VaultPath`].
impl VaultPath {
    /// Checks user input: the lexical rules, names of at most [`SEGMENT_MAX_BYTES`], then
    /// containment on disk. The deepest existing ancestor (the file itself when it exists) is
    /// canonicalised and must stay inside the vault and outside `.pkm/`, so a symlink cannot lead
    /// a read or a write elsewhere.
    ///
    /// The name length is checked here and not in [`VaultPath::lexical`]: a file the scan finds
    /// exists, whatever its name's length on the file system it lives on.
    pub fn parse(vault: &Vault, input: &str) -> Result<VaultPath, PathError> {
        let vp = Self::lexical(input)?;
        if input.split('/').any(|seg| seg.len() > SEGMENT_MAX_BYTES) {
            return Err(PathError::NameTooLong);
        }
        #[cfg(windows)]
        if let Some(why) = input.split('/').find_map(crate::path::windows_name_problem) {
            return Err(PathError::NotOnWindows(why));
        }
        let mut probe: PathBuf = vault.abs(&vp);
        loop {
            match probe.canonicalize() {
                Ok(real) => {
                    if !real.starts_with(vault.root()) || real.starts_with(vault.pkm_dir()) {
                        return Err(PathError::Escapes);
                    }
                    break;
                }
                Err(_) => {
                    // A dangling symlink is not a missing file: refuse it rather than write
                    // through it to wherever it points.
                    if probe.symlink_metadata().is_ok() {
                        return Err(PathError::Escapes);
                    }
                    if !probe.pop() {
                        return Err(PathError::Escapes);
                    }
                }
            }
        }
        Ok(vp)
    }

    /// Builds the path of a file found under the vault root during a scan.
    pub fn from_abs(vault: &Vault, abs: &Path) -> Result<VaultPath, PathError> {
        let rel = abs
            .strip_prefix(vault.root())
            .map_err(|_| PathError::Escapes)?;
        let mut s = String::new();
        for (i, c) in rel.components().enumerate() {
            let std::path::Component::Normal(part) = c else {
                return Err(PathError::Traversal);
            };
            if i > 0 {
                s.push('/');
            }
            s.push_str(part.to_str().ok_or(PathError::NotMarkdown)?);
        }
        Self::lexical(&s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn symlinks_cannot_escape() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.md"), "secret").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let vault = Vault::open(dir.path()).unwrap();
        std::fs::create_dir(dir.path().join("inside")).unwrap();
        std::fs::write(dir.path().join("inside/ok.md"), "ok").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.md"), dir.path().join("leak.md"))
            .unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("nope.md"),
            dir.path().join("dangling.md"),
        )
        .unwrap();
        std::os::unix::fs::symlink(dir.path().join("inside/ok.md"), dir.path().join("alias.md"))
            .unwrap();

        assert_eq!(
            VaultPath::parse(&vault, "inside/ok.md").unwrap().as_str(),
            "inside/ok.md"
        );
        assert_eq!(
            VaultPath::parse(&vault, "inside/new/deeper.md")
                .unwrap()
                .as_str(),
            "inside/new/deeper.md"
        );
        assert_eq!(
            VaultPath::parse(&vault, "alias.md").unwrap().as_str(),
            "alias.md"
        );
        assert_eq!(
            VaultPath::parse(&vault, "out/secret.md"),
            Err(PathError::Escapes)
        );
        assert_eq!(
            VaultPath::parse(&vault, "out/new.md"),
            Err(PathError::Escapes)
        );
        assert_eq!(VaultPath::parse(&vault, "leak.md"), Err(PathError::Escapes));
        assert_eq!(
            VaultPath::parse(&vault, "dangling.md"),
            Err(PathError::Escapes)
        );
    }

    #[test]
    fn a_caller_cannot_name_a_file_longer_than_the_file_system_takes() {
        let dir = tempfile::tempdir().unwrap();
        let vault = Vault::open(dir.path()).unwrap();
        let name = |bytes: usize| format!("{}.md", "a".repeat(bytes - 3));
        let longest = format!("f/{}", name(SEGMENT_MAX_BYTES));
        assert_eq!(
            VaultPath::parse(&vault, &longest).map(|p| p.as_str().to_owned()),
            Ok(longest.clone())
        );
        // The file it names can be created: the limit is the file system's.
        std::fs::create_dir(dir.path().join("f")).unwrap();
        std::fs::write(dir.path().join(&longest), "- x\n").unwrap();
        for long in [
            name(SEGMENT_MAX_BYTES + 1),
            format!("{}/a.md", "d".repeat(SEGMENT_MAX_BYTES + 1)),
            // 88 characters, 258 bytes in UTF-8.
            format!("{}.md", "東".repeat(85)),
        ] {
            assert_eq!(
                VaultPath::parse(&vault, &long),
                Err(PathError::NameTooLong),
                "{long}"
            );
        }
    }

    #[test]
    fn open_rejects_missing_and_files() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            Vault::open(&dir.path().join("nope")),
            Err(crate::VaultError::Missing(_))
        ));
        std::fs::write(dir.path().join("f"), "").unwrap();
        assert!(matches!(
            Vault::open(&dir.path().join("f")),
            Err(crate::VaultError::NotADirectory(_))
        ));
        let v = Vault::open(dir.path()).unwrap();
        assert!(v.pkm_dir().is_dir());
    }
}
