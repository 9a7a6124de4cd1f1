// The toolgate gate from Node.js, through `toolgate serve --stdio`: one long-lived process,
// contracts compiled once, one JSON line per decision. No dependencies beyond Node itself.
//
//   import { Gate } from "./gate-client.mjs";
//   const gate = new Gate({ root: "/srv/tool-contracts" });
//   const decision = await gate.admit("job_status", bodyBuffer, { request_id: "req-1", context: {...} });
//   send(decision.agentBytes) // a Buffer: the exact bytes the agent may see (the projection, or
//                             // the fixed failure), the ones the harness tested byte for byte.
//                             // `decision.agent` is the same value parsed: its key order and
//                             // number spellings are JavaScript's, not the tested bytes.
//   await gate.close();
//
// As a script: node gate-client.mjs ROOT TOOL RAW_FILE REQUEST_FILE [VERSION]
// prints the decision as JSON (`agent_base64` holds the agent's bytes).
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

export class Gate {
  constructor({ root = ".", toolgate = process.env.TOOLGATE_BIN ?? "toolgate", audit } = {}) {
    const args = ["serve", "--stdio", "--root", root, ...(audit ? ["--audit", audit] : [])];
    this.child = spawn(toolgate, args, { stdio: ["pipe", "pipe", "inherit"] });
    this.pending = new Map();
    this.nextId = 0;
    this.exited = new Promise((resolve) => this.child.on("exit", resolve));
    createInterface({ input: this.child.stdout }).on("line", (line) => {
      const answer = JSON.parse(line);
      const waiting = this.pending.get(answer.id);
      if (!waiting) return;
      this.pending.delete(answer.id);
      if (answer.error) waiting.reject(new Error(`${answer.error.kind}: ${answer.error.message}`));
      else waiting.resolve({ ...answer.decision, agentBytes: Buffer.from(answer.decision.agent_base64, "base64") });
    });
    this.child.on("exit", () => {
      for (const { reject } of this.pending.values()) reject(new Error("toolgate serve exited"));
      this.pending.clear();
    });
  }

  /** Decides on `raw` (a Buffer: the bytes the tool returned, never a parsed object). */
  admit(tool, raw, request, { version } = {}) {
    if (!Buffer.isBuffer(raw)) {
      return Promise.reject(new TypeError("raw must be the Buffer the tool returned, not a parsed value"));
    }
    const id = this.nextId++;
    const line = { id, tool, raw_base64: raw.toString("base64"), request };
    if (version) line.version = version;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.child.stdin.write(`${JSON.stringify(line)}\n`);
    });
  }

  async close() {
    this.child.stdin.end();
    return this.exited;
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [root, tool, rawFile, requestFile, version] = process.argv.slice(2);
  const gate = new Gate({ root });
  try {
    const decision = await gate.admit(tool, readFileSync(rawFile), JSON.parse(readFileSync(requestFile, "utf8")), {
      version,
    });
    const { agentBytes, ...printed } = decision;
    process.stdout.write(`${JSON.stringify(printed)}\n`);
  } finally {
    await gate.close();
  }
}
