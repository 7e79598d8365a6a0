// AG-UI's official client (@ag-ui/client HttpAgent) against a live platform, for tests/doors/test_agui.py.
// Input (stdin, JSON): {url, token?, threadId?, messages: ["first", "second", ...]}: one run per
// message, on one agent (so the thread, and the messages so far, go on from run to run).
// Output: JSON lines, {run, event} for every event the client received, then {run, messages, result}
// or {run, error, status?} when the run failed.
import { randomUUID } from "node:crypto";
import { HttpAgent } from "@ag-ui/client";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const spec = JSON.parse(Buffer.concat(chunks).toString("utf8"));

const agent = new HttpAgent({
  url: spec.url,
  headers: spec.token ? { Authorization: `Bearer ${spec.token}` } : {},
  ...(spec.threadId ? { threadId: spec.threadId } : {}),
});
const print = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);

for (const [run, text] of spec.messages.entries()) {
  agent.messages.push({ id: randomUUID(), role: "user", content: text });
  try {
    const { result } = await agent.runAgent({}, { onEvent: ({ event }) => print({ run, event }) });
    print({ run, threadId: agent.threadId, messages: agent.messages, result: result ?? null });
  } catch (error) {
    print({ run, error: String(error?.message ?? error), status: error?.status ?? null });
    break;
  }
}
