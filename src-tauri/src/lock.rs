//! `VaultLock`: which process leads a vault. The leader holds an OS advisory lock on
//! `.pkm/write.lock` for as long as it owns the vault's writer; the kernel drops it when the process
//! exits or is killed, and the next process waiting for it takes the lead (ADR-0007). std's file
//! lock is `flock` on Unix and `LockFileEx` on Windows, the same on every platform to this code.

use std::fs::File;
use std::io::Write;

use pkm_core::{KbError, KbResult, Vault};

/// The vault's leadership, held for the life of this value.
#[derive(Debug)]
pub struct VaultLock {
    _file: File,
}

fn open_lock_file(vault: &Vault) -> KbResult<File> {
    File::options()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(vault.write_lock_path())
        .map_err(|e| {
            tracing::error!(error = %e, "cannot open the vault lock file");
            KbError::external("opening .pkm/write.lock")
        })
}

impl VaultLock {
    /// Takes the lead if no other process holds it; `None` when one does.
    pub fn try_acquire(vault: &Vault) -> KbResult<Option<VaultLock>> {
        let file = open_lock_file(vault)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(VaultLock::holding(file))),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => {
                tracing::error!(error = %e, "cannot lock the vault");
                Err(KbError::external("locking .pkm/write.lock"))
            }
        }
    }

    /// Waits until the leading process (if any) lets go, then takes the lead.
    pub fn acquire(vault: &Vault) -> KbResult<VaultLock> {
        let file = open_lock_file(vault)?;
        file.lock().map_err(|e| {
            tracing::error!(error = %e, "cannot lock the vault");
            KbError::external("locking .pkm/write.lock")
        })?;
        Ok(VaultLock::holding(file))
    }

    fn holding(file: File) -> VaultLock {
        // The pid is for people reading the file; nothing depends on it.
        let mut f = &file;
        let _ = file.set_len(0);
        let _ = writeln!(f, "{}", std::process::id());
        VaultLock { _file: file }
    }

    /// The pid the current leader wrote, if any (none on Windows, where the leader's lock bars
    /// other processes from reading the file).
    pub fn holder(vault: &Vault) -> Option<u32> {
        std::fs::read_to_string(vault.write_lock_path())
            .ok()?
            .trim()
            .parse()
            .ok()
    }
}
