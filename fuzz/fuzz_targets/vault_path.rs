//! VaultPath: every accepted path obeys the lexical rules, stays inside the vault on disk (through
//! the symlinks planted below) and survives the scan's `from_abs` round trip.
#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use pkm_core::{Vault, VaultPath};

struct Fixture {
    _dir: tempfile::TempDir,
    vault: Vault,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("vault");
        std::fs::create_dir_all(root.join("notes/deep")).expect("mkdir");
        std::fs::create_dir_all(root.join(".pkm")).expect("mkdir");
        std::fs::write(root.join("notes/a.md"), "# a\n").expect("write");
        std::fs::create_dir_all(dir.path().join("outside")).expect("mkdir");
        std::fs::write(dir.path().join("outside/secret.md"), "secret\n").expect("write");
        #[cfg(unix)]
        {
            use std::os::unix::fs::symlink;
            symlink(dir.path().join("outside"), root.join("out")).expect("symlink");
            symlink(dir.path().join("outside/secret.md"), root.join("leak.md")).expect("symlink");
            symlink(root.join("notes"), root.join("in")).expect("symlink");
            symlink(root.join(".pkm"), root.join("meta")).expect("symlink");
            symlink(dir.path().join("missing"), root.join("dangling")).expect("symlink");
        }
        let vault = Vault::open(&root).expect("vault");
        Fixture { _dir: dir, vault }
    })
}

/// The deepest existing ancestor of `p`, canonicalised.
fn real_ancestor(p: &Path) -> Option<std::path::PathBuf> {
    let mut probe = p.to_path_buf();
    loop {
        if let Ok(real) = probe.canonicalize() {
            return Some(real);
        }
        if !probe.pop() {
            return None;
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let f = fixture();
    if let Ok(vp) = VaultPath::lexical(input) {
        let s = vp.as_str();
        assert!(!s.is_empty() && s.chars().count() <= pkm_core::path::PATH_MAX_CHARS, "{s:?}");
        assert!(!s.contains('\0') && !s.contains('\\') && !s.starts_with('/'), "{s:?}");
        assert!(s.to_ascii_lowercase().ends_with(".md"), "{s:?}");
        for seg in s.split('/') {
            assert!(!seg.is_empty() && !seg.starts_with('.'), "segment {seg:?} of {s:?}");
        }
        let abs = f.vault.abs(&vp);
        assert!(abs.starts_with(f.vault.root()), "{s:?} -> {abs:?}");
        assert_eq!(VaultPath::from_abs(&f.vault, &abs).ok().as_ref(), Some(&vp), "{s:?}");
    }
    if let Ok(vp) = VaultPath::parse(&f.vault, input) {
        let real = real_ancestor(&f.vault.abs(&vp)).expect("the vault root exists");
        assert!(real.starts_with(f.vault.root()), "{input:?} escapes to {real:?}");
        assert!(!real.starts_with(f.vault.pkm_dir()), "{input:?} reaches .pkm: {real:?}");
    }
});
