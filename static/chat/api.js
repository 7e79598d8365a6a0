// The Chat API from the page and its widgets: the one client every module goes through. The
// `session` cookie authenticates, X-CSRFToken guards unsafe methods, and every answer is checked:
// a failed request, a status other than 2xx, or an envelope without `success` (docs/api.md,
// "Envelope") becomes an ApiError carrying the envelope's `code` and `error`.

export class ApiError extends Error {
  constructor(message, { status = 0, code = null, retryAfter = null } = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter; // seconds, for RATE_LIMIT_EXCEEDED and USAGE_LIMIT_EXCEEDED
  }
}

// "rate limit exceeded: retry after 12 seconds" is how the WebSocket says when to retry (no headers there).
function retryAfterOf(message) {
  const match = /retry after (\d+) second/.exec(message || "");
  return match ? Number(match[1]) : null;
}

// The ApiError of an error envelope (an HTTP answer's body, or a turn's `error` event).
export function errorFromEnvelope(body, { status = 0, retryAfter = null, fallback = `the service answered ${status}` } = {}) {
  const message = body?.error || fallback;
  return new ApiError(message, {
    status: status || body?.status || 0,
    code: body?.code || null,
    retryAfter: retryAfter ?? body?.retryAfter ?? retryAfterOf(message),
  });
}

const SIGNED_OUT = "You are signed out. Sign in again to continue.";

export class Api {
  constructor({ base = "/api/chat", csrfToken }) {
    this.base = base;
    this.csrfToken = csrfToken;
    this.prefsWrites = Promise.resolve();
  }

  // The response of a request the service accepted (2xx), its body unread; anything else raises.
  async fetch(method, path, { json, form, query, accept = "application/json" } = {}) {
    const url = new URL(this.base + path, location.origin);
    for (const [key, value] of Object.entries(query || {})) {
      if (value !== undefined && value !== null) url.searchParams.set(key, value);
    }
    const headers = { Accept: accept };
    let body;
    if (json !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(json);
    } else if (form !== undefined) {
      body = form; // the browser sets the multipart boundary
    }
    if (method !== "GET") headers["X-CSRFToken"] = this.csrfToken;
    let response;
    try {
      response = await fetch(url, { method, headers, body, credentials: "same-origin" });
    } catch {
      throw new ApiError("The service cannot be reached. Check your connection.", { code: "NETWORK" });
    }
    if (!response.ok) throw await refusal(response);
    return response;
  }

  // The envelope of a JSON request that succeeded; anything else raises.
  async request(method, path, options = {}) {
    const response = await this.fetch(method, path, options);
    const data = await response.json().catch(() => null);
    if (data?.success !== true) throw errorFromEnvelope(data, { status: response.status });
    return data;
  }

  sessions(chatAppId) {
    return this.request("GET", "/sessions", { query: { chatAppId, limit: 100 } });
  }
  // The current branch, or the one through `throughMessageId` with what followed it (docs/api.md, "Branches").
  messages(sessionId, limit = 200, throughMessageId = null) {
    return this.request("GET", `/sessions/${encodeURIComponent(sessionId)}/messages`, { query: { limit, throughMessageId } });
  }
  // An answer's question answered again, as Server-Sent Events (docs/api.md, "Regenerating an answer").
  regenerateStream({ sessionId, messageId, timezone }) {
    const path = `/sessions/${encodeURIComponent(sessionId)}/messages/${encodeURIComponent(messageId)}/regenerate`;
    return this.fetch("POST", path, { json: { timezone }, accept: "text/event-stream" });
  }
  rename(sessionId, title) {
    return this.request("POST", `/sessions/${encodeURIComponent(sessionId)}/title`, { json: { title } });
  }
  // docs/api.md, "Searching one's conversations", "Pins", "Share links"
  searchSessions(chatAppId, q) {
    return this.request("GET", "/sessions/search", { query: { chatAppId, q, limit: 20 } });
  }
  pin(sessionId, pinned) {
    return this.request(pinned ? "POST" : "DELETE", `/sessions/${encodeURIComponent(sessionId)}/pin`, pinned ? { json: {} } : {});
  }
  share(sessionId) {
    return this.request("POST", `/sessions/${encodeURIComponent(sessionId)}/share`, { json: {} });
  }
  deleteSession(sessionId) {
    return this.request("DELETE", `/sessions/${encodeURIComponent(sessionId)}`);
  }
  feedbackOf(sessionId) {
    return this.request("GET", `/sessions/${encodeURIComponent(sessionId)}/feedback`);
  }
  sendFeedback(feedback) {
    return this.request("POST", "/feedback", { json: { feedback } });
  }
  upload(chatAppId, file) {
    const form = new FormData();
    form.append("chatAppId", chatAppId);
    form.append("file", file, file.name);
    return this.request("POST", "/files", { form });
  }
  // One write at a time, in the order they were made: two in flight could land the other way
  // round, and the older pinning or theme would win.
  savePrefs(userId, prefs) {
    const write = this.prefsWrites.then(() => this.request("POST", "/user/prefs", { json: { userId, prefs, partial: true } }));
    this.prefsWrites = write.catch(() => {});
    return write;
  }
  // A turn streamed as Server-Sent Events (docs/api.md, "Converse"): the open response.
  converseStream(body) {
    return this.fetch("POST", "/converse", { json: body, accept: "text/event-stream" });
  }
  // The session's latest turn after `lastEventId`, as Server-Sent Events (docs/api.md, "Resume,
  // stop and approvals"): the open response, 204 when no turn is running or kept.
  resumeStream(sessionId, lastEventId) {
    return this.fetch("GET", `/sessions/${encodeURIComponent(sessionId)}/stream`, {
      query: { lastEventId },
      accept: "text/event-stream",
    });
  }
  stop(sessionId) {
    return this.request("POST", `/sessions/${encodeURIComponent(sessionId)}/stop`, { json: {} });
  }
  approvals(sessionId) {
    return this.request("GET", `/sessions/${encodeURIComponent(sessionId)}/approvals`);
  }
  // A decision on a tool call that waits: the open response, the turn's events when it goes on
  // (the last pending call of its turn decided), `{success, approval}` otherwise.
  decide(sessionId, approvalId, decision) {
    const path = `/sessions/${encodeURIComponent(sessionId)}/approvals/${encodeURIComponent(approvalId)}`;
    return this.fetch("POST", path, { json: { decision }, accept: "text/event-stream" });
  }
}

// The error of a response that is not 2xx. A 401, or a 403 for a CSRF token that is no longer
// valid, means the person's session ended: said as such, whatever the envelope says.
async function refusal(response) {
  const data = await response.json().catch(() => null);
  if (response.status === 401 || (response.status === 403 && /CSRF/.test(data?.error || ""))) {
    return new ApiError(SIGNED_OUT, { status: 401, code: "AUTHENTICATION_REQUIRED" });
  }
  const header = response.headers.get("Retry-After");
  return errorFromEnvelope(data, { status: response.status, retryAfter: header != null ? Number(header) : null });
}
