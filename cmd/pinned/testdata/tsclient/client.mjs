// The official MCP TypeScript SDK client, driven by TestTypeScriptClient
// (cmd/pinned): it connects to pinned mcp over stdio (spawning the
// command after "--") or streamable HTTP (the URL, bearer token in
// $MCP_TOKEN), lists the tools, calls a read tool and a write tool, and
// answers the write's confirmation with $ANSWER (accept or decline).
// With ELICIT_MODE=url it declares URL-mode elicitation only (a client
// that cannot show a form): it answers the link with accept (the person
// opened it), and plays the person's browser on the approval page,
// deciding with $OWNER_SECRET ($ANSWER accept approves).
// It prints one JSON object with what it saw.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [mode, ...rest] = process.argv.slice(2);
const answer = process.env.ANSWER ?? "decline";
let transport;
if (mode === "stdio") {
  const [command, ...args] = rest;
  transport = new StdioClientTransport({ command, args, env: process.env, stderr: "ignore" });
} else if (mode === "http") {
  transport = new StreamableHTTPClientTransport(new URL(rest[0]), {
    requestInit: { headers: { Authorization: `Bearer ${process.env.MCP_TOKEN}` } },
  });
} else {
  console.error("usage: client.mjs stdio -- COMMAND ARGS... | client.mjs http URL");
  process.exit(2);
}

// Recording passes every message through and keeps what the server sent.
class Recording {
  constructor(inner) {
    this.inner = inner;
    this.received = [];
  }
  async start() {
    this.inner.onmessage = (m, extra) => {
      this.received.push(m);
      this.onmessage?.(m, extra);
    };
    this.inner.onclose = () => this.onclose?.();
    this.inner.onerror = (e) => this.onerror?.(e);
    return this.inner.start();
  }
  send(m, opts) {
    return this.inner.send(m, opts);
  }
  close() {
    return this.inner.close();
  }
  setProtocolVersion(v) {
    this.protocolVersion = v;
    this.inner.setProtocolVersion?.(v);
  }
  get sessionId() {
    return this.inner.sessionId;
  }
}
transport = new Recording(transport);

const asked = [];
const urlMode = process.env.ELICIT_MODE === "url";
const client = new Client(
  { name: "pinned-ts-test", version: "1.0.0" },
  { capabilities: { elicitation: urlMode ? { url: {} } : { form: {} } } },
);
const decisions = [];
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  if (req.params.mode === "url") {
    asked.push(req.params.url);
    decisions.push(decide(req.params.url));
    return { action: "accept" };
  }
  asked.push(req.params.message);
  return { action: answer };
});

// decide is the person in a browser: open the link's page, then post its
// form (the page's cookie and form token) with the owner secret.
async function decide(link) {
  await new Promise((r) => setTimeout(r, 200));
  const page = await fetch(link);
  const html = await page.text();
  const cookie = (page.headers.get("set-cookie") ?? "").split(";")[0];
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? "";
  const res = await fetch(link, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Cookie: cookie },
    body: new URLSearchParams({ csrf, owner_secret: process.env.OWNER_SECRET ?? "", decision: answer === "accept" ? "approve" : "decline" }),
  });
  return { page: page.status, post: res.status, shows: html.includes("From the TypeScript SDK") };
}

const out = {};
try {
  await client.connect(transport);
  out.protocolVersion = transport.received[0]?.result?.protocolVersion;
  out.server = client.getServerVersion();
  out.capabilities = client.getServerCapabilities();
  const { tools } = await client.listTools();
  out.tools = tools.map((t) => t.name);
  out.writeTools = tools.filter((t) => t.annotations && t.annotations.readOnlyHint === false).map((t) => t.name);
  // callTool checks structuredContent against the tool's outputSchema.
  const read = await client.callTool({ name: "github_get_viewer", arguments: {} });
  out.read = { isError: !!read.isError, structured: read.structuredContent };
  const write = await client.callTool({
    name: "github_create_issue",
    arguments: { owner: "pinned-tester", repo: "notes", title: "From the TypeScript SDK", body: "typescript" },
  });
  out.write = { isError: !!write.isError, text: write.content?.[0]?.text ?? "" };
  out.asked = asked;
  out.decisions = await Promise.all(decisions);
} catch (e) {
  out.error = String(e && e.stack ? e.stack : e);
}
out.received = transport.received;
await client.close().catch(() => {});
process.stdout.write(JSON.stringify(out) + "\n");
process.exit(out.error ? 1 : 0);
