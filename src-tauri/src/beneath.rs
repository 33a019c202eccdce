//! Every vault file is opened relative to the vault's directory handle, never by absolute path
//! (ADR-0009): a path checked as inside the vault cannot lead elsewhere when a folder on it is
//! swapped for a symlink between the check and the open.
//!
//! [`Root`] holds the vault folder open from `App` open on. A note's folder is resolved beneath it
//! in one `openat2` call with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`
//! where the kernel has it (Linux 5.6+). A path with a symlink on it, a kernel without `openat2`,
//! or one that refuses it (seccomp), takes the walk instead: one `openat(O_NOFOLLOW)` per
//! component from the handle, where a symlink found on the way is read (`readlinkat`) and its
//! target followed the same way, one component at a time. `..` steps back along the folders walked
//! and never above the vault; an absolute target counts when it names a place under the vault's
//! path, and is then walked from the handle too. So a symlink that stays inside the vault keeps
//! working, as it did when paths were opened whole, and one that leads out (or into `.pkm/`, the
//! server's own state) is refused, whatever is swapped on disk meanwhile. The last component is
//! then opened, renamed, removed or created relative to its folder's handle: a read follows a
//! symlink there by the same rules; a write renames over the name itself and a delete removes it,
//! as before.
//!
//! The scan lists the vault the same way: each folder is opened from its parent's handle with
//! `O_NOFOLLOW`, so a folder swapped for a symlink is never entered.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::read_failure::{ReadFailure, escape};

/// What a directory entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    File,
    Dir,
    Symlink,
    // Windows has none of these (std does not tell them apart there): `Other`.
    #[cfg_attr(not(unix), allow(dead_code))]
    Fifo,
    #[cfg_attr(not(unix), allow(dead_code))]
    Socket,
    #[cfg_attr(not(unix), allow(dead_code))]
    Device,
    Other,
}

impl Kind {
    /// What a non-regular file is, for a scan report (`None` for regular files, folders, symlinks).
    pub(crate) fn special(self) -> Option<&'static str> {
        match self {
            Kind::File | Kind::Dir | Kind::Symlink => None,
            Kind::Fifo => Some("a FIFO"),
            Kind::Socket => Some("a socket"),
            Kind::Device => Some("a device"),
            Kind::Other => Some("a special file"),
        }
    }
}

/// A file's type, mtime and size.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Facts {
    pub kind: Kind,
    pub mtime: Option<SystemTime>,
    pub size: u64,
}

/// A file found by [`Root::list`]: its path relative to the vault (never a folder).
#[derive(Debug)]
pub(crate) struct Listed {
    pub rel: PathBuf,
    pub facts: Facts,
}

#[cfg(unix)]
pub(crate) use unix::Root;

#[cfg(unix)]
mod unix {
    use std::collections::VecDeque;
    use std::ffi::OsStr;
    use std::fs::File;
    use std::io::{self, Read};
    use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::path::{Component, Path, PathBuf};
    #[cfg(any(target_os = "linux", target_os = "android"))]
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use rustix::fs::{self as rfs, AtFlags, Mode, OFlags};
    use rustix::io::Errno;

    use super::{Facts, Kind, Listed, ReadFailure, escape};

    /// The lexical components of a vault-relative path.
    fn components(rel: &str) -> Vec<Vec<u8>> {
        rel.split('/').map(|c| c.as_bytes().to_vec()).collect()
    }

    /// Symlinks followed in one resolution at most (Linux's own limit), then ELOOP.
    const MAX_LINKS: u32 = 40;

    /// How a folder on the way is opened: never through a symlink.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    const DIR: OFlags = OFlags::PATH
        .union(OFlags::DIRECTORY)
        .union(OFlags::NOFOLLOW)
        .union(OFlags::CLOEXEC);
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    const DIR: OFlags = OFlags::RDONLY
        .union(OFlags::DIRECTORY)
        .union(OFlags::NOFOLLOW)
        .union(OFlags::CLOEXEC);

    /// A folder opened for listing (`getdents` needs a readable handle).
    const LISTED_DIR: OFlags = OFlags::RDONLY
        .union(OFlags::DIRECTORY)
        .union(OFlags::NOFOLLOW)
        .union(OFlags::CLOEXEC);

    /// The vault's folder, held open; every vault file is reached from it.
    #[derive(Debug)]
    pub(crate) struct Root {
        fd: OwnedFd,
        /// The vault's canonical path: an absolute symlink target under it stays inside.
        path: PathBuf,
        /// Whether `openat2` may be tried (false once the kernel refused it).
        #[cfg(any(target_os = "linux", target_os = "android"))]
        openat2: AtomicBool,
    }

    /// The folder holding a path's last component, open, and that component's name.
    pub(crate) struct Parent<'a> {
        root: &'a Root,
        /// `None`: the vault's folder itself.
        fd: Option<OwnedFd>,
        name: Vec<u8>,
    }

    impl Root {
        /// Opens the vault folder at `path` (canonical: absolute symlinks are compared with it).
        pub(crate) fn open(path: &Path) -> io::Result<Root> {
            let fd = rfs::open(path, DIR.difference(OFlags::NOFOLLOW), Mode::empty())?;
            Ok(Root {
                fd,
                path: path.to_path_buf(),
                #[cfg(any(target_os = "linux", target_os = "android"))]
                openat2: AtomicBool::new(true),
            })
        }

        /// The same root, resolving every path by the walk (as on a kernel without `openat2`).
        #[cfg(test)]
        pub(crate) fn walk_only(self) -> Root {
            #[cfg(any(target_os = "linux", target_os = "android"))]
            self.openat2.store(false, Ordering::Relaxed);
            self
        }

        fn dir<'a>(&'a self, fd: Option<&'a OwnedFd>) -> BorrowedFd<'a> {
            fd.map_or_else(|| self.fd.as_fd(), AsFd::as_fd)
        }

        /// The components of an absolute symlink target, relative to the vault, when the target
        /// names a place under the vault's path; else an escape. The target is canonicalised only
        /// to learn where it points (a vault reached through another path): what comes out is
        /// walked from the handle like any other relative path.
        fn inside(&self, target: &[u8]) -> io::Result<Vec<Vec<u8>>> {
            let abs = Path::new(OsStr::from_bytes(target));
            let rel = match abs.strip_prefix(&self.path) {
                Ok(rel) => rel.to_path_buf(),
                Err(_) => abs
                    .canonicalize()
                    .ok()
                    .and_then(|real| real.strip_prefix(&self.path).ok().map(Path::to_path_buf))
                    .ok_or_else(escape)?,
            };
            Ok(rel
                .components()
                .filter_map(|c| match c {
                    Component::Normal(n) => Some(n.as_bytes().to_vec()),
                    Component::ParentDir => Some(b"..".to_vec()),
                    _ => None,
                })
                .collect())
        }

        /// The components to resolve once a symlink in folder `prefix` (lexical, from the root)
        /// points at `target`, and whether to restart from the root.
        fn expand(&self, target: &[u8]) -> io::Result<(bool, Vec<Vec<u8>>)> {
            if target.first() == Some(&b'/') {
                Ok((true, self.inside(target)?))
            } else if target.is_empty() {
                Err(io::Error::from(Errno::NOENT))
            } else {
                Ok((
                    false,
                    target.split(|b| *b == b'/').map(<[u8]>::to_vec).collect(),
                ))
            }
        }

        /// Opens the folder named by `comps` (from the root), following the symlinks on the way
        /// that stay inside; `None` is the root itself. Creates missing folders when `create`.
        fn folder(
            &self,
            comps: &[Vec<u8>],
            create: bool,
            links: &mut u32,
        ) -> io::Result<Option<OwnedFd>> {
            if comps.is_empty() {
                return Ok(None);
            }
            #[cfg(any(target_os = "linux", target_os = "android"))]
            if self.openat2.load(Ordering::Relaxed)
                && comps.first().is_some_and(|c| c != crate_pkm())
                && comps
                    .iter()
                    .all(|c| !c.is_empty() && c != b"." && c != b".." && !c.contains(&0))
            {
                let joined = comps.join(&b'/');
                match rfs::openat2(
                    &self.fd,
                    joined.as_slice(),
                    DIR,
                    Mode::empty(),
                    rfs::ResolveFlags::BENEATH
                        | rfs::ResolveFlags::NO_SYMLINKS
                        | rfs::ResolveFlags::NO_MAGICLINKS,
                ) {
                    Ok(fd) => return Ok(Some(fd)),
                    Err(Errno::NOSYS | Errno::PERM) => {
                        tracing::debug!(
                            "openat2 unavailable; walking paths component by component"
                        );
                        self.openat2.store(false, Ordering::Relaxed);
                    }
                    Err(Errno::NOENT) if !create => return Err(Errno::NOENT.into()),
                    // A symlink on the way (ELOOP), a concurrent rename (EAGAIN), a folder to
                    // create, or anything else: the walk decides.
                    Err(_) => {}
                }
            }
            let mut stack: Vec<OwnedFd> = Vec::new();
            let mut queue: VecDeque<Vec<u8>> = comps.iter().cloned().collect();
            while let Some(name) = queue.pop_front() {
                match name.as_slice() {
                    b"" | b"." => continue,
                    b".." => {
                        if stack.pop().is_none() {
                            return Err(escape());
                        }
                        continue;
                    }
                    _ => {}
                }
                if stack.is_empty() && is_pkm(&name) {
                    return Err(escape());
                }
                let here = self.dir(stack.last());
                match rfs::openat(here, name.as_slice(), DIR, Mode::empty()) {
                    Ok(fd) => stack.push(fd),
                    Err(Errno::NOENT) if create => {
                        bump(links)?;
                        match rfs::mkdirat(here, name.as_slice(), Mode::from_raw_mode(0o777)) {
                            Ok(()) | Err(Errno::EXIST) => queue.push_front(name),
                            Err(e) => return Err(e.into()),
                        }
                    }
                    Err(e @ (Errno::LOOP | Errno::NOTDIR)) => {
                        let target = match rfs::readlinkat(here, name.as_slice(), Vec::new()) {
                            Ok(t) => t,
                            // Not a symlink: a file where a folder should be.
                            Err(Errno::INVAL) => return Err(e.into()),
                            Err(e) => return Err(e.into()),
                        };
                        bump(links)?;
                        let (absolute, comps) = self.expand(target.as_bytes())?;
                        if absolute {
                            stack.clear();
                        }
                        for c in comps.into_iter().rev() {
                            queue.push_front(c);
                        }
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            Ok(stack.pop())
        }

        /// Runs `op` on the last component of `rel` in its folder's handle. When `op` meets a
        /// symlink there (answers `Ok(None)`), its target is resolved again from the root by the
        /// same rules.
        fn at_last<T, E: From<io::Error>>(
            &self,
            rel: &str,
            mut op: impl FnMut(BorrowedFd<'_>, &[u8]) -> Result<Option<T>, E>,
        ) -> Result<T, E> {
            let mut links = 0u32;
            let mut comps = components(rel);
            loop {
                let (name, prefix) = split_last(&mut comps);
                if prefix.is_empty() && is_pkm(&name) {
                    return Err(escape().into());
                }
                let folder = self.folder(&prefix, false, &mut links)?;
                let here = self.dir(folder.as_ref());
                if let Some(done) = op(here, &name)? {
                    return Ok(done);
                }
                bump(&mut links)?;
                let target = match rfs::readlinkat(here, name.as_slice(), Vec::new()) {
                    Ok(t) => t,
                    // No longer a symlink: look again.
                    Err(Errno::INVAL) => {
                        comps = prefix;
                        comps.push(name);
                        continue;
                    }
                    Err(e) => return Err(io::Error::from(e).into()),
                };
                let (absolute, tail) = self.expand(target.as_bytes())?;
                comps = if absolute { Vec::new() } else { prefix };
                comps.extend(tail);
            }
        }

        /// Reads the regular file at `rel`, with the metadata of the file actually read. A FIFO,
        /// socket or device is refused before it is opened (and the open is non-blocking, and the
        /// opened file checked again, in case one was swapped in between).
        pub(crate) fn read_regular(
            &self,
            rel: &str,
        ) -> Result<(Vec<u8>, std::fs::Metadata), ReadFailure> {
            let mut file = self.at_last(rel, |here, name| {
                let st =
                    rfs::statat(here, name, AtFlags::SYMLINK_NOFOLLOW).map_err(io::Error::from)?;
                match kind_of(&st) {
                    Kind::Symlink => return Ok(None),
                    Kind::File => {}
                    _ => return Err(ReadFailure::NotRegular),
                }
                match rfs::openat(
                    here,
                    name,
                    OFlags::RDONLY
                        | OFlags::NONBLOCK
                        | OFlags::NOFOLLOW
                        | OFlags::NOCTTY
                        | OFlags::CLOEXEC,
                    Mode::empty(),
                ) {
                    Ok(fd) => Ok(Some(File::from(fd))),
                    Err(Errno::LOOP) => Ok(None),
                    Err(e) => Err(io::Error::from(e).into()),
                }
            })?;
            let meta = file.metadata()?;
            if !meta.is_file() {
                return Err(ReadFailure::NotRegular);
            }
            // O_NONBLOCK does not change reads of a regular file.
            let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
            file.read_to_end(&mut bytes)?;
            Ok((bytes, meta))
        }

        /// The type, mtime and size of the file at `rel` (through symlinks that stay inside).
        pub(crate) fn facts(&self, rel: &str) -> io::Result<Facts> {
            self.at_last(rel, |here, name| {
                let facts = facts_of(&rfs::statat(here, name, AtFlags::SYMLINK_NOFOLLOW)?);
                Ok::<_, io::Error>((facts.kind != Kind::Symlink).then_some(facts))
            })
        }

        /// The folder of `rel`'s last component, open (created when `create`), for a write,
        /// rename or delete there; the last component itself is not followed.
        pub(crate) fn parent(&self, rel: &str, create: bool) -> io::Result<Parent<'_>> {
            let mut comps = components(rel);
            let (name, prefix) = split_last(&mut comps);
            if matches!(name.as_slice(), b"" | b"." | b"..") || (prefix.is_empty() && is_pkm(&name))
            {
                return Err(escape());
            }
            let fd = self.folder(&prefix, create, &mut 0)?;
            Ok(Parent {
                root: self,
                fd,
                name,
            })
        }

        /// Removes the file at `rel` (a symlink there itself, not its target).
        pub(crate) fn remove_file(&self, rel: &str) -> io::Result<()> {
            self.parent(rel, false)?.remove(None)
        }

        /// Every file under the vault (not folders), listed from the handle down: a folder is
        /// entered when `descend(its path)` says so, and only through its parent's handle with
        /// `O_NOFOLLOW` (a symlinked folder is listed as a symlink, never entered). Unreadable
        /// folders are passed over.
        pub(crate) fn list(&self, mut descend: impl FnMut(&Path) -> bool) -> Vec<Listed> {
            struct Frame {
                dir: rfs::Dir,
                rel: PathBuf,
                folders: Vec<Vec<u8>>,
            }
            let mut out = Vec::new();
            let mut read = |fd: OwnedFd, rel: PathBuf, out: &mut Vec<Listed>| -> Option<Frame> {
                let mut dir = rfs::Dir::new(fd).ok()?;
                let mut folders = Vec::new();
                let mut files = Vec::new();
                while let Some(Ok(entry)) = dir.read() {
                    let name = entry.file_name().to_bytes();
                    if name == b"." || name == b".." {
                        continue;
                    }
                    match entry.file_type() {
                        rfs::FileType::Directory => folders.push(name.to_vec()),
                        _ => files.push(name.to_vec()),
                    }
                }
                let here = dir.fd().ok()?;
                for name in files {
                    let Ok(st) = rfs::statat(here, name.as_slice(), AtFlags::SYMLINK_NOFOLLOW)
                    else {
                        continue;
                    };
                    let facts = facts_of(&st);
                    if facts.kind == Kind::Dir {
                        // A file system that does not give entry types.
                        folders.push(name);
                        continue;
                    }
                    out.push(Listed {
                        rel: rel.join(OsStr::from_bytes(&name)),
                        facts,
                    });
                }
                folders.retain(|name| descend(&rel.join(OsStr::from_bytes(name))));
                Some(Frame { dir, rel, folders })
            };
            let Ok(top) = rfs::openat(&self.fd, ".", LISTED_DIR, Mode::empty()) else {
                return out;
            };
            let mut stack: Vec<Frame> = read(top, PathBuf::new(), &mut out).into_iter().collect();
            while let Some(frame) = stack.last_mut() {
                let Some(name) = frame.folders.pop() else {
                    stack.pop();
                    continue;
                };
                let rel = frame.rel.join(OsStr::from_bytes(&name));
                let Ok(here) = frame.dir.fd() else { continue };
                // A folder swapped for a symlink since it was listed: ELOOP/ENOTDIR, passed over.
                if let Ok(fd) = rfs::openat(here, name.as_slice(), LISTED_DIR, Mode::empty())
                    && let Some(next) = read(fd, rel, &mut out)
                {
                    stack.push(next);
                }
            }
            out
        }
    }

    impl Parent<'_> {
        fn here(&self) -> BorrowedFd<'_> {
            self.root.dir(self.fd.as_ref())
        }

        /// The last component's name.
        pub(crate) fn name(&self) -> &OsStr {
            OsStr::from_bytes(&self.name)
        }

        /// Creates `name` in this folder, failing if anything (a symlink too) is there.
        pub(crate) fn create_new(&self, name: &OsStr) -> io::Result<File> {
            let fd = rfs::openat(
                self.here(),
                name,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o666),
            )?;
            Ok(File::from(fd))
        }

        /// Renames `from` (in this folder) over the last component.
        pub(crate) fn rename_over(&self, from: &OsStr) -> io::Result<()> {
            Ok(rfs::renameat(
                self.here(),
                from,
                self.here(),
                self.name.as_slice(),
            )?)
        }

        /// Removes `name` in this folder (the last component when `None`).
        pub(crate) fn remove(&self, name: Option<&OsStr>) -> io::Result<()> {
            let name = name.unwrap_or_else(|| self.name());
            Ok(rfs::unlinkat(self.here(), name, AtFlags::empty())?)
        }

        /// Removes the last component when it is an empty folder (not a symlink to one).
        pub(crate) fn remove_dir(&self) -> io::Result<()> {
            Ok(rfs::unlinkat(
                self.here(),
                self.name.as_slice(),
                AtFlags::REMOVEDIR,
            )?)
        }

        /// Flushes this folder's entries to disk.
        pub(crate) fn sync(&self) -> io::Result<()> {
            let fd = rfs::openat(self.here(), ".", LISTED_DIR, Mode::empty())?;
            Ok(rfs::fsync(fd)?)
        }
    }

    fn crate_pkm() -> &'static [u8] {
        pkm_core::vault::PKM_DIR.as_bytes()
    }

    /// Whether a component at the vault's top names `.pkm/`: byte for byte on Linux; ignoring
    /// ASCII case on macOS, whose file systems are case-insensitive by default (`.PKM` is
    /// `.pkm` there).
    fn is_pkm(name: &[u8]) -> bool {
        if cfg!(target_vendor = "apple") {
            name.eq_ignore_ascii_case(crate_pkm())
        } else {
            name == crate_pkm()
        }
    }

    fn bump(links: &mut u32) -> io::Result<()> {
        *links += 1;
        if *links > MAX_LINKS {
            return Err(Errno::LOOP.into());
        }
        Ok(())
    }

    /// Splits off the last non-empty component; a path ending in `/`, `.` or `..` names a folder,
    /// whose entry `.` is then the last component.
    fn split_last(comps: &mut Vec<Vec<u8>>) -> (Vec<u8>, Vec<Vec<u8>>) {
        let mut prefix = std::mem::take(comps);
        match prefix.pop() {
            Some(last) if !matches!(last.as_slice(), b"" | b"." | b"..") => (last, prefix),
            Some(last) => {
                prefix.push(last);
                (b".".to_vec(), prefix)
            }
            None => (b".".to_vec(), prefix),
        }
    }

    fn kind_of(st: &rfs::Stat) -> Kind {
        facts_of(st).kind
    }

    #[allow(clippy::unnecessary_cast)] // the field types differ between platforms
    fn facts_of(st: &rfs::Stat) -> Facts {
        let kind = match rfs::FileType::from_raw_mode(st.st_mode as rfs::RawMode) {
            rfs::FileType::RegularFile => Kind::File,
            rfs::FileType::Directory => Kind::Dir,
            rfs::FileType::Symlink => Kind::Symlink,
            rfs::FileType::Fifo => Kind::Fifo,
            rfs::FileType::Socket => Kind::Socket,
            rfs::FileType::CharacterDevice | rfs::FileType::BlockDevice => Kind::Device,
            _ => Kind::Other,
        };
        let secs = st.st_mtime as i64;
        let nanos = st.st_mtime_nsec as u32;
        // As std's `Metadata::modified` reads the same fields.
        let mtime = if secs >= 0 {
            UNIX_EPOCH.checked_add(Duration::new(secs.unsigned_abs(), nanos))
        } else {
            UNIX_EPOCH
                .checked_sub(Duration::from_secs(secs.unsigned_abs()))
                .and_then(|t: SystemTime| t.checked_add(Duration::from_nanos(u64::from(nanos))))
        };
        Facts {
            kind,
            mtime,
            size: u64::try_from(st.st_size as i64).unwrap_or(0),
        }
    }
}

/// On Windows (and any other non-Unix target) there are no handle-relative calls to build on:
/// paths are opened whole, after the same checks made by path. `VaultPath::parse` has already
/// refused names Windows cannot hold (`pkm_core::path::windows_name_problem`); here every folder
/// on the way, and the file itself, is looked at without following it, and a symbolic link or
/// junction among them (a name-surrogate reparse point; OneDrive's placeholders are not) must
/// resolve to a place inside the vault and outside `.pkm/`, else the path is refused as an
/// escape. Unlike the Unix walk, a swap between this check and the open is not excluded.
///
/// A rename over a note another program holds open (editors, indexers and virus scanners do
/// on Windows) fails with a sharing violation or access denied while it does: the rename and the
/// delete are retried with a short backoff before the error is given.
#[cfg(not(unix))]
pub(crate) use other::Root;

#[cfg(not(unix))]
mod other {
    use std::ffi::{OsStr, OsString};
    use std::fs::File;
    use std::io::{self, Read};
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    use super::{Facts, Kind, Listed, ReadFailure, escape};

    /// The waits between the tries of a rename or delete refused because another program holds
    /// the file: 10 ms doubling, about 1.3 s in all.
    const BUSY_BACKOFF: [u64; 7] = [10, 20, 40, 80, 160, 320, 640];

    /// Whether `e` says another program holds the file open (`ERROR_ACCESS_DENIED` 5,
    /// `ERROR_SHARING_VIOLATION` 32, `ERROR_LOCK_VIOLATION` 33).
    fn busy(e: &io::Error) -> bool {
        matches!(e.raw_os_error(), Some(5 | 32 | 33)) || e.kind() == io::ErrorKind::PermissionDenied
    }

    /// Runs `op`, again after each wait of [`BUSY_BACKOFF`] while it fails with [`busy`].
    pub(super) fn retry_busy<T>(mut op: impl FnMut() -> io::Result<T>) -> io::Result<T> {
        let mut waits = BUSY_BACKOFF.iter();
        loop {
            match op() {
                Err(e) if busy(&e) => match waits.next() {
                    Some(ms) => std::thread::sleep(Duration::from_millis(*ms)),
                    None => return Err(e),
                },
                done => return done,
            }
        }
    }

    #[derive(Debug)]
    pub(crate) struct Root {
        path: PathBuf,
    }

    pub(crate) struct Parent<'a> {
        _root: &'a Root,
        dir: PathBuf,
        name: OsString,
    }

    fn facts_of(meta: &std::fs::Metadata) -> Facts {
        let ft = meta.file_type();
        let kind = if ft.is_symlink() {
            Kind::Symlink
        } else if ft.is_dir() {
            Kind::Dir
        } else if ft.is_file() {
            Kind::File
        } else {
            Kind::Other
        };
        Facts {
            kind,
            mtime: meta.modified().ok(),
            size: meta.len(),
        }
    }

    impl Root {
        pub(crate) fn open(path: &Path) -> io::Result<Root> {
            Ok(Root {
                path: path.to_path_buf(),
            })
        }

        /// `rel` under the vault, checked: no empty, `.` or `..` segment, not in `.pkm/`, and
        /// every link or junction on the way (the last component too when `last`) resolving
        /// inside the vault and outside `.pkm/`.
        fn checked(&self, rel: &str, last: bool) -> io::Result<PathBuf> {
            let segs: Vec<&str> = rel.split('/').collect();
            if segs
                .iter()
                .any(|c| c.is_empty() || *c == "." || *c == ".." || c.contains('\\'))
                || segs
                    .first()
                    .is_some_and(|c| c.eq_ignore_ascii_case(pkm_core::vault::PKM_DIR))
            {
                return Err(escape());
            }
            let pkm = self.path.join(pkm_core::vault::PKM_DIR);
            let mut abs = self.path.clone();
            let walked = if last { segs.len() } else { segs.len() - 1 };
            for (i, seg) in segs.iter().enumerate() {
                abs.push(seg);
                if i >= walked {
                    continue;
                }
                match std::fs::symlink_metadata(&abs) {
                    Ok(meta) if meta.file_type().is_symlink() => {
                        let real = abs.canonicalize().map_err(|_| escape())?;
                        if !real.starts_with(&self.path) || real.starts_with(&pkm) {
                            return Err(escape());
                        }
                    }
                    // Missing from here on: nothing to follow.
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        for rest in &segs[i + 1..] {
                            abs.push(rest);
                        }
                        break;
                    }
                    _ => {}
                }
            }
            Ok(abs)
        }

        pub(crate) fn read_regular(
            &self,
            rel: &str,
        ) -> Result<(Vec<u8>, std::fs::Metadata), ReadFailure> {
            let abs = self.checked(rel, true)?;
            if !std::fs::metadata(&abs)?.is_file() {
                return Err(ReadFailure::NotRegular);
            }
            let mut file = File::open(&abs)?;
            let meta = file.metadata()?;
            if !meta.is_file() {
                return Err(ReadFailure::NotRegular);
            }
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)?;
            Ok((bytes, meta))
        }

        pub(crate) fn facts(&self, rel: &str) -> io::Result<Facts> {
            Ok(facts_of(&std::fs::metadata(self.checked(rel, true)?)?))
        }

        pub(crate) fn parent(&self, rel: &str, create: bool) -> io::Result<Parent<'_>> {
            let abs = self.checked(rel, false)?;
            let dir = abs.parent().ok_or_else(escape)?.to_path_buf();
            let name = abs.file_name().ok_or_else(escape)?.to_os_string();
            if create {
                std::fs::create_dir_all(&dir)?;
                // A folder created meanwhile through a link: look again.
                self.checked(rel, false)?;
            }
            Ok(Parent {
                _root: self,
                dir,
                name,
            })
        }

        pub(crate) fn remove_file(&self, rel: &str) -> io::Result<()> {
            let abs = self.checked(rel, false)?;
            retry_busy(|| std::fs::remove_file(&abs))
        }

        pub(crate) fn list(&self, mut descend: impl FnMut(&Path) -> bool) -> Vec<Listed> {
            let mut out = Vec::new();
            let mut todo = vec![PathBuf::new()];
            while let Some(rel) = todo.pop() {
                let Ok(entries) = std::fs::read_dir(self.path.join(&rel)) else {
                    continue;
                };
                for entry in entries.flatten() {
                    let child = rel.join(entry.file_name());
                    let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
                        continue;
                    };
                    let facts = facts_of(&meta);
                    if facts.kind == Kind::Dir {
                        if descend(&child) {
                            todo.push(child);
                        }
                    } else {
                        out.push(Listed { rel: child, facts });
                    }
                }
            }
            out
        }
    }

    impl Parent<'_> {
        pub(crate) fn name(&self) -> &OsStr {
            &self.name
        }
        pub(crate) fn create_new(&self, name: &OsStr) -> io::Result<File> {
            File::options()
                .write(true)
                .create_new(true)
                .open(self.dir.join(name))
        }
        /// Renames `from` over the last component, retrying while another program holds it.
        pub(crate) fn rename_over(&self, from: &OsStr) -> io::Result<()> {
            let (from, to) = (self.dir.join(from), self.dir.join(&self.name));
            retry_busy(|| std::fs::rename(&from, &to))
        }
        pub(crate) fn remove(&self, name: Option<&OsStr>) -> io::Result<()> {
            let path = self.dir.join(name.unwrap_or(&self.name));
            retry_busy(|| std::fs::remove_file(&path))
        }
        pub(crate) fn remove_dir(&self) -> io::Result<()> {
            std::fs::remove_dir(self.dir.join(&self.name))
        }
        /// Windows cannot flush a folder's entries through std: the rename is made durable by
        /// the file system's own journal.
        pub(crate) fn sync(&self) -> io::Result<()> {
            Ok(())
        }
    }
}

/// The path shown for a listed file: vault-relative, `/`-separated.
pub(crate) fn shown(rel: &Path) -> String {
    rel.to_string_lossy().replace('\\', "/")
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use std::os::unix::fs::symlink;
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::read_failure::is_escape;

    /// A vault folder and an outside folder holding `secret.md`, side by side.
    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (vault, outside) = (base.join("vault"), base.join("outside"));
        std::fs::create_dir_all(vault.join("inside")).unwrap();
        std::fs::create_dir_all(vault.join(".pkm")).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("secret.md"), "secret").unwrap();
        std::fs::write(vault.join("inside/ok.md"), "ok").unwrap();
        std::fs::write(vault.join(".pkm/state.md"), "state").unwrap();
        (dir, vault, outside)
    }

    fn read(root: &Root, rel: &str) -> Result<String, String> {
        match root.read_regular(rel) {
            Ok((bytes, _)) => Ok(String::from_utf8(bytes).unwrap()),
            Err(ReadFailure::Escapes) => Err("escapes".into()),
            Err(ReadFailure::NotRegular) => Err("not regular".into()),
            Err(ReadFailure::Io(e)) => Err(format!("{:?}", e.kind())),
        }
    }

    fn files(dir: &Path) -> Vec<String> {
        let mut out: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        out.sort();
        out
    }

    #[test]
    fn reads_a_regular_file_and_refuses_a_folder() {
        let (_d, vault, _) = setup();
        for root in [
            Root::open(&vault).unwrap(),
            Root::open(&vault).unwrap().walk_only(),
        ] {
            assert_eq!(read(&root, "inside/ok.md"), Ok("ok".into()));
            assert_eq!(read(&root, "inside"), Err("not regular".into()));
            assert_eq!(read(&root, "inside/nope.md"), Err("NotFound".into()));
            assert_eq!(read(&root, "nope/nope.md"), Err("NotFound".into()));
            assert_eq!(
                read(&root, "inside/ok.md/x.md"),
                Err("NotADirectory".into())
            );
            let folder = root.parent("a/b/c.md", true).unwrap();
            folder.create_new(std::ffi::OsStr::new("c.md")).unwrap();
            folder.sync().unwrap();
            assert!(vault.join("a/b/c.md").is_file());
            root.remove_file("a/b/c.md").unwrap();
            root.parent("a/b", false).unwrap().remove_dir().unwrap();
            root.parent("a", false).unwrap().remove_dir().unwrap();
            assert!(!vault.join("a").exists());
        }
    }

    #[test]
    fn refuses_a_fifo_without_blocking() {
        let (_d, vault, _) = setup();
        let made = std::process::Command::new("mkfifo")
            .arg(vault.join("inside/x.md"))
            .status()
            .unwrap();
        assert!(made.success());
        symlink("inside/x.md", vault.join("pipe.md")).unwrap();
        let root = Root::open(&vault).unwrap();
        assert_eq!(read(&root, "inside/x.md"), Err("not regular".into()));
        assert_eq!(read(&root, "pipe.md"), Err("not regular".into()));
        let listed = root.list(|_| true);
        let fifo = listed
            .iter()
            .find(|l| l.rel == Path::new("inside/x.md"))
            .unwrap();
        assert_eq!(fifo.facts.kind.special(), Some("a FIFO"));
    }

    #[test]
    fn symlinks_leading_out_are_refused() {
        let (_d, vault, outside) = setup();
        symlink(&outside, vault.join("abs")).unwrap();
        symlink("../outside", vault.join("rel")).unwrap();
        symlink(outside.join("secret.md"), vault.join("leak.md")).unwrap();
        symlink("../../outside/secret.md", vault.join("inside/leak.md")).unwrap();
        symlink("/etc", vault.join("etc")).unwrap();
        let root = Root::open(&vault).unwrap();
        for rel in [
            "abs/secret.md",
            "rel/secret.md",
            "leak.md",
            "inside/leak.md",
            "../outside/secret.md",
            "inside/../../outside/secret.md",
            "etc/hostname",
        ] {
            assert_eq!(read(&root, rel), Err("escapes".into()), "{rel}");
            assert!(root.facts(rel).is_err_and(|e| is_escape(&e)), "{rel}");
        }
        // Nothing is written, created or removed through them.
        for rel in ["abs/new.md", "rel/sub/new.md", "rel/secret.md"] {
            assert!(
                root.parent(rel, true).is_err_and(|e| is_escape(&e)),
                "{rel}"
            );
        }
        assert!(
            root.remove_file("abs/secret.md")
                .is_err_and(|e| is_escape(&e))
        );
        assert_eq!(files(&outside), ["secret.md"]);
    }

    #[test]
    fn the_state_folder_is_out_of_reach() {
        let (_d, vault, _) = setup();
        symlink(".pkm", vault.join("state")).unwrap();
        symlink(".pkm/state.md", vault.join("state.md")).unwrap();
        symlink(vault.join(".pkm"), vault.join("inside/abs")).unwrap();
        let root = Root::open(&vault).unwrap();
        for rel in ["state/state.md", "state.md", "inside/abs/state.md"] {
            assert_eq!(read(&root, rel), Err("escapes".into()), "{rel}");
        }
        assert!(
            root.parent("state/new.md", true)
                .is_err_and(|e| is_escape(&e))
        );
    }

    #[test]
    fn symlinks_staying_inside_keep_working() {
        let (_d, vault, _) = setup();
        symlink("inside", vault.join("alias")).unwrap();
        symlink(vault.join("inside"), vault.join("absalias")).unwrap();
        symlink("inside/ok.md", vault.join("rel.md")).unwrap();
        symlink(vault.join("inside/ok.md"), vault.join("abs.md")).unwrap();
        symlink("../rel.md", vault.join("inside/chain.md")).unwrap();
        std::fs::create_dir(vault.join("inside/deeper")).unwrap();
        symlink("..", vault.join("inside/deeper/up")).unwrap();
        let root = Root::open(&vault).unwrap();
        for rel in [
            "alias/ok.md",
            "absalias/ok.md",
            "rel.md",
            "abs.md",
            "inside/chain.md",
            "alias/chain.md",
            "inside/deeper/up/ok.md",
            "inside/deeper/../ok.md",
        ] {
            assert_eq!(read(&root, rel), Ok("ok".into()), "{rel}");
        }
        // A write through a folder symlink lands in the folder it names.
        let folder = root.parent("alias/new/note.md", true).unwrap();
        let mut f = folder.create_new(std::ffi::OsStr::new("note.md")).unwrap();
        std::io::Write::write_all(&mut f, b"new").unwrap();
        assert_eq!(
            std::fs::read_to_string(vault.join("inside/new/note.md")).unwrap(),
            "new"
        );
    }

    #[test]
    fn a_symlink_loop_ends() {
        let (_d, vault, _) = setup();
        symlink("b.md", vault.join("a.md")).unwrap();
        symlink("a.md", vault.join("b.md")).unwrap();
        symlink("loop", vault.join("loop")).unwrap();
        let root = Root::open(&vault).unwrap();
        assert!(root.read_regular("a.md").is_err());
        assert!(root.read_regular("loop/x.md").is_err());
    }

    #[test]
    fn the_listing_never_enters_a_symlinked_folder() {
        let (_d, vault, outside) = setup();
        symlink(&outside, vault.join("out")).unwrap();
        symlink("inside", vault.join("alias")).unwrap();
        let root = Root::open(&vault).unwrap();
        let mut listed: Vec<(String, Kind)> = root
            .list(|rel| rel != Path::new(".pkm"))
            .into_iter()
            .map(|l| (shown(&l.rel), l.facts.kind))
            .collect();
        listed.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            listed,
            [
                ("alias".to_owned(), Kind::Symlink),
                ("inside/ok.md".to_owned(), Kind::File),
                ("out".to_owned(), Kind::Symlink),
            ]
        );
        let std_mtime = std::fs::metadata(vault.join("inside/ok.md"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(root.facts("inside/ok.md").unwrap().mtime, Some(std_mtime));
    }
}
