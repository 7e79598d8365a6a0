// The chat page (templates/chat/page.html): builds its parts and wires them together. It talks to
// the platform as any frontend does: the Chat API through chat/api, turns through chat/transport.
//
//   chat/sessions       the sidebar: the conversations, renaming, pinning, sharing, opening one
//   chat/search         the search box over the sidebar and its results
//   chat/conversation   the messages shown, and the address that follows the session
//   chat/messages       a message and an answer as elements (chat/render draws an answer's text)
//   chat/composer       the message box, Send, the suggestions
//   chat/files          files attached to a message
//   chat/turn           sending a message and showing its answer as it streams, stopping it,
//                       and following a running turn again (a reload, a second tab, a drop)
//   chat/approvals      the tool calls an answer waits for, with Approve and Deny
//   chat/feedback       thumbs and comments on an answer
//   chat/theme          light, dark or the system's, kept in the person's prefs
//   chat/notices        the status line and the alert, and what a person can do about an error
//   chat/widgets/…      tags in answers as widgets, and window.chatRuntime (docs/widgets.md)
//
// The parts reach each other through the closures below, which run only once every part is built.

import { Api } from "chat/api";
import { Approvals } from "chat/approvals";
import { Composer } from "chat/composer";
import { Conversation } from "chat/conversation";
import { Feedback } from "chat/feedback";
import { Attachments } from "chat/files";
import { Messages } from "chat/messages";
import { Notices } from "chat/notices";
import { INERT_TAGS } from "chat/render";
import { SessionSearch } from "chat/search";
import { Sessions } from "chat/sessions";
import { ThemeChoice } from "chat/theme";
import { Transport } from "chat/transport";
import { Turns } from "chat/turn";
import { createRuntime } from "chat/widgets/runtime";

const config = JSON.parse(document.getElementById("chat-config").textContent);
const { chatAppId, agentId, features } = config;
const $ = (selector) => document.querySelector(selector);

const api = new Api({ csrfToken: config.csrfToken });
const notices = new Notices({
  status: $(".status"),
  alert: $(".alert"),
  actions: { newChat: () => conversation.newChat({ history: "push" }), blockUntil: (time) => composer.blockUntil(time) },
});
const widgets = startWidgets();
new ThemeChoice({ select: $(".theme-choice"), save: (prefs) => api.savePrefs(config.user?.userId, prefs), notices });
const feedback = new Feedback({ api, notices, types: config.feedbackTypes });
const approvals = new Approvals({
  api,
  notices,
  goOn: (response, answer, sessionId) => turns.goOn(response, answer, sessionId),
  resume: (sessionId) => turns.resume(sessionId),
});
const messages = new Messages({
  features,
  tags: widgets?.tags ?? INERT_TAGS,
  feedback,
  approvals,
  branches: {
    edit: (article, text, parentMessageId, files) => turns.send(text, files, { article, parentMessageId }),
    regenerate: (article) => turns.regenerate(article),
    step: (messageId) => conversation.step(messageId),
  },
});
const sessions = new Sessions({
  sidebar: $("#sidebar"),
  toggle: $(".sidebar-toggle"),
  api,
  notices,
  chatAppId,
  appTitle: features.title,
  current: () => conversation.sessionId,
  href: (sessionId) => conversation.href(sessionId),
  open: (sessionId) => {
    if (sessionId !== conversation.sessionId) conversation.open(sessionId, { push: true });
    composer.focus();
  },
  newChat: () => {
    conversation.newChat({ history: "push" });
    composer.focus();
  },
});
new SessionSearch({
  form: $(".session-search"),
  results: $(".search-results"),
  list: $(".session-list"),
  api,
  notices,
  chatAppId,
  href: (sessionId) => conversation.href(sessionId),
  open: (sessionId) => {
    sessions.closeDrawer();
    if (sessionId !== conversation.sessionId) conversation.open(sessionId, { push: true });
  },
});
const conversation = new Conversation({
  pane: $(".messages"),
  missing: $(".session-missing"),
  suggestions: $(".suggestions"),
  sessionId: config.sessionId,
  chatAppId,
  api,
  notices,
  sessions,
  messages,
  sweep: () => widgets?.sweep(),
  resume: (sessionId) => turns.resume(sessionId),
  leave: () => turns.leave(),
});
const composer = new Composer({
  form: $(".composer"),
  suggestions: $(".suggestions"),
  onSend: (text) => turns.send(text),
  onStop: () => turns.stop(),
  uploading: () => attachments.uploading,
});
const attachments = new Attachments({
  list: $(".attachments"),
  input: $("#attach"),
  api,
  notices,
  chatAppId,
  mimeTypesAllowed: features.mimeTypesAllowed,
  maxBytes: config.uploadMaxBytes,
  onChange: (removed) => {
    composer.update();
    if (removed) composer.focus();
  },
});
// A title replayed by a resume may have been renamed since: the sidebar reads the stored ones.
const transport = new Transport({
  api,
  onTitle: ({ sessionId, title }, replayed) => (replayed ? sessions.load() : sessions.setTitle(sessionId, title)),
});
const turns = new Turns({
  parts: { api, transport, conversation, sessions, composer, attachments, notices, messages, approvals, feedback, features },
  target: { chatAppId, agentId },
});

// Tags in answers become widgets, and window.chatRuntime is their API (docs/widgets.md).
function startWidgets() {
  try {
    return createRuntime({
      config,
      api,
      host: {
        sendMessage: (text) => turns.send(text),
        suggest: (text, options) => composer.suggest(text, options),
        appState: () => ({ chatAppId, agentId, userId: config.user?.userId, sessionId: conversation.sessionId }),
        inlineHost: () => conversation.inlineHost(),
      },
    });
  } catch (error) {
    // The conversation works without widgets: tags then show as text.
    console.error("the widget runtime did not start", error);
    return null;
  }
}

if (features.accentColor) document.documentElement.style.setProperty("--accent", features.accentColor);
transport.warm();
composer.update(); // Send is disabled in the page until its handler is in: a click before would post the form itself
sessions.load();
if (conversation.sessionId) conversation.open(conversation.sessionId);
// A second tab left open catches up with a turn the first one started when it is shown again, as
// a page that was offline does when it is back (docs/api.md, "Resume, stop and approvals").
const catchUp = () => conversation.sessionId && turns.catchUp(conversation.sessionId);
document.addEventListener("visibilitychange", () => document.visibilityState === "visible" && catchUp());
window.addEventListener("online", catchUp);
try {
  widgets?.start();
} catch (error) {
  console.error("the spotlight or the hero did not start", error);
}
// Once a conversation has messages, the spotlight and the hero give the answers the room.
const pane = $(".messages");
const conversing = () => widgets?.conversing(pane.querySelector(".message") !== null);
new MutationObserver(conversing).observe(pane, { childList: true });
conversing();
document.body.dataset.ready = "true";
