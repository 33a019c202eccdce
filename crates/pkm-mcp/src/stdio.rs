//! The stdio door: rmcp frames line-delimited JSON-RPC on stdin/stdout and runs the lifecycle;
//! every method is answered by `StratumServer`, converted to rmcp's types at this edge.

// rmcp marks MCP logging deprecated (SEP-2577, a later protocol revision); the revision this server
// pins (2025-06-18) has it, and clients use it.
#![allow(deprecated)]

use std::borrow::Cow;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorCode,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ServerConfig, SetLevelRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::errors::{Kind, McpError};
use crate::notify::{ClientLevel, ClientLog};
use crate::server::{Caller, StratumServer};

fn to_rmcp(e: McpError) -> ErrorData {
    ErrorData::new(ErrorCode(e.code()), e.message.clone(), Some(e.data()))
}

fn convert<T: DeserializeOwned>(v: Value) -> Result<T, ErrorData> {
    serde_json::from_value(v).map_err(|e| {
        tracing::error!(error = %e, "response does not fit the rmcp model");
        to_rmcp(McpError::new(Kind::Internal, "internal error"))
    })
}

impl ServerHandler for StratumServer {
    fn get_info(&self) -> ServerConfig {
        // The initialize result is a fixed, valid document; a failure here would be a bug
        // caught by the stdio tests, and the default keeps the server answering.
        serde_json::from_value(StratumServer::initialize_result()).unwrap_or_default()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Owned(vec![ProtocolVersion::V_2025_06_18])
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // rmcp's enum and ours spell the levels alike; going through the wire form keeps the
        // deprecated rmcp type out of the rest of the crate.
        let level = serde_json::to_value(request.level)
            .ok()
            .and_then(|v| v.as_str().and_then(ClientLevel::parse))
            .ok_or_else(|| to_rmcp(McpError::new(Kind::InvalidArgs, "unknown logging level")))?;
        self.client_log_level().set(level);
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        convert(StratumServer::list_tools(&Caller::local()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let params = serde_json::json!({"name": request.name, "arguments": request.arguments});
        let out = StratumServer::call_tool(self, &params, &Caller::local())
            .await
            .map_err(to_rmcp)?;
        Ok(CallToolResponse::Complete(convert::<CallToolResult>(out)?))
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let cursor = request.and_then(|r| r.cursor);
        convert(
            StratumServer::list_resources(self, cursor)
                .await
                .map_err(to_rmcp)?,
        )
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        convert(StratumServer::resource_templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let out = StratumServer::read_resource(self, &request.uri, &Caller::local())
            .await
            .map_err(to_rmcp)?;
        Ok(ReadResourceResponse::Complete(
            convert::<ReadResourceResult>(out)?,
        ))
    }
}

/// Serves `server` on stdin/stdout until the client closes stdin, forwarding `client_log` (see
/// [`crate::notify`]) to the client as `notifications/message` once it has initialized.
pub async fn serve(
    server: StratumServer,
    mut client_log: tokio::sync::broadcast::Receiver<ClientLog>,
) -> anyhow::Result<()> {
    let levels = server.client_log_level_handle();
    let running = server.serve(rmcp::transport::stdio()).await?;
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
