//! `StratumServer`: the one router of MCP methods ([`StratumServer::handle`]), over the tool table,
//! answered as JSON in the caller's protocol revision. The stdio door (rmcp) and the HTTP door
//! (axum) both hand every JSON-RPC method to it and add nothing method-specific.

use std::sync::Arc;

use pkm_core::VaultPath;
use serde_json::{Map, Value, json};
use stratum_app::{App, AppConfig};

use crate::errors::{Kind, McpError};
use crate::host::Host;
use crate::notify::{ClientLevel, LevelFilter};
use crate::protocol::{self, Protocol};
use crate::schema;
use crate::scope::Scope;
use crate::tools::{self, TOOLS, Tool};
use crate::wire::Request;
pub use crate::wire::VERSION;

/// `MCP_RESPONSE_MAX` of contract §11: the serialized size of one response object.
pub const RESPONSE_MAX_BYTES: usize = 1024 * 1024;

/// The app's tunables as this server runs it: list results cut to fit one response, with room
/// for the envelope around them.
pub fn app_config() -> AppConfig {
    AppConfig {
        list_budget: RESPONSE_MAX_BYTES - 4 * 1024,
        ..AppConfig::default()
    }
}

const RESOURCE_PREFIX: &str = "note://";

/// The resource URI of a note: `note://` and the vault-relative path with each `/`-separated
/// segment percent-encoded (RFC 3986): unreserved characters and sub-delims stay as they are,
/// every other byte of the UTF-8 text (space, `%`, `#`, `?`, `:`, `@`, non-ASCII…) becomes `%XX`.
pub(crate) fn note_uri(path: &str) -> String {
    let mut out = String::with_capacity(RESOURCE_PREFIX.len() + path.len() + 8);
    out.push_str(RESOURCE_PREFIX);
    for b in path.bytes() {
        let keep = b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=/".contains(&b);
        if keep {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The vault-relative path a `note://` URI names: the text after the scheme with every `%XX`
/// decoded (so `%2F` is a `/` too). Anything else is taken as written, so an unencoded path with
/// spaces still reads. A `%` not followed by two hex digits, or bytes that are not UTF-8 once
/// decoded, are InvalidArgs.
fn note_path(uri: &str) -> Result<String, McpError> {
    let raw = uri.strip_prefix(RESOURCE_PREFIX).ok_or_else(|| {
        McpError::new(
            Kind::InvalidArgs,
            format!("unknown resource URI scheme: {uri}"),
        )
        .with_hint("Use note://<vault-relative path>, percent-encoded as resources/list gives it.")
    })?;
    let hex = |b: u8| {
        char::from(b)
            .to_digit(16)
            .and_then(|d| u8::try_from(d).ok())
    };
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let pair = bytes
                .get(i + 1)
                .copied()
                .and_then(hex)
                .zip(bytes.get(i + 2).copied().and_then(hex));
            let Some((hi, lo)) = pair else {
                return Err(McpError::new(
                    Kind::InvalidArgs,
                    format!("resource URI has an invalid percent-escape: {uri}"),
                )
                .with_hint("Write a literal % as %25; use the URI resources/list gives."));
            };
            out.push(hi << 4 | lo);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| {
        McpError::new(
            Kind::InvalidArgs,
            format!("resource URI does not decode to UTF-8 text: {uri}"),
        )
        .with_hint("Percent-encode the path's UTF-8 bytes; use the URI resources/list gives.")
    })
}

/// Who is calling, and in which protocol revision: over stdio everything is allowed; over HTTP,
/// the token's scopes.
#[derive(Debug, Clone)]
pub struct Caller {
    /// `None` grants every scope (stdio, or HTTP with `--no-auth`).
    pub scopes: Option<Vec<Scope>>,
    /// For logs: the token's name, never the token.
    pub token_name: Option<String>,
    /// What the answers look like (agreed by `initialize`).
    pub protocol: Protocol,
}

impl Caller {
    /// The stdio client (or a test): every scope.
    pub fn local(protocol: Protocol) -> Caller {
        Caller {
            scopes: None,
            token_name: None,
            protocol,
        }
    }
    pub fn allows(&self, scope: Scope) -> bool {
        self.scopes.as_ref().is_none_or(|s| s.contains(&scope))
    }
}

/// What a call of a method needs: nothing, a scope, or the scope of the tool it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Nothing: the handshake, `ping`, what the server offers, the log level. Such calls are not
    /// counted against rate limits either.
    Nothing,
    /// This scope; the call is counted against the scope's rate-limit tier.
    Scope(Scope),
    /// The scope of the tool named by `params.name` (`tools/call`), from [`TOOLS`].
    ToolScope,
}

/// The methods [`StratumServer::handle`] answers (notifications aside) and what each needs: the
/// one table of method scopes, read by the router to refuse a call and by the HTTP door for the
/// rate-limit tier (a tool's own scope is in [`TOOLS`]).
pub const METHODS: &[(&str, Needs)] = &[
    ("initialize", Needs::Nothing),
    ("ping", Needs::Nothing),
    ("tools/list", Needs::Nothing),
    ("tools/call", Needs::ToolScope),
    ("resources/list", Needs::Scope(Scope::Read)),
    ("resources/templates/list", Needs::Nothing),
    ("resources/read", Needs::Scope(Scope::Read)),
    ("logging/setLevel", Needs::Nothing),
];

/// The method that starts a conversation: it needs no token, and over HTTP its answer opens a
/// session (ADR-0013 "Streamable HTTP behaviour").
pub fn opens_session(method: &str) -> bool {
    method == "initialize"
}

/// Whether `method` is a protocol notification (`notifications/…`), which gets no answer.
pub fn is_notification(method: &str) -> bool {
    method.starts_with("notifications/")
}

/// The tool a call of `method` runs, for logs: `params.name` of a `tools/call`.
pub fn tool_named<'a>(method: &str, params: Option<&'a Value>) -> Option<&'a str> {
    (METHODS.iter().find(|(m, _)| *m == method)?.1 == Needs::ToolScope)
        .then(|| params?.get("name")?.as_str())
        .flatten()
}

/// The scope a call of `method` with `params` needs, from [`METHODS`]: `None` when it needs none
/// (and is not rate-limited), `Some(None)` for a `tools/call` naming no known tool (the router
/// refuses it; the rate limiter counts it against the default bucket only), else the scope.
pub fn scope_needed(method: &str, params: Option<&Value>) -> Option<Option<Scope>> {
    match METHODS.iter().find(|(m, _)| *m == method)?.1 {
        Needs::Nothing => None,
        Needs::Scope(scope) => Some(Some(scope)),
        Needs::ToolScope => Some(
            params
                .and_then(|p| p.get("name"))
                .and_then(Value::as_str)
                .and_then(tools::find)
                .map(|t| t.scope),
        ),
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
        Self::with_host(Host::local(app, app_config()))
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

    /// The `initialize` result (contract §3), in `protocol` (see [`Protocol::negotiate`]).
    pub fn initialize_result(protocol: Protocol) -> Value {
        let mut out = json!({
            "protocolVersion": protocol.as_str(),
            "capabilities": {"tools": {"listChanged": false}, "resources": {"listChanged": false, "subscribe": false}, "logging": {}},
            "serverInfo": {"name": "stratum-mcp", "title": "Stratum knowledge base", "version": VERSION},
            "instructions": "Tools over a markdown vault. Read with kb_get_page / kb_search, write with kb_write_page \
                (pass expected_modified from a read to avoid overwriting newer edits), link by writing [[wiki-links]], \
                tag with kb_add_tag. Notes are also resources: note://<vault-relative path>."
        });
        if protocol.has_icons() {
            out["serverInfo"]["icons"] = protocol::icons();
        }
        out
    }

    /// One `tools/list` entry, built from the table.
    pub fn tool_json(t: &Tool, protocol: Protocol) -> Value {
        let mut out = json!({
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
        });
        if protocol.has_icons() {
            out["title"] = json!(t.title);
            out["icons"] = protocol::icons();
        }
        out
    }

    /// `tools/list`: the tools `caller` may call (every tool over stdio and `--no-auth`; over HTTP,
    /// those the token's scopes allow, while `tools/call` still refuses the others).
    pub fn list_tools(caller: &Caller) -> Value {
        let tools: Vec<Value> = TOOLS
            .iter()
            .filter(|t| caller.allows(t.scope))
            .map(|t| Self::tool_json(t, caller.protocol))
            .collect();
        json!({ "tools": tools })
    }

    /// `tools/call`: find, authorise, validate, run off the async threads, cap, shape. From
    /// 2025-11-25 on, refused arguments are a tool result with `isError` (SEP-1303); an unknown
    /// tool or a missing scope stays a JSON-RPC error in every revision.
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
        match self.run_tool(name, params, caller).await {
            Err(e)
                if e.kind == Kind::InvalidArgs
                    && caller.protocol.input_errors_are_tool_results() =>
            {
                Ok(tool_error_result(&e))
            }
            other => other,
        }
    }

    /// The part of `tools/call` after the tool is known and allowed.
    async fn run_tool(
        &self,
        name: &str,
        params: &Value,
        caller: &Caller,
    ) -> Result<Value, McpError> {
        let args = match params.get("arguments") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(v) => v.clone(),
        };
        let args = schema::checked(name, args)?;
        let note = args.get("path").and_then(|v| v.as_str()).unwrap_or("");
        let span = tracing::info_span!(
            "tool",
            tool = name,
            note,
            token = caller.token_name.as_deref().unwrap_or("")
        );
        // Where a note too large for a kb_get_page answer can be read instead.
        let resource = (name == "kb_get_page" && !note.is_empty()).then(|| note_uri(note));
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
            let hint = match resource {
                Some(uri) => format!("Read the note as the resource {uri} (resources/read)."),
                None => "Read a large note as the resource note://<path> (resources/read), or narrow the request.".to_owned(),
            };
            return Err(McpError::new(
                Kind::InvalidArgs,
                format!(
                    "The response would be {} bytes, over the 1 MiB cap",
                    text.len()
                ),
            )
            .with_hint(hint));
        }
        Ok(
            json!({"content": [{"type": "text", "text": text}], "structuredContent": result, "isError": false}),
        )
    }

    /// `resources/list`: every note as `note://<path>` (percent-encoded, [`note_uri`]), paged with the same cursor as kb_list_pages.
    pub async fn list_resources(&self, cursor: Option<String>) -> Result<Value, McpError> {
        let list = self.run(Request::ListPages { limit: 500, cursor }).await?;
        let resources: Vec<Value> = list["pages"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|p| json!({"uri": note_uri(p["path"].as_str().unwrap_or_default()), "name": p["path"], "title": p["title"], "mimeType": "text/markdown"}))
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

    /// `resources/read` of `note://<path>` (the caller's scope checked by [`Self::handle`]) (percent-decoded, [`note_path`]): the raw markdown.
    pub async fn read_resource(&self, uri: &str) -> Result<Value, McpError> {
        let path = note_path(uri)?;
        // Checked here, so a bad URI is refused the same way on every process.
        VaultPath::parse(self.host.vault(), &path)
            .map_err(|e| McpError::from(crate::tools::path_error("uri", &path, &e)))?;
        let text = self.run(Request::ReadRaw { path }).await?;
        let text = text.as_str().unwrap_or_default();
        Ok(json!({"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]}))
    }

    /// Every MCP method either door serves, by name ([`METHODS`] says what each needs; a tool's
    /// scope is checked by [`Self::call_tool`]). Notifications return `Ok(None)`.
    pub async fn handle(
        &self,
        method: &str,
        params: Option<Value>,
        caller: &Caller,
    ) -> Result<Option<Value>, McpError> {
        let params = params.unwrap_or(Value::Null);
        if let Some((_, Needs::Scope(scope))) = METHODS.iter().find(|(m, _)| *m == method)
            && !caller.allows(*scope)
        {
            return Err(McpError::new(
                Kind::ScopesDenied,
                format!("{method} requires scope {scope}"),
            )
            .with_hint(format!("Use a token that holds {scope}.")));
        }
        let out = match method {
            "initialize" => Self::initialize_result(Protocol::negotiate(
                params.get("protocolVersion").and_then(Value::as_str),
            )),
            "ping" => json!({}),
            "tools/list" => Self::list_tools(caller),
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
                self.read_resource(uri).await?
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
            m if is_notification(m) => return Ok(None),
            m => return Err(McpError::method_not_found(m)),
        };
        Ok(Some(out))
    }
}

/// A refused tool call as a tool result (SEP-1303), for the model to read and correct: the
/// message, the §8 kind and the hint as one text. No `structuredContent`: the tool's output schema
/// describes its answers, not its errors.
fn tool_error_result(e: &McpError) -> Value {
    let data = e.data();
    let hint = data["hint"].as_str().unwrap_or_default();
    json!({
        "content": [{"type": "text", "text": format!("{} ({}). {hint}", e.message, e.kind.name())}],
        "isError": true
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_method_table_says_which_calls_need_a_scope() {
        let write = TOOLS.iter().find(|t| t.scope == Scope::Write).unwrap();
        assert_eq!(
            scope_needed("tools/call", Some(&json!({"name": write.name}))),
            Some(Some(Scope::Write))
        );
        assert_eq!(
            scope_needed("tools/call", Some(&json!({"name": "no_such_tool"}))),
            Some(None)
        );
        assert_eq!(
            scope_needed("resources/read", None),
            Some(Some(Scope::Read))
        );
        assert_eq!(scope_needed("initialize", None), None);
        assert_eq!(scope_needed("tools/list", None), None);
    }

    #[test]
    fn note_uris_encode_each_segment_and_decode_back() {
        let cases = [
            (
                "Plugins/Command palette.md",
                "note://Plugins/Command%20palette.md",
            ),
            ("Café/été.md", "note://Caf%C3%A9/%C3%A9t%C3%A9.md"),
            ("a%b#c?d:e@f.md", "note://a%25b%23c%3Fd%3Ae%40f.md"),
            (
                "it's (a)+b=c,d;e!$&*~_-.md",
                "note://it's%20(a)+b=c,d;e!$&*~_-.md",
            ),
        ];
        for (path, uri) in cases {
            assert_eq!(note_uri(path), uri);
            assert_eq!(note_path(uri).unwrap(), path);
        }
        // Lenient: unencoded text and an encoded `/` read as the same path.
        assert_eq!(
            note_path("note://Plugins/Command palette.md").unwrap(),
            "Plugins/Command palette.md"
        );
        assert_eq!(
            note_path("note://Plugins%2Fa%2fb.md").unwrap(),
            "Plugins/a/b.md"
        );
    }

    #[test]
    fn bad_escapes_and_non_utf8_are_invalid_args() {
        for uri in [
            "note://100% done.md",
            "note://a%2.md",
            "note://a%",
            "note://%FF.md",
            "file://a.md",
        ] {
            let e = note_path(uri).unwrap_err();
            assert_eq!(e.kind, Kind::InvalidArgs, "{uri}");
        }
    }
}
