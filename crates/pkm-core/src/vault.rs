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

use crate::path::VaultPath;

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
