// The official JavaScript A2A client (@a2a-js/sdk) against the A2A door (docs/doors.md, "A2A"):
// `node tests/doors/a2a_client.mjs AGENT_URL TOKEN` resolves the agent's card, streams a message,
// sends a second one in the same context, gets the first task, and prints what it saw as JSON.
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";

const [agentUrl, token] = process.argv.slice(2);
const authorized = (input, init = {}) => fetch(input, { ...init, headers: { ...init.headers, Authorization: `Bearer ${token}` } });
const message = (text, contextId = "") => ({
  message: { messageId: `m-${text}`, role: 1, parts: [{ content: { $case: "text", value: text } }], contextId },
});

// The resolver resolves its default path against the URL's root: the card's whole URL is given.
const card = await new DefaultAgentCardResolver({ fetchImpl: authorized }).resolve(`${agentUrl}/.well-known/agent-card.json`, "");
const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ fetchImpl: authorized })],
});
const client = await new ClientFactory(options).createFromAgentCard(card);

const events = [];
let task;
let streamed = "";
for await (const event of client.sendMessageStream(message("Hello"))) {
  const { $case, value } = event.payload;
  events.push($case === "statusUpdate" ? `statusUpdate:${value.status.state}` : $case);
  if ($case === "task") task = value;
  if ($case === "artifactUpdate") streamed += value.artifact.parts.map((part) => part.content.value).join("");
}
const second = await client.sendMessage(message("Again", task.contextId));
const got = await client.getTask({ tenant: "", id: task.id, historyLength: undefined });

console.log(
  JSON.stringify({
    name: card.name,
    events,
    streamed,
    second: { contextId: second.contextId, state: second.status.state, text: second.artifacts[0].parts[0].content.value },
    got: { id: got.id, state: got.status.state, history: got.history.map((m) => m.parts[0].content.value) },
  }),
);
