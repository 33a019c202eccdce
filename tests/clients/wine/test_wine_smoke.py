"""Smoke suite of the Windows build (x86_64-pc-windows-gnu) under wine, through the official MCP
Python SDK, as a Windows user's MCP client would drive it.

It starts `wine stratum-mcp.exe --stdio --vault <copy of examples/vault>` (the vault in a folder
whose name has a space, passed as a `Z:\\...` path with backslashes), initializes, searches,
writes a note, edits another note behind the server's back (a plain file write) and finds the
change through the watcher, then starts a second process on the same vault, which forwards its
calls to the first over the leader's named pipe, and stops both.

What wine cannot show (docs/guides/clients.md, "Windows"): NTFS ACL enforcement on the pipe, real
ReadDirectoryChangesW semantics (wine maps it onto inotify), Windows' sharing violations while an
editor holds a note open, and reparse points (junctions) on NTFS.

The binary is STRATUM_MCP_EXE; WINEPREFIX must name an initialized prefix (scripts/wine-smoke.sh).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO_ROOT = Path(__file__).resolve().parents[3]
EXAMPLE_VAULT = REPO_ROOT / "examples" / "vault"
# Bounds every wait so that a hung server fails the run instead of stalling CI. Wine starts a
# process in about a second; indexing the example vault takes a few more.
TIMEOUT_S = 90.0
VAULT_LOCKED = -32006


def windows_path(path: Path) -> str:
    """The path as a Windows program under wine sees it: drive Z: is the Unix root."""
    return "Z:" + str(path).replace("/", "\\")


def exe() -> Path:
    raw = os.environ.get("STRATUM_MCP_EXE", "target/x86_64-pc-windows-gnu/release/stratum-mcp.exe")
    path = Path(raw) if Path(raw).is_absolute() else REPO_ROOT / raw
    if not path.is_file():
        pytest.fail(f"the Windows binary is missing at {path}; build it or set STRATUM_MCP_EXE")
    return path


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def server(vault: Path, log: TextIO) -> AsyncIterator[Client]:
    env = {"WINEDEBUG": "-all"}
    for key in ("WINEPREFIX", "WINEDLLOVERRIDES"):
        if key in os.environ:
            env[key] = os.environ[key]
    params = StdioServerParameters(
        command="wine",
        args=[str(exe()), "--stdio", "--vault", windows_path(vault)],
        env=env,
    )
    async with Client(stdio_client(params, errlog=log), read_timeout_seconds=TIMEOUT_S) as client:
        yield client


async def call(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool's structured result; waits while the server is still indexing (VaultLocked)."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        try:
            result = await client.call_tool(name, arguments)
        except MCPError as e:
            if e.code == VAULT_LOCKED and time.monotonic() < deadline:
                await anyio.sleep(0.5)
                continue
            raise
        if result.is_error and "VaultLocked" in str(result.content) and time.monotonic() < deadline:
            await anyio.sleep(0.5)
            continue
        assert not result.is_error, result
        assert isinstance(result.structured_content, dict), result
        return result.structured_content


async def found(client: Client, query: str) -> list[str]:
    hits = await call(client, "kb_search", {"query": query})
    return [h["page_path"] for h in hits["results"]]


async def eventually_found(client: Client, query: str, path: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while path not in await found(client, query):
        if time.monotonic() > deadline:
            pytest.fail(f"{path} never came up for {query!r}")
        await anyio.sleep(0.5)


@pytest.mark.anyio
async def test_windows_build_under_wine(tmp_path: Path) -> None:
    vault = tmp_path / "My Vault"
    shutil.copytree(EXAMPLE_VAULT, vault, ignore=shutil.ignore_patterns(".pkm"))
    leader_log = tmp_path / "leader.log"
    follower_log = tmp_path / "follower.log"
    with leader_log.open("w") as llog, follower_log.open("w") as flog:
        async with server(vault, llog) as leader:
            # Initialized (the context did the handshake); the tools are there.
            tools = {t.name for t in (await leader.list_tools()).tools}
            assert {"kb_search", "kb_write_page", "kb_get_page"} <= tools, tools

            # Search the example vault.
            assert await found(leader, "compaction"), "kb_search found nothing for 'compaction'"

            # Write a note in a new folder; it is on disk and found.
            written = await call(
                leader,
                "kb_write_page",
                {"path": "inbox/wine smoke.md", "content": "# Wine smoke\n\nA quetzalcoatl note.\n"},
            )
            assert written["path"] == "inbox/wine smoke.md", written
            on_disk = (vault / "inbox" / "wine smoke.md").read_text(encoding="utf-8")
            assert "quetzalcoatl" in on_disk, on_disk
            assert "inbox/wine smoke.md" in await found(leader, "quetzalcoatl")

            # A name Windows cannot hold is refused with a one-line InvalidArgs error.
            # (2025-11-25 answers it as a tool error, older revisions as a protocol error.)
            try:
                refused = await leader.call_tool("kb_write_page", {"path": "inbox/what?.md", "content": "x"})
                assert refused.is_error, refused
                message = refused.content[0].text
            except MCPError as e:
                message = f"{e.message} {e.data}"
            assert "InvalidArgs" in message and "Windows cannot hold" in message, message
            assert not (vault / "inbox" / "what?.md").exists()

            # Another program edits a note behind the server's back: the watcher finds it.
            (vault / "Home.md").write_text("# Home\n\nNow about axolotls.\n", encoding="utf-8")
            await eventually_found(leader, "axolotls", "Home.md")

            # A second process on the same vault follows the first over the named pipe.
            async with server(vault, flog) as follower:
                assert "Home.md" in await found(follower, "axolotls")
                await call(
                    follower,
                    "kb_write_page",
                    {"path": "inbox/from follower.md", "content": "# From the follower\n\nA narwhal.\n"},
                )
                page = await call(leader, "kb_get_page", {"path": "inbox/from follower.md"})
                assert "narwhal" in page["content"], page

                # The follower moves that note to a new folder and name (the leader applies it,
                # journaled): the old file goes, and both links to it follow, each in its form.
                await call(
                    leader,
                    "kb_write_page",
                    {"path": "inbox/linker.md", "content": "# Linker\n\n[[from follower]] and [it](from%20follower.md)\n"},
                )
                moved = await call(
                    follower, "kb_move_page", {"from": "inbox/from follower.md", "to": "archive/Narwhal notes.md"}
                )
                assert moved["moved"] == [{"from": "inbox/from follower.md", "to": "archive/Narwhal notes.md"}], moved
                assert moved["rewritten"] == [{"path": "inbox/linker.md", "links": 2}], moved
                assert not (vault / "inbox" / "from follower.md").exists()
                assert "narwhal" in (vault / "archive" / "Narwhal notes.md").read_text(encoding="utf-8")
                linker = (vault / "inbox" / "linker.md").read_text(encoding="utf-8")
                assert linker == "# Linker\n\n[[Narwhal notes]] and [it](../archive/Narwhal%20notes.md)\n", linker
                assert not (vault / ".pkm" / "change.journal").exists()
            flog.flush()
            text = follower_log.read_text(encoding="utf-8", errors="replace")
            assert "following it" in text, f"the second process did not follow the first:\n{text}"
    # Both stopped when their stdin closed (the SDK waits for them, else kills them): the vault's
    # lock is free again, so a new process leads at once.
    with (tmp_path / "again.log").open("w") as log:
        async with server(vault, log) as again:
            assert "archive/Narwhal notes.md" in await found(again, "narwhal")
    text = (tmp_path / "again.log").read_text(encoding="utf-8", errors="replace")
    assert "following it" not in text, text
