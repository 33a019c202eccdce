// End-to-end tests of stratum-mcp through the official MCP TypeScript SDK.
//
// Every test drives the real release binary (STRATUM_MCP_BIN) on a temporary copy of
// examples/vault, over stdio and over Streamable HTTP with a personal access token, each in
// protocol revision 2025-11-25 (what this SDK asks for) and 2025-06-18, the way an MCP host would. The SDK itself checks each tool result against the
// tool's outputSchema (after listTools), so a result that drifts from its schema fails here.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = resolve(HERE, '..', '..', '..');
const EXAMPLE_VAULT = join(REPO_ROOT, 'examples', 'vault');
// The revisions each suite runs in: the SDK's own offer, and the previous one.
const PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18'];
const INVALID_PARAMS = -32602;
const METHOD_NOT_FOUND = -32601;
const NOT_FOUND = -32001;
// Bounds every wait on the server so a hung server fails the run instead of stalling CI.
const TIMEOUT_MS = 30_000;

// The contract's fifteen and the extensions (docs/advanced/mcp.md, "Extensions"), sorted.
const TOOLS = [
  'kb_add_tag', 'kb_autocomplete', 'kb_backlinks', 'kb_delete_page', 'kb_get_page', 'kb_graph',
  'kb_index_status', 'kb_list_pages', 'kb_reindex', 'kb_remove_tag', 'kb_resolve_link', 'kb_search',
  'kb_search_by_tag', 'kb_vault_info', 'kb_write_page',
  // Extensions (docs/advanced/mcp.md, "Extensions").
  'kb_edit_page', 'kb_get_outline', 'kb_get_section', 'kb_set_properties', 'kb_recent_changes', 'kb_list_tags',
  'kb_move_page',
].sort();

const NOTE_KEYS = ['path', 'slug', 'title', 'content', 'frontmatter', 'links', 'tags', 'block_count', 'modified_at'];
const INDEX_STATUS_KEYS = ['index_fresh', 'indexed_pages', 'total_pages', 'indexed_blocks', 'last_indexed_at'];
const SEARCH_KEYS = ['results', 'total', 'next_offset'];
const SEARCH_HIT_KEYS = ['block_id', 'content', 'page_path', 'snippet', 'score'];
const TAG_RESULT_KEYS = ['path', 'success', 'tag', 'action', 'applied'];
// [required keys, optional keys] of each tool's structuredContent, from the contract's §4/§5.
const RESULT_KEYS = {
  kb_get_page: [NOTE_KEYS, []],
  kb_write_page: [NOTE_KEYS, []],
  kb_list_pages: [['pages'], ['next_cursor']],
  kb_delete_page: [[], []],
  kb_reindex: [INDEX_STATUS_KEYS, []],
  kb_index_status: [INDEX_STATUS_KEYS, []],
  kb_search: [SEARCH_KEYS, []],
  kb_search_by_tag: [SEARCH_KEYS, []],
  kb_autocomplete: [['items'], []],
  kb_backlinks: [['backlinks'], []],
  kb_graph: [['nodes', 'edges', 'node_count', 'edge_count', 'vault_path'], ['truncated']],
  kb_resolve_link: [['resolved', 'unresolved'], []],
  kb_add_tag: [TAG_RESULT_KEYS, []],
  kb_remove_tag: [TAG_RESULT_KEYS, []],
  kb_vault_info: [['vault_path', 'page_count', 'block_count', 'index_fresh', 'last_indexed_at'], []],
  kb_edit_page: [[...NOTE_KEYS, 'diff', 'written'], []],
  kb_get_outline: [['path', 'headings', 'modified_at'], []],
  kb_get_section: [['path', 'section', 'text', 'line_start', 'line_end', 'modified_at'], []],
  kb_set_properties: [['path', 'form', 'changed', 'dry_run', 'modified_at', 'changes'], []],
  kb_recent_changes: [['changes', 'total', 'next_offset'], []],
  kb_list_tags: [['tags', 'total', 'next_offset'], []],
  kb_move_page: [['moved', 'rewritten', 'dry_run'], []],
};

function serverBinary() {
  const raw = process.env.STRATUM_MCP_BIN ?? 'target/release/stratum-mcp';
  const path = isAbsolute(raw) ? raw : join(REPO_ROOT, raw);
  assert.ok(existsSync(path), `stratum-mcp binary not found at ${path}; build it or set STRATUM_MCP_BIN`);
  return path;
}

/** The SDK starts a stdio server with a small default environment; LLVM_PROFILE_FILE is passed on
 * when set so that an instrumented binary writes its coverage profile where CI collects it. */
function serverEnv() {
  const profile = process.env.LLVM_PROFILE_FILE;
  return profile ? { LLVM_PROFILE_FILE: profile } : undefined;
}

function copyVault() {
  const root = mkdtempSync(join(tmpdir(), 'stratum-ts-'));
  const vault = join(root, 'vault');
  cpSync(EXAMPLE_VAULT, vault, { recursive: true, filter: (src) => !src.split('/').includes('.pkm') });
  return { root, vault };
}

/**
 * A vault copy whose index is built up front (`stratum-mcp index`), so the tool tests do
 * not depend on a short-lived session finishing the server's warm-up.
 */
function indexedVault(bin) {
  const copy = copyVault();
  execFileSync(bin, ['index', '--vault', copy.vault], { stdio: 'ignore', timeout: TIMEOUT_MS });
  return copy;
}

const sortedKeys = (obj) => Object.keys(obj).sort();

/** Starts `stratum-mcp --http` on an ephemeral port and resolves once it printed its address. */
function startHttpServer(bin, vault) {
  const child = spawn(bin, ['--http', '--vault', vault, '--bind', '127.0.0.1:0'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const lines = [];
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => {
      child.kill();
      reject(new Error(`server never printed 'listening on http://HOST:PORT'; stderr:\n${lines.join('\n')}`));
    }, TIMEOUT_MS);
    // Logs go to stderr for the server's whole life: keep reading so the pipe never fills.
    const rl = createInterface({ input: child.stderr });
    rl.on('line', (line) => {
      lines.push(line);
      const match = /^listening on (http:\/\/\S+)$/.exec(line.trim());
      if (match) {
        clearTimeout(timer);
        resolvePromise({ child, url: `${match[1]}/mcp` });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening; stderr:\n${lines.join('\n')}`));
    });
  });
}

function stopProcess(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(timer);
      done();
    });
    child.kill('SIGTERM');
  });
}

/**
 * Makes the client's initialize ask for `version`: the SDK always offers its newest revision and
 * has no option for another, so the request is rewritten on its way out.
 */
function askFor(transport, version) {
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    const asked = message.method === 'initialize'
      ? { ...message, params: { ...message.params, protocolVersion: version } }
      : message;
    return send(asked, options);
  };
}

/** One transport's fixture: a vault copy plus a way to open a client connected in `version`. */
function transportFixture(kind, version) {
  const state = { bin: null, vault: null, root: null, server: null, token: null };

  async function open(token) {
    const client = new Client({ name: 'stratum-ts-client-tests', version: '0.0.0' });
    let transport;
    const negotiated = { version: null };
    if (kind === 'stdio') {
      transport = new StdioClientTransport({
        command: state.bin,
        args: ['--stdio', '--vault', state.vault],
        env: serverEnv(),
        stderr: 'ignore',
      });
      // Client.connect hands the negotiated version to any transport that takes it
      // (HTTP transports need it for their headers); stdio has no such hook, so record it.
      transport.setProtocolVersion = (v) => {
        negotiated.version = v;
      };
    } else {
      const headers = token == null ? {} : { Authorization: `Bearer ${token}` };
      transport = new StreamableHTTPClientTransport(new URL(state.server.url), { requestInit: { headers } });
    }
    askFor(transport, version);
    await client.connect(transport, { timeout: TIMEOUT_MS });
    return {
      client,
      transport,
      protocolVersion: () => (kind === 'stdio' ? negotiated.version : transport.protocolVersion),
      async close() {
        if (kind === 'http' && transport.sessionId !== undefined) {
          await transport.terminateSession();
        }
        await client.close();
      },
    };
  }

  return {
    state,
    async setUp() {
      state.bin = serverBinary();
      Object.assign(state, indexedVault(state.bin));
      if (kind === 'http') {
        const out = execFileSync(state.bin, ['token', 'create', '--vault', state.vault, '--name', 'ts-sdk'], {
          encoding: 'utf8',
          timeout: TIMEOUT_MS,
        });
        const lines = out.split('\n').filter((l) => l.length > 0);
        assert.equal(lines.length, 1, `token create must print exactly one line, got ${JSON.stringify(out)}`);
        state.token = lines[0].trim();
        state.server = await startHttpServer(state.bin, state.vault);
      }
    },
    async tearDown() {
      if (state.server) await stopProcess(state.server.child);
      if (state.root) rmSync(state.root, { recursive: true, force: true });
    },
    /** Runs `fn(session)` with a connected client (authenticated on HTTP) and closes it after. */
    async with(fn, token = state.token ?? undefined) {
      const session = await open(token);
      try {
        return await fn(session);
      } finally {
        await session.close();
      }
    },
  };
}

/**
 * Calls a tool and checks the result envelope: structuredContent with exactly the
 * documented keys, and the same object again as JSON in content[0].text.
 */
async function call(client, name, args) {
  const result = await client.callTool({ name, arguments: args }, undefined, { timeout: TIMEOUT_MS });
  assert.notEqual(result.isError, true, JSON.stringify(result));
  const structured = result.structuredContent;
  assert.equal(typeof structured, 'object', `${name}: structuredContent is ${JSON.stringify(structured)}`);
  assert.notEqual(structured, null);
  const [required, optional] = RESULT_KEYS[name];
  const keys = Object.keys(structured);
  for (const k of required) assert.ok(keys.includes(k), `${name}: missing key ${k}`);
  for (const k of keys) assert.ok(required.includes(k) || optional.includes(k), `${name}: unexpected key ${k}`);
  assert.ok(result.content.length >= 1);
  assert.equal(result.content[0].type, 'text');
  assert.deepEqual(JSON.parse(result.content[0].text), structured);
  return structured;
}

async function listAllResources(client) {
  const uris = [];
  let cursor;
  for (let i = 0; i < 100; i += 1) {
    const page = await client.listResources(cursor === undefined ? {} : { cursor });
    uris.push(...page.resources.map((r) => r.uri));
    cursor = page.nextCursor;
    if (cursor === undefined || cursor === null) break;
  }
  return uris;
}

for (const [kind, version] of ['stdio', 'http'].flatMap((k) => PROTOCOL_VERSIONS.map((v) => [k, v]))) {
  describe(`stratum-mcp over ${kind}, protocol ${version}`, () => {
    const fx = transportFixture(kind, version);
    const noteText = (rel) => readFileSync(join(fx.state.vault, rel), 'utf8');
    const exists = (rel) => existsSync(join(fx.state.vault, rel));

    before(() => fx.setUp());
    after(() => fx.tearDown());

    it('initialize reports the server name and protocol version', () =>
      fx.with(async ({ client, protocolVersion }) => {
        const info = client.getServerVersion();
        assert.equal(info.name, 'stratum-mcp');
        assert.match(info.version, /^0\.7\./);
        assert.equal(protocolVersion(), version);
        assert.equal(client.getServerCapabilities().tools.listChanged, false);
      }));

    it('tools/list has the kb_* tools, each with an outputSchema', () =>
      fx.with(async ({ client }) => {
        const { tools } = await client.listTools();
        assert.deepEqual(tools.map((t) => t.name).sort(), TOOLS);
        for (const tool of tools) {
          assert.equal(tool.inputSchema.type, 'object', tool.name);
          assert.equal(tool.outputSchema?.type, 'object', `${tool.name} has no object outputSchema`);
        }
      }));

    it('tools carry a title and icons from 2025-11-25 on', () =>
      fx.with(async ({ client }) => {
        const { tools } = await client.listTools();
        for (const tool of tools) {
          if (version === '2025-11-25') {
            assert.ok(tool.title && !tool.title.startsWith('kb_'), JSON.stringify(tool.title));
            assert.equal(tool.icons[0].mimeType, 'image/svg+xml');
            assert.ok(tool.icons[0].src.startsWith('data:image/svg+xml;base64,'));
          } else {
            assert.equal(tool.title, undefined);
            assert.equal(tool.icons, undefined);
          }
        }
      }));

    it('refused arguments are a tool result with isError from 2025-11-25 on (SEP-1303)', () =>
      fx.with(async ({ client }) => {
        const bad = { name: 'kb_get_page', arguments: { path: 'projects/Stratum.md', no_such_argument: 1 } };
        if (version === '2025-11-25') {
          const result = await client.callTool(bad, undefined, { timeout: TIMEOUT_MS });
          assert.equal(result.isError, true, JSON.stringify(result));
          assert.match(result.content[0].text, /InvalidArgs/);
          assert.match(result.content[0].text, /no_such_argument/);
        } else {
          await assert.rejects(client.callTool(bad), (err) => {
            assert.ok(err instanceof McpError, String(err));
            assert.equal(err.code, INVALID_PARAMS);
            assert.equal(err.data.kind, 'InvalidArgs');
            return true;
          });
        }
        // A tool that does not exist is a protocol error in every revision.
        await assert.rejects(client.callTool({ name: 'kb_no_such_tool', arguments: {} }), (err) => {
          assert.ok(err instanceof McpError, String(err));
          assert.equal(err.code, METHOD_NOT_FOUND);
          return true;
        });
      }));

    it('resources/list names notes as note:// URIs and resources/read returns the markdown', () =>
      fx.with(async ({ client }) => {
        const uris = await listAllResources(client);
        assert.ok(uris.length > 0, 'resources/list returned nothing');
        for (const uri of uris) assert.ok(uri.startsWith('note://'), uri);
        assert.ok(uris.includes('note://projects/Stratum.md'));
        // RFC 3986: a space in a path segment is percent-encoded, and the URI reads back.
        assert.ok(uris.includes('note://people/Ada%20Lovelace.md'));

        const read = await client.readResource({ uri: 'note://projects/Stratum.md' });
        assert.equal(read.contents.length, 1);
        assert.equal(read.contents[0].uri, 'note://projects/Stratum.md');
        assert.equal(read.contents[0].text, noteText('projects/Stratum.md'));
        const ada = await client.readResource({ uri: 'note://people/Ada%20Lovelace.md' });
        assert.equal(ada.contents[0].text, noteText('people/Ada Lovelace.md'));
      }));

    describe('every tool', () => {
      // listTools first so the SDK validates each structuredContent against its outputSchema.
      const withTools = (fn) =>
        fx.with(async (session) => {
          await session.client.listTools();
          return fn(session.client);
        });

      it('kb_get_page', () =>
        withTools(async (client) => {
          const note = await call(client, 'kb_get_page', { path: 'projects/Stratum.md' });
          assert.equal(note.path, 'projects/Stratum.md');
          assert.equal(note.slug, 'projects/Stratum');
          assert.equal(note.title, 'Stratum');
          assert.equal(note.content, noteText('projects/Stratum.md'));
          assert.ok(note.tags.includes('project'));
          assert.equal(note.frontmatter.title, 'Stratum');
          assert.ok(note.links.some((l) => l.target === 'Ada Lovelace'));
        }));

      it('kb_list_pages', () =>
        withTools(async (client) => {
          const listing = await call(client, 'kb_list_pages', { limit: 1000 });
          const paths = new Set(listing.pages.map((p) => p.path));
          assert.ok(paths.has('projects/Stratum.md'));
          assert.ok(paths.has('people/Ada Lovelace.md'));
          assert.ok(paths.size >= 40);
          for (const page of listing.pages) {
            assert.deepEqual(sortedKeys(page), ['block_count', 'modified_at', 'path', 'slug', 'title']);
          }
          const first = await call(client, 'kb_list_pages', { limit: 5 });
          assert.equal(first.pages.length, 5);
          assert.equal(typeof first.next_cursor, 'string');
          const second = await call(client, 'kb_list_pages', { limit: 5, cursor: first.next_cursor });
          const firstPaths = new Set(first.pages.map((p) => p.path));
          assert.ok(second.pages.every((p) => !firstPaths.has(p.path)));
        }));

      it('kb_write_page, then read back', () =>
        withTools(async (client) => {
          const path = `inbox/TS SDK ${kind} ${version} write.md`;
          const content = '---\ntitle: Written by the SDK\ntags: [sdk]\n---\n\n# Written\n\nSee [[Stratum]].\n';
          const note = await call(client, 'kb_write_page', { path, content });
          assert.equal(note.path, path);
          assert.equal(note.content, content);
          assert.ok(note.tags.includes('sdk'));
          assert.ok(note.links.some((l) => l.target === 'Stratum'));
          assert.equal(noteText(path), content);
          const again = await call(client, 'kb_get_page', { path });
          assert.equal(again.content, content);
        }));

      it('kb_delete_page', () =>
        withTools(async (client) => {
          const path = `inbox/TS SDK ${kind} ${version} delete.md`;
          await call(client, 'kb_write_page', { path, content: '# Doomed\n' });
          assert.ok(exists(path));
          assert.deepEqual(await call(client, 'kb_delete_page', { path }), {});
          assert.ok(!exists(path));
          await assert.rejects(client.callTool({ name: 'kb_get_page', arguments: { path } }), (err) => {
            assert.ok(err instanceof McpError, String(err));
            assert.equal(err.code, NOT_FOUND);
            return true;
          });
        }));

      it('kb_reindex and kb_index_status', () =>
        withTools(async (client) => {
          const status = await call(client, 'kb_reindex', { mode: 'incremental' });
          assert.ok(status.total_pages >= 40);
          // A note with nothing but frontmatter has no blocks to index, so indexed may trail total.
          assert.ok(status.indexed_pages > 0 && status.indexed_pages <= status.total_pages, JSON.stringify(status));
          assert.equal(status.index_fresh, true);
          const current = await call(client, 'kb_index_status', {});
          assert.ok(current.total_pages >= 40);
          assert.ok(current.indexed_blocks > 0);
        }));

      it('kb_search', () =>
        withTools(async (client) => {
          const found = await call(client, 'kb_search', { query: 'Lovelace', limit: 50 });
          assert.ok(found.total >= 1);
          assert.ok(found.results.length > 0);
          for (const hit of found.results) assert.deepEqual(sortedKeys(hit), [...SEARCH_HIT_KEYS].sort());
          assert.ok(
            found.results.some((h) => h.page_path === 'people/Ada Lovelace.md' || h.content.includes('Lovelace')),
          );
        }));

      it('kb_search_by_tag', () =>
        withTools(async (client) => {
          const found = await call(client, 'kb_search_by_tag', { tag: 'project' });
          assert.ok(found.results.length > 0);
          for (const hit of found.results) assert.deepEqual(sortedKeys(hit), [...SEARCH_HIT_KEYS].sort());
          assert.ok(found.results.some((h) => h.page_path === 'projects/Stratum.md'));
        }));

      it('kb_autocomplete', () =>
        withTools(async (client) => {
          const done = await call(client, 'kb_autocomplete', { query: 'Strat', kind: 'page' });
          assert.ok(done.items.length > 0);
          for (const item of done.items) {
            assert.deepEqual(sortedKeys(item), ['detail', 'kind', 'text']);
            assert.equal(item.kind, 'page');
          }
          assert.ok(done.items.some((i) => i.detail === 'projects/Stratum.md'));
        }));

      it('kb_backlinks', () =>
        withTools(async (client) => {
          const links = await call(client, 'kb_backlinks', { path: 'projects/Stratum.md' });
          assert.ok(links.backlinks.length > 0);
          for (const link of links.backlinks) {
            assert.deepEqual(sortedKeys(link), ['context', 'is_linked', 'source_id', 'source_page']);
          }
          assert.ok(links.backlinks.some((l) => l.is_linked && l.source_page === 'projects/Beacon.md'));
        }));

      it('kb_graph', () =>
        withTools(async (client) => {
          const graph = await call(client, 'kb_graph', { path: 'projects/Stratum.md', depth: 1 });
          assert.equal(graph.node_count, graph.nodes.length);
          assert.equal(graph.edge_count, graph.edges.length);
          assert.ok(graph.nodes.some((n) => n.path === 'projects/Stratum.md'));
          assert.ok(graph.edges.length > 0);
          const whole = await call(client, 'kb_graph', {});
          assert.ok(whole.node_count >= graph.node_count);
        }));

      it('kb_resolve_link', () =>
        withTools(async (client) => {
          const alias = await call(client, 'kb_resolve_link', { target: 'DDIA' });
          assert.equal(alias.unresolved, false);
          assert.equal(alias.resolved.path, 'reading/Designing Data-Intensive Applications.md');
          const missing = await call(client, 'kb_resolve_link', { target: 'No Such Note Anywhere' });
          assert.deepEqual(missing, { resolved: null, unresolved: true });
        }));

      it('kb_add_tag and kb_remove_tag', () =>
        withTools(async (client) => {
          const path = `inbox/TS SDK ${kind} ${version} tags.md`;
          await call(client, 'kb_write_page', { path, content: '# Tag me\n\nSome text.\n' });
          const added = await call(client, 'kb_add_tag', { path, tag: 'client-test' });
          assert.deepEqual({ ...added }, { path, success: true, tag: 'client-test', action: 'add', applied: 1 });
          assert.ok((await call(client, 'kb_get_page', { path })).tags.includes('client-test'));
          const removed = await call(client, 'kb_remove_tag', { path, tag: 'client-test' });
          assert.equal(removed.success, true);
          assert.equal(removed.action, 'remove');
          assert.ok(removed.applied >= 1);
          assert.ok(!(await call(client, 'kb_get_page', { path })).tags.includes('client-test'));
          assert.ok(!noteText(path).includes('client-test'));
        }));

      it('kb_set_properties, then kb_recent_changes and kb_list_tags see it', () =>
        withTools(async (client) => {
          const path = `inbox/TS SDK ${kind} ${version} properties.md`;
          const text = '# Properties\n\nSome text.\n';
          const written = await call(client, 'kb_write_page', { path, content: text });
          const tag = `sdk-props-${kind}-${version}`.toLowerCase();
          const out = await call(client, 'kb_set_properties', { path, set: { status: 'done', tags: [tag] } });
          assert.equal(out.form, 'frontmatter');
          assert.equal(out.changed, true);
          assert.deepEqual(out.changes[0], { key: 'status', before: null, after: 'done' });
          assert.equal((await call(client, 'kb_get_page', { path })).frontmatter.status, 'done');
          const recent = await call(client, 'kb_recent_changes', { since: written.modified_at });
          assert.equal(recent.changes[0].path, path);
          assert.equal(recent.changes[0].modified_at, out.modified_at);
          const tags = await call(client, 'kb_list_tags', { prefix: tag });
          assert.deepEqual(tags.tags, [{ tag, count: 1 }]);
          await call(client, 'kb_set_properties', { path, remove: ['status', 'tags'] });
          assert.equal(noteText(path), text);
        }));

      it('kb_move_page rewrites the links to the note it moves', () =>
        withTools(async (client) => {
          const old = `inbox/TS SDK ${kind} ${version} to move.md`;
          const moved = `archive/TS SDK ${kind} ${version} moved.md`;
          const linking = `inbox/TS SDK ${kind} ${version} linking.md`;
          await call(client, 'kb_write_page', { path: old, content: '# To move\n' });
          await call(client, 'kb_write_page', { path: linking, content: `See [[TS SDK ${kind} ${version} to move|it]].\n` });
          const out = await call(client, 'kb_move_page', { from: old, to: moved });
          assert.deepEqual(out.moved, [{ from: old, to: moved }]);
          assert.deepEqual(out.rewritten, [{ path: linking, links: 1 }]);
          assert.equal(out.dry_run, false);
          assert.equal(noteText(linking), `See [[TS SDK ${kind} ${version} moved|it]].\n`);
        }));

      it('kb_get_outline, kb_get_section and kb_edit_page', () =>
        withTools(async (client) => {
          const path = `inbox/TS SDK ${kind} ${version} edit.md`;
          const content = '# Plan\n\n## Known issues\n- one\n\n## Done\n- old\n';
          await call(client, 'kb_write_page', { path, content });
          const outline = await call(client, 'kb_get_outline', { path });
          assert.deepEqual(outline.headings.map((h) => h.section), ['Plan', 'Plan#Known issues', 'Plan#Done']);
          const section = await call(client, 'kb_get_section', { path, section: 'known issues' });
          assert.equal(section.text, '## Known issues\n- one\n');
          assert.deepEqual([section.line_start, section.line_end], [3, 4]);
          const edits = [{ op: 'append', section: 'Known issues', text: '- two' }];
          const dry = await call(client, 'kb_edit_page', { path, edits, dry_run: true });
          assert.equal(dry.written, false);
          assert.ok(dry.diff.includes('\n+- two\n'), dry.diff);
          assert.equal(noteText(path), content);
          const edited = await call(client, 'kb_edit_page', { path, edits, expected_modified: section.modified_at });
          assert.equal(edited.written, true);
          assert.equal(edited.content, '# Plan\n\n## Known issues\n- one\n- two\n\n## Done\n- old\n');
          assert.equal(noteText(path), edited.content);
          for (const [name, args] of [
            ['kb_get_outline', { path: 'nowhere/Missing.md' }],
            ['kb_get_section', { path: 'nowhere/Missing.md', section: 'A' }],
            ['kb_edit_page', { path: 'nowhere/Missing.md', edits }],
          ]) {
            await assert.rejects(client.callTool({ name, arguments: args }), (err) => {
              assert.equal(err.code, NOT_FOUND, name);
              return true;
            });
          }
        }));

      it('kb_vault_info', () =>
        withTools(async (client) => {
          const info = await call(client, 'kb_vault_info', {});
          assert.ok(info.page_count >= 40);
          assert.ok(info.block_count > 0);
          assert.equal(typeof info.index_fresh, 'boolean');
        }));
    });

    it('kb_get_page on a missing note is McpError -32001 NotFound', () =>
      fx.with(async ({ client }) => {
        await assert.rejects(
          client.callTool({ name: 'kb_get_page', arguments: { path: 'nowhere/Missing Note.md' } }),
          (err) => {
            assert.ok(err instanceof McpError, String(err));
            assert.equal(err.code, NOT_FOUND);
            assert.equal(err.data.kind, 'NotFound');
            assert.equal(err.data.note_path, 'nowhere/Missing Note.md');
            return true;
          },
        );
      }));

    if (kind === 'http') {
      it('a tool call without a token is refused with HTTP 401', () =>
        fx.with(async ({ client }) => {
          await assert.rejects(client.callTool({ name: 'kb_vault_info', arguments: {} }), (err) => {
            assert.ok(err instanceof StreamableHTTPError, String(err));
            assert.equal(err.code, 401);
            assert.match(err.message, /Unauthenticated/);
            return true;
          });
        }, null));

      it('an unknown token is refused with HTTP 401', async () => {
        // The spec leaves open whether an unknown token is refused already at initialize or
        // only at the first tool call; either way the client must never get a tool result.
        await assert.rejects(
          fx.with(({ client }) => client.callTool({ name: 'kb_vault_info', arguments: {} }), 'not-a-real-token'),
          (err) => {
            assert.ok(err instanceof StreamableHTTPError, String(err));
            assert.equal(err.code, 401);
            assert.match(err.message, /Unauthenticated/);
            return true;
          },
        );
      });
    }
  });
}

describe('warm-up', () => {
  it('a stdio session ended during warm-up leaves search working for the next one', async () => {
    // An MCP host may start the stdio server, initialize and quit at once, before the first
    // indexing of a fresh vault has finished. The next session must still find notes.
    const bin = serverBinary();
    const { root, vault } = copyVault();
    const connect = async () => {
      const client = new Client({ name: 'stratum-ts-client-tests', version: '0.0.0' });
      const transport = new StdioClientTransport({ command: bin, args: ['--stdio', '--vault', vault], env: serverEnv(), stderr: 'ignore' });
      await client.connect(transport, { timeout: TIMEOUT_MS });
      return client;
    };
    try {
      await (await connect()).close();
      const client = await connect();
      try {
        await call(client, 'kb_reindex', { mode: 'incremental' });
        const found = await call(client, 'kb_search', { query: 'Lovelace' });
        assert.ok(found.total >= 1, JSON.stringify(found));
        const status = await call(client, 'kb_index_status', {});
        assert.ok(status.indexed_pages > 0, JSON.stringify(status));
      } finally {
        await client.close();
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
