// A real OpenID provider (panva/oidc-provider) for the OAuth tests of stratum-mcp
// (crates/pkm-mcp/tests/it/http_oauth.rs). Not a token minter: clients get their access tokens
// through the provider's own authorization-code + PKCE flow; only the login and consent screens
// are replaced by an interaction endpoint that logs in `login_hint` (default "alice") and grants
// what was asked, so a test can drive the flow with plain HTTP requests.
//
//   node provider.mjs
//
// Prints one JSON line on stdout once both issuers listen:
//   {"issuer": "http://127.0.0.1:P", "other_issuer": "http://127.0.0.1:Q", "client_id": "...",
//    "redirect_uri": "...", "kid": "..."}
// and runs until its stdin closes. `other_issuer` is a second provider with the same signing key
// (a token from it is well signed but has the wrong `iss`).
//
// Test controls on the main issuer (not part of any standard):
//   POST /test/rotate          the provider signs with a new key (ES256) and publishes only that
//                              one; answers {"kid": ...}
//   POST /test/clock?offset=S  the provider's clock runs S seconds off (negative: in the past),
//                              so tokens it issues now can be already expired
//
// Access tokens are JWTs (RFC 9068) for the resource indicator (RFC 8707) the client names:
// `aud` is that resource, `scope` the kb:* scopes granted.

import { generateKeyPairSync, randomUUID } from 'node:crypto';
import http from 'node:http';

// oidc-provider warns about its in-memory adapter and about node 20 on every start; in a test
// both are expected, and the noise would hide real failures.
const warn = console.warn.bind(console);
console.warn = (...args) => {
  if (!String(args[0]).startsWith('oidc-provider WARNING')) warn(...args);
};
const { default: Provider } = await import('oidc-provider');

const CLIENT_ID = 'stratum-test-client';
const REDIRECT_URI = 'http://127.0.0.1/callback';
const KB_SCOPES = 'kb:read kb:write kb:index kb:search kb:link kb:organize kb:admin';

// The clock of the whole process, shiftable by /test/clock.
const realNow = Date.now.bind(Date);
let clockOffsetMs = 0;
Date.now = () => realNow() + clockOffsetMs;

function signingKey(type) {
  const kid = `${type}-${randomUUID()}`;
  if (type === 'rsa') {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    return { jwk: { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' }, alg: 'RS256', kid };
  }
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { jwk: { ...privateKey.export({ format: 'jwk' }), kid, alg: 'ES256', use: 'sig' }, alg: 'ES256', kid };
}

function makeProvider(issuer, key) {
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: CLIENT_ID,
        application_type: 'native',
        token_endpoint_auth_method: 'none',
        redirect_uris: [REDIRECT_URI],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        id_token_signed_response_alg: key.alg,
      },
    ],
    jwks: { keys: [key.jwk] },
    scopes: ['openid', 'offline_access', ...KB_SCOPES.split(' ')],
    findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    features: {
      devInteractions: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: async (_ctx, _client, oneOf) => oneOf,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx, resourceIndicator) => ({
          scope: KB_SCOPES,
          audience: resourceIndicator,
          accessTokenTTL: 600,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: key.alg } },
        }),
      },
    },
    pkce: { required: () => true },
    ttl: { AccessToken: 600, AuthorizationCode: 60, Grant: 3600, Interaction: 600, Session: 3600 },
  });
  return provider;
}

// Logs in and consents without a screen: the interaction of `uid` finishes at once.
async function interact(provider, req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  if (prompt.name === 'login') {
    const accountId = typeof params.login_hint === 'string' && params.login_hint ? params.login_hint : 'alice';
    await provider.interactionFinished(req, res, { login: { accountId } }, { mergeWithLastSubmission: false });
    return;
  }
  if (prompt.name === 'consent') {
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const missing = prompt.details;
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
    return;
  }
  res.writeHead(400, { 'content-type': 'text/plain' });
  res.end(`unexpected prompt ${prompt.name}`);
}

function json(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

// One HTTP server per issuer; `state.provider` may be replaced (key rotation) while it listens.
async function serve(state, controls) {
  const server = http.createServer(async (req, res) => {
    try {
      const url = new URL(req.url, state.issuer);
      if (controls && req.method === 'POST' && url.pathname === '/test/rotate') {
        state.key = signingKey('ec');
        state.provider = makeProvider(state.issuer, state.key);
        state.handler = state.provider.callback();
        json(res, 200, { kid: state.key.kid });
        return;
      }
      if (controls && req.method === 'POST' && url.pathname === '/test/clock') {
        clockOffsetMs = Number(url.searchParams.get('offset') ?? '0') * 1000;
        json(res, 200, { offset: clockOffsetMs / 1000 });
        return;
      }
      if (req.method === 'GET' && url.pathname.startsWith('/interaction/')) {
        await interact(state.provider, req, res);
        return;
      }
      state.handler(req, res);
    } catch (err) {
      if (!res.headersSent) json(res, 500, { error: String(err?.message ?? err) });
      else res.end();
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.issuer = `http://127.0.0.1:${server.address().port}`;
  return server;
}

const key = signingKey('rsa');
const main = { key };
const other = { key };
await serve(main, true);
await serve(other, false);
for (const state of [main, other]) {
  state.provider = makeProvider(state.issuer, state.key);
  state.handler = state.provider.callback();
}

process.stdout.write(`${JSON.stringify({
  issuer: main.issuer,
  other_issuer: other.issuer,
  client_id: CLIENT_ID,
  redirect_uri: REDIRECT_URI,
  kid: key.kid,
})}\n`);

// The test holds our stdin; when it closes (the test ended or died), so do we.
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
