//! Plugin hook dispatch after each successful write (the desktop's onSave/onLink).

/// Receives every successful write. Called after the file, the store and the index agree, with
/// the vault write lock released; an implementation must be quick and must not write notes.
pub trait SaveHooks: Send + Sync {
    /// A note was written (created, overwritten, retagged).
    fn on_save(&self, path: &str);
    /// The wiki-link targets of the note just written (empty when it links nowhere).
    fn on_link(&self, path: &str, targets: &[String]);
    /// A note was deleted.
    fn on_delete(&self, _path: &str) {}
}
