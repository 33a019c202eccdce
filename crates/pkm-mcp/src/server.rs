//! `StratumServer`: the MCP methods over the tool table, answered as JSON. The stdio door (rmcp)
//! and the HTTP door (axum) both call these and add nothing tool-specific.

use std::sync::Arc;

use pkm_core::VaultPath;
use serde_json::{Map, Value, json};
use stratum_app::App;
use stratum_app::dto::RESPONSE_MAX_BYTES;

use crate::errors::{Kind, McpError};
use crate::lead::{Host, Request};
use crate::notify::{ClientLevel, LevelFilter};
use crate::schema;
use crate::scope::Scope;
use crate::tools::{self, TOOLS, Tool};

/// The protocol revision the contract pins (§1).
pub const PROTOCOL_VERSION: &str = "2025-06-18";
/// `serverInfo.version`: the workspace version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
const RESOURCE_PREFIX: &str = "note://";

/// Who is calling: over stdio everything is allowed; over HTTP, the token's scopes.
#[derive(Debug, Clone, Default)]
pub struct Caller {
    /// `None` grants every scope (stdio, or HTTP with `--no-auth`).
    pub scopes: Option<Vec<Scope>>,
    /// For logs: the token's name, never the token.
    pub token_name: Option<String>,
}

impl Caller {
    pub fn local() -> Caller {
        Caller::default()
    }
    pub fn allows(&self, scope: Scope) -> bool {
        self.scopes.as_ref().is_none_or(|s| s.contains(&scope))
    }
}

#[derive(Clone)]
pub struct StratumServer {
    /// The vault, led by this process or by another one this process forwards to.
    host: Arc<Host>,
    /// The least severe `notifications/message` level the stdio client wants.
    client_log_level: Arc<LevelFilter>,
}

impl StratumServer {
    /// A server over `app`, which this process leads alone (tests, fuzzing).
    pub fn new(app: Arc<App>) -> StratumServer {
        Self::with_host(Host::local(app))
    }

    /// A server over a vault shared with other processes.
    pub fn with_host(host: Arc<Host>) -> StratumServer {
        StratumServer {
            host,
            client_log_level: Arc::default(),
        }
    }

    pub fn client_log_level(&self) -> &LevelFilter {
        &self.client_log_level
    }

    pub(crate) fn client_log_level_handle(&self) -> Arc<LevelFilter> {
        Arc::clone(&self.client_log_level)
    }

    pub fn host(&self) -> &Arc<Host> {
        &self.host
    }

    /// Runs `request` on the vault (here or on the leading process) off the async threads.
    pub(crate) async fn run(&self, request: Request) -> Result<Value, McpError> {
        let host = Arc::clone(&self.host);
        let span = tracing::Span::current();
        tokio::task::spawn_blocking(move || span.in_scope(|| host.call(request)))
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "a vault call panicked or was cancelled");
                McpError::new(Kind::Internal, "internal error").with_hint("Check the server log.")
            })?
            .map_err(McpError::from)
    }

    /// The `initialize` result (contract §3).
    pub fn initialize_result() -> Value {
        json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {"tools": {"listChanged": false}, "resources": {"listChanged": false, "subscribe": false}, "logging": {}},
            "serverInfo": {"name": "stratum-mcp", "title": "Stratum knowledge base", "version": VERSION},
            "instructions": "Tools over a markdown vault. Read with kb_get_page / kb_search, write with kb_write_page \
                (pass expected_modified from a read to avoid overwriting newer edits), link by writing [[wiki-links]], \
                tag with kb_add_tag. Notes are also resources: note://<vault-relative path>."
        })
    }

    /// One `tools/list` entry, built from the table.
    pub fn tool_json(t: &Tool) -> Value {
        json!({
            "name": t.name,
            "description": t.description,
            "inputSchema": schema::input_schema(t.name).cloned().unwrap_or(Value::Null),
            "outputSchema": schema::output_schema(t.name).cloned().unwrap_or(Value::Null),
            "annotations": {
                "readOnlyHint": t.read_only,
                "destructiveHint": t.destructive,
                "idempotentHint": t.idempotent,
                "openWorldHint": false
            }
        })
    }

    pub fn list_tools() -> Value {
        json!({"tools": TOOLS.iter().map(Self::tool_json).collect::<Vec<_>>()})
    }

    /// `tools/call`: find, authorise, validate, run off the async threads, cap, shape.
    pub async fn call_tool(&self, params: &Value, caller: &Caller) -> Result<Value, McpError> {
        let name = params.get("name").and_then(Value::as_str).ok_or_else(|| {
            McpError::new(Kind::InvalidArgs, "tools/call needs a string 'name'")
                .with_hint("Call tools/list for the tool names.")
        })?;
        let tool = tools::find(name).ok_or_else(|| McpError::unknown_tool(name))?;
        if !caller.allows(tool.scope) {
            return Err(McpError::new(
                Kind::ScopesDenied,
                format!("{name} requires scope {}", tool.scope),
            )
            .with_hint(format!("Use a token that holds {}.", tool.scope)));
        }
        let args = match params.get("arguments") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(v) => v.clone(),
        };
        schema::validate(name, &args)?;
        let Value::Object(args) = args else {
            return Err(McpError::new(
                Kind::InvalidArgs,
                "arguments must be an object",
            ));
        };
        let note = args.get("path").and_then(|v| v.as_str()).unwrap_or("");
        let span = tracing::info_span!(
            "tool",
            tool = name,
            note,
            token = caller.token_name.as_deref().unwrap_or("")
        );
        let request = Request::Tool {
            name: name.to_owned(),
            args,
        };
        let result = tracing::Instrument::instrument(self.run(request), span)
            .await
            .inspect_err(|e| {
                if matches!(e.kind, Kind::External | Kind::Internal) {
                    tracing::warn!(tool = name, message = %e.message, "tool failed");
                }
            })?;
        let text = serde_json::to_string(&result)
            .map_err(|_| McpError::new(Kind::Internal, "serializing a response"))?;
        if text.len() > RESPONSE_MAX_BYTES {
            return Err(McpError::new(Kind::InvalidArgs, format!("The response would be {} bytes, over the 1 MiB cap", text.len())).with_hint(
                "Read a large note as the resource note://<path> (resources/read), or narrow the request.",
            ));
        }
        Ok(
            json!({"content": [{"type": "text", "text": text}], "structuredContent": result, "isError": false}),
        )
    }

    /// `resources/list`: every note as `note://<path>`, paged with the same cursor as kb_list_pages.
    pub async fn list_resources(&self, cursor: Option<String>) -> Result<Value, McpError> {
        let list = self.run(Request::ListPages { limit: 500, cursor }).await?;
        let resources: Vec<Value> = list["pages"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|p| json!({"uri": format!("{RESOURCE_PREFIX}{}", p["path"].as_str().unwrap_or_default()), "name": p["path"], "title": p["title"], "mimeType": "text/markdown"}))
            .collect();
        let mut out = json!({"resources": resources});
        if let Some(c) = list["next_cursor"].as_str() {
            out["nextCursor"] = json!(c);
        }
        Ok(out)
    }

    pub fn resource_templates() -> Value {
        json!({"resourceTemplates": [{
            "uriTemplate": "note://{path}",
            "name": "note",
            "title": "A note by its vault-relative path",
            "mimeType": "text/markdown"
        }]})
    }

    /// `resources/read` of `note://<path>`: the raw markdown.
    pub async fn read_resource(&self, uri: &str, caller: &Caller) -> Result<Value, McpError> {
        if !caller.allows(Scope::Read) {
            return Err(McpError::new(
                Kind::ScopesDenied,
                "reading resources requires scope kb:read",
            ));
        }
        let raw = uri.strip_prefix(RESOURCE_PREFIX).ok_or_else(|| {
            McpError::new(
                Kind::InvalidArgs,
                format!("unknown resource URI scheme: {uri}"),
            )
            .with_hint("Use note://<vault-relative path>.")
        })?;
        // Checked here, so a bad URI is refused the same way on every process.
        VaultPath::parse(self.host.vault(), raw)
            .map_err(|e| McpError::from(crate::tools::path_error("uri", raw, &e)))?;
        let text = self
            .run(Request::ReadRaw {
                path: raw.to_owned(),
            })
            .await?;
        let text = text.as_str().unwrap_or_default();
        Ok(json!({"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]}))
    }

    /// Every MCP method either door serves, by name. Notifications return `Ok(None)`.
    pub async fn handle(
        &self,
        method: &str,
        params: Option<Value>,
        caller: &Caller,
    ) -> Result<Option<Value>, McpError> {
        let params = params.unwrap_or(Value::Null);
        let out = match method {
            "initialize" => Self::initialize_result(),
            "ping" => json!({}),
            "tools/list" => Self::list_tools(),
            "tools/call" => self.call_tool(&params, caller).await?,
            "resources/list" => {
                self.list_resources(
                    params
                        .get("cursor")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                )
                .await?
            }
            "resources/templates/list" => Self::resource_templates(),
            "resources/read" => {
                let uri = params.get("uri").and_then(Value::as_str).ok_or_else(|| {
                    McpError::new(Kind::InvalidArgs, "resources/read needs a string 'uri'")
                })?;
                self.read_resource(uri, caller).await?
            }
            "logging/setLevel" => {
                let level = params
                    .get("level")
                    .and_then(Value::as_str)
                    .and_then(ClientLevel::parse)
                    .ok_or_else(|| {
                        McpError::new(Kind::InvalidArgs, "logging/setLevel needs a 'level' such as \"warning\"")
                            .with_hint("Levels: debug, info, notice, warning, error, critical, alert, emergency.")
                    })?;
                self.client_log_level.set(level);
                json!({})
            }
            m if m.starts_with("notifications/") => return Ok(None),
            m => return Err(McpError::method_not_found(m)),
        };
        Ok(Some(out))
    }
}
