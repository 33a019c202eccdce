//! The stdio door: rmcp frames line-delimited JSON-RPC on stdin/stdout and runs the lifecycle
//! (the `initialize` handshake, cancellation, logging notifications); every request and
//! notification goes, as JSON, to the router ([`StratumServer::handle`]), whose answer goes back
//! as it is.

// rmcp marks MCP logging deprecated (SEP-2577, a later protocol revision); the revisions this server
// speaks have it, and clients use it.
#![allow(deprecated)]

use std::borrow::Cow;

use rmcp::model::{
    ClientNotification, ClientRequest, CustomResult, ErrorCode, InitializeResult, ProtocolVersion,
    ServerInfo, ServerResult,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, Service, ServiceExt};
use serde::Serialize;
use serde_json::Value;

use crate::errors::{Kind, McpError};
use crate::notify::ClientLog;
use crate::protocol::Protocol;
use crate::server::{Caller, StratumServer};

fn to_rmcp(e: McpError) -> ErrorData {
    ErrorData::new(ErrorCode(e.code()), e.message.clone(), Some(e.data()))
}

fn internal(what: &str, e: &serde_json::Error) -> ErrorData {
    tracing::error!(error = %e, "{what}");
    to_rmcp(McpError::new(Kind::Internal, "internal error"))
}

/// A request or notification as the router takes it: its method and params.
fn method_and_params(message: &impl Serialize) -> Result<(String, Option<Value>), ErrorData> {
    let mut v = serde_json::to_value(message).map_err(|e| internal("reading a request", &e))?;
    let method = v["method"].as_str().unwrap_or_default().to_owned();
    let params = v.get_mut("params").map(Value::take);
    Ok((method, params))
}

/// The stdio client: every scope, in the revision agreed with rmcp's handshake (or, before it,
/// the one a request names in its `_meta`).
fn caller(context_version: Option<ProtocolVersion>) -> Caller {
    let protocol = context_version
        .and_then(|v| Protocol::parse(v.as_str()))
        .unwrap_or(Protocol::LATEST);
    Caller::local(protocol)
}

/// [`StratumServer`] as rmcp's service: no method is known here.
struct Door(StratumServer);

impl Service<RoleServer> for Door {
    async fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        let (method, params) = method_and_params(&request)?;
        let caller = caller(context.protocol_version());
        let result = self
            .0
            .handle(&method, params, &caller)
            .await
            .map_err(to_rmcp)?
            .unwrap_or_else(|| Value::Object(Default::default()));
        if matches!(request, ClientRequest::InitializeRequest(_)) {
            // rmcp's handshake reads the agreed revision from the typed result.
            let init: InitializeResult = serde_json::from_value(result)
                .map_err(|e| internal("initialize result does not fit rmcp's model", &e))?;
            return Ok(ServerResult::InitializeResult(init));
        }
        Ok(ServerResult::CustomResult(CustomResult(result)))
    }

    async fn handle_notification(
        &self,
        notification: ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (method, params) = method_and_params(&notification)?;
        let caller = caller(context.peer.peer_info().map(|i| i.protocol_version.clone()));
        self.0
            .handle(&method, params, &caller)
            .await
            .map_err(to_rmcp)?;
        Ok(())
    }

    fn get_info(&self) -> ServerInfo {
        // What rmcp shows before a handshake; the handshake itself asks the router. The document
        // is fixed and valid (the stdio tests read it), so the default is never taken.
        serde_json::from_value(StratumServer::initialize_result(Protocol::LATEST))
            .unwrap_or_default()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Owned(
            Protocol::ALL
                .into_iter()
                .map(|p| match p {
                    Protocol::V2025_03_26 => ProtocolVersion::V_2025_03_26,
                    Protocol::V2025_06_18 => ProtocolVersion::V_2025_06_18,
                    Protocol::V2025_11_25 => ProtocolVersion::V_2025_11_25,
                })
                .collect(),
        )
    }
}

/// Serves `server` on stdin/stdout until the client closes stdin, forwarding `client_log` (see
/// [`crate::notify`]) to the client as `notifications/message` once it has initialized.
pub async fn serve(
    server: StratumServer,
    mut client_log: tokio::sync::broadcast::Receiver<ClientLog>,
) -> anyhow::Result<()> {
    let levels = server.client_log_level_handle();
    let running = Door(server).serve(rmcp::transport::stdio()).await?;
    let peer = running.peer().clone();
    let forward = tokio::spawn(async move {
        use tokio::sync::broadcast::error::RecvError;
        loop {
            let msg = match client_log.recv().await {
                Ok(msg) => msg,
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => break,
            };
            if !levels.allows(msg.level) {
                continue;
            }
            let Some(param) = logging_param(&msg) else {
                continue;
            };
            if peer.notify_logging_message(param).await.is_err() {
                break; // the client is gone
            }
        }
    });
    running.waiting().await?;
    forward.abort();
    Ok(())
}

fn logging_param(msg: &ClientLog) -> Option<rmcp::model::LoggingMessageNotificationParam> {
    let level = serde_json::from_value(Value::from(msg.level.as_str())).ok()?;
    Some(
        rmcp::model::LoggingMessageNotificationParam::new(level, msg.data.clone())
            .with_logger(msg.logger.clone()),
    )
}
