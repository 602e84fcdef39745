#!/usr/bin/env node
// One conformance scenario, driven through the `mcp` CLI the way a user drives it.
//
// The conformance runner starts the scenario's server, appends its URL to our command and names
// the scenario (MCP_CONFORMANCE_SCENARIO) and its inputs (MCP_CONFORMANCE_CONTEXT: client
// credentials, keys, the tool calls to make). This script turns them into what a user would
// type: `mcp --json probe --oauth '{...}' URL` to connect, log in headlessly and use the server,
// or a one-server config file and `mcp call` for the scenarios that prescribe calls. It runs
// under a HOME of its own, so no token or cache of the user's is read or written.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const url = process.argv[process.argv.length - 1];
const mcp = process.env.MCP_CLI;
if (!mcp || !url) {
  console.error("conformance driver: MCP_CLI and a server URL are required");
  process.exit(2);
}
const scenario = process.env.MCP_CONFORMANCE_SCENARIO || "";
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || "{}");
const home = fs.mkdtempSync(path.join(os.tmpdir(), "mcp-conformance-"));
const env = { ...process.env, HOME: home, XDG_CACHE_HOME: path.join(home, ".cache") };

// The `oauth` object a user would write for these inputs.
const oauth = {};
if (context.client_id) oauth.clientId = context.client_id;
if (context.client_secret) oauth.clientSecret = context.client_secret;
if (context.private_key_pem) {
  const key = path.join(home, "client-key.pem");
  fs.writeFileSync(key, context.private_key_pem, { mode: 0o600 });
  oauth.privateKeyFile = key;
  if (context.signing_algorithm) oauth.signingAlgorithm = context.signing_algorithm;
}
if (scenario.startsWith("auth/client-credentials")) oauth.grant = "client_credentials";
// Workload identity: the platform's JWT in a file only the workload reads, as Kubernetes
// projects a service account token.
if (scenario === "auth/wif-jwt-bearer" && context.valid_jwt) {
  const token = path.join(home, "workload-token");
  fs.writeFileSync(token, context.valid_jwt, { mode: 0o600 });
  oauth.grant = "workload_identity";
  oauth.workloadTokenFile = token;
}
// A host that publishes a Client ID Metadata Document names its URL; the suite's authorization
// servers that support CIMD expect this one (the authorization servers that do not are
// registered with dynamically, as they would be with any host).
if (!oauth.clientId) oauth.clientMetadataUrl = "https://conformance-test.local/client-metadata.json";
if (context.idp_token_endpoint) {
  oauth.grant = "enterprise";
  oauth.enterprise = {
    idpTokenEndpoint: context.idp_token_endpoint,
    idToken: context.idp_id_token,
    idpClientId: context.idp_client_id,
  };
  if (context.idp_client_secret) oauth.enterprise.idpClientSecret = context.idp_client_secret;
}

function run(args, capture = false) {
  const r = spawnSync(mcp, args, {
    env,
    stdio: capture ? ["ignore", "pipe", "inherit"] : "inherit",
    timeout: 60000,
    encoding: "utf8",
  });
  if (capture) process.stdout.write(r.stdout ?? "");
  return { status: r.status ?? 1, stdout: r.stdout ?? "" };
}

// A one-server config, as a user would write it for the scenario's server.
function config() {
  const file = path.join(home, "mcp.json");
  const server = { type: "http", url };
  if (Object.keys(oauth).length) server.oauth = oauth;
  fs.writeFileSync(file, JSON.stringify({ mcpServers: { conformance: server } }));
  return file;
}

// What a user does in each scenario: by default a probe (connect, log in, list, call what is
// safe to call); the scenarios that prescribe calls get exactly those, by their exposed names.
function scenarioSteps() {
  if (Array.isArray(context.toolCalls)) {
    const cfg = config();
    for (const call of context.toolCalls) {
      const args = JSON.stringify(call.arguments ?? {});
      const r = run(["--config", cfg, "call", `mcp_conformance_${call.name}`, args]);
      if (r.status !== 0) return r.status;
    }
    return 0;
  }
  if (scenario === "json-schema-ref-no-deref") {
    // List the tools (their schemas whole) and nothing else: the tool has no handler.
    return run(["--config", config(), "--json", "tools"]).status;
  }
  if (scenario === "json-schema-2020-12-preservation") {
    // Hand the focal tool's schema, as `mcp --json tools` shows it, back to the echo tool.
    const cfg = config();
    const listed = run(["--config", cfg, "--json", "tools"], true);
    if (listed.status !== 0) return listed.status;
    const tools = JSON.parse(listed.stdout);
    const focal = tools.find((t) => t.name === "mcp_conformance_json_schema_2020_12_tool");
    if (!focal) {
      console.error("conformance driver: the focal tool is not listed");
      return 1;
    }
    const args = JSON.stringify({ schema: focal.inputSchema });
    return run(["--config", cfg, "call", "mcp_conformance_json_schema_echo", args]).status;
  }
  if (scenario === "sep-2640-client-no-prefetch") {
    // List the skills: nothing of them is read until one is loaded.
    return run(["--config", config(), "--json", "skills"]).status;
  }
  if (scenario.startsWith("sep-2640-client-verify-")) {
    // Load the first skill and ask for its other file: a skill that fails its checks stops
    // before anything more is read.
    const cfg = config();
    const listed = run(["--config", cfg, "--json", "skills"], true);
    if (listed.status !== 0) return listed.status;
    const skill = JSON.parse(listed.stdout)[0];
    if (!skill) {
      console.error("conformance driver: no skill is listed");
      return 1;
    }
    const files = Array.isArray(skill.resources)
      ? skill.resources.map((r) => r.uri).filter((uri) => uri !== skill.uri)
      : [];
    return run(["--config", cfg, "skill", skill.name, ...files]).status;
  }
  return run(["--json", "probe", "--oauth", JSON.stringify(oauth), url]).status;
}

const status = scenarioSteps();
fs.rmSync(home, { recursive: true, force: true });
process.exit(status);
