// The chat page: sessions sidebar, conversation, composer. It talks to the platform as any
// frontend does: the Chat API (chat/api) and streamed turns (chat/transport); answers are drawn by
// chat/render, the one module that turns model text into DOM.

import { Api, ApiError } from "chat/api";
import { el } from "chat/dom";
import { MessageRenderer, renderMarkdown, setTagRenderer } from "chat/render";
import { Transport } from "chat/transport";
import { createRuntime } from "chat/widgets/runtime";

const config = JSON.parse(document.getElementById("chat-config").textContent);
const features = config.features;
const api = new Api({ csrfToken: config.csrfToken });

const $ = (selector, root = document) => root.querySelector(selector);
const els = {
  messages: $(".messages"),
  sessionList: $(".session-list"),
  sessionEmpty: $(".session-empty"),
  status: $(".status"),
  alert: $(".alert"),
  composer: $(".composer"),
  prompt: $("#prompt"),
  send: $(".composer .send"),
  attach: $("#attach"),
  attachments: $(".attachments"),
  suggestions: $(".suggestions"),
  newChat: $(".new-chat"),
  sidebar: $("#sidebar"),
  sidebarToggle: $(".sidebar-toggle"),
  missing: $(".session-missing"),
};

const state = {
  sessionId: config.sessionId,
  sessions: [],
  busy: false,
  attachments: [],
  loading: 0, // bumped at each switch: a slow load of a session left meanwhile is dropped
  blockedUntil: 0,
  lastMessage: null,
};

const chatPath = (sessionId) => `/chat/${encodeURIComponent(config.chatAppId)}/${sessionId ? encodeURIComponent(sessionId) : ""}`;

function sessionIdFromPath() {
  const rest = location.pathname.slice(chatPath(null).length);
  return rest ? decodeURIComponent(rest) : null;
}

// --- notices ----------------------------------------------------------------------------------

function say(text) {
  els.status.textContent = text;
}

function clearAlert() {
  els.alert.replaceChildren();
}

function alertBox(text, ...actions) {
  els.alert.replaceChildren(el("div", { class: "notice notice-error" }, el("span", { text }), ...actions));
}

// What a person can do about an error: every failure of the API or a turn comes through here.
function showError(error) {
  const code = error.code;
  if (code === "RATE_LIMIT_EXCEEDED") {
    const seconds = error.retryAfter ?? 60;
    state.blockedUntil = Date.now() + seconds * 1000;
    const line = el("span");
    const tick = () => {
      const left = Math.ceil((state.blockedUntil - Date.now()) / 1000);
      if (left <= 0) {
        clearAlert();
        say("You can send messages again.");
        updateComposer();
        return;
      }
      line.textContent = `You are sending too many requests. You can send again in ${left} second${left === 1 ? "" : "s"}.`;
      setTimeout(tick, 1000);
    };
    els.alert.replaceChildren(el("div", { class: "notice notice-error" }, line));
    tick();
    updateComposer();
    return;
  }
  if (code === "AUTHENTICATION_REQUIRED") {
    const next = encodeURIComponent(location.pathname);
    alertBox("You are signed out.", el("a", { href: `/accounts/login/?next=${next}`, class: "button button-small", text: "Sign in again" }));
    return;
  }
  if (code === "INSUFFICIENT_PERMISSIONS") {
    alertBox(`You cannot use this chat app any more (${error.message}).`, el("a", { href: "/", class: "button button-small", text: "Your chat apps" }));
    return;
  }
  if (code === "INVALID_SESSION_ID") {
    alertBox("This conversation no longer exists.", el("button", { type: "button", class: "button button-small", text: "Start a new chat", onclick: () => newChat(true) }));
    return;
  }
  const retry = state.lastMessage
    ? el("button", { type: "button", class: "button button-small", text: "Try again", onclick: () => retryLast() })
    : null;
  if (error.status === 502 || /model provider failed/.test(error.message)) {
    alertBox("The assistant could not answer: its model failed. Try again in a moment.", retry);
  } else if (code === "INVALID_REQUEST") {
    alertBox(`Not accepted: ${error.message}`);
  } else if (code === "NETWORK") {
    alertBox(error.message, retry);
  } else {
    alertBox(`Something went wrong: ${error.message}`, retry);
  }
}

function retryLast() {
  const last = state.lastMessage;
  clearAlert();
  if (last) send(last.text, last.files);
}

// --- sidebar: sessions ------------------------------------------------------------------------

function sessionLabel(session) {
  return session.title || "New conversation";
}

function sessionMeta(session) {
  const when = new Date(session.createDate || Date.now());
  const date = when.toLocaleDateString(undefined, { month: "short", day: "numeric" });
  return session.status === "completed" ? `${date} · completed` : date;
}

function renderSessions() {
  els.sessionList.replaceChildren(...state.sessions.map(sessionItem));
  els.sessionEmpty.hidden = state.sessions.length > 0;
}

function sessionItem(session) {
  const current = session.sessionId === state.sessionId;
  const title = el("span", { class: "session-title", text: sessionLabel(session) });
  const link = el(
    "a",
    { href: chatPath(session.sessionId), "aria-current": current ? "page" : null, onclick: (event) => onSessionClick(event, session.sessionId) },
    title,
    el("span", { class: "session-meta", text: sessionMeta(session) }),
  );
  const rename = el("button", {
    type: "button",
    class: "button button-small button-link rename",
    "aria-label": `Rename “${sessionLabel(session)}”`,
    text: "Rename",
    onclick: () => startRename(session),
  });
  return el("li", { class: "session", "data-session-id": session.sessionId }, link, rename);
}

function onSessionClick(event, sessionId) {
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey || event.button !== 0) return; // a new tab
  event.preventDefault();
  closeSidebar();
  if (sessionId !== state.sessionId) openSession(sessionId, { push: true });
  els.prompt.focus();
}

function startRename(session) {
  const item = els.sessionList.querySelector(`[data-session-id="${CSS.escape(session.sessionId)}"]`);
  if (!item) return;
  const input = el("input", { type: "text", value: session.title || "", "aria-label": "New title", maxlength: "200" });
  const cancel = () => {
    renderSessions();
    els.sessionList.querySelector(`[data-session-id="${CSS.escape(session.sessionId)}"] .rename`)?.focus();
  };
  const form = el(
    "form",
    {
      class: "session-rename",
      onsubmit: async (event) => {
        event.preventDefault();
        const title = input.value.trim();
        if (!title) return cancel();
        try {
          const answer = await api.rename(session.sessionId, title);
          session.title = answer.title;
          if (session.sessionId === state.sessionId) document.title = `${answer.title} · ${features.title}`;
          say(`Renamed to “${answer.title}”.`);
        } catch (error) {
          showError(error);
        }
        cancel();
      },
    },
    input,
    el("button", { type: "submit", class: "button button-small button-primary", text: "Save" }),
    el("button", { type: "button", class: "button button-small", text: "Cancel", onclick: cancel }),
  );
  input.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      cancel();
    }
  });
  item.replaceChildren(form);
  input.focus();
  input.select();
}

async function loadSessions() {
  try {
    const answer = await api.sessions(config.chatAppId);
    state.sessions = answer.sessions;
    renderSessions();
  } catch (error) {
    showError(error);
  }
}

function rememberSession(sessionId) {
  if (!state.sessions.some((session) => session.sessionId === sessionId)) {
    state.sessions.unshift({ sessionId, title: "", status: "active", createDate: new Date().toISOString() });
  }
  renderSessions();
}

function setTitle(sessionId, title) {
  const session = state.sessions.find((item) => item.sessionId === sessionId);
  if (session) {
    session.title = title;
    renderSessions();
  }
  if (sessionId === state.sessionId) document.title = `${title} · ${features.title}`;
}

// --- the conversation -------------------------------------------------------------------------

function fileList(files) {
  if (!files || !files.length) return null;
  return el(
    "ul",
    { class: "message-files", "aria-label": "Attached files" },
    ...files.map((file) => {
      const url = file.url || `/api/chat/files/${encodeURIComponent(file.fileId)}/content`;
      const isImage = /^image\/(png|jpeg|gif|webp)$/.test(file.mimeType || "");
      const content = isImage
        ? el("img", { src: url, alt: file.fileName || "image", loading: "lazy" })
        : el("span", { text: file.fileName || "file" });
      return el("li", {}, el("a", { href: url, class: isImage ? "file-image" : null, target: "_blank", rel: "noopener", title: file.fileName }, content));
    }),
  );
}

function userMessage(text, files, messageId = null) {
  return el(
    "article",
    { class: "message", "data-message-role": "user", "data-message-id": messageId, "aria-label": "You said" },
    el("div", { class: "message-text", text }),
    fileList(files),
  );
}

function assistantMessage(messageId = null) {
  const body = el("div", { class: "message-body" });
  const footer = el("div", { class: "message-footer" });
  const article = el("article", { class: "message", "data-message-role": "assistant", "data-message-id": messageId, "aria-label": "The assistant said" }, body, footer);
  return { article, body, footer };
}

function markFailed({ article, footer }, reason) {
  article.removeAttribute("aria-busy");
  article.classList.add("message-failed");
  article.setAttribute("aria-label", "The assistant could not answer");
  footer.replaceChildren(el("p", { class: "message-failure", role: "note", text: `Not answered: ${reason}` }));
}

function traceLabel(trace) {
  switch (trace.stage) {
    case "tool":
      return `Tool ${trace.function || trace.toolId}${trace.outcome && trace.outcome !== "ok" ? ` (${trace.outcome})` : ""}`;
    case "model":
      return `Model ${trace.model}`;
    case "selection":
      return "Directive selection";
    case "verification":
      return `Verification${trace.grade ? `: grade ${trace.grade}` : ""}`;
    case "reprompt":
      return "Corrected answer";
    default:
      return trace.stage || "Step";
  }
}

function traceFacts(trace) {
  const facts = [];
  if (trace.durationMs !== undefined) facts.push(`${Math.round(trace.durationMs)} ms`);
  if (trace.inputTokens !== undefined) facts.push(`${trace.inputTokens} → ${trace.outputTokens} tokens`);
  return facts.join(" · ");
}

// The traces of an answer, collapsed: one line per step, its details as text.
function renderTraces(footer, traces) {
  let details = footer.querySelector(".traces");
  if (!features.traces || !traces || !traces.length) {
    details?.remove();
    return;
  }
  if (!details) {
    details = el("details", { class: "traces" }, el("summary"), el("ol"));
    footer.append(details);
  }
  details.querySelector("summary").textContent = `Traces (${traces.length})`;
  details.querySelector("ol").replaceChildren(
    ...traces.map((trace) => el("li", {}, el("strong", { text: traceLabel(trace) }), el("span", { text: ` ${traceFacts(trace)}` }), el("pre", { text: JSON.stringify(trace, null, 2) }))),
  );
}

// The knowledge base results the answer cites, numbered as the model was given them (CONTRACT §11).
// Every part is text; a source is a link only when it is an http(s) address.
function renderCitations(footer, citations) {
  footer.querySelector(".citations")?.remove();
  if (!citations || !citations.length) return;
  const items = citations.map((citation) => {
    const source = /^https?:\/\//i.test(citation.sourceUrl || "")
      ? el("a", { href: citation.sourceUrl, target: "_blank", rel: "noopener noreferrer nofollow", text: citation.title })
      : el("span", { text: citation.title + (citation.sourceUrl ? ` (${citation.sourceUrl})` : "") });
    return el("li", { value: String(citation.n) }, source, el("blockquote", { text: citation.text }));
  });
  footer.prepend(el("details", { class: "citations" }, el("summary", { text: `Sources (${citations.length})` }), el("ol", {}, ...items)));
}

function renderGrade(footer, grade) {
  if (!features.verifyResponse || !grade) return;
  let badge = footer.querySelector(".grade");
  if (!badge) {
    badge = el("span", { class: "grade" });
    footer.prepend(badge);
  }
  badge.dataset.grade = grade;
  badge.textContent = `Verified: grade ${grade}`;
}

// Thumbs up and down on an answer, with an optional comment, through POST /api/chat/feedback.
function renderFeedback(footer, sessionId, messageId, given) {
  footer.querySelector(".feedback")?.remove();
  footer.querySelector(".feedback-form")?.remove();
  footer.querySelector(".feedback-sent")?.remove();
  const group = el("div", { class: "feedback", role: "group", "aria-label": "Feedback on this answer" });
  const thumbs = {};
  for (const [kind, label] of [
    ["up", "Thumbs up"],
    ["down", "Thumbs down"],
  ]) {
    const type = config.feedbackTypes[kind];
    thumbs[kind] = el(
      "button",
      {
        type: "button",
        class: "button button-small",
        "aria-label": label,
        title: label,
        "aria-pressed": given && given.type === type ? "true" : "false",
        "data-feedback": kind,
        onclick: () => openFeedbackForm(footer, sessionId, messageId, kind, thumbs),
      },
      thumbIcon(kind),
    );
    group.append(thumbs[kind]);
  }
  footer.append(group);
  if (given && given.userComment) footer.append(el("p", { class: "feedback-sent", text: `Your comment: ${given.userComment}` }));
}

// A thumb drawn in SVG: emoji need a font a machine may not have.
function thumbIcon(kind) {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
  path.setAttribute("d", "M7 10v11H3V10h4zm0 0l4-8a3 3 0 0 1 3 3v4h5.5a2 2 0 0 1 2 2.3l-1.4 8A2 2 0 0 1 18.1 21H7");
  svg.append(path);
  if (kind === "down") svg.style.transform = "rotate(180deg)";
  return svg;
}

function openFeedbackForm(footer, sessionId, messageId, kind, thumbs) {
  footer.querySelector(".feedback-form")?.remove();
  const comment = el("textarea", { "aria-label": "Comment (optional)", placeholder: "Comment (optional)", maxlength: "1000" });
  const close = () => {
    form.remove();
    thumbs[kind].focus();
  };
  const form = el(
    "form",
    {
      class: "feedback-form",
      onsubmit: async (event) => {
        event.preventDefault();
        const feedback = { sessionId, messageId, type: config.feedbackTypes[kind] };
        if (comment.value.trim()) feedback.userComment = comment.value.trim();
        try {
          await api.sendFeedback(feedback);
        } catch (error) {
          showError(error);
          return;
        }
        for (const [name, button] of Object.entries(thumbs)) button.setAttribute("aria-pressed", name === kind ? "true" : "false");
        footer.querySelector(".feedback-sent")?.remove();
        const thanks = feedback.userComment ? `Thank you. Your comment: ${feedback.userComment}` : "Thank you for your feedback.";
        footer.append(el("p", { class: "feedback-sent", text: thanks }));
        say("Feedback sent.");
        close();
      },
    },
    comment,
    el(
      "div",
      { class: "row" },
      el("button", { type: "submit", class: "button button-small button-primary", text: "Send feedback" }),
      el("button", { type: "button", class: "button button-small", text: "Cancel", onclick: close }),
    ),
  );
  comment.addEventListener("keydown", (event) => {
    if (event.key === "Escape") close();
  });
  footer.append(form);
  comment.focus();
}

function showStoredMessage(message, sessionId, given) {
  if (message.source === "user") return userMessage(message.message, message.files, message.messageId);
  const answer = assistantMessage(message.messageId);
  const { article, body, footer } = answer;
  renderMarkdown(body, message.message);
  if (message.error) {
    markFailed(answer, message.error);
    return article;
  }
  const grade = (message.verifications || []).find((verification) => verification.grade)?.grade;
  renderGrade(footer, grade);
  renderTraces(footer, message.traces);
  renderCitations(footer, message.citations);
  renderFeedback(footer, sessionId, message.messageId, given);
  return article;
}

// The conversation stays scrolled to its end while an answer grows, as long as the person has not
// scrolled up, without reading the layout in the middle of a frame: the position is read at scroll
// events, and the growing answer is followed from a ResizeObserver, which runs once layout is done.
let stuckToEnd = true;
const follow = new ResizeObserver(() => {
  if (stuckToEnd) scrollToEnd();
});

function showMessages(...nodes) {
  els.messages.replaceChildren(...nodes);
  runtime?.sweep();
}

function addMessages(...nodes) {
  els.messages.append(...nodes);
}

function scrollToEnd() {
  els.messages.scrollTop = els.messages.scrollHeight;
  stuckToEnd = true;
}

function updateSuggestions() {
  if (els.suggestions) els.suggestions.hidden = els.messages.querySelector("[data-message-role]") !== null;
}

async function openSession(sessionId, { push = false } = {}) {
  const loading = ++state.loading;
  state.sessionId = sessionId;
  if (push) history.pushState({ sessionId }, "", chatPath(sessionId));
  els.missing?.remove();
  clearAlert();
  renderSessions();
  showMessages();
  updateSuggestions();
  say("Loading the conversation…");
  let messages;
  let feedback;
  try {
    [{ messages }, { feedback }] = await Promise.all([api.messages(sessionId), api.feedbackOf(sessionId)]);
  } catch (error) {
    if (loading !== state.loading) return;
    say("");
    if (error instanceof ApiError && error.code === "INVALID_SESSION_ID") {
      newChat(false, { replace: true });
      alertBox("This conversation was not found: it may have been deleted, or it belongs to another account.");
    } else {
      showError(error);
    }
    return;
  }
  if (loading !== state.loading) return;
  const given = new Map();
  for (const item of feedback) if (item.messageId && !given.has(item.messageId)) given.set(item.messageId, item); // newest first
  showMessages(...messages.map((message) => showStoredMessage(message, sessionId, given.get(message.messageId))));
  const session = state.sessions.find((item) => item.sessionId === sessionId);
  document.title = session && session.title ? `${session.title} · ${features.title}` : features.title;
  updateSuggestions();
  say("");
  scrollToEnd();
}

function newChat(push, { replace = false } = {}) {
  state.loading += 1;
  state.sessionId = null;
  if (push) history.pushState({ sessionId: null }, "", chatPath(null));
  else if (replace) history.replaceState({ sessionId: null }, "", chatPath(null));
  els.missing?.remove();
  showMessages();
  document.title = features.title;
  clearAlert();
  say("");
  renderSessions();
  updateSuggestions();
}

// --- sending a turn ---------------------------------------------------------------------------

function updateComposer() {
  const uploading = state.attachments.some((item) => item.state === "uploading");
  const blocked = Date.now() < state.blockedUntil;
  els.send.disabled = state.busy || uploading || blocked;
}

function markAfterPaint(name) {
  requestAnimationFrame(() => setTimeout(() => performance.mark(name), 0));
}

async function send(text, files = null) {
  text = text.trim();
  if (!text || state.busy || Date.now() < state.blockedUntil) return;
  if (state.attachments.some((item) => item.state === "uploading")) {
    say("Wait until the file has uploaded.");
    return;
  }
  const attached = files || state.attachments.filter((item) => item.state === "ready").map((item) => item.file);
  clearAlert();
  say("");
  state.lastMessage = { text, files: attached };
  state.busy = true;
  updateComposer();
  els.prompt.value = "";
  resizePrompt();
  state.attachments = [];
  els.attachments.replaceChildren();

  const userArticle = userMessage(text, attached);
  const answer = assistantMessage();
  answer.article.setAttribute("aria-busy", "true");
  addMessages(userArticle, answer.article);
  updateSuggestions();
  scrollToEnd();

  follow.observe(answer.article);
  const renderer = new MessageRenderer(answer.body);
  let firstPaint = true;
  renderer.onPaint = () => {
    if (firstPaint) {
      firstPaint = false;
      setTimeout(() => performance.mark("chat:first-token"), 0);
    }
  };
  const turn = { sessionId: state.sessionId, userMessageId: null, sentAt: Date.now(), traces: [], grade: null, failure: null };
  const body = { chatAppId: config.chatAppId, agentId: config.agentId, message: text, features: {}, source: "user" };
  if (turn.sessionId) body.sessionId = turn.sessionId;
  if (attached.length) body.files = attached;
  try {
    body.timezone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  } catch (error) {
    // no timezone: the agent's tools take the server's
  }

  performance.clearMarks();
  performance.mark("chat:send");
  const how = await transport.turn(body, (type, data) => {
    if (type === "session") {
      turn.userMessageId = data.userMessageId;
      userArticle.dataset.messageId = data.userMessageId;
      if (!turn.sessionId) {
        turn.sessionId = data.sessionId;
        if (state.sessionId === null) {
          state.sessionId = data.sessionId;
          history.replaceState({ sessionId: data.sessionId }, "", chatPath(data.sessionId));
        }
        rememberSession(data.sessionId);
      }
    } else if (type === "delta") {
      renderer.append(data.text);
    } else if (type === "trace") {
      turn.traces.push(data);
      if (data.stage === "verification" && data.grade) turn.grade = data.grade;
      renderTraces(answer.footer, turn.traces);
      renderGrade(answer.footer, turn.grade);
    } else if (type === "done") {
      performance.mark("chat:done");
      renderer.finish();
      markAfterPaint("chat:final-paint");
      answer.article.dataset.messageId = data.messageId;
      answer.article.removeAttribute("aria-busy");
      renderFeedback(answer.footer, turn.sessionId, data.messageId, null);
      renderCitations(answer.footer, data.citations);
      if (features.verifyResponse && !turn.grade) fetchGrade(turn.sessionId, data.messageId, answer.footer);
    } else if (type === "error") {
      turn.failure = data;
    }
  });

  if (how === "lost") await recover(turn, text, renderer, answer);
  else if (how === "error") {
    // A turn that started is stored with its failure (and what had streamed): shown as such, as a
    // reload shows it, so that "Try again" reads as a second attempt, not a duplicate.
    if (turn.userMessageId) markFailed(answer, turn.failure?.error || "the turn failed");
    else answer.article.remove();
    if (!turn.userMessageId) {
      // Refused before the turn started (a rate limit, a check): nothing was stored, so the
      // message goes back into the box, its files with it, to be sent again.
      userArticle.remove();
      if (!els.prompt.value) els.prompt.value = text;
      state.attachments = attached.map((file) => ({ name: file.fileName, state: "ready", file }));
      renderAttachments();
      updateSuggestions();
    }
    const failure = turn.failure || {};
    showError(new ApiError(failure.error || "the turn failed", { status: failure.status || 0, code: failure.code, retryAfter: failure.retryAfter ?? retryFrom(failure.error) }));
  }
  follow.unobserve(answer.article);
  state.busy = false;
  updateComposer();
}

function retryFrom(message) {
  const match = /retry after (\d+) second/.exec(message || "");
  return match ? Number(match[1]) : null;
}

async function fetchGrade(sessionId, messageId, footer) {
  try {
    const { messages } = await api.messages(sessionId, 4);
    const stored = messages.find((message) => message.messageId === messageId);
    renderGrade(footer, (stored?.verifications || []).find((verification) => verification.grade)?.grade);
  } catch (error) {
    // the grade shows on the next load of the conversation
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// The connection went away mid-turn. The service finishes the turn and stores its answer anyway,
// so wait for it to appear and show it (CONTRACT §7).
async function recover(turn, text, renderer, answer) {
  say("The connection was lost. Waiting for the answer…");
  const started = Date.now();
  for (let attempt = 0; Date.now() - started < 120000; attempt += 1) {
    await sleep(Math.min(500 * 2 ** attempt, 5000));
    try {
      if (!turn.sessionId) {
        // Lost before the turn said which session it started: the newest one, if it is this turn's.
        const { sessions } = await api.sessions(config.chatAppId);
        const fresh = sessions.find((session) => Date.parse(session.createDate) >= turn.sentAt - 5000 && !state.sessions.some((known) => known.sessionId === session.sessionId));
        if (!fresh) continue;
        turn.sessionId = fresh.sessionId;
        if (state.sessionId === null) {
          state.sessionId = fresh.sessionId;
          history.replaceState({ sessionId: fresh.sessionId }, "", chatPath(fresh.sessionId));
        }
        state.sessions = sessions;
        renderSessions();
      }
      const { messages } = await api.messages(turn.sessionId, 50);
      let asked = messages.findIndex((message) => message.messageId === turn.userMessageId);
      if (asked < 0) asked = messages.findLastIndex((message) => message.source === "user" && message.message === text.trim());
      const stored = asked >= 0 ? messages.slice(asked + 1).find((message) => message.source === "assistant") : null;
      if (!stored) continue;
      renderer.replace(stored.message);
      answer.article.dataset.messageId = stored.messageId;
      answer.article.removeAttribute("aria-busy");
      renderGrade(answer.footer, (stored.verifications || []).find((verification) => verification.grade)?.grade);
      renderTraces(answer.footer, stored.traces);
      renderCitations(answer.footer, stored.citations);
      renderFeedback(answer.footer, turn.sessionId, stored.messageId, null);
      say("Reconnected. The answer was restored from the conversation.");
      transport.warm();
      loadSessions(); // its title, sent while the connection was down
      return;
    } catch (error) {
      if (error instanceof ApiError && error.code !== "NETWORK" && error.code !== "INVALID_SESSION_ID") {
        showError(error);
        return;
      }
    }
  }
  answer.article.removeAttribute("aria-busy");
  alertBox(
    "The connection was lost and the answer has not arrived yet.",
    el("button", { type: "button", class: "button button-small", text: "Reload the conversation", onclick: () => turn.sessionId && openSession(turn.sessionId) }),
  );
}

// --- files ------------------------------------------------------------------------------------

function renderAttachments() {
  els.attachments.replaceChildren(
    ...state.attachments.map((item) =>
      el(
        "li",
        { class: "attachment", "data-state": item.state },
        el("span", { text: item.state === "uploading" ? `${item.name} (uploading…)` : item.name }),
        el("button", {
          type: "button",
          class: "button button-small button-link",
          "aria-label": `Remove ${item.name}`,
          text: "✕",
          onclick: () => {
            state.attachments = state.attachments.filter((other) => other !== item);
            renderAttachments();
            updateComposer();
            els.prompt.focus();
          },
        }),
      ),
    ),
  );
}

function allowedType(file) {
  const type = (file.type || "").toLowerCase();
  return !type || features.mimeTypesAllowed.some((pattern) => pattern === type || (pattern.endsWith("/*") && type.startsWith(pattern.slice(0, -1))));
}

async function upload(file) {
  clearAlert();
  if (!allowedType(file)) {
    alertBox(`“${file.name}” cannot be attached: ${file.type} files are not accepted here (accepted: ${features.mimeTypesAllowed.join(", ")}).`);
    return;
  }
  if (file.size > config.uploadMaxBytes) {
    alertBox(`“${file.name}” is too large: files may be at most ${Math.round(config.uploadMaxBytes / 1048576)} MB.`);
    return;
  }
  const item = { name: file.name, state: "uploading", file: null };
  state.attachments.push(item);
  renderAttachments();
  updateComposer();
  try {
    const answer = await api.upload(config.chatAppId, file);
    item.file = answer.file;
    item.state = "ready";
    say(`${file.name} is attached.`);
  } catch (error) {
    state.attachments = state.attachments.filter((other) => other !== item);
    alertBox(`“${file.name}” was not attached: ${error.message}`);
  }
  renderAttachments();
  updateComposer();
}

// --- the composer and the page ----------------------------------------------------------------

function resizePrompt() {
  els.prompt.style.height = "auto";
  els.prompt.style.height = `${Math.min(els.prompt.scrollHeight + 2, window.innerHeight * 0.4)}px`;
}

function openSidebar(open) {
  els.sidebar.dataset.open = open ? "true" : "false";
  els.sidebarToggle.setAttribute("aria-expanded", open ? "true" : "false");
}

function closeSidebar() {
  if (els.sidebar.dataset.open === "true") openSidebar(false);
}

const transport = new Transport({
  csrfToken: config.csrfToken,
  onTitle: ({ sessionId, title }) => setTitle(sessionId, title),
});

// --- widgets (issue 22): tags in answers become widgets; window.chatRuntime is their API -------

function suggest(text, { focus, highlight }) {
  els.prompt.value = text;
  resizePrompt();
  if (focus) els.prompt.focus();
  if (highlight) {
    els.prompt.classList.remove("prompt-highlight");
    void els.prompt.offsetWidth; // restart the animation when suggested twice in a row
    els.prompt.classList.add("prompt-highlight");
  }
}

function startWidgets() {
  try {
    const created = createRuntime({
      config,
      host: {
        sendMessage: (text) => send(text),
        suggest,
        appState: () => ({ chatAppId: config.chatAppId, agentId: config.agentId, userId: config.user?.userId, sessionId: state.sessionId }),
        inlineHost: () => {
          const box = el("div", { class: "widget-inline-host" });
          addMessages(box);
          return box;
        },
      },
    });
    setTagRenderer(created.renderTextTag, created.acceptsTag);
    return created;
  } catch (error) {
    // The conversation works without widgets: tags then show as text.
    console.error("the widget runtime did not start", error);
    return null;
  }
}

let runtime = null;

function start() {
  runtime = startWidgets();
  if (features.accentColor) document.documentElement.style.setProperty("--accent", features.accentColor);
  transport.warm();

  els.composer.addEventListener("submit", (event) => {
    event.preventDefault();
    send(els.prompt.value);
  });
  updateComposer(); // Send is disabled in the page until this handler is in: a click before would post the form itself
  els.prompt.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send(els.prompt.value);
    }
  });
  els.prompt.addEventListener("input", resizePrompt);
  els.suggestions?.addEventListener("click", (event) => {
    const button = event.target.closest(".suggestion");
    if (button) send(button.textContent);
  });
  els.attach?.addEventListener("change", async () => {
    const files = [...els.attach.files];
    els.attach.value = "";
    for (const file of files) await upload(file);
  });
  els.newChat.addEventListener("click", () => {
    closeSidebar();
    newChat(true);
    els.prompt.focus();
  });
  els.sidebarToggle.addEventListener("click", () => {
    const open = els.sidebar.dataset.open !== "true";
    openSidebar(open);
    if (open) els.newChat.focus();
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && els.sidebar.dataset.open === "true") {
      openSidebar(false);
      els.sidebarToggle.focus();
    }
  });
  window.addEventListener("popstate", () => {
    const sessionId = sessionIdFromPath();
    if (sessionId) openSession(sessionId);
    else newChat(false);
  });

  history.replaceState({ sessionId: state.sessionId }, "", location.href);
  els.messages.addEventListener("scroll", () => {
    stuckToEnd = els.messages.scrollHeight - els.messages.scrollTop - els.messages.clientHeight < 48;
  });
  loadSessions();
  if (state.sessionId) openSession(state.sessionId);
  else updateSuggestions();
  document.body.dataset.ready = "true";
}

start();
