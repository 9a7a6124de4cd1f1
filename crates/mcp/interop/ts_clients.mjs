// The official TypeScript SDK clients through toolgate mcp-proxy: v1 (@modelcontextprotocol/sdk,
// the handshake revisions) over stdio, and v2 (@modelcontextprotocol/client) in each of its
// negotiation modes, over stdio and over the proxy's Streamable HTTP listener.
//
// With a fourth argument, also through the proxy in front of server-everything's own
// Streamable HTTP transport (the upstream reached at its URL).
//
//   node ts_clients.mjs TOOLGATE CONTRACTS SERVER_EVERYTHING PROXY_URL [UPSTREAM_URL]
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as StdioV1 } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Client as ClientV2, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport as StdioV2 } from "@modelcontextprotocol/client/stdio";
import { exercise, exerciseObserved } from "./check.mjs";

const [toolgate, contracts, everything, proxyUrl, upstreamUrl] = process.argv.slice(2);
const proxyArgs = ["mcp-proxy", "--root", contracts, "--", process.execPath, everything, "stdio"];
let ok = true;

async function run(label, client, transport, checks = exercise) {
  try {
    await client.connect(transport);
    ok =
      (await checks(label, {
        listTools: () => client.listTools(),
        callTool: (name, args) => client.callTool({ name, arguments: args }),
      })) && ok;
  } catch (error) {
    console.error(`FAIL ${label}: ${error?.stack ?? error}`);
    ok = false;
  } finally {
    await client.close().catch(() => {});
  }
}

await run(
  "TypeScript SDK v1, stdio (handshake)",
  new ClientV1({ name: "interop-v1", version: "1" }),
  new StdioV1({ command: toolgate, args: proxyArgs, stderr: "ignore" }),
);
for (const mode of ["legacy", "auto", { pin: "2026-07-28" }]) {
  const shown = typeof mode === "string" ? mode : `pinned ${mode.pin}`;
  await run(
    `TypeScript SDK v2, stdio, ${shown}`,
    new ClientV2({ name: "interop-v2", version: "2" }, { versionNegotiation: { mode } }),
    new StdioV2({ command: toolgate, args: proxyArgs, stderr: "ignore" }),
  );
  await run(
    `TypeScript SDK v2, Streamable HTTP, ${shown}`,
    new ClientV2({ name: "interop-v2", version: "2" }, { versionNegotiation: { mode } }),
    new StreamableHTTPClientTransport(new URL(proxyUrl)),
  );
}
// Observe mode, with the CI variable saying this is no pipeline (observe mode is refused in CI).
const observeArgs = ["mcp-proxy", "--root", contracts, "--mode", "observe", "--", process.execPath, everything, "stdio"];
const observeEnv = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", CI: "false" };
await run(
  "TypeScript SDK v1, stdio, observe mode",
  new ClientV1({ name: "interop-v1", version: "1" }),
  new StdioV1({ command: toolgate, args: observeArgs, env: observeEnv, stderr: "ignore" }),
  exerciseObserved,
);
await run(
  "TypeScript SDK v2, stdio, observe mode",
  new ClientV2({ name: "interop-v2", version: "2" }, { versionNegotiation: { mode: "auto" } }),
  new StdioV2({ command: toolgate, args: observeArgs, env: observeEnv, stderr: "ignore" }),
  exerciseObserved,
);
if (upstreamUrl) {
  const overHttp = ["mcp-proxy", "--root", contracts, "--", upstreamUrl];
  await run(
    "TypeScript SDK v1, stdio, upstream over Streamable HTTP",
    new ClientV1({ name: "interop-v1", version: "1" }),
    new StdioV1({ command: toolgate, args: overHttp, stderr: "ignore" }),
  );
  await run(
    "TypeScript SDK v2, stdio pinned 2026-07-28, upstream over Streamable HTTP",
    new ClientV2({ name: "interop-v2", version: "2" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } }),
    new StdioV2({ command: toolgate, args: overHttp, stderr: "ignore" }),
  );
}
process.exit(ok ? 0 : 1);
