// AG-UI's official client (@ag-ui/client HttpAgent) against a live platform, for tests/doors/test_agui.py.
// Input (stdin, JSON): {url, token?, threadId?, messages: ["first", {resume: "resolved"}, ...]}: one
// run per item, on one agent (so the thread, and the messages so far, go on from run to run): a
// string is a new user message, {resume: status, payload?} answers every interrupt still open,
// {toolResult: content} answers every call of the frontend's tools the last run left pending.
// `tools` (optional): the frontend's tools, sent with every run.
// Output: JSON lines, {run, event} for every event the client received, then {run, messages,
// result, pendingInterrupts} or {run, error} when the run failed.
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

let pending = [];
for (const [run, item] of spec.messages.entries()) {
  let parameters = spec.tools ? { tools: spec.tools } : {};
  if (typeof item === "string") {
    agent.messages.push({ id: randomUUID(), role: "user", content: item });
  } else if ("toolResult" in item) {
    for (const toolCallId of pending) agent.messages.push({ id: randomUUID(), role: "tool", toolCallId, content: item.toolResult });
  } else {
    const answer = { status: item.resume, ...(item.payload ? { payload: item.payload } : {}) };
    parameters = { ...parameters, resume: agent.pendingInterrupts.map((interrupt) => ({ interruptId: interrupt.id, ...answer })) };
  }
  try {
    const onEvent = ({ event }) => {
      print({ run, event });
      if (event.type === "RUN_FINISHED") pending = event.outcome?.pendingToolCallIds ?? [];
    };
    const { result } = await agent.runAgent(parameters, { onEvent });
    const pendingInterrupts = agent.pendingInterrupts;
    print({ run, threadId: agent.threadId, messages: agent.messages, result: result ?? null, pendingInterrupts });
  } catch (error) {
    print({ run, error: String(error?.message ?? error), status: error?.status ?? null });
    break;
  }
}
