//! The leader's local channel, each platform's way: the only place that knows how the processes
//! sharing a vault reach each other (ADR-0007), so the only module here with `cfg` for it.
//!
//! - Unix (Linux, macOS): a Unix socket, `.pkm/leader.sock`, mode 0600 in an owner-only folder
//!   when it has to live outside the vault; both ends check that the peer runs as the same user
//!   (`SO_PEERCRED` on Linux, `LOCAL_PEERCRED` on macOS, through `interprocess`).
//! - Windows: a named pipe, `\\.\pipe\stratum-mcp-<hash of the vault's path and the user>`, whose
//!   DACL grants access to its owner (the user who started the leader) and to the system only.
//!   Windows has no peer-user check on a pipe short of token calls; the DACL is the check.
//!
//! What crosses the channel is the same everywhere (`wire.rs`): lines of JSON on a byte stream.

use pkm_core::Vault;

/// A short name for `vault` (and, where the channel's namespace is shared by all users, the user):
/// the first 12 bytes of a SHA-256, in hex.
fn digest_name(vault: &Vault, extra: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(vault.root().as_os_str().as_encoded_bytes());
    h.update(extra.as_bytes());
    h.finalize()
        .iter()
        .take(12)
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub(crate) use imp::{Address, Conn, Listener, connect};

#[cfg(unix)]
mod imp {
    use std::fmt;
    use std::io;
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::net::{UnixListener, UnixStream};
    use std::path::{Path, PathBuf};

    use interprocess::local_socket::traits::StreamCommon;
    use pkm_core::Vault;

    use super::digest_name;

    /// `sockaddr_un` holds 104 (macOS) or 108 (Linux) bytes; longer socket paths go to the
    /// runtime folder instead.
    const MAX_SOCKET_PATH: usize = 100;

    pub(crate) type Conn = UnixStream;

    /// Where the leader of a vault listens: the socket's path.
    #[derive(Debug, Clone)]
    pub(crate) struct Address(PathBuf);

    impl Address {
        /// `.pkm/leader.sock`, or, when that path is too long for a Unix socket, a file named
        /// after the vault in the user's runtime folder.
        pub(crate) fn of(vault: &Vault) -> Address {
            let inside = vault.pkm_dir().join("leader.sock");
            if inside.as_os_str().len() <= MAX_SOCKET_PATH {
                return Address(inside);
            }
            Address(runtime_dir().join(format!("{}.sock", digest_name(vault, ""))))
        }
    }

    impl fmt::Display for Address {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "{}", self.0.display())
        }
    }

    fn runtime_dir() -> PathBuf {
        std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .filter(|p| p.is_dir())
            .unwrap_or_else(|| {
                std::env::temp_dir().join(format!(
                    "stratum-mcp-{}",
                    rustix::process::getuid().as_raw()
                ))
            })
    }

    /// Whether the process at the other end runs as this process's user.
    fn same_user(conn: &UnixStream) -> bool {
        let Ok(dup) = conn.try_clone() else {
            return false;
        };
        interprocess::os::unix::uds_local_socket::Stream::from(dup)
            .peer_creds()
            .ok()
            .and_then(|c| c.euid())
            == Some(rustix::process::getuid().as_raw())
    }

    pub(crate) struct Listener(UnixListener);

    impl Listener {
        /// Binds the socket, replacing one a dead leader left. Bound under a private name, made
        /// owner-only, then renamed over whatever was there: the socket is never reachable with
        /// looser permissions.
        pub(crate) fn bind(address: &Address) -> io::Result<Listener> {
            let path: &Path = &address.0;
            let dir = path
                .parent()
                .ok_or_else(|| io::Error::other("socket path has no folder"))?;
            if !dir.exists() {
                std::fs::create_dir_all(dir)?;
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
            }
            let tmp = dir.join(format!(
                ".{}.{}",
                path.file_name()
                    .map(|n| n.to_string_lossy())
                    .unwrap_or_default(),
                std::process::id()
            ));
            let _ = std::fs::remove_file(&tmp);
            let listener = UnixListener::bind(&tmp)?;
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))?;
            std::fs::rename(&tmp, path)?;
            Ok(Listener(listener))
        }

        /// The next connection from a process of the same user; others are refused and logged.
        pub(crate) fn accept(&self) -> io::Result<Conn> {
            loop {
                let (conn, _) = self.0.accept()?;
                if same_user(&conn) {
                    return Ok(conn);
                }
                tracing::warn!("refused a local connection from another user");
            }
        }
    }

    /// Connects to the leader; refuses a socket that belongs to another user.
    pub(crate) fn connect(address: &Address) -> io::Result<Conn> {
        let conn = UnixStream::connect(&address.0)?;
        if !same_user(&conn) {
            tracing::error!(socket = %address, "the vault's socket belongs to another user");
            return Err(io::Error::from(io::ErrorKind::PermissionDenied));
        }
        Ok(conn)
    }
}

#[cfg(windows)]
mod imp {
    use std::fmt;
    use std::io;

    use interprocess::TryClone;
    use interprocess::local_socket::traits::{Listener as _, Stream as _};
    use interprocess::local_socket::{GenericNamespaced, ListenerOptions, Stream, ToNsName};
    use interprocess::os::windows::local_socket::ListenerOptionsExt;
    use interprocess::os::windows::security_descriptor::SecurityDescriptor;
    use pkm_core::Vault;

    use super::digest_name;

    /// The pipe's security descriptor: a protected DACL (no inherited entries) granting all
    /// access to the pipe's owner (`OW`, the user whose process created it) and to the system
    /// (`SY`), and nothing to anyone else.
    const SDDL: &str = "D:P(A;;GA;;;OW)(A;;GA;;;SY)";

    /// A connection to or from the leader: a named pipe's client or server end.
    pub(crate) struct Conn(Stream);

    impl Conn {
        pub(crate) fn try_clone(&self) -> io::Result<Conn> {
            self.0.try_clone().map(Conn)
        }
    }

    impl io::Read for Conn {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.0.read(buf)
        }
    }

    impl io::Write for Conn {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.write(buf)
        }
        fn flush(&mut self) -> io::Result<()> {
            self.0.flush()
        }
    }

    impl io::Write for &Conn {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            (&self.0).write(buf)
        }
        fn flush(&mut self) -> io::Result<()> {
            (&self.0).flush()
        }
    }

    /// Where the leader of a vault listens: the pipe's name without `\\.\pipe\`.
    #[derive(Debug, Clone)]
    pub(crate) struct Address(String);

    impl Address {
        /// The pipe namespace is shared by every user of the machine: the name holds the user's
        /// name too, so two users serving the same folder never meet.
        pub(crate) fn of(vault: &Vault) -> Address {
            let user = std::env::var("USERNAME").unwrap_or_default();
            Address(format!("stratum-mcp-{}", digest_name(vault, &user)))
        }
    }

    impl fmt::Display for Address {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, r"\\.\pipe\{}", self.0)
        }
    }

    pub(crate) struct Listener(interprocess::local_socket::Listener);

    fn security_descriptor() -> io::Result<SecurityDescriptor> {
        let sddl = widestring::U16CString::from_str(SDDL).map_err(io::Error::other)?;
        SecurityDescriptor::deserialize(&sddl)
    }

    impl Listener {
        /// Creates the pipe's first instance (a pipe of that name held by a live process makes
        /// this fail; a dead leader's pipe is gone with it).
        pub(crate) fn bind(address: &Address) -> io::Result<Listener> {
            let name = address.0.as_str().to_ns_name::<GenericNamespaced>()?;
            let options = ListenerOptions::new().name(name);
            let options = match security_descriptor() {
                Ok(sd) => options.security_descriptor(sd),
                Err(e) => {
                    // The default DACL of a pipe still gives write access (which a client
                    // needs) to its creator, the administrators and the system only.
                    tracing::warn!(error = %e, "cannot build the pipe's DACL; using the default one");
                    options
                }
            };
            options.create_sync().map(Listener)
        }

        /// The next connection (the DACL admits only this user's processes).
        pub(crate) fn accept(&self) -> io::Result<Conn> {
            self.0.accept().map(Conn)
        }
    }

    /// Connects to the leader's pipe.
    pub(crate) fn connect(address: &Address) -> io::Result<Conn> {
        let name = address.0.as_str().to_ns_name::<GenericNamespaced>()?;
        Stream::connect(name).map(Conn)
    }
}
