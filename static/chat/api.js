// The Chat API from the page: the `session` cookie authenticates, X-CSRFToken guards unsafe methods,
// and every failure arrives as SPEC.md's envelope, turned here into an ApiError a person can act on.

export class ApiError extends Error {
  constructor(message, { status = 0, code = null, retryAfter = null } = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter; // seconds, for RATE_LIMIT_EXCEEDED
  }
}

// "rate limit exceeded: retry after 12 seconds" is how the WebSocket says when to retry (no headers there).
export function retryAfterOf(message) {
  const match = /retry after (\d+) second/.exec(message || "");
  return match ? Number(match[1]) : null;
}

export function errorFromEnvelope(body, status = 0, retryAfterHeader = null) {
  const message = (body && body.error) || `the service answered ${status}`;
  const retryAfter = retryAfterHeader != null ? Number(retryAfterHeader) : retryAfterOf(message);
  return new ApiError(message, { status, code: (body && body.code) || null, retryAfter });
}

export class Api {
  constructor({ base = "/api/chat", csrfToken }) {
    this.base = base;
    this.csrfToken = csrfToken;
  }

  async request(method, path, { json, form, query } = {}) {
    const url = new URL(this.base + path, location.origin);
    for (const [key, value] of Object.entries(query || {})) {
      if (value !== undefined && value !== null) url.searchParams.set(key, value);
    }
    const headers = { Accept: "application/json" };
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
    } catch (error) {
      throw new ApiError("The service cannot be reached. Check your connection.", { code: "NETWORK" });
    }
    let data = null;
    try {
      data = await response.json();
    } catch (error) {
      data = null;
    }
    if (!response.ok || !data || data.success === false) {
      if (response.status === 401 || (response.status === 403 && /CSRF/.test((data && data.error) || ""))) {
        throw new ApiError("You are signed out. Sign in again to continue.", { status: 401, code: "AUTHENTICATION_REQUIRED" });
      }
      throw errorFromEnvelope(data, response.status, response.headers.get("Retry-After"));
    }
    return data;
  }

  sessions(chatAppId) {
    return this.request("GET", "/sessions", { query: { chatAppId, limit: 100 } });
  }
  messages(sessionId, limit = 200) {
    return this.request("GET", `/sessions/${encodeURIComponent(sessionId)}/messages`, { query: { limit } });
  }
  rename(sessionId, title) {
    return this.request("POST", `/sessions/${encodeURIComponent(sessionId)}/title`, { json: { title } });
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
}
