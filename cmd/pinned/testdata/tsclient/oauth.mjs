// The official MCP TypeScript SDK client's own OAuth support, driven by
// TestTypeScriptClientOAuth (cmd/pinned) against `pinned mcp --listen
// --oauth-resource`: it discovers the metadata from the 401, identifies
// itself by the client ID metadata document at $CLIENT_ID, authorises
// with PKCE, reads, is refused a write (insufficient_scope), steps up,
// and writes after accepting the confirmation. The person's part (the
// consent page, approved with $OWNER_SECRET) is played with fetch. It
// prints one JSON object with what it saw.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [mcpURL] = process.argv.slice(2);
const redirectUrl = process.env.REDIRECT_URI;
const out = { scopes: [], asked: [], received: [] };
let info, tokens, verifier, pendingCode;
const issued = [];

// approve plays the browser and the person: the consent page, then the
// approval; it returns the code from the redirect.
async function approve(url) {
  const page = await fetch(url);
  const html = await page.text();
  if (page.status !== 200 || !html.includes("Approve")) throw new Error(`consent page ${page.status}`);
  const form = new URLSearchParams(url.searchParams);
  form.set("owner_secret", process.env.OWNER_SECRET);
  form.set("decision", "approve");
  const res = await fetch(new URL("/authorize", url), { method: "POST", body: form, redirect: "manual" });
  const loc = res.headers.get("location");
  if (res.status !== 302 || !loc) throw new Error(`approval ${res.status}`);
  const code = new URL(loc).searchParams.get("code");
  if (!code) throw new Error(`no code: ${new URL(loc).searchParams.get("error")}`);
  return code;
}

const provider = {
  clientMetadataUrl: process.env.CLIENT_ID,
  get redirectUrl() {
    return redirectUrl;
  },
  get clientMetadata() {
    return { client_name: "Test Assistant", redirect_uris: [redirectUrl], grant_types: ["authorization_code"], response_types: ["code"], token_endpoint_auth_method: "none" };
  },
  clientInformation: () => info,
  saveClientInformation: (i) => {
    info = i;
  },
  tokens: () => tokens,
  saveTokens: (t) => {
    tokens = t;
    issued.push(t.access_token);
  },
  redirectToAuthorization: async (url) => {
    out.scopes.push(url.searchParams.get("scope"));
    out.pkce = url.searchParams.get("code_challenge_method");
    pendingCode = await approve(url);
  },
  saveCodeVerifier: (v) => {
    verifier = v;
  },
  codeVerifier: () => verifier,
};

let transport;
function connectOnce() {
  transport = new StreamableHTTPClientTransport(new URL(mcpURL), { authProvider: provider });
  const onmessage = (m) => out.received.push(m);
  const client = new Client({ name: "pinned-ts-oauth-test", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    out.asked.push(req.params.message);
    return { action: "accept" };
  });
  client.fallbackNotificationHandler = async (n) => onmessage(n);
  return { client, connect: () => client.connect(transport) };
}

// finish completes a pending authorization after an UnauthorizedError.
async function finish(e) {
  if (!(e instanceof UnauthorizedError) || !pendingCode) throw e;
  const code = pendingCode;
  pendingCode = undefined;
  await transport.finishAuth(code);
}

let client;
try {
  let c = connectOnce();
  try {
    await c.connect();
  } catch (e) {
    await finish(e);
    c = connectOnce(); // a started transport cannot start again
    await c.connect();
  }
  client = c.client;
  const read = await client.callTool({ name: "github_get_viewer", arguments: {} });
  out.read = { isError: !!read.isError, text: read.content?.[0]?.text ?? "" };
  out.received.push(read);
  const args = { owner: "pinned-tester", repo: "notes", title: "From the TypeScript SDK over OAuth", body: "typescript" };
  let write;
  try {
    write = await client.callTool({ name: "github_create_issue", arguments: args });
  } catch (e) {
    out.refusedBeforeStepUp = String(e);
    await finish(e);
    write = await client.callTool({ name: "github_create_issue", arguments: args });
  }
  out.write = { isError: !!write.isError, text: write.content?.[0]?.text ?? "" };
  out.received.push(write);
} catch (e) {
  out.error = String(e && e.stack ? e.stack : e);
}
const seen = JSON.stringify(out);
out.tokens = issued.length;
out.tokenInOutput = issued.some((t) => t && seen.includes(t));
await client?.close().catch(() => {});
process.stdout.write(JSON.stringify(out) + "\n");
process.exit(out.error ? 1 : 0);
