// A real authorization server in front of a protected MCP server, for tests/oauth_oidc.rs.
//
// The authorization server is `oidc-provider` (OpenID-certified) set up as an MCP authorization
// server: dynamic client registration, PKCE S256, resource indicators (RFC 8707) with tokens for
// the MCP server only, refresh tokens rotated on every use (a second use of one revokes the
// grant), token revocation. The MCP server (ours, a few lines of JSON-RPC) answers 401 with
// its protected resource metadata (RFC 9728) until a valid token comes, and 403
// `insufficient_scope` for a tool that needs `mcp:admin`.
//
// DPoP (RFC 9449) is on, as oidc-provider offers it, with nonces required at its token
// endpoint: a client that asks gets tokens bound to its key. The MCP server then checks each
// request's proof as a resource server must (the signature with the proof's key, `htm`, `htu`,
// `ath`, a fresh `jti`, the key's thumbprint against the token's `jkt`) and requires a nonce of
// its own (a 401 `use_dpop_nonce` with `DPoP-Nonce` first); a bound token presented as `Bearer`
// is refused.
//
//   node oidc_as.mjs PATH/TO/oidc-provider/lib/index.js auto|interactive
//
// `auto` approves every authorization without a user (login and consent done by the server,
// with cookies, as a single sign-on page would); `interactive` shows the provider's own login
// and consent pages. Everything listens on 127.0.0.1, on a port of the system's choosing; the
// first line on stdout is {"issuer": ..., "mcp": ...}. /control/* lets a test expire or revoke
// tokens, hold the token endpoint, and read what happened.
import { createHash, randomBytes } from "node:crypto";
import http from "node:http";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [modulePath, mode = "auto"] = process.argv.slice(2);
const { default: Provider, errors } = await import(pathToFileURL(modulePath).href);
// jose, which oidc-provider itself uses, beside it in node_modules.
const jose = await import(
  pathToFileURL(path.resolve(modulePath, "../../../jose/dist/webapi/index.js")).href
);

const server = http.createServer();
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;
const resource = `${issuer}/mcp`;
const prmUrl = `${issuer}/.well-known/oauth-protected-resource/mcp`;

const provider = new Provider(issuer, {
  findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
  features: {
    devInteractions: { enabled: mode === "interactive" },
    dPoP: { enabled: true, nonceSecret: randomBytes(32), requireNonce: () => true },
    registration: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async () => resource,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, indicator) => {
        if (indicator !== resource) throw new errors.InvalidTarget();
        return { scope: "mcp:read mcp:admin", accessTokenFormat: "opaque", accessTokenTTL: 3600 };
      },
    },
  },
  scopes: ["openid", "offline_access", "mcp:read", "mcp:admin"],
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed("refresh_token"),
  clientDefaults: {
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
  },
  pkce: { required: () => true },
  ttl: {
    AccessToken: 3600,
    AuthorizationCode: 60,
    Grant: 3600,
    Interaction: 600,
    RefreshToken: 86400,
    Session: 3600,
  },
  cookies: { keys: ["a test server's key"] },
});

// What the tests read back.
const stats = {
  refreshes: 0,
  grantErrors: [],
  grantsRevoked: 0,
  staleRejections: 0,
  tokenRequestsInFlight: 0,
  maxTokenRequestsInFlight: 0,
  authorizations: 0,
  dpopProofsChecked: 0,
  dpopNonceChallenges: 0,
  dpopRefusals: [],
  bearerRequests: 0,
};
provider.on("grant.success", (ctx) => {
  if (ctx.oidc.params?.grant_type === "refresh_token") stats.refreshes += 1;
});
provider.on("grant.error", (_ctx, err) => stats.grantErrors.push(String(err.message)));
provider.on("grant.revoked", () => {
  stats.grantsRevoked += 1;
});
provider.on("authorization.success", () => {
  stats.authorizations += 1;
});

const seen = new Map(); // access token jti -> grant id
const rejected = new Set(); // jtis a test expired
let hold = null; // {until, waiting: [resolve]} while the token endpoint is held

function releaseIfDue() {
  if (hold && (stats.staleRejections >= hold.stale || Date.now() >= hold.until)) {
    const waiting = hold.waiting;
    hold = null;
    waiting.forEach((go) => go());
  }
}

function json(res, status, body, headers = {}) {
  res.writeHead(status, { "Content-Type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

function challenge(extra) {
  return `Bearer ${extra ? `${extra}, ` : ""}resource_metadata="${prmUrl}"`;
}

async function body(req) {
  let text = "";
  for await (const chunk of req) text += chunk;
  return text;
}

const TOOLS = [
  { name: "whoami", description: "Says who the token is for.", inputSchema: { type: "object" } },
  {
    name: "admin",
    description: "Needs the mcp:admin scope.",
    inputSchema: { type: "object" },
  },
];

// The resource server's DPoP nonce, and the proofs' jtis seen (replays are refused).
const rsNonce = randomBytes(16).toString("base64url");
const proofJtis = new Set();

// Why `req`'s DPoP proof does not prove possession of the key `at` is bound to; null if it
// does. "nonce": it lacks this server's nonce.
async function dpopProblem(req, token, at) {
  const proof = req.headers.dpop;
  if (typeof proof !== "string" || proof.includes(",")) return "no single DPoP proof";
  let header;
  let payload;
  try {
    header = jose.decodeProtectedHeader(proof);
    if (header.typ !== "dpop+jwt" || !header.jwk || header.jwk.d) return "not a DPoP proof";
    const key = await jose.importJWK(header.jwk, header.alg);
    ({ payload } = await jose.jwtVerify(proof, key, { algorithms: ["ES256"] }));
  } catch (e) {
    return `the proof does not verify: ${e.message}`;
  }
  if (payload.htm !== req.method) return "htm";
  if (payload.htu !== resource) return `htu ${payload.htu}`;
  if (typeof payload.iat !== "number" || Math.abs(Date.now() / 1000 - payload.iat) > 60) {
    return "iat";
  }
  if (payload.ath !== createHash("sha256").update(token).digest("base64url")) return "ath";
  if ((await jose.calculateJwkThumbprint(header.jwk)) !== at.jkt) return "jkt";
  if (typeof payload.jti !== "string" || proofJtis.has(payload.jti)) return "jti replayed";
  proofJtis.add(payload.jti);
  if (payload.nonce !== rsNonce) return "nonce";
  return null;
}

async function mcp(req, res) {
  if (req.method !== "POST") return json(res, 405, { error: "POST only" }, { Allow: "POST" });
  const text = await body(req);
  const auth = req.headers.authorization ?? "";
  const [scheme, token] = auth.includes(" ") ? [auth.slice(0, auth.indexOf(" ")), auth.slice(auth.indexOf(" ") + 1)] : [auth, ""];
  if (!token) return json(res, 401, { error: "no token" }, { "WWW-Authenticate": challenge() });
  const at = await provider.AccessToken.find(token);
  if (!at || at.isExpired || at.aud !== resource) {
    return json(res, 401, { error: "invalid_token" }, {
      "WWW-Authenticate": challenge('error="invalid_token"'),
    });
  }
  if (at.jkt) {
    if (scheme.toLowerCase() !== "dpop") {
      stats.dpopRefusals.push(`a bound token presented as ${scheme}`);
      return json(res, 401, { error: "invalid_token" }, {
        "WWW-Authenticate": `DPoP error="invalid_token", resource_metadata="${prmUrl}"`,
      });
    }
    const problem = await dpopProblem(req, token, at);
    if (problem === "nonce") {
      stats.dpopNonceChallenges += 1;
      return json(res, 401, { error: "use_dpop_nonce" }, {
        "WWW-Authenticate": `DPoP error="use_dpop_nonce", resource_metadata="${prmUrl}"`,
        "DPoP-Nonce": rsNonce,
      });
    }
    if (problem) {
      stats.dpopRefusals.push(problem);
      return json(res, 401, { error: "invalid_dpop_proof" }, {
        "WWW-Authenticate": `DPoP error="invalid_dpop_proof", resource_metadata="${prmUrl}"`,
      });
    }
    stats.dpopProofsChecked += 1;
  } else {
    if (scheme.toLowerCase() !== "bearer") {
      return json(res, 401, { error: "invalid_token" }, { "WWW-Authenticate": challenge() });
    }
    stats.bearerRequests += 1;
  }
  if (rejected.has(at.jti)) {
    stats.staleRejections += 1;
    releaseIfDue();
    return json(res, 401, { error: "invalid_token" }, {
      "WWW-Authenticate": challenge('error="invalid_token", error_description="expired"'),
    });
  }
  seen.set(at.jti, at.grantId);
  const msg = JSON.parse(text);
  const reply = (result) => json(res, 200, { jsonrpc: "2.0", id: msg.id, result });
  const scopes = new Set((at.scope ?? "").split(" "));
  switch (msg.method) {
    case "initialize":
      return reply({
        protocolVersion: msg.params?.protocolVersion ?? "2025-11-25",
        capabilities: { tools: {} },
        serverInfo: { name: "oidc-protected", version: "1.0.0" },
      });
    case "tools/list":
      return reply({ tools: TOOLS });
    case "tools/call": {
      const name = msg.params?.name;
      if (name === "admin" && !scopes.has("mcp:admin")) {
        return json(res, 403, { error: "insufficient_scope" }, {
          "WWW-Authenticate": challenge('error="insufficient_scope", scope="mcp:read mcp:admin"'),
        });
      }
      const text = name === "admin" ? "admin granted" : `hello ${at.accountId}`;
      return reply({ content: [{ type: "text", text }] });
    }
    default:
      if (msg.id === undefined) {
        res.writeHead(202);
        return res.end();
      }
      return json(res, 200, {
        jsonrpc: "2.0",
        id: msg.id,
        error: { code: -32601, message: "Method not found" },
      });
  }
}

// `auto`: the login and consent a user would give, done by the server itself.
async function autoApprove(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  if (prompt.name === "login") {
    return provider.interactionFinished(req, res, { login: { accountId: "mcp-user" } }, {
      mergeWithLastSubmission: false,
    });
  }
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  const missing = prompt.details;
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(" "));
  }
  const grantId = await grant.save();
  return provider.interactionFinished(req, res, { consent: { grantId } }, {
    mergeWithLastSubmission: true,
  });
}

async function control(req, res, what) {
  await body(req);
  if (what === "stats") return json(res, 200, stats);
  if (what === "expire") {
    for (const jti of seen.keys()) rejected.add(jti);
    return json(res, 200, { expired: rejected.size });
  }
  if (what === "revoke") {
    const grants = new Set(seen.values());
    for (const grantId of grants) {
      await provider.AccessToken.revokeByGrantId(grantId);
      await provider.RefreshToken.revokeByGrantId(grantId);
      await provider.AuthorizationCode.revokeByGrantId(grantId);
      const grant = await provider.Grant.find(grantId);
      if (grant) await grant.destroy();
    }
    return json(res, 200, { revoked: grants.size });
  }
  if (what === "hold") {
    // Token requests wait until `stale` more requests came with an expired token (or 10 s).
    const url = new URL(req.url, issuer);
    const more = Number(url.searchParams.get("stale") ?? "2");
    hold = { stale: stats.staleRejections + more, until: Date.now() + 10000, waiting: [] };
    return json(res, 200, { holding: true });
  }
  return json(res, 404, { error: "unknown control" });
}

const callback = provider.callback();
server.on("request", (req, res) => {
  const path = req.url.split("?")[0];
  const fail = (e) => {
    console.error(e);
    if (!res.headersSent) json(res, 500, { error: String(e) });
  };
  if (path === "/mcp") return mcp(req, res).catch(fail);
  if (path === "/.well-known/oauth-protected-resource/mcp") {
    return json(res, 200, {
      resource,
      authorization_servers: [issuer],
      scopes_supported: ["mcp:read"],
    });
  }
  if (path.startsWith("/control/")) return control(req, res, path.slice(9)).catch(fail);
  if (mode === "auto" && path.startsWith("/interaction/")) return autoApprove(req, res).catch(fail);
  if (req.method === "POST" && path === "/token") {
    stats.tokenRequestsInFlight += 1;
    stats.maxTokenRequestsInFlight = Math.max(
      stats.maxTokenRequestsInFlight,
      stats.tokenRequestsInFlight,
    );
    res.on("close", () => {
      stats.tokenRequestsInFlight -= 1;
    });
    if (hold) {
      const timer = setInterval(releaseIfDue, 50);
      return new Promise((go) => hold.waiting.push(go)).then(() => {
        clearInterval(timer);
        callback(req, res);
      });
    }
  }
  return callback(req, res);
});

process.stdout.write(`${JSON.stringify({ issuer, mcp: resource })}\n`);
// The test's end (its stdin closing) ends this server.
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
