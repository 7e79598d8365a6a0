// How a turn travels: over the WebSocket /ws/chat/converse (the cookie authenticates it), or, when
// the socket cannot open, as Server-Sent Events from POST /api/chat/converse. Both carry the same
// events (docs/decisions.md, "Converse"): session, delta, trace, done, title, error.
//
// A turn resolves with how it ended: "done", "error", or "lost" (the connection went away before
// its answer came; the answer is still stored by the service, and the page fetches it).

import { ApiError } from "chat/api";

const CONNECT_TIMEOUT_MS = 4000;
const SOCKET_RETRY_MS = 30000; // after a socket failed to open, turns go over SSE this long
const REFUSED_CODES = new Set([4401, 4403, 1012]); // accepted, then closed at once: a refusal

export class Transport {
  constructor({ api, wsPath = "/ws/chat/converse", onTitle = () => {} }) {
    this.api = api;
    this.wsUrl = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${wsPath}`;
    this.onTitle = onTitle;
    this.socket = null;
    this.opening = null;
    this.socketFailedAt = -Infinity;
    this.current = null; // {onEvent, resolve} of the turn the socket is answering
    this.forceSse = new URLSearchParams(location.search).get("transport") === "sse";
  }

  // Open the socket ahead of the first turn, so sending does not wait for a handshake.
  warm() {
    if (!this.forceSse) this.connect();
  }

  connect() {
    if (this.socket && this.socket.readyState === WebSocket.OPEN) return Promise.resolve(this.socket);
    if (this.opening) return this.opening;
    this.opening = new Promise((resolve) => {
      let settled = false;
      const socket = new WebSocket(this.wsUrl);
      const settle = (value) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.opening = null;
        if (!value) this.socketFailedAt = performance.now();
        resolve(value);
      };
      const timer = setTimeout(() => {
        socket.close();
        settle(null);
      }, CONNECT_TIMEOUT_MS);
      socket.addEventListener("open", () => {
        this.socket = socket;
        settle(socket);
      });
      socket.addEventListener("message", (message) => this.receive(message));
      socket.addEventListener("close", (event) => {
        // Refused when it opened (docs/api.md close codes): the next turns go over SSE for a while,
        // which answers the same refusal as an envelope the page shows.
        if (REFUSED_CODES.has(event.code)) this.socketFailedAt = performance.now();
        settle(null);
        if (this.socket === socket) this.socket = null;
        this.finish("lost");
      });
    });
    return this.opening;
  }

  receive(message) {
    let event;
    try {
      event = JSON.parse(message.data);
    } catch {
      return;
    }
    const { type, ...data } = event;
    if (type === "title") {
      this.onTitle(data);
      return;
    }
    if (!this.current) return;
    this.current.onEvent(type, data);
    if (type === "done" || type === "error") this.finish(type);
  }

  finish(how) {
    const turn = this.current;
    this.current = null;
    if (turn) turn.resolve(how);
  }

  // Send one turn; `onEvent(type, data)` sees its events. Resolves "done", "error" or "lost".
  async turn(body, onEvent) {
    const useSocket = !this.forceSse && performance.now() - this.socketFailedAt > SOCKET_RETRY_MS;
    const socket = useSocket ? await this.connect() : null;
    if (socket) {
      return new Promise((resolve) => {
        this.current = { onEvent, resolve };
        socket.send(JSON.stringify(body));
      });
    }
    return this.sse(body, onEvent);
  }

  async sse(body, onEvent) {
    let response;
    try {
      response = await this.api.converseStream(body);
    } catch (error) {
      if (!(error instanceof ApiError) || error.code === "NETWORK") return "lost";
      // Refused before it started: the same `error` event a socket sends, with what HTTP adds.
      onEvent("error", { success: false, error: error.message, code: error.code, retryAfter: error.retryAfter, status: error.status });
      return "error";
    }
    // Resolved at `done` or `error`; the stream is read on to its end for the session's title.
    return new Promise((resolve) => {
      let ended = null;
      const end = (how) => {
        if (!ended) {
          ended = how;
          resolve(how);
        }
      };
      const read = async () => {
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          buffer += value;
          for (let cut = buffer.indexOf("\n\n"); cut >= 0; cut = buffer.indexOf("\n\n")) {
            const parsed = parseEvent(buffer.slice(0, cut));
            buffer = buffer.slice(cut + 2);
            if (!parsed) continue; // a heartbeat comment
            if (parsed.type === "title") this.onTitle(parsed.data);
            else if (!ended) {
              onEvent(parsed.type, parsed.data);
              if (parsed.type === "done" || parsed.type === "error") end(parsed.type);
            }
          }
        }
      };
      // A stream that breaks or ends before `done` lost the connection; the answer is still stored.
      read().then(
        () => end("lost"),
        () => end("lost"),
      );
    });
  }
}

function parseEvent(block) {
  let type = null;
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("event:")) type = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
  }
  if (!type) return null;
  try {
    return { type, data: JSON.parse(data.join("\n")) };
  } catch {
    return null;
  }
}
