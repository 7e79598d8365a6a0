// What the page tells a person: the status line (polite, `role=status`) and the alert (`role=alert`)
// with what they can do about it. Every failure of the API or of a turn is shown through here.

import { el } from "chat/dom";

export class Notices {
  // `actions`: what an alert's buttons do: {newChat(), blockUntil(time)} (the composer stops
  // sending until a rate limit's window ends), and `retry`, set by whoever can retry, or null.
  constructor({ status, alert, actions }) {
    this.status = status;
    this.box = alert;
    this.actions = actions;
    this.retry = null;
  }

  say(text) {
    this.status.textContent = text;
  }

  clear() {
    this.box.replaceChildren();
  }

  alert(text, ...actions) {
    this.box.replaceChildren(el("div", { class: "notice notice-error" }, el("span", { text }), ...actions));
  }

  // What a person can do about an error (docs/api.md, "Envelope": its code says which).
  showError(error) {
    const code = error.code;
    if (code === "RATE_LIMIT_EXCEEDED") return this.rateLimited(error.retryAfter ?? 60);
    if (code === "USAGE_LIMIT_EXCEEDED") return this.alert(usageLimitText(error));
    if (code === "AUTHENTICATION_REQUIRED") {
      const next = encodeURIComponent(location.pathname);
      return this.alert("You are signed out.", link(`/accounts/login/?next=${next}`, "Sign in again"));
    }
    if (code === "INSUFFICIENT_PERMISSIONS") {
      return this.alert(`You cannot use this chat app any more (${error.message}).`, link("/", "Your chat apps"));
    }
    if (code === "SESSION_BUSY") {
      return this.alert("This conversation is still answering another message. Send yours once that answer is complete.");
    }
    if (code === "INVALID_SESSION_ID") {
      return this.alert(
        "This conversation no longer exists.",
        button("Start a new chat", () => this.actions.newChat()),
      );
    }
    const retry = this.retry ? button("Try again", this.retry) : null;
    if (error.status === 502 || /model provider failed/.test(error.message)) {
      this.alert("The assistant could not answer: its model failed. Try again in a moment.", retry);
    } else if (code === "INVALID_REQUEST") {
      this.alert(`Not accepted: ${error.message}`);
    } else if (code === "NETWORK") {
      this.alert(error.message, retry);
    } else {
      this.alert(`Something went wrong: ${error.message}`, retry);
    }
  }

  // A countdown to the end of the rate limit's window; sending waits until then.
  rateLimited(seconds) {
    const until = Date.now() + seconds * 1000;
    const line = el("span");
    this.box.replaceChildren(el("div", { class: "notice notice-error" }, line));
    this.actions.blockUntil(until);
    const tick = () => {
      const left = Math.ceil((until - Date.now()) / 1000);
      if (left <= 0) {
        if (line.isConnected) this.clear(); // not an alert shown since
        this.say("You can send messages again.");
        return;
      }
      line.textContent = `You are sending too many requests. You can send again in ${left} second${left === 1 ? "" : "s"}.`;
      setTimeout(tick, 1000);
    };
    tick();
  }
}

// "…the daily limit of 30 tokens in chat app support is reached (30 used); it resets at <UTC time>"
// (docs/api.md, "Usage limits"), said with the reset in the person's own time.
function usageLimitText(error) {
  const match = /the (daily|monthly) limit of (.+?) is reached.*resets at (\S+)/.exec(error.message || "");
  const reset = match ? new Date(match[3]) : new Date(Date.now() + (error.retryAfter ?? 0) * 1000);
  const when = reset.toLocaleString(undefined, { weekday: "short", month: "short", day: "numeric", hour: "numeric", minute: "2-digit" });
  const limit = match ? `your ${match[1]} limit of ${match[2]}` : "your usage limit";
  return `You have reached ${limit}. You can send messages again after ${when}.`;
}

function link(href, text) {
  return el("a", { href, class: "button button-small", text });
}

function button(text, onclick) {
  return el("button", { type: "button", class: "button button-small", text, onclick });
}
