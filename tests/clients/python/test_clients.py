"""End-to-end tests of stratum-mcp through the official MCP Python SDK.

Every test drives the real release binary (``STRATUM_MCP_BIN``) on a temporary copy
of ``examples/vault``, over stdio and over Streamable HTTP with a personal access token,
each in protocol revision 2025-11-25 (what this SDK asks for) and 2025-06-18, the way an
MCP host would. The SDK itself checks each tool result against the tool's ``outputSchema``,
so a result that drifts from its schema fails here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import mcp.client.session
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

if sys.version_info < (3, 11):  # pragma: no cover - anyio brings the backport there
    from exceptiongroup import BaseExceptionGroup

REPO_ROOT = Path(__file__).resolve().parents[3]
EXAMPLE_VAULT = REPO_ROOT / "examples" / "vault"
# The revisions each test runs in: the SDK's own offer (its newest with a handshake), and the
# previous one, which clients pinned to it still ask for.
PROTOCOL_VERSIONS = ["2025-11-25", "2025-06-18"]
INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
NOT_FOUND = -32001
CONFLICT = -32002
INVALID_REQUEST = -32600
# Bounds every wait on the server so a hung server fails the run instead of stalling CI.
STARTUP_TIMEOUT_S = 30.0

TOOLS = {
    "kb_get_page",
    "kb_list_pages",
    "kb_write_page",
    "kb_delete_page",
    "kb_reindex",
    "kb_index_status",
    "kb_search",
    "kb_search_by_tag",
    "kb_autocomplete",
    "kb_backlinks",
    "kb_graph",
    "kb_resolve_link",
    "kb_add_tag",
    "kb_remove_tag",
    "kb_vault_info",
    # Extensions (docs/advanced/mcp.md, "Extensions").
    "kb_edit_page",
    "kb_get_outline",
    "kb_get_section",
    "kb_set_properties",
    "kb_recent_changes",
    "kb_list_tags",
    "kb_move_page",
}

NOTE_KEYS = {"path", "slug", "title", "content", "frontmatter", "links", "tags", "block_count", "modified_at"}
INDEX_STATUS_KEYS = {"index_fresh", "indexed_pages", "total_pages", "indexed_blocks", "last_indexed_at"}
SEARCH_KEYS = {"results", "total", "next_offset"}
SEARCH_HIT_KEYS = {"block_id", "content", "page_path", "snippet", "score"}
TAG_RESULT_KEYS = {"path", "success", "tag", "action", "applied"}
# (required keys, optional keys) of each tool's structuredContent, from the contract's §4/§5.
RESULT_KEYS: dict[str, tuple[set[str], set[str]]] = {
    "kb_get_page": (NOTE_KEYS, set()),
    "kb_write_page": (NOTE_KEYS, set()),
    "kb_list_pages": ({"pages"}, {"next_cursor"}),
    "kb_delete_page": (set(), set()),
    "kb_reindex": (INDEX_STATUS_KEYS, set()),
    "kb_index_status": (INDEX_STATUS_KEYS, set()),
    "kb_search": (SEARCH_KEYS, set()),
    "kb_search_by_tag": (SEARCH_KEYS, set()),
    "kb_autocomplete": ({"items"}, set()),
    "kb_backlinks": ({"backlinks"}, set()),
    "kb_graph": ({"nodes", "edges", "node_count", "edge_count", "vault_path"}, {"truncated"}),
    "kb_resolve_link": ({"resolved", "unresolved"}, set()),
    "kb_add_tag": (TAG_RESULT_KEYS, set()),
    "kb_remove_tag": (TAG_RESULT_KEYS, set()),
    "kb_vault_info": ({"vault_path", "page_count", "block_count", "index_fresh", "last_indexed_at"}, set()),
    "kb_edit_page": (NOTE_KEYS | {"diff", "written"}, set()),
    "kb_get_outline": ({"path", "headings", "modified_at"}, set()),
    "kb_get_section": ({"path", "section", "text", "line_start", "line_end", "modified_at"}, set()),
    "kb_set_properties": ({"path", "form", "changed", "dry_run", "modified_at", "changes"}, set()),
    "kb_recent_changes": ({"changes", "total", "next_offset"}, set()),
    "kb_list_tags": ({"tags", "total", "next_offset"}, set()),
    "kb_move_page": ({"moved", "rewritten", "dry_run"}, set()),
}


def server_env() -> dict[str, str] | None:
    """The SDK starts a stdio server with a small default environment; LLVM_PROFILE_FILE is passed
    on when set so that an instrumented binary writes its coverage profile where CI collects it."""
    profile = os.environ.get("LLVM_PROFILE_FILE")
    return {"LLVM_PROFILE_FILE": profile} if profile else None


def server_binary() -> Path:
    raw = os.environ.get("STRATUM_MCP_BIN", "target/release/stratum-mcp")
    path = Path(raw)
    if not path.is_absolute():
        path = REPO_ROOT / path
    if not path.is_file():
        pytest.fail(f"stratum-mcp binary not found at {path}; build it or set STRATUM_MCP_BIN")
    return path


def copy_vault(dest: Path) -> Path:
    vault = dest / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault, ignore=shutil.ignore_patterns(".pkm"))
    return vault


def indexed_vault(binary: Path, dest: Path) -> Path:
    """A vault copy whose index is built up front (`stratum-mcp index`), so the tool tests
    below do not depend on a short-lived session finishing the server's warm-up."""
    vault = copy_vault(dest)
    subprocess.run(
        [str(binary), "index", "--vault", str(vault)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=STARTUP_TIMEOUT_S,
        check=True,
    )
    return vault


@dataclass
class HttpServer:
    """A running `stratum-mcp --http` process and what a client needs to reach it."""

    url: str
    token: str
    vault: Path
    statuses: list[tuple[str, int]] = field(default_factory=list)


def _drain(stream: Any, lines: list[str], bound: threading.Event, url: list[str]) -> None:
    # Logs go to stderr for the server's whole life: keep reading so the pipe never fills.
    for line in stream:
        lines.append(line)
        match = re.fullmatch(r"listening on (http://\S+)", line.strip())
        if match and not url:
            url.append(match.group(1))
            bound.set()
    bound.set()


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def binary() -> Path:
    return server_binary()


@pytest.fixture(scope="module")
def stdio_vault(binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return indexed_vault(binary, tmp_path_factory.mktemp("stdio"))


@pytest.fixture(scope="module")
def http_server(binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    vault = indexed_vault(binary, tmp_path_factory.mktemp("http"))
    created = subprocess.run(
        [str(binary), "token", "create", "--vault", str(vault), "--name", "python-sdk"],
        capture_output=True,
        text=True,
        timeout=STARTUP_TIMEOUT_S,
        check=True,
    )
    out_lines = created.stdout.splitlines()
    assert len(out_lines) == 1, f"token create must print exactly one line, got {created.stdout!r}"
    token = out_lines[0].strip()
    assert token

    proc = subprocess.Popen(
        [str(binary), "--http", "--vault", str(vault), "--bind", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    url: list[str] = []
    bound = threading.Event()
    reader = threading.Thread(target=_drain, args=(proc.stderr, lines, bound, url), daemon=True)
    reader.start()
    try:
        bound.wait(STARTUP_TIMEOUT_S)
        if not url:
            pytest.fail("server never printed 'listening on http://HOST:PORT'; stderr:\n" + "".join(lines))
        yield HttpServer(url=url[0] + "/mcp", token=token, vault=vault)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        reader.join(timeout=5)


TRANSPORTS = ["stdio", "http"]


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(params=PROTOCOL_VERSIONS)
def protocol(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The revision the client's initialize asks for. The SDK has no option for it: an older one
    is asked for by changing the constant its handshake reads."""
    monkeypatch.setattr(mcp.client.session, "LATEST_HANDSHAKE_VERSION", request.param)
    return request.param


@pytest.fixture
def connect(transport: str, protocol: str, request: pytest.FixtureRequest, binary: Path):
    """Returns (vault, open_client): open_client() is an async context manager yielding a
    connected `mcp.Client` on the selected transport, initialized in the selected revision."""
    if transport == "stdio":
        vault: Path = request.getfixturevalue("stdio_vault")

        @asynccontextmanager
        async def open_stdio() -> AsyncIterator[Client]:
            params = StdioServerParameters(command=str(binary), args=["--stdio", "--vault", str(vault)], env=server_env())
            async with Client(params, read_timeout_seconds=STARTUP_TIMEOUT_S) as client:
                yield client

        return vault, open_stdio

    server: HttpServer = request.getfixturevalue("http_server")

    @asynccontextmanager
    async def open_http() -> AsyncIterator[Client]:
        async with open_http_client(server, token=server.token) as client:
            yield client

    return server.vault, open_http


@asynccontextmanager
async def open_http_client(server: HttpServer, token: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}

    async def record(response: httpx2.Response) -> None:
        body = response.request.content
        method = json.loads(body).get("method", "") if body else ""
        server.statuses.append((method, response.status_code))

    async with httpx2.AsyncClient(
        headers=headers,
        timeout=httpx2.Timeout(STARTUP_TIMEOUT_S),
        event_hooks={"response": [record]},
    ) as http:
        transport = streamable_http_client(server.url, http_client=http)
        async with Client(transport, read_timeout_seconds=STARTUP_TIMEOUT_S) as client:
            yield client


async def call(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Calls a tool and checks the result envelope: structuredContent with exactly the
    documented keys, and the same object again as JSON in content[0].text."""
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result
    structured = result.structured_content
    assert isinstance(structured, dict), f"{name}: structuredContent is {structured!r}"
    required, optional = RESULT_KEYS[name]
    keys = set(structured)
    assert required <= keys, f"{name}: missing keys {required - keys}"
    assert keys <= required | optional, f"{name}: unexpected keys {keys - required - optional}"
    assert len(result.content) >= 1
    first = result.content[0]
    assert first.type == "text"
    assert json.loads(first.text) == structured
    return structured


def mcp_error_in(exc: BaseException) -> MCPError:
    """The MCPError behind `exc`: the SDK raises a failed connect from inside its task groups,
    so it arrives wrapped in (possibly nested) exception groups."""
    if isinstance(exc, MCPError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            try:
                return mcp_error_in(inner)
            except AssertionError:
                continue
    raise AssertionError(f"no MCPError in {exc!r}") from exc


def note_text(vault: Path, rel: str) -> str:
    return (vault / rel).read_text(encoding="utf-8")


# --- lifecycle and listings -------------------------------------------------------------


@pytest.mark.anyio
async def test_initialize_reports_server_and_protocol(connect, protocol: str) -> None:
    _, open_client = connect
    async with open_client() as client:
        assert client.server_info is not None
        assert client.server_info.name == "stratum-mcp"
        assert client.server_info.version.startswith("0.7.")
        assert client.protocol_version == protocol
        tools_cap = client.server_capabilities.tools
        assert tools_cap is not None
        assert tools_cap.list_changed is False


@pytest.mark.anyio
async def test_list_tools_has_the_kb_tools(connect) -> None:
    _, open_client = connect
    async with open_client() as client:
        listing = await client.list_tools()
        names = [tool.name for tool in listing.tools]
        assert sorted(names) == sorted(TOOLS)
        for tool in listing.tools:
            assert tool.input_schema.get("type") == "object", tool.name
            assert tool.output_schema is not None, f"{tool.name} has no outputSchema"
            assert tool.output_schema.get("type") == "object", tool.name


@pytest.mark.anyio
async def test_tools_have_titles_and_icons_from_2025_11_25(connect, protocol: str) -> None:
    _, open_client = connect
    async with open_client() as client:
        listing = await client.list_tools()
        for tool in listing.tools:
            if protocol == "2025-11-25":
                assert tool.title and not tool.title.startswith("kb_"), tool
                assert tool.icons and tool.icons[0].mime_type == "image/svg+xml", tool
                assert tool.icons[0].src.startswith("data:image/svg+xml;base64,")
            else:
                assert tool.title is None and tool.icons is None, tool


@pytest.mark.anyio
async def test_refused_arguments_are_a_tool_result_from_2025_11_25(connect, protocol: str) -> None:
    # SEP-1303: the model reads what was wrong and can call again; before, a JSON-RPC error.
    _, open_client = connect
    async with open_client() as client:
        bad = {"path": "projects/Stratum.md", "no_such_argument": 1}
        if protocol == "2025-11-25":
            result = await client.call_tool("kb_get_page", bad)
            assert result.is_error is True, result
            text = result.content[0].text
            assert "InvalidArgs" in text and "no_such_argument" in text, text
        else:
            with pytest.raises(MCPError) as err:
                await client.call_tool("kb_get_page", bad)
            assert err.value.code == INVALID_PARAMS
            assert err.value.data["kind"] == "InvalidArgs"
        # A tool that does not exist is a protocol error in every revision.
        with pytest.raises(MCPError) as err:
            await client.call_tool("kb_no_such_tool", {})
        assert err.value.code == METHOD_NOT_FOUND


@pytest.mark.anyio
async def test_resources_list_and_read(connect) -> None:
    vault, open_client = connect
    async with open_client() as client:
        uris: list[str] = []
        cursor: str | None = None
        for _ in range(100):
            page = await client.list_resources(cursor=cursor)
            uris.extend(str(r.uri) for r in page.resources)
            cursor = page.next_cursor
            if cursor is None:
                break
        assert uris, "resources/list returned nothing"
        assert all(uri.startswith("note://") for uri in uris), uris
        assert "note://projects/Stratum.md" in uris
        # RFC 3986: a space in a path segment is percent-encoded, and the URI reads back.
        assert "note://people/Ada%20Lovelace.md" in uris

        read = await client.read_resource("note://projects/Stratum.md")
        assert len(read.contents) == 1
        contents = read.contents[0]
        assert contents.uri == "note://projects/Stratum.md"
        assert contents.text == note_text(vault, "projects/Stratum.md")
        ada = await client.read_resource("note://people/Ada%20Lovelace.md")
        assert ada.contents[0].text == note_text(vault, "people/Ada Lovelace.md")


# --- every tool -------------------------------------------------------------------------


@pytest.mark.anyio
async def test_kb_get_page(connect) -> None:
    vault, open_client = connect
    async with open_client() as client:
        note = await call(client, "kb_get_page", {"path": "projects/Stratum.md"})
        assert note["path"] == "projects/Stratum.md"
        assert note["slug"] == "projects/Stratum"
        assert note["title"] == "Stratum"
        assert note["content"] == note_text(vault, "projects/Stratum.md")
        assert "project" in note["tags"]
        assert note["frontmatter"]["title"] == "Stratum"
        assert any(link["target"] == "Ada Lovelace" for link in note["links"])


@pytest.mark.anyio
async def test_kb_list_pages(connect) -> None:
    _, open_client = connect
    async with open_client() as client:
        listing = await call(client, "kb_list_pages", {"limit": 1000})
        paths = {page["path"] for page in listing["pages"]}
        assert "projects/Stratum.md" in paths
        assert "people/Ada Lovelace.md" in paths
        assert len(paths) >= 40
        for page in listing["pages"]:
            assert set(page) == {"path", "slug", "title", "block_count", "modified_at"}

        first = await call(client, "kb_list_pages", {"limit": 5})
        assert len(first["pages"]) == 5
        assert isinstance(first.get("next_cursor"), str)
        second = await call(client, "kb_list_pages", {"limit": 5, "cursor": first["next_cursor"]})
        assert not {p["path"] for p in first["pages"]} & {p["path"] for p in second["pages"]}


@pytest.mark.anyio
async def test_kb_write_page_then_read_back(connect, transport: str) -> None:
    vault, open_client = connect
    path = f"inbox/Python SDK {transport} write.md"
    content = "---\ntitle: Written by the SDK\ntags: [sdk]\n---\n\n# Written\n\nSee [[Stratum]].\n"
    async with open_client() as client:
        note = await call(client, "kb_write_page", {"path": path, "content": content})
        assert note["path"] == path
        assert note["content"] == content
        assert "sdk" in note["tags"]
        assert any(link["target"] == "Stratum" for link in note["links"])
        assert note_text(vault, path) == content

        again = await call(client, "kb_get_page", {"path": path})
        assert again["content"] == content


@pytest.mark.anyio
async def test_kb_delete_page(connect, transport: str) -> None:
    vault, open_client = connect
    path = f"inbox/Python SDK {transport} delete.md"
    async with open_client() as client:
        await call(client, "kb_write_page", {"path": path, "content": "# Doomed\n"})
        assert (vault / path).exists()
        assert await call(client, "kb_delete_page", {"path": path}) == {}
        assert not (vault / path).exists()
        with pytest.raises(MCPError) as err:
            await client.call_tool("kb_get_page", {"path": path})
        assert err.value.code == NOT_FOUND


@pytest.mark.anyio
async def test_kb_reindex_and_index_status(connect) -> None:
    _, open_client = connect
    async with open_client() as client:
        status = await call(client, "kb_reindex", {"mode": "incremental"})
        assert status["total_pages"] >= 40
        # A note with nothing but frontmatter has no blocks to index, so indexed may trail total.
        assert 0 < status["indexed_pages"] <= status["total_pages"]
        assert status["index_fresh"] is True
        current = await call(client, "kb_index_status", {})
        assert current["total_pages"] >= 40
        assert current["indexed_blocks"] > 0


@pytest.mark.anyio
async def test_kb_search(connect) -> None:
    _, open_client = connect
    async with open_client() as client:
        found = await call(client, "kb_search", {"query": "Lovelace", "limit": 50})
        assert found["total"] >= 1
        assert found["results"], found
        for hit in found["results"]:
            assert set(hit) == SEARCH_HIT_KEYS
        assert any(hit["page_path"] == "people/Ada Lovelace.md" for hit in found["results"]) or any(
            "Lovelace" in hit["content"] for hit in found["results"]
        )


@pytest.mark.anyio
async def test_kb_search_by_tag(connect) -> None:
    _, open_client = connect
    async with open_client() as client:
        found = await call(client, "kb_search_by_tag", {"tag": "project"})
        assert found["results"], found
        for hit in found["results"]:
            assert set(hit) == SEARCH_HIT_KEYS
        assert "projects/Stratum.md" in {hit["page_path"] for hit in found["results"]}


@pytest.mark.anyio
async def test_kb_autocomplete(connect) -> None:
    _, open_client = connect
    async with open_client() as client:
        done = await call(client, "kb_autocomplete", {"query": "Strat", "kind": "page"})
        assert done["items"], done
        for item in done["items"]:
            assert set(item) == {"text", "kind", "detail"}
            assert item["kind"] == "page"
        assert "projects/Stratum.md" in {item["detail"] for item in done["items"]}


@pytest.mark.anyio
async def test_kb_backlinks(connect) -> None:
    _, open_client = connect
    async with open_client() as client:
        links = await call(client, "kb_backlinks", {"path": "projects/Stratum.md"})
        assert links["backlinks"], links
        for link in links["backlinks"]:
            assert set(link) == {"source_id", "source_page", "context", "is_linked"}
        assert "projects/Beacon.md" in {link["source_page"] for link in links["backlinks"] if link["is_linked"]}


@pytest.mark.anyio
async def test_kb_graph(connect) -> None:
    _, open_client = connect
    async with open_client() as client:
        graph = await call(client, "kb_graph", {"path": "projects/Stratum.md", "depth": 1})
        assert graph["node_count"] == len(graph["nodes"])
        assert graph["edge_count"] == len(graph["edges"])
        assert "projects/Stratum.md" in {node["path"] for node in graph["nodes"]}
        assert graph["edges"]
        whole = await call(client, "kb_graph", {})
        assert whole["node_count"] >= graph["node_count"]


@pytest.mark.anyio
async def test_kb_resolve_link(connect) -> None:
    _, open_client = connect
    async with open_client() as client:
        alias = await call(client, "kb_resolve_link", {"target": "DDIA"})
        assert alias["unresolved"] is False
        assert alias["resolved"]["path"] == "reading/Designing Data-Intensive Applications.md"
        missing = await call(client, "kb_resolve_link", {"target": "No Such Note Anywhere"})
        assert missing == {"resolved": None, "unresolved": True}


@pytest.mark.anyio
async def test_kb_add_tag_and_remove_tag(connect, transport: str) -> None:
    vault, open_client = connect
    path = f"inbox/Python SDK {transport} tags.md"
    async with open_client() as client:
        await call(client, "kb_write_page", {"path": path, "content": "# Tag me\n\nSome text.\n"})
        added = await call(client, "kb_add_tag", {"path": path, "tag": "client-test"})
        assert added["success"] is True
        assert added["action"] == "add"
        assert added["tag"] == "client-test"
        assert added["applied"] == 1
        assert "client-test" in (await call(client, "kb_get_page", {"path": path}))["tags"]

        removed = await call(client, "kb_remove_tag", {"path": path, "tag": "client-test"})
        assert removed["success"] is True
        assert removed["action"] == "remove"
        assert removed["applied"] >= 1
        assert "client-test" not in (await call(client, "kb_get_page", {"path": path}))["tags"]
        assert "client-test" not in note_text(vault, path)


@pytest.mark.anyio
async def test_kb_set_properties_then_recent_changes_and_list_tags(connect, transport: str) -> None:
    vault, open_client = connect
    path = f"inbox/Python SDK {transport} properties.md"
    text = "# Properties\n\nSome text.\n"
    async with open_client() as client:
        written = await call(client, "kb_write_page", {"path": path, "content": text})
        tag = f"sdk-props-{transport}"
        out = await call(client, "kb_set_properties", {"path": path, "set": {"status": "done", "tags": [tag]}})
        assert out["form"] == "frontmatter" and out["changed"] is True
        assert out["changes"][0] == {"key": "status", "before": None, "after": "done"}
        assert (await call(client, "kb_get_page", {"path": path}))["frontmatter"]["status"] == "done"

        recent = await call(client, "kb_recent_changes", {"since": written["modified_at"]})
        assert recent["changes"][0]["path"] == path
        assert recent["changes"][0]["modified_at"] == out["modified_at"]
        tags = await call(client, "kb_list_tags", {"prefix": tag})
        assert tags["tags"] == [{"tag": tag, "count": 1}]

        await call(client, "kb_set_properties", {"path": path, "remove": ["status", "tags"]})
        assert note_text(vault, path) == text


@pytest.mark.anyio
async def test_kb_move_page_rewrites_the_links_to_it(connect, transport: str, protocol: str) -> None:
    vault, open_client = connect
    # One vault per transport, shared by the revisions: each run moves its own note.
    name = f"Python SDK {transport} {protocol}"
    old = f"inbox/{name} to move.md"
    new = f"archive/{name} moved.md"
    linking = f"inbox/{name} linking.md"
    async with open_client() as client:
        await call(client, "kb_write_page", {"path": old, "content": "# To move\n"})
        await call(
            client,
            "kb_write_page",
            {"path": linking, "content": f"See [[{name} to move|it]].\n"},
        )
        out = await call(client, "kb_move_page", {"from": old, "to": new})
        assert out["moved"] == [{"from": old, "to": new}]
        assert out["rewritten"] == [{"path": linking, "links": 1}]
        assert out["dry_run"] is False
        assert note_text(vault, linking) == f"See [[{name} moved|it]].\n"
        assert not (vault / old).exists()


@pytest.mark.anyio
async def test_kb_get_outline_get_section_and_edit_page(connect, transport: str) -> None:
    vault, open_client = connect
    path = f"inbox/Python SDK {transport} edit.md"
    content = "# Plan\n\n## Known issues\n- one\n\n## Done\n- old\n"
    async with open_client() as client:
        await call(client, "kb_write_page", {"path": path, "content": content})
        outline = await call(client, "kb_get_outline", {"path": path})
        assert [h["section"] for h in outline["headings"]] == ["Plan", "Plan#Known issues", "Plan#Done"]
        assert [h["level"] for h in outline["headings"]] == [1, 2, 2]

        section = await call(client, "kb_get_section", {"path": path, "section": "known issues"})
        assert section["text"] == "## Known issues\n- one\n"
        assert (section["line_start"], section["line_end"]) == (3, 4)

        edits = [{"op": "append", "section": "Known issues", "text": "- two"}]
        dry = await call(client, "kb_edit_page", {"path": path, "edits": edits, "dry_run": True})
        assert dry["written"] is False
        assert "\n+- two\n" in dry["diff"]
        assert note_text(vault, path) == content

        edited = await call(
            client,
            "kb_edit_page",
            {"path": path, "edits": edits, "expected_modified": section["modified_at"]},
        )
        assert edited["written"] is True
        assert edited["content"] == "# Plan\n\n## Known issues\n- one\n- two\n\n## Done\n- old\n"
        assert note_text(vault, path) == edited["content"]

        # The same guard again is stale now: Conflict, nothing written.
        with pytest.raises(MCPError) as err:
            await client.call_tool(
                "kb_edit_page",
                {"path": path, "edits": edits, "expected_modified": section["modified_at"]},
            )
        assert err.value.code == CONFLICT
        assert note_text(vault, path) == edited["content"]

        for name, args in [
            ("kb_get_outline", {"path": "nowhere/Missing.md"}),
            ("kb_get_section", {"path": "nowhere/Missing.md", "section": "A"}),
            ("kb_edit_page", {"path": "nowhere/Missing.md", "edits": edits}),
        ]:
            with pytest.raises(MCPError) as err:
                await client.call_tool(name, args)
            assert err.value.code == NOT_FOUND, name


@pytest.mark.anyio
async def test_kb_vault_info(connect) -> None:
    _, open_client = connect
    async with open_client() as client:
        info = await call(client, "kb_vault_info", {})
        assert info["page_count"] >= 40
        assert info["block_count"] > 0
        assert isinstance(info["index_fresh"], bool)


# --- errors -----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_missing_note_is_not_found_error(connect) -> None:
    _, open_client = connect
    async with open_client() as client:
        with pytest.raises(MCPError) as err:
            await client.call_tool("kb_get_page", {"path": "nowhere/Missing Note.md"})
        assert err.value.code == NOT_FOUND
        assert err.value.data["kind"] == "NotFound"
        assert err.value.data["note_path"] == "nowhere/Missing Note.md"


@pytest.mark.anyio
async def test_http_tool_call_without_token_is_rejected(http_server: HttpServer) -> None:
    http_server.statuses.clear()
    async with open_http_client(http_server, token=None) as client:
        with pytest.raises(MCPError) as err:
            await client.call_tool("kb_vault_info", {})
    assert err.value.code == INVALID_REQUEST
    assert err.value.data["kind"] == "Unauthenticated"
    assert ("tools/call", 401) in http_server.statuses, http_server.statuses


@pytest.mark.anyio
async def test_http_tool_call_with_unknown_token_is_rejected(http_server: HttpServer) -> None:
    # The spec leaves open whether an unknown token is refused already at initialize or
    # only at the first tool call; either way the client must never get a tool result.
    http_server.statuses.clear()
    with pytest.raises(BaseException) as raised:
        async with open_http_client(http_server, token="not-a-real-token") as client:
            await client.call_tool("kb_vault_info", {})
    err = mcp_error_in(raised.value)
    assert err.data["kind"] == "Unauthenticated", err.error
    assert 401 in {status for _, status in http_server.statuses}, http_server.statuses


# --- warm-up --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_session_ended_during_warm_up_leaves_search_working(binary: Path, tmp_path: Path) -> None:
    # An MCP host may start the stdio server, initialize and quit at once, before the first
    # indexing of a fresh vault has finished. The next session must still find notes.
    vault = copy_vault(tmp_path)
    params = StdioServerParameters(command=str(binary), args=["--stdio", "--vault", str(vault)], env=server_env())
    async with Client(params, read_timeout_seconds=STARTUP_TIMEOUT_S):
        pass
    async with Client(params, read_timeout_seconds=STARTUP_TIMEOUT_S) as client:
        await call(client, "kb_reindex", {"mode": "incremental"})
        found = await call(client, "kb_search", {"query": "Lovelace"})
        assert found["total"] >= 1, found
        status = await call(client, "kb_index_status", {})
        assert status["indexed_pages"] > 0, status


# --- a shared vault ---------------------------------------------------------------------


async def wait_for_search(client: Client, query: str, path: str, timeout_s: float = 5.0) -> None:
    """Polls kb_search until `path` is among the hits for `query`."""
    import anyio

    with anyio.fail_after(timeout_s):
        while True:
            found = await call(client, "kb_search", {"query": query})
            if any(hit["page_path"] == path for hit in found["results"]):
                return
            await anyio.sleep(0.05)


@pytest.mark.anyio
async def test_two_clients_share_a_vault_and_see_edits_made_in_another_editor(binary: Path, tmp_path: Path) -> None:
    # Two MCP hosts (say Claude Desktop and a terminal) each start their own stdio server on
    # the same vault while the person edits notes in another editor. Both answer; neither
    # needs kb_reindex to find the edited note.
    vault = indexed_vault(binary, tmp_path)
    params = StdioServerParameters(command=str(binary), args=["--stdio", "--vault", str(vault)], env=server_env())
    async with Client(params, read_timeout_seconds=STARTUP_TIMEOUT_S) as first:
        async with Client(params, read_timeout_seconds=STARTUP_TIMEOUT_S) as second:
            (vault / "Edited elsewhere.md").write_text("- a note about the okapi\n", encoding="utf-8")
            await wait_for_search(first, "okapi", "Edited elsewhere.md")
            await wait_for_search(second, "okapi", "Edited elsewhere.md")

            written = await call(second, "kb_write_page", {"path": "From second.md", "content": "- the second client's narwhal"})
            read = await call(first, "kb_get_page", {"path": "From second.md"})
            assert read["modified_at"] == written["modified_at"]
            await wait_for_search(first, "narwhal", "From second.md")

            # A write guarded by a version another client has replaced is refused.
            await call(first, "kb_write_page", {"path": "From second.md", "content": "- first wins", "expected_modified": read["modified_at"]})
            with pytest.raises(MCPError) as err:
                await second.call_tool(
                    "kb_write_page",
                    {"path": "From second.md", "content": "- stale", "expected_modified": written["modified_at"]},
                )
            assert err.value.code == CONFLICT
            assert err.value.data["kind"] == "Conflict"
            assert note_text(vault, "From second.md") == "- first wins"
