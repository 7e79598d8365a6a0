// A turn on the page: a message sent, and its answer as it streams (docs/api.md, "Events":
// session, delta, trace, approval, done, error). A turn outlives its connection (docs/api.md,
// "Resume, stop and approvals"): the transport resumes it after a drop, a conversation opened
// again (a reload, a second tab) follows its running turn from the start, Stop ends it wherever it
// runs, and a turn that waits for approvals goes on in the same answer once they are decided.

import { errorFromEnvelope } from "chat/api";
import { el } from "chat/dom";
import { gradeOf } from "chat/messages";

// The n of an event id `<messageId>:<n>` (docs/api.md, "Events").
const eventNumber = (eventId) => Number((eventId || "").split(":").pop()) || 0;

export class Turns {
  // `parts`: the page's parts a turn works with: {api, transport, conversation, sessions,
  // composer, attachments, notices, messages, approvals, feedback, features}; `target`: the chat
  // app and agent every turn goes to, {chatAppId, agentId}.
  constructor({ parts, target }) {
    this.parts = parts;
    this.target = target;
    this.last = null; // {text, files} of the last message sent: what "Try again" sends
    this.current = null; // the Turn being followed: what Stop stops
    this.following = null; // the promise of its end
  }

  // `edited`: {article, parentMessageId} when the text is a new version of the question `article`
  // (docs/api.md, "Branches"), sent with `files`, the question's own: what followed that question
  // gives way to the new branch.
  async send(text, files = null, edited = null) {
    const { composer, attachments, notices, messages, conversation } = this.parts;
    text = text.trim();
    if (!text || !composer.ready) return;
    if (attachments.uploading) {
      notices.say("Wait until the file has uploaded.");
      return;
    }
    // A resume of the conversation just opened may still be asking whether a turn runs: its answer
    // (most often "none") comes first, on the same socket.
    if (this.following) await this.following;
    if (!composer.ready) return;
    const taken = edited ? [] : attachments.take(); // an edit keeps what the message box holds
    this.last = { text, files: files || taken };
    notices.clear();
    notices.say("");
    notices.retry = () => this.retry();
    if (!edited) composer.clear();
    else conversation.removeFrom(edited.article);
    const superseded = conversation.waitingAnswers();
    const turn = new Turn(this.parts, {
      sessionId: conversation.sessionId,
      question: messages.user({ text, files: this.last.files }),
      answer: messages.answer(),
      sent: this.last,
    });
    const body = this.body(this.last);
    if (edited) body.parentMessageId = edited.parentMessageId; // null: the session starts over
    const how = await this.follow(turn, { body });
    if (superseded.length && turn.sessionId === conversation.sessionId) await this.refresh(superseded, turn.sessionId);
    if (how === "done" && (edited || body.parentMessageId) && turn.sessionId === conversation.sessionId) conversation.open(turn.sessionId);
  }

  // The question of `article` (a stored answer) answered again, as a new version beside it
  // (docs/api.md, "Regenerating an answer"); the branch then shown is the new one.
  async regenerate(article) {
    const { composer, notices, messages, conversation } = this.parts;
    if (!composer.ready) return;
    if (this.following) await this.following;
    const sessionId = conversation.sessionId;
    const messageId = article.dataset.messageId;
    if (!sessionId || !messageId) return;
    notices.clear();
    notices.retry = null;
    conversation.removeFrom(article);
    const turn = new Turn(this.parts, { sessionId, answer: messages.answer() });
    const how = await this.follow(turn, { regenerate: { sessionId, messageId, timezone: timezone() } });
    if (how === "done" && conversation.sessionId === sessionId) conversation.open(sessionId);
  }

  // A new message denies the approvals its session waits for, and their turns go on before it
  // (docs/api.md, "Approvals"): those answers and their cards, as stored now.
  async refresh(answers, sessionId) {
    const { api, approvals, feedback } = this.parts;
    try {
      const { messages } = await api.messages(sessionId, 20);
      for (const answer of answers) {
        const { messageId } = answer.article.dataset;
        const stored = messages.find((message) => message.messageId === messageId);
        if (stored) answer.renderer.replace(stored.message);
        feedback.attach(answer.footer, { sessionId, messageId });
        await approvals.refresh(answer, sessionId);
      }
    } catch {
      // shown as stored on the next load of the conversation
    }
  }

  // The running (or kept) turn of the session just opened, from its start: the answer so far, then live.
  resume(sessionId) {
    return this.follow(new Turn(this.parts, { sessionId }), { sessionId });
  }

  // A tab shown again, or back online, while following nothing: a turn another tab started
  // meanwhile is shown (the conversation read again, with its question) and followed.
  catchUp(sessionId) {
    if (this.current || this.following) return;
    return this.follow(new Turn(this.parts, { sessionId, catchUp: true }), { sessionId });
  }

  // A turn that waited for approvals goes on, streamed in `response`, into the same answer.
  goOn(response, answer, sessionId) {
    return this.follow(new Turn(this.parts, { sessionId, answer, continuing: true }), { response });
  }

  async follow(turn, start) {
    const { composer, transport } = this.parts;
    this.current = turn;
    if (turn.answer) composer.busy = true;
    const events = (type, data, eventId) => turn.on(type, data, eventId);
    this.following = transport.follow(start, events, { onRetry: () => turn.retrying() });
    const how = await this.following;
    if (this.current === turn) {
      this.current = null;
      this.following = null;
      composer.busy = false;
    }
    turn.ended(how);
    return how;
  }

  // Stop: the turn ends wherever it runs, and its `done` says so (chat/transport keeps reading it).
  stop() {
    this.current?.stop();
  }

  // The conversation shown changes: its turn goes on without the page.
  leave() {
    this.parts.transport.leave();
  }

  retry() {
    this.parts.notices.clear();
    if (this.last) this.send(this.last.text, this.last.files);
  }

  body({ text, files }) {
    const { chatAppId, agentId } = this.target;
    const body = { chatAppId, agentId, message: text, features: {}, source: "user" };
    const sessionId = this.parts.conversation.sessionId;
    if (sessionId) body.sessionId = sessionId;

    if (files.length) body.files = files;
    // An older version's branch is shown: the question follows its last answer, not the newest branch.
    const { conversation } = this.parts;
    if (conversation.olderBranch && conversation.lastAnswerId()) body.parentMessageId = conversation.lastAnswerId();
    const zone = timezone();
    if (zone) body.timezone = zone;
    return body;
  }
}

function timezone() {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone;
  } catch {
    return undefined; // no timezone: the agent's tools take the server's
  }
}

// One turn followed: its answer on the page, and what its events say.
class Turn {
  // `question`: the message this page sent (null when the turn is followed after a reload);
  // `answer`: the answer it writes (null until its `session` event says which, for a resume);
  // `continuing`: the answer already holds the text before a pause; `sent`: {text, files};
  // `catchUp`: a turn whose question the page may not show yet.
  constructor(parts, { sessionId = null, question = null, answer = null, continuing = false, sent = null, catchUp = false }) {
    this.parts = parts;
    this.sessionId = sessionId;
    this.question = question;
    this.answer = answer;
    this.continuing = continuing;
    this.sent = sent;
    this.catchUp = catchUp;
    this.ignored = false; // a resumed turn whose stored answer the page already shows
    this.begun = false; // its `session` event came: it can be stopped
    this.userMessageId = null;
    this.lastEventId = null;
    this.stopAsked = false;
    this.lost = false;
    this.traces = [];
    this.grade = null;
    this.failure = null;
    if (answer) this.show();
  }

  show() {
    const { conversation } = this.parts;
    this.answer.streaming();
    if (this.question) conversation.add(this.question);
    if (!this.answer.article.isConnected) conversation.add(this.answer.article);
    if (this.question) conversation.scrollToEnd();
  }

  on(type, data, eventId) {
    if (this.lost) {
      this.lost = false;
      this.parts.notices.say("Reconnected: the answer goes on.");
    }
    if (eventId) this.lastEventId = eventId;
    if (type === "session") this.started(data, eventId);
    if (this.ignored || !this.answer) return;
    if (type === "delta") this.answer.renderer.append(data.text);
    else if (type === "trace") this.traced(data);
    else if (type === "approval") this.parts.approvals.show(this.answer, data, this.sessionId);
    else if (type === "done") this.done(data);
    else if (type === "error") this.failure = data;
  }

  started({ sessionId, userMessageId, messageId }, eventId) {
    const { conversation, messages, composer } = this.parts;
    if (!this.answer) {
      // Followed on opening the conversation. Its answer is stored when the turn ends (or
      // pauses), so a shown answer whose turn replays from its first event is already complete;
      // one replayed from later goes on after its approvals.
      const shown = conversation.answerOf(messageId);
      if (shown && eventNumber(eventId) <= 1) {
        this.ignored = true;
        return;
      }
      if (this.catchUp && !shown && !conversation.shows(userMessageId)) {
        // Asked in another tab: read the conversation again, which follows this turn with its question.
        this.ignored = true;
        setTimeout(() => conversation.open(sessionId));
        return;
      }
      this.answer = shown ?? messages.answer();
      this.continuing = Boolean(shown);
      this.show();
      composer.busy = true;
    }
    this.begun = true;
    if (this.continuing) this.parts.notices.say(""); // no longer waiting for approval
    this.userMessageId = userMessageId;
    if (this.question) {
      this.question.dataset.messageId = userMessageId;
      // Stored: it can be edited now; it follows the answer shown before it (docs/api.md, "Branches").
      const before = [...conversation.pane.querySelectorAll("[data-message-role]")];
      const parent = before.slice(0, before.indexOf(this.question)).at(-1);
      const parentMessageId = parent?.dataset.messageRole === "assistant" ? parent.dataset.messageId || null : null;
      messages.asked(this.question, { text: this.sent.text, files: this.sent.files, messageId: userMessageId, parentMessageId });
    }
    if (!this.sessionId) this.adopt(sessionId);
    if (this.stopAsked) this.stop();
  }

  // This turn started a session: the conversation shows it (if still on the new chat), and the
  // sidebar lists it.
  adopt(sessionId) {
    this.sessionId = sessionId;
    this.parts.conversation.adopt(sessionId);
    this.parts.sessions.remember(sessionId);
  }

  stop() {
    const { api, notices } = this.parts;
    notices.say("Stopping the answer…");
    if (!this.begun) {
      this.stopAsked = true; // sent at the `session` event, when the turn has started
      return;
    }
    this.stopAsked = false;
    api.stop(this.sessionId).catch((error) => notices.showError(error));
  }

  retrying() {
    this.lost = true;
    this.parts.notices.say("The connection was lost. Reconnecting…");
  }

  traced(trace) {
    this.traces.push(trace);
    if (trace.stage === "verification" && trace.grade) this.grade = trace.grade;
    this.answer.showTraces(this.traces);
    this.answer.showGrade(this.grade);
  }

  done(data) {
    const { feedback, features } = this.parts;
    const { renderer } = this.answer;
    renderer.finish();
    // Going on after a pause, the deltas follow the stored text; `response` is the whole answer.
    if (this.continuing && typeof data.response === "string" && data.response !== renderer.text) renderer.replace(data.response);
    this.answer.stored(data.messageId);
    if (data.status === "awaiting_approval") {
      this.parts.notices.say("The assistant waits for your approval to go on.");
      return; // its cards ask; the answer goes on once they are decided
    }
    if (data.stopped) {
      this.answer.stopped();
      this.parts.notices.say("The answer was stopped.");
    }
    feedback.attach(this.answer.footer, { sessionId: this.sessionId, messageId: data.messageId });
    this.parts.messages.regenerable(this.answer, { messageId: data.messageId });
    this.answer.showCitations(data.citations);
    if (features.verifyResponse && !this.grade) this.fetchGrade(data.messageId);
  }

  // The grade arrives after `done` when verification runs once the answer is stored.
  async fetchGrade(messageId) {
    try {
      const { messages } = await this.parts.api.messages(this.sessionId, 4);
      this.answer.showGrade(gradeOf(messages.find((message) => message.messageId === messageId) || {}));
    } catch {
      // the grade shows on the next load of the conversation
    }
  }

  ended(how) {
    const { conversation, notices, transport, sessions } = this.parts;
    if (this.ignored || how === "done") return;
    if (how === "error") {
      this.failed();
      return;
    }
    this.answer?.article.removeAttribute("aria-busy");
    if (how === "left") return;
    transport.warm();
    if (how === "idle") {
      // Resumed after a drop, the turn is no longer kept to replay (its process ended): as stored.
      if (this.lastEventId) conversation.open(this.sessionId);
    } else if (this.lastEventId) {
      const reload = el("button", {
        type: "button",
        class: "button button-small",
        text: "Reload the conversation",
        onclick: () => conversation.open(this.sessionId),
      });
      notices.alert("The connection was lost and the answer could not be followed.", reload);
    } else if (this.sent && this.sessionId) {
      // Lost before the turn said what it is: the conversation as stored, and its turn if one runs.
      conversation.open(this.sessionId);
    } else if (this.sent) {
      sessions.load();
      notices.alert("The connection was lost before the answer started. It appears in your conversations once it is stored.");
    }
    // A resume of the conversation just opened that found no connection: its stored messages show.
  }

  failed() {
    const { attachments, composer, notices, conversation } = this.parts;
    const error = errorFromEnvelope(this.failure, { fallback: "the turn failed" });
    if (this.userMessageId || !this.question) {
      // A turn that started is stored with its failure (and what had streamed): shown as such, as
      // a reload shows it, so that "Try again" reads as a second attempt, not a duplicate.
      this.answer?.failed(this.failure?.error || "the turn failed");
    } else {
      // Refused before the turn started (a rate limit, a check): nothing was stored, so the
      // message goes back into the box, its files with it, to be sent again.
      conversation.remove(this.answer.article, this.question);
      composer.restore(this.sent.text);
      attachments.restore(this.sent.files);
      // Busy with a turn another tab started (concurrentTurns `reject`): that answer, followed live.
      if (error.code === "SESSION_BUSY" && this.sessionId) conversation.open(this.sessionId);
    }
    notices.showError(error);
  }
}
