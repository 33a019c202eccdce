//! The stdio door: rmcp frames line-delimited JSON-RPC on stdin/stdout and runs the lifecycle;
//! every method is answered by `StratumServer`, converted to rmcp's types at this edge.

use std::borrow::Cow;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorCode,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::errors::{Kind, McpError};
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

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        convert(StratumServer::list_tools())
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

/// Serves `server` on stdin/stdout until the client closes stdin.
pub async fn serve(server: StratumServer) -> anyhow::Result<()> {
    let running = server.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}
