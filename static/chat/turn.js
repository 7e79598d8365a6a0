// Sending a message: one turn, from the message leaving to its answer stored. The answer streams
// in as the events of the turn arrive (docs/decisions.md, "Converse": session, delta, trace,
// done, error); a refused turn gives the message back; a lost connection is handed to
// chat/recovery, since the service still stores the answer.

import { errorFromEnvelope } from "chat/api";
import { gradeOf } from "chat/messages";
import { MessageRenderer } from "chat/render";

export class Turns {
  // `parts`: the page's parts a turn works with: {api, transport, recovery, conversation,
  // sessions, composer, attachments, notices, messages, feedback, features}; `target`: the
  // chat app and agent every turn goes to, {chatAppId, agentId}.
  constructor({ parts, target }) {
    this.parts = parts;
    this.target = target;
    this.last = null; // {text, files} of the last message sent: what "Try again" sends
  }

  async send(text, files = null) {
    const { composer, attachments, notices } = this.parts;
    text = text.trim();
    if (!text || !composer.ready) return;
    if (attachments.uploading) {
      notices.say("Wait until the file has uploaded.");
      return;
    }
    const taken = attachments.take();
    this.last = { text, files: files || taken };
    notices.clear();
    notices.say("");
    notices.retry = () => this.retry();
    composer.busy = true;
    composer.clear();
    try {
      await new Turn(this.parts, this.last, this.body(this.last)).run();
    } finally {
      composer.busy = false;
    }
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
    try {
      body.timezone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    } catch {
      // no timezone: the agent's tools take the server's
    }
    return body;
  }
}

// One turn: its message and answer on the page, and what its events say.
class Turn {
  constructor(parts, { text, files }, body) {
    this.parts = parts;
    this.text = text;
    this.files = files;
    this.body = body;
    this.sessionId = body.sessionId || null; // known at the `session` event for a new chat
    this.userMessageId = null;
    this.sentAt = Date.now();
    this.traces = [];
    this.grade = null;
    this.failure = null;
    this.question = parts.messages.user(text, files);
    this.answer = parts.messages.answer();
    this.renderer = new MessageRenderer(this.answer.body, { tags: parts.messages.tags });
  }

  async run() {
    const { conversation, transport, recovery } = this.parts;
    this.answer.streaming();
    conversation.add(this.question, this.answer.article);
    conversation.scrollToEnd();
    conversation.follow(this.answer.article);
    const how = await transport.turn(this.body, (type, data) => this.on(type, data));
    if (how === "lost") await recovery.wait(this);
    else if (how === "error") this.failed();
    conversation.unfollow(this.answer.article);
  }

  on(type, data) {
    if (type === "session") this.started(data);
    else if (type === "delta") this.renderer.append(data.text);
    else if (type === "trace") this.traced(data);
    else if (type === "done") this.done(data);
    else if (type === "error") this.failure = data;
  }

  started({ sessionId, userMessageId }) {
    this.userMessageId = userMessageId;
    this.question.dataset.messageId = userMessageId;
    if (this.sessionId) return;
    this.adopt(sessionId);
  }

  // This turn started a session: the conversation shows it (if still on the new chat), and the
  // sidebar lists it.
  adopt(sessionId) {
    this.sessionId = sessionId;
    this.parts.conversation.adopt(sessionId);
    this.parts.sessions.remember(sessionId);
  }

  traced(trace) {
    this.traces.push(trace);
    if (trace.stage === "verification" && trace.grade) this.grade = trace.grade;
    this.answer.showTraces(this.traces);
    this.answer.showGrade(this.grade);
  }

  done(data) {
    const { feedback, features } = this.parts;
    this.renderer.finish();
    this.answer.stored(data.messageId);
    feedback.attach(this.answer.footer, { sessionId: this.sessionId, messageId: data.messageId });
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

  // The stored answer found after a lost connection, in place of what had streamed.
  recovered(stored) {
    const { messages, notices, transport, sessions } = this.parts;
    this.renderer.replace(stored.message);
    messages.complete(this.answer, stored, this.sessionId);
    notices.say("Reconnected. The answer was restored from the conversation.");
    transport.warm();
    sessions.load(); // its title, sent while the connection was down
  }

  failed() {
    const { attachments, composer, notices } = this.parts;
    if (this.userMessageId) {
      // A turn that started is stored with its failure (and what had streamed): shown as such, as
      // a reload shows it, so that "Try again" reads as a second attempt, not a duplicate.
      this.answer.failed(this.failure?.error || "the turn failed");
    } else {
      // Refused before the turn started (a rate limit, a check): nothing was stored, so the
      // message goes back into the box, its files with it, to be sent again.
      this.parts.conversation.remove(this.answer.article, this.question);
      composer.restore(this.text);
      attachments.restore(this.files);
    }
    notices.showError(errorFromEnvelope(this.failure, { fallback: "the turn failed" }));
  }
}
