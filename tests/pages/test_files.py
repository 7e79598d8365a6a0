"""Files attached to a message: uploaded within the chat app's allowed types, listed on the
message, readable by their owner only (docs/api.md, "Files attached to messages")."""

from __future__ import annotations

import re
import struct
import zlib

from playwright.sync_api import expect

from tests.pages.conftest import Person, Site, shot

FEATURES = {"fileUpload": {"enabled": True, "mimeTypesAllowed": ["text/plain", "image/png"]}}


def png(width: int = 120, height: int = 80) -> bytes:
    """A real PNG: red pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def attach(page, name: str, mime_type: str, content: bytes) -> None:
    page.get_by_label("Attach file").set_input_files(files=[{"name": name, "mimeType": mime_type, "buffer": content}])


def send(page, text: str) -> None:
    page.get_by_role("textbox", name="Ask a question").fill(text)
    page.get_by_role("button", name="Send").click()
    expect(page.locator('[data-message-role="assistant"]').last).to_have_attribute("data-message-id", re.compile(".+"))


def test_a_file_is_uploaded_listed_on_the_message_and_readable_by_its_owner_only(site: Site, person_factory):
    site.chat_app("pages-files", features=FEATURES)
    owner = person_factory()
    page = owner.open("/chat/pages-files/")
    attach(page, "notes.txt", "text/plain", b"The launch code is 0000.\n")
    expect(page.get_by_role("list", name="Attached files").get_by_text("notes.txt")).to_be_visible()
    attach(page, "dot.png", "image/png", png())
    expect(page.locator(".attachment")).to_have_count(2)
    expect(page.locator('.attachment[data-state="uploading"]')).to_have_count(0)
    shot(page, "files-attached")
    send(page, "Read my notes")

    message = page.locator('[data-message-role="user"]')
    expect(message.get_by_role("link", name="notes.txt")).to_be_visible()
    image = message.get_by_role("img", name="dot.png")
    expect(image).to_be_visible()
    assert image.evaluate("img => img.complete && img.naturalWidth") == 120
    shot(page, "files-on-message")

    session_id = page.url.rsplit("/", 1)[1]
    stored = owner.api("GET", f"/api/chat/sessions/{session_id}/messages").json()["messages"][0]
    assert [(f["fileName"], f["mimeType"], f["size"]) for f in stored["files"]] == [
        ("notes.txt", "text/plain", 25),
        ("dot.png", "image/png", len(png())),
    ]
    notes = stored["files"][0]
    assert owner.api("GET", notes["url"]).content == b"The launch code is 0000.\n"

    stranger = person_factory()
    refused = stranger.context.request.get(f"{site.url}{notes['url']}")
    assert refused.status == 404
    assert "0000" not in refused.text()

    page.reload()
    expect(page.locator('[data-message-role="user"]').get_by_role("link", name="notes.txt")).to_be_visible()


def test_the_model_receives_a_text_file_as_text(site: Site, model, person: Person):
    site.chat_app("pages-files-model", features=FEATURES)
    page = person.open("/chat/pages-files-model/")
    attach(page, "notes.txt", "text/plain", b"The launch code is 4242.\n")
    expect(page.locator('.attachment[data-state="ready"]')).to_have_count(1)
    send(page, "What is the launch code?")
    assert "The launch code is 4242." in str(model.requests[-1]["messages"])


def test_an_edited_question_is_asked_again_with_its_files(site: Site, model, person: Person):
    site.chat_app("pages-files-edit", features=FEATURES)
    page = person.open("/chat/pages-files-edit/")
    attach(page, "notes.txt", "text/plain", b"The launch code is 4242.\n")
    expect(page.locator('.attachment[data-state="ready"]')).to_have_count(1)
    send(page, "What is the launch code?")
    session_id = page.url.rsplit("/", 1)[1]

    # Edited at once, and again after a reload (the question then read from the store).
    for wording in ("What is the code, exactly?", "Say the code once more."):
        question = page.locator('[data-message-role="user"]').last
        question.get_by_role("button", name="Edit the question").click()
        expect(question.get_by_role("list", name="Attached files")).to_contain_text("notes.txt")  # what goes with it
        question.get_by_role("textbox", name="Edited question").fill(wording)
        shot(page, "files-edit-form")
        question.get_by_role("button", name="Send").click()
        expect(page.locator('[data-message-role="assistant"]').last).to_have_text(re.compile(f"You said: {wording}"))
        asked = next(body for body in reversed(model.requests) if wording in str(body["messages"]))
        assert "The launch code is 4242." in str(asked["messages"]), "the model got the file with the edited question"
        expect(page.locator('[data-message-role="user"]').last.get_by_role("link", name="notes.txt")).to_be_visible()
        expect(page.get_by_role("button", name="Stop")).to_have_count(0)
        shot(page, "files-edited")
        page.reload()

    stored = person.api("GET", f"/api/chat/sessions/{session_id}/messages").json()["messages"][0]
    assert stored["message"] == "Say the code once more."
    assert [f["fileName"] for f in stored["files"]] == ["notes.txt"]


def test_a_file_the_chat_app_does_not_take_is_refused_with_a_visible_message(site: Site, person: Person):
    site.chat_app("pages-files-refused", features=FEATURES)
    page = person.open("/chat/pages-files-refused/")
    attach(page, "page.html", "text/html", b"<script>alert(1)</script>")
    expect(page.get_by_role("alert")).to_contain_text("text/html files are not accepted here")
    expect(page.locator(".attachment")).to_have_count(0)
    shot(page, "files-refused-type")

    # A type the page lets through, whose bytes the service refuses: its message is shown.
    attach(page, "fake.png", "image/png", b"this is not an image")
    expect(page.get_by_role("alert")).to_contain_text("fake.png” was not attached: file: is not a PNG image")
    expect(page.locator(".attachment")).to_have_count(0)
