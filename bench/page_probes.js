// The chat page's timing, measured from outside the page: bench/page.py and bench/widgets.py inject
// this before the page's own scripts (Playwright's add_init_script). It listens to the turn's
// WebSocket before the page does, and watches the DOM; the page itself carries no probe.
//
//   chat:send         mark: the message leaves on the socket (other marks are cleared then)
//   chat:first-token  mark: the task after the frame that painted the turn's first delta
//   chat:done         mark: the `done` event arrives
//   chat:final-paint  mark: the task after the frame that painted the complete answer
//   widget:paint      measure, per inline widget of an answer: from the delta that completed its
//                     tag to the task after the frame that painted the widget's content
//
// Turns go over the socket here (the page falls back to SSE only when the socket cannot open),
// and every tag the bench's model writes is an inline widget, in the order of the frames.
(() => {
  const afterPaint = (fn) => requestAnimationFrame(() => setTimeout(fn, 0));
  // A closing tag, or a self-closing one (quoted attribute values may hold ">" and "/").
  const CLOSES = /<\/[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+>|<[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+(?:\s+(?:[^<>"'/]|\/(?!>)|"[^"]*"|'[^']*')*)?\s*\/>/g;
  let turn = null; // {text, scanned, closedAt: [arrival time of each completed tag], painted}

  // True from the start of a frame's animation callbacks (where the page renders) until the first
  // task after its paint: content added meanwhile is painted by that frame.
  let inFrame = false;
  const nativeFrame = window.requestAnimationFrame.bind(window);
  window.requestAnimationFrame = (callback) =>
    nativeFrame((time) => {
      if (!inFrame) {
        inFrame = true;
        setTimeout(() => {
          inFrame = false;
        }, 0);
      }
      callback(time);
    });

  function received(data) {
    let event;
    try {
      event = JSON.parse(data);
    } catch {
      return;
    }
    if (!turn) return;
    if (event.type === "delta") {
      if (!turn.painted) {
        turn.painted = true;
        afterPaint(() => performance.mark("chat:first-token"));
      }
      turn.text += event.text;
      CLOSES.lastIndex = turn.scanned;
      for (let match = CLOSES.exec(turn.text); match; match = CLOSES.exec(turn.text)) {
        turn.closedAt.push(performance.now());
        turn.scanned = CLOSES.lastIndex;
      }
    } else if (event.type === "done") {
      performance.mark("chat:done");
      afterPaint(() => performance.mark("chat:final-paint"));
    }
  }

  const NativeSocket = window.WebSocket;
  window.WebSocket = class extends NativeSocket {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (message) => received(message.data)); // before the page's own listener
    }

    send(data) {
      performance.clearMarks();
      performance.mark("chat:send");
      turn = { text: "", scanned: 0, closedAt: [], painted: false, measured: new Set() };
      super.send(data);
    }
  };

  // A widget is painted once its body has content (or its frame says it failed).
  function widgetsShown() {
    const answer = [...document.querySelectorAll('[data-message-role="assistant"]')].pop();
    if (!turn || !answer) return;
    const frames = [...answer.querySelectorAll('.widget-frame[data-rendering-context="inline"]')];
    frames.forEach((frame, index) => {
      const id = frame.dataset.instanceId;
      const shown = frame.querySelector(".widget-body > *") || frame.classList.contains("widget-failed") || frame.hidden;
      if (turn.measured.has(id) || !shown || turn.closedAt[index] === undefined) return;
      turn.measured.add(id);
      const start = turn.closedAt[index];
      const measure = () => performance.measure("widget:paint", { start, end: performance.now(), detail: { instanceId: id } });
      if (inFrame) setTimeout(measure, 0);
      else afterPaint(measure);
    });
  }

  new MutationObserver(widgetsShown).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["hidden", "class"] });
})();
