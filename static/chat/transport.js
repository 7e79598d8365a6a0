// How a turn travels: over the WebSocket /ws/chat/converse (the cookie authenticates it), or, when
// the socket cannot open, as Server-Sent Events from POST /api/chat/converse. Both carry the same
// events (docs/api.md, "Events"), each with an id `<messageId>:<n>`.
//
// A turn outlives its connection (docs/api.md, "Resume, stop and approvals"): when the socket
// drops or the stream breaks mid-turn, the transport reconnects, backing off, and resumes from the
// last event id it saw (the socket's `resume` action, or GET …/stream with Last-Event-ID), so the
// events go on where they stopped, none lost or repeated.
//
// Following a turn resolves with how it ended: "done", "error", "idle" (a resume found no turn
// running or kept: the stored messages are the answer), "lost" (it could not be resumed in time),
// or "left" (the page stopped following it: the person opened another conversation).

import { ApiError } from "chat/api";

const CONNECT_TIMEOUT_MS = 4000;
const SOCKET_RETRY_MS = 30000; // after a socket failed to open, turns go over SSE this long
const REFUSED_CODES = new Set([4401, 4403, 1012]); // accepted, then closed at once: a refusal
const RESUME_GIVE_UP_MS = 120000;
const backoff = (attempt) => Math.min(250 * 2 ** attempt, 8000);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export class Transport {
  constructor({ api, wsPath = "/ws/chat/converse", onTitle = () => {} }) {
    this.api = api;
    this.wsUrl = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${wsPath}`;
    this.onTitle = onTitle; // (data, replayed): `replayed` when it came in a resume, maybe renamed since
    this.socketResumed = false; // what the socket answers (its `title` comes after `done`): a resume
    this.socket = null;
    this.opening = null;
    this.socketFailedAt = -Infinity;
    this.current = null; // {onEvent, resolve, socket} of the turn the socket is answering
    this.reading = new Set(); // {reader, end} of the SSE streams being read
    this.following = 0; // bumped by leave(): a follow started before it stops resuming
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
        if (this.current?.socket === socket) this.finish("lost");
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
    const { type, eventId, ...data } = event;
    if (type === "title") {
      this.onTitle(data, this.socketResumed);
      return;
    }
    if (!this.current) return;
    if (type === "idle") {
      this.finish("idle");
      return;
    }
    this.current.onEvent(type, data, eventId);
    if (type === "done" || type === "error") this.finish(type);
  }

  finish(how) {
    const stream = this.current;
    this.current = null;
    if (stream) stream.resolve(how);
  }

  // Stop following the turns being read (they go on, and store their answers). A socket in the
  // middle of a turn is closed: it answers one turn after another, and the next would wait.
  leave() {
    this.following += 1;
    for (const stream of this.reading) stream.end("left");
    const stream = this.current;
    if (!stream) return;
    this.finish("left");
    stream.socket.close(1000, "the page left this turn");
    if (this.socket === stream.socket) this.socket = null;
  }

  // Follow one turn to its end: `start` is {body} (send a converse body), {regenerate:
  // {sessionId, messageId, timezone}} (answer an answer's question again), {sessionId,
  // lastEventId} (resume the session's turn), or {response} (an open SSE response of one, such as
  // an approval's decision). `onEvent(type, data, eventId)` sees each event once; `onRetry()` is
  // told when the connection was lost and the turn is being resumed.
  async follow(start, onEvent, { onRetry = () => {} } = {}) {
    const following = this.following;
    const last = { sessionId: start.sessionId ?? null, eventId: start.lastEventId ?? null };
    const seen = (type, data, eventId) => {
      if (type === "session") last.sessionId = data.sessionId;
      if (eventId) last.eventId = eventId;
      onEvent(type, data, eventId);
    };
    let how = await this.stream(start, seen, following);
    const since = Date.now();
    // Resumed only once the turn has said what it is: before its first event, a resume would
    // find the session's previous turn.
    for (let attempt = 0; how === "lost" && last.eventId && Date.now() - since < RESUME_GIVE_UP_MS; attempt += 1) {
      onRetry();
      await sleep(backoff(attempt));
      if (following !== this.following) return "left";
      how = await this.stream({ sessionId: last.sessionId, lastEventId: last.eventId }, seen, following);
    }
    return how;
  }

  async stream(start, onEvent, following) {
    if (start.response) return this.read(start.response, onEvent, false);
    // The socket answers one turn at a time: a second stream meanwhile goes over SSE.
    const useSocket = !this.forceSse && !this.current && performance.now() - this.socketFailedAt > SOCKET_RETRY_MS;
    const socket = useSocket ? await this.connect() : null;
    if (following !== this.following) return "left";
    if (socket && !this.current) {
      const message = start.body ??
        (start.regenerate && { action: "regenerate", ...start.regenerate }) ?? {
          action: "resume",
          sessionId: start.sessionId,
          lastEventId: start.lastEventId ?? undefined,
        };
      return new Promise((resolve) => {
        this.current = { onEvent, resolve, socket };
        this.socketResumed = !start.body && !start.regenerate;
        socket.send(JSON.stringify(message));
      });
    }
    let response;
    try {
      response = await (start.body
        ? this.api.converseStream(start.body)
        : start.regenerate
          ? this.api.regenerateStream(start.regenerate)
          : this.api.resumeStream(start.sessionId, start.lastEventId));
    } catch (error) {
      if (!(error instanceof ApiError) || error.code === "NETWORK") return "lost";
      // Refused before it started: the same `error` event a socket sends, with what HTTP adds.
      onEvent("error", { success: false, error: error.message, code: error.code, retryAfter: error.retryAfter, status: error.status });
      return "error";
    }
    return this.read(response, onEvent, !start.body && !start.regenerate);
  }

  // The events of an open SSE response, until `done` or `error`; the stream is read on to its end
  // for the session's title (`resumed`: the response is a resume's).
  read(response, onEvent, resumed) {
    if (response.status === 204) return Promise.resolve("idle");
    return new Promise((resolve) => {
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let ended = false;
      const end = (how) => {
        if (ended) return;
        ended = true;
        this.reading.delete(stream);
        if (how === "left") reader.cancel().catch(() => {});
        resolve(how);
      };
      const stream = { end };
      this.reading.add(stream);
      const pump = async () => {
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          buffer += value;
          for (let cut = buffer.indexOf("\n\n"); cut >= 0; cut = buffer.indexOf("\n\n")) {
            const parsed = parseEvent(buffer.slice(0, cut));
            buffer = buffer.slice(cut + 2);
            if (!parsed) continue; // a heartbeat comment
            if (parsed.type === "title") this.onTitle(parsed.data, resumed);
            else if (!ended) {
              onEvent(parsed.type, parsed.data, parsed.id);
              if (parsed.type === "done" || parsed.type === "error") end(parsed.type);
            }
          }
        }
      };
      // A stream that breaks or ends before `done` lost the connection; the turn goes on.
      pump().then(
        () => end("lost"),
        () => end("lost"),
      );
    });
  }
}

function parseEvent(block) {
  let type = null;
  let id = null;
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("event:")) type = line.slice(6).trim();
    else if (line.startsWith("id:")) id = line.slice(3).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
  }
  if (!type) return null;
  try {
    return { type, id, data: JSON.parse(data.join("\n")) };
  } catch {
    return null;
  }
}
