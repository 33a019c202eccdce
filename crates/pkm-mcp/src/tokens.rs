//! Personal access tokens (contract §7.1, ADR-0013 "Tokens"): 43-character base64url
//! strings from 256 bits of OS randomness, shown once, stored only as SHA-256 hashes in
//! `<vault>/.pkm/mcp-tokens.json` (or `--token-store`). Several may be valid at once (rotation).
//! A running server re-reads the file when it changes, so `token revoke` takes effect on the next
//! request.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::scope::Scope;

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("cannot read the token store {0}: {1}")]
    Read(String, std::io::Error),
    #[error("the token store {0} is not valid JSON: {1}")]
    Corrupt(String, serde_json::Error),
    #[error("cannot write the token store {0}: {1}")]
    Write(String, std::io::Error),
    #[error("a token named {0:?} already exists; revoke it first or pick another name")]
    Duplicate(String),
    #[error("no token named {0:?}")]
    Unknown(String),
    #[error("token names are 1-64 characters of letters, digits, '-', '_' and '.'")]
    BadName,
    #[error("the operating system's random source failed")]
    Random,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TokenRecord {
    pub name: String,
    /// Lower-case hex SHA-256 of the token.
    pub sha256: String,
    pub scopes: Vec<String>,
    pub created_at: String,
    /// The vaults the token may use when a server serves several (`--vault-access`); absent:
    /// every vault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vaults: Option<Vec<String>>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct StoreFile {
    version: u32,
    tokens: Vec<TokenRecord>,
}

/// The token file.
#[derive(Debug, Clone)]
pub struct TokenStore {
    path: PathBuf,
}

fn hash_hex(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl TokenStore {
    pub fn new(path: impl Into<PathBuf>) -> TokenStore {
        TokenStore { path: path.into() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn load(&self) -> Result<StoreFile, TokenError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| TokenError::Corrupt(self.path.display().to_string(), e)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(StoreFile {
                version: 1,
                tokens: Vec::new(),
            }),
            Err(e) => Err(TokenError::Read(self.path.display().to_string(), e)),
        }
    }

    fn save(&self, file: &StoreFile) -> Result<(), TokenError> {
        let shown = self.path.display().to_string();
        let dir = self
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| TokenError::Write(shown.clone(), e))?;
        let bytes =
            serde_json::to_vec_pretty(file).map_err(|e| TokenError::Corrupt(shown.clone(), e))?;
        let tmp = dir.join(format!(".mcp-tokens.{}.tmp", uuid::Uuid::new_v4().simple()));
        let write = || -> std::io::Result<()> {
            use std::io::Write;
            let mut opts = std::fs::File::options();
            opts.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
            let mut f = opts.open(&tmp)?;
            f.write_all(&bytes)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &self.path)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            TokenError::Write(shown, e)
        })
    }

    /// Creates a token for every vault and returns its plaintext, which is not stored anywhere.
    pub fn create(&self, name: &str, scopes: &[Scope]) -> Result<String, TokenError> {
        self.create_with_access(name, scopes, None)
    }

    /// Creates a token that may use only `vaults` (every vault when `None`) of a server that
    /// serves several, and returns its plaintext.
    pub fn create_with_access(
        &self,
        name: &str,
        scopes: &[Scope],
        vaults: Option<&[String]>,
    ) -> Result<String, TokenError> {
        let valid_name = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        if !valid_name {
            return Err(TokenError::BadName);
        }
        let mut file = self.load()?;
        if file.tokens.iter().any(|t| t.name == name) {
            return Err(TokenError::Duplicate(name.to_owned()));
        }
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|_| TokenError::Random)?;
        let token = URL_SAFE_NO_PAD.encode(bytes);
        file.version = 1;
        file.tokens.push(TokenRecord {
            name: name.to_owned(),
            sha256: hash_hex(&token),
            scopes: scopes.iter().map(|s| s.as_str().to_owned()).collect(),
            created_at: pkm_core::time::now_rfc3339(),
            vaults: vaults.map(<[String]>::to_vec),
        });
        self.save(&file)?;
        Ok(token)
    }

    pub fn list(&self) -> Result<Vec<TokenRecord>, TokenError> {
        Ok(self.load()?.tokens)
    }

    /// Removes the token named `name`; returns its hash (what a fleet's Redis is told).
    pub fn revoke(&self, name: &str) -> Result<String, TokenError> {
        let mut file = self.load()?;
        let Some(at) = file.tokens.iter().position(|t| t.name == name) else {
            return Err(TokenError::Unknown(name.to_owned()));
        };
        let gone = file.tokens.remove(at);
        self.save(&file)?;
        Ok(gone.sha256)
    }
}

/// What kind of bearer a principal presented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential {
    /// A personal access token of the token store; the principal is named after the token.
    Pat,
    /// A JWT access token of the `--oauth-issuer`; the principal is named by its `sub` claim.
    OAuth,
}

/// An authenticated caller: its name (for logs, session binding and rate-limit keys), scopes,
/// and what it presented.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub name: String,
    pub scopes: Vec<Scope>,
    pub credential: Credential,
    /// The vaults it may use when a server serves several; `None`: every vault.
    pub vaults: Option<Vec<String>>,
}

impl Principal {
    /// The key of the caller's rate-limit buckets and sessions: a token name and a subject live
    /// in different name spaces.
    pub fn key(&self) -> String {
        match self.credential {
            Credential::Pat => format!("token:{}", self.name),
            Credential::OAuth => format!("sub:{}", self.name),
        }
    }

    /// Whether it may use the vault served under `name`.
    pub fn may_use(&self, name: &str) -> bool {
        self.vaults
            .as_ref()
            .is_none_or(|vaults| vaults.iter().any(|v| v == name))
    }
}

/// The token file's (mtime, size) when last read, and its records.
type Cached = Option<(Option<(SystemTime, u64)>, Vec<TokenRecord>)>;

/// Checks presented tokens against the store, re-reading it when its mtime or size changes.
pub struct TokenVerifier {
    store: TokenStore,
    cache: Mutex<Cached>,
    /// Hashes of tokens revoked elsewhere in a fleet: refused even while this store holds them.
    denied: Mutex<HashSet<String>>,
}

impl TokenVerifier {
    pub fn new(store: TokenStore) -> TokenVerifier {
        TokenVerifier {
            store,
            cache: Mutex::new(None),
            denied: Mutex::new(HashSet::new()),
        }
    }

    /// Refuses the tokens with these hashes from now on (revoked on another host of a fleet).
    pub fn deny(&self, hashes: HashSet<String>) {
        *self.denied.lock() = hashes;
    }

    /// The hashes of the tokens in the store, or `None` when there is no readable store file
    /// (a missing or unreadable file revokes nothing).
    pub fn stored_hashes(&self) -> Option<HashSet<String>> {
        if !self.store.path().is_file() {
            return None;
        }
        let records = self.store.list().ok()?;
        Some(records.into_iter().map(|r| r.sha256).collect())
    }

    fn records(&self) -> Vec<TokenRecord> {
        let stamp = std::fs::metadata(self.store.path())
            .ok()
            .and_then(|m| Some((m.modified().ok()?, m.len())));
        let mut cache = self.cache.lock();
        if let Some((s, recs)) = cache.as_ref()
            && *s == stamp
        {
            return recs.clone();
        }
        let recs = match self.store.list() {
            Ok(r) => r,
            Err(e) => {
                // Fail closed: an unreadable store authenticates nobody.
                tracing::error!(error = %e, "token store unreadable; rejecting every token");
                Vec::new()
            }
        };
        *cache = Some((stamp, recs.clone()));
        recs
    }

    /// The principal a token belongs to. Every stored hash is compared in constant time.
    pub fn verify(&self, token: &str) -> Option<Principal> {
        let presented = hash_hex(token.trim());
        if self.denied.lock().contains(&presented) {
            return None;
        }
        let mut found = None;
        for rec in self.records() {
            if bool::from(rec.sha256.as_bytes().ct_eq(presented.as_bytes())) {
                found = Some(Principal {
                    scopes: rec.scopes.iter().filter_map(|s| s.parse().ok()).collect(),
                    name: rec.name,
                    credential: Credential::Pat,
                    vaults: rec.vaults,
                });
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_verify_revoke() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::new(dir.path().join("t.json"));
        let a = store.create("laptop", &Scope::PERSONAL).unwrap();
        let b = store.create("ci", &[Scope::Read]).unwrap();
        assert_eq!(a.len(), 43);
        assert!(
            a.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
        assert_ne!(a, b);
        let on_disk = std::fs::read_to_string(store.path()).unwrap();
        assert!(!on_disk.contains(&a), "plaintext must never be stored");
        assert!(matches!(
            store.create("ci", &[Scope::Read]),
            Err(TokenError::Duplicate(_))
        ));
        assert!(matches!(
            store.create("bad name", &[]),
            Err(TokenError::BadName)
        ));

        let v = TokenVerifier::new(store.clone());
        assert_eq!(v.verify(&a).unwrap().name, "laptop");
        assert_eq!(v.verify(&b).unwrap().scopes, vec![Scope::Read]);
        assert_eq!(v.verify("nope"), None);
        store.revoke("laptop").unwrap();
        assert_eq!(v.verify(&a), None, "revocation applies to the next check");
        assert!(v.verify(&b).is_some());
        assert!(matches!(
            store.revoke("laptop"),
            Err(TokenError::Unknown(_))
        ));
    }
}
