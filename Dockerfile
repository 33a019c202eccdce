# stratum-mcp: multi-stage build, small non-root runtime image, HTTP with auth by default.
#   docker build -t stratum-mcp .
#   docker run --rm -v /path/to/vault:/vault stratum-mcp token create --vault /vault --name me
#   docker run -d -p 8787:8787 -v /path/to/vault:/vault stratum-mcp          # HTTP on :8787
#   docker run --rm -i -v /path/to/vault:/vault stratum-mcp --stdio --vault /vault   # stdio
# The container binds 0.0.0.0 and so declares --behind-tls-proxy: terminate TLS in front of it,
# and add --allowed-host <public name> for requests that do not say Host: localhost.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p pkm-mcp && strip target/release/stratum-mcp

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends curl ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /nonexistent --shell /usr/sbin/nologin stratum
COPY --from=build /src/target/release/stratum-mcp /usr/local/bin/stratum-mcp
USER stratum
VOLUME ["/vault"]
EXPOSE 8787
ENV STRATUM_MCP_VAULT=/vault
HEALTHCHECK --interval=30s --timeout=3s --start-period=30s CMD curl -fsS -H 'Host: localhost' http://127.0.0.1:8787/health || exit 1
ENTRYPOINT ["stratum-mcp"]
CMD ["--http", "--bind", "0.0.0.0:8787", "--behind-tls-proxy"]
