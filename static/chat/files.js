// Files attached to a message (docs/api.md, "Files attached to messages"): uploaded as soon as they
// are picked, within the chat app's allowed types and the size limit, listed above the message box
// until the message is sent, then shown on the message.

import { el } from "chat/dom";

const IMAGE = /^image\/(png|jpeg|gif|webp)$/;

export class Attachments {
  // `list`: where the attached files are listed; `input`: the file picker (absent when the chat
  // app takes no files); `onChange(removed)`: the composer, told when an upload starts or ends,
  // or the person removed a file.
  constructor({ list, input, api, notices, chatAppId, mimeTypesAllowed, maxBytes, onChange }) {
    this.list = list;
    this.api = api;
    this.notices = notices;
    this.chatAppId = chatAppId;
    this.mimeTypesAllowed = mimeTypesAllowed;
    this.maxBytes = maxBytes;
    this.onChange = onChange;
    this.items = []; // {name, state: "uploading" | "ready", file: the upload's answer}
    input?.addEventListener("change", async () => {
      const files = [...input.files];
      input.value = "";
      for (const file of files) await this.upload(file);
    });
  }

  get uploading() {
    return this.items.some((item) => item.state === "uploading");
  }

  // The files of the message being written, taken off the list to go with it.
  take() {
    const files = this.items.filter((item) => item.state === "ready").map((item) => item.file);
    this.items = [];
    this.render();
    return files;
  }

  // The files of a message that was refused before its turn started, back on the list.
  restore(files) {
    this.items = files.map((file) => ({ name: file.fileName, state: "ready", file }));
    this.render();
  }

  allowed(file) {
    const type = (file.type || "").toLowerCase();
    return (
      !type ||
      this.mimeTypesAllowed.some((pattern) => pattern === type || (pattern.endsWith("/*") && type.startsWith(pattern.slice(0, -1))))
    );
  }

  async upload(file) {
    this.notices.clear();
    if (!this.allowed(file)) {
      const accepted = this.mimeTypesAllowed.join(", ");
      this.notices.alert(`“${file.name}” cannot be attached: ${file.type} files are not accepted here (accepted: ${accepted}).`);
      return;
    }
    if (file.size > this.maxBytes) {
      this.notices.alert(`“${file.name}” is too large: files may be at most ${Math.round(this.maxBytes / 1048576)} MB.`);
      return;
    }
    const item = { name: file.name, state: "uploading", file: null };
    this.items.push(item);
    this.changed();
    try {
      item.file = (await this.api.upload(this.chatAppId, file)).file;
      item.state = "ready";
      this.notices.say(`${file.name} is attached.`);
    } catch (error) {
      this.items = this.items.filter((other) => other !== item);
      this.notices.alert(`“${file.name}” was not attached: ${error.message}`);
    }
    this.changed();
  }

  remove(item) {
    this.items = this.items.filter((other) => other !== item);
    this.changed(true);
  }

  changed(removed = false) {
    this.render();
    this.onChange(removed);
  }

  render() {
    this.list.replaceChildren(
      ...this.items.map((item) =>
        el(
          "li",
          { class: "attachment", "data-state": item.state },
          el("span", { text: item.state === "uploading" ? `${item.name} (uploading…)` : item.name }),
          el("button", {
            type: "button",
            class: "button button-small button-link",
            "aria-label": `Remove ${item.name}`,
            text: "✕",
            onclick: () => this.remove(item),
          }),
        ),
      ),
    );
  }
}

// The files of a sent message: links, and images shown small.
export function fileList(files) {
  if (!files?.length) return null;
  return el(
    "ul",
    { class: "message-files", "aria-label": "Attached files" },
    ...files.map((file) => {
      const url = file.url || `/api/chat/files/${encodeURIComponent(file.fileId)}/content`;
      const isImage = IMAGE.test(file.mimeType || "");
      const content = isImage
        ? el("img", { src: url, alt: file.fileName || "image", loading: "lazy" })
        : el("span", { text: file.fileName || "file" });
      return el(
        "li",
        {},
        el("a", { href: url, class: isImage ? "file-image" : null, target: "_blank", rel: "noopener", title: file.fileName }, content),
      );
    }),
  );
}
