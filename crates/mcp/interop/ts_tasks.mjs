// Tasks through toolgate mcp-proxy (--allow tasks), with the official TypeScript SDK v1 client
// and @modelcontextprotocol/server-everything's task-based tool `simulate-research-query` (the
// 2025-11-25 revision's tasks, as the SDK implements them: a call with `task`, `tasks/get`
// polled, `tasks/result`). The task reaches the client under an id the proxy made, without its
// `statusMessage`; its result is decided by the tool's contract (tasks/contracts/: a text
// contract promising the topic), so the client sees the projection and none of the report's
// text; a tool with no contract cannot be called with a task.
//
//   node ts_tasks.mjs TOOLGATE CONTRACTS_ROOT SERVER_EVERYTHING
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  GetTaskResultSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [toolgate, root, everything] = process.argv.slice(2);
const client = new Client(
  { name: "interop-tasks", version: "1" },
  { capabilities: { tasks: { requests: { tools: { call: {} } } } } },
);
const failures = [];
const seen = [];
const expect = (condition, what) => {
  if (!condition) failures.push(what);
};
try {
  await client.connect(
    new StdioClientTransport({
      command: toolgate,
      args: ["mcp-proxy", "--root", root, "--allow", "tasks", "--", process.execPath, everything, "stdio"],
      stderr: "ignore",
    }),
  );
  const created = await client.request(
    {
      method: "tools/call",
      params: { name: "simulate-research-query", arguments: { topic: "tides" }, task: { ttl: 60000 } },
    },
    CreateTaskResultSchema,
  );
  seen.push(JSON.stringify(created));
  const taskId = created.task.taskId;
  expect(/^[0-9a-f]{32}$/.test(taskId), `the task id is the proxy's, got ${taskId}`);
  let status = created.task.status;
  for (let polls = 0; status !== "completed" && polls < 200; polls += 1) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const got = await client.request({ method: "tasks/get", params: { taskId } }, GetTaskResultSchema);
    seen.push(JSON.stringify(got));
    expect(!("statusMessage" in got), `a status message reached the client: ${JSON.stringify(got)}`);
    status = got.status;
  }
  expect(status === "completed", `the task completed, its last status ${status}`);
  const result = await client.request({ method: "tasks/result", params: { taskId } }, CallToolResultSchema);
  seen.push(JSON.stringify(result));
  expect(
    result.structuredContent?.outcome === "success" && result.structuredContent?.data?.topic === "tides",
    `the result is the contract's projection, got ${JSON.stringify(result)}`,
  );
  let refused = false;
  try {
    await client.request(
      { method: "tools/call", params: { name: "echo", arguments: { message: "hi" }, task: { ttl: 60000 } } },
      CreateTaskResultSchema,
    );
  } catch (error) {
    refused = true;
  }
  expect(refused, "a tool with no contract is called with a task");
  for (const words of ["Gathering sources", "About This Demo", "Research Report"]) {
    expect(!seen.some((text) => text.includes(words)), `the server's words reached the client: ${words}`);
  }
} catch (error) {
  failures.push(String(error?.stack ?? error));
} finally {
  await client.close().catch(() => {});
}
if (failures.length > 0) {
  console.error(`FAIL TypeScript SDK v1, tasks (2025-11-25), stdio:\n  ${failures.join("\n  ")}`);
  process.exit(1);
}
console.log("ok   TypeScript SDK v1, tasks (2025-11-25), stdio");
