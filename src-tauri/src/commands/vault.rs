//! Vault metadata.

use pkm_core::{KbError, KbResult};

use crate::app::App;
use crate::dto::VaultInfo;

pub fn get_vault_info(app: &App) -> KbResult<VaultInfo> {
    Ok(VaultInfo {
        vault_path: app.vault.root().display().to_string(),
        page_count: app.store.page_count().map_err(KbError::from)?,
        block_count: app.store.block_count().map_err(KbError::from)?,
        index_fresh: app.index_fresh(),
        last_indexed_at: app
            .store
            .get_meta("last_indexed_at")
            .map_err(KbError::from)?,
    })
}
