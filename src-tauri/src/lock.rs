//! `VaultLock`: which process leads a vault. The leader holds an OS advisory lock on
//! `.pkm/write.lock` for as long as it owns the vault's writer; the kernel drops it when the process
//! exits or is killed, and the next process waiting for it takes the lead (ADR-0007). std's file
//! lock is `flock` on Unix and `LockFileEx` on Windows, the same on every platform to this code.

use std::fs::File;
use std::io::Write;
use std::time::{Duration, Instant};

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
    ///
    /// A lock this process let go can still be held for a moment by a child it is spawning (a
    /// hook, say): the child holds a copy of the descriptor from fork until exec closes it. So
    /// when the file names this process as the holder, the lock is tried again for a while
    /// before the answer is `None`.
    pub fn try_acquire(vault: &Vault) -> KbResult<Option<VaultLock>> {
        const OWN_SPAWN_WAIT: Duration = Duration::from_secs(2);
        let file = open_lock_file(vault)?;
        let since = Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(Some(VaultLock::holding(file))),
                Err(std::fs::TryLockError::WouldBlock) => {
                    let ours = Self::holder(vault) == Some(std::process::id());
                    if !ours || since.elapsed() >= OWN_SPAWN_WAIT {
                        return Ok(None);
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    tracing::error!(error = %e, "cannot lock the vault");
                    return Err(KbError::external("locking .pkm/write.lock"));
                }
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
        // The pid is for people reading the file, and for `try_acquire` to tell its own.
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
