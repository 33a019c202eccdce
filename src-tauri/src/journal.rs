//! The journal of a multi-file change (`batch.rs`, ADR-0020): `.pkm/change.journal`, written and
//! made durable before the first note of the change is touched, removed once the change is done.
//! It holds, for every file of the change, where it is before and after, its bytes before (and
//! its mtime) and after, so that a change cut short by a crash can be finished (rolled forward)
//! or undone (rolled back) at the next open, whatever step it stopped at.
//!
//! Format (version 1), every integer little-endian: the magic `STRATUM-JOURNAL\n`, a `u32`
//! version, a `u32` count of entries, then each entry as
//! `before path, after path` (each a `u32` length and UTF-8 bytes; equal for a rewrite in place),
//! the mtime before (`i64` nanoseconds since the epoch, `i64::MIN` when unknown), the bytes before
//! and after (each a `u64` length and the bytes), the topmost folder the change creates for the
//! after path (a `u32` length and UTF-8 bytes, empty for none); last, the SHA-256 of everything before it.
//! It is written to a temp name, fsynced and renamed into place, so a journal is either whole or
//! absent; the checksum catches anything else.
//!
//! `.pkm/change.journal.back`, created when a change that failed on the way starts undoing its
//! files, says which way to go: present, the journal is rolled back; absent, rolled forward.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use pkm_core::{Vault, VaultPath};
use sha2::{Digest, Sha256};

const MAGIC: &[u8; 16] = b"STRATUM-JOURNAL\n";
const VERSION: u32 = 1;
const NAME: &str = "change.journal";

/// One file of a change, as the journal keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Where the note is before the change.
    pub before_at: VaultPath,
    /// Where it is after (the same path for a rewrite in place).
    pub after_at: VaultPath,
    pub before: Vec<u8>,
    /// The note's mtime before, put back with its bytes when the change is undone.
    pub before_mtime_ns: Option<i64>,
    pub after: Vec<u8>,
    /// The topmost folder the change creates to hold `after_at` (none when its folder exists),
    /// removed again, with the folders under it, when the change is undone and they are empty.
    pub new_folder: Option<String>,
}

impl Entry {
    /// Whether the note moves (else it is rewritten in place).
    pub fn moves(&self) -> bool {
        self.before_at != self.after_at
    }
}

/// Where the journal of `vault` lives.
pub(crate) fn path(vault: &Vault) -> PathBuf {
    vault.pkm_dir().join(NAME)
}

/// The marker that turns recovery into a roll-back.
pub(crate) fn back_marker(vault: &Vault) -> PathBuf {
    vault.pkm_dir().join(format!("{NAME}.back"))
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u64).to_le_bytes());
    out.extend_from_slice(b);
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

pub(crate) fn encode(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    for e in entries {
        put_str(&mut out, e.before_at.as_str());
        put_str(&mut out, e.after_at.as_str());
        out.extend_from_slice(&e.before_mtime_ns.unwrap_or(i64::MIN).to_le_bytes());
        put_bytes(&mut out, &e.before);
        put_bytes(&mut out, &e.after);
        put_str(&mut out, e.new_folder.as_deref().unwrap_or(""));
    }
    let sum = Sha256::digest(&out);
    out.extend_from_slice(&sum);
    out
}

/// Reads a journal back; `None` when it is not one this build wrote whole (checksum, magic,
/// version, or a path that is not a note path).
pub(crate) fn decode(bytes: &[u8]) -> Option<Vec<Entry>> {
    let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(32)?)?;
    if Sha256::digest(body).as_slice() != sum {
        return None;
    }
    let mut r = Reader(body);
    if r.take(MAGIC.len())? != MAGIC || r.u32()? != VERSION {
        return None;
    }
    let count = r.u32()?;
    let mut entries = Vec::new();
    for _ in 0..count {
        let before_at = r.path()?;
        let after_at = r.path()?;
        let mtime = i64::from_le_bytes(r.take(8)?.try_into().ok()?);
        let before = r.bytes()?;
        let after = r.bytes()?;
        let new_folder = r.str()?;
        entries.push(Entry {
            new_folder: (!new_folder.is_empty()).then(|| new_folder.to_owned()),
            before_at,
            after_at,
            before,
            before_mtime_ns: (mtime != i64::MIN).then_some(mtime),
            after,
        });
    }
    r.0.is_empty().then_some(entries)
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn bytes(&mut self) -> Option<Vec<u8>> {
        let n = u64::from_le_bytes(self.take(8)?.try_into().ok()?);
        Some(self.take(usize::try_from(n).ok()?)?.to_vec())
    }

    fn str(&mut self) -> Option<&'a str> {
        let n = self.u32()?;
        std::str::from_utf8(self.take(usize::try_from(n).ok()?)?).ok()
    }

    fn path(&mut self) -> Option<VaultPath> {
        VaultPath::lexical(self.str()?).ok()
    }
}

/// Makes `.pkm/`'s entries durable (where the OS can fsync a folder: `pkm_core::folder`).
fn sync_pkm(vault: &Vault) -> std::io::Result<()> {
    pkm_core::folder::sync_folder(|| File::open(vault.pkm_dir())?.sync_all())
}

/// Writes the journal of `entries` durably: a temp file fsynced, renamed into place, `.pkm/`
/// fsynced. Nothing of the vault has changed when this returns an error.
pub(crate) fn write(vault: &Vault, entries: &[Entry]) -> std::io::Result<()> {
    // A marker left alone by an earlier change must not turn this one back.
    remove_if_there(&back_marker(vault))?;
    let bytes = encode(entries);
    let tmp = vault.pkm_dir().join(format!("{NAME}.tmp"));
    let result = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path(vault))?;
        sync_pkm(vault)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Creates the roll-back marker durably.
pub(crate) fn mark_back(vault: &Vault) -> std::io::Result<()> {
    File::create(back_marker(vault))?.sync_all()?;
    sync_pkm(vault)
}

/// Removes the journal, then the roll-back marker, durably (a marker without a journal means
/// nothing).
pub(crate) fn remove(vault: &Vault) -> std::io::Result<()> {
    remove_if_there(&path(vault))?;
    remove_if_there(&back_marker(vault))?;
    sync_pkm(vault)
}

fn remove_if_there(p: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(p) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// What is at `.pkm/change.journal`.
pub(crate) enum Found {
    None,
    /// A journal this build cannot read whole: never one it wrote (those are renamed into place
    /// whole), so the vault is left as it is.
    Unreadable,
    Journal {
        entries: Vec<Entry>,
        back: bool,
    },
}

pub(crate) fn read(vault: &Vault) -> std::io::Result<Found> {
    let bytes = match std::fs::read(path(vault)) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A marker or a temp file left alone: nothing to do but tidy.
            remove_if_there(&back_marker(vault))?;
            remove_if_there(&vault.pkm_dir().join(format!("{NAME}.tmp")))?;
            return Ok(Found::None);
        }
        Err(e) => return Err(e),
    };
    Ok(match decode(&bytes) {
        None => Found::Unreadable,
        Some(entries) => Found::Journal {
            entries,
            back: back_marker(vault).exists(),
        },
    })
}

/// Moves an unreadable journal aside (`change.journal.unreadable-<uuid>`), kept for a person to
/// look at.
pub(crate) fn set_aside(vault: &Vault) -> std::io::Result<PathBuf> {
    let aside = vault.pkm_dir().join(format!(
        "{NAME}.unreadable-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::rename(path(vault), &aside)?;
    remove_if_there(&back_marker(vault))?;
    sync_pkm(vault)?;
    Ok(aside)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(a: &str, b: &str) -> Entry {
        Entry {
            before_at: VaultPath::lexical(a).unwrap(),
            after_at: VaultPath::lexical(b).unwrap(),
            before: b"before \xff".to_vec(),
            before_mtime_ns: Some(-5),
            after: "after ✓".as_bytes().to_vec(),
            new_folder: Some("b".into()),
        }
    }

    #[test]
    fn a_journal_reads_back_and_any_damage_is_refused() {
        let entries = vec![
            entry("a.md", "b/c.md"),
            entry("x.md", "x.md"),
            Entry {
                before_mtime_ns: None,
                new_folder: None,
                ..entry("y.md", "y.md")
            },
        ];
        let bytes = encode(&entries);
        assert_eq!(decode(&bytes), Some(entries));
        for cut in [0, 1, 20, bytes.len() / 2, bytes.len() - 1] {
            assert_eq!(decode(&bytes[..cut]), None, "cut at {cut}");
        }
        let mut flipped = bytes.clone();
        flipped[40] ^= 1;
        assert_eq!(decode(&flipped), None);
    }
}
