"""From an uploaded file to chunks (docs/api.md, "Knowledge bases"): text extraction per type, then chunking.

Extraction gives the document's text and its blocks (headings and paragraphs, as spans of that
text); chunking groups blocks into spans of about `TARGET_CHARS`, starting a new chunk at every
heading and overlapping the previous chunk by up to `OVERLAP_CHARS` within a section. A chunk is
always an exact span of the text, so its position (offsets, page, heading path) can be cited.

Everything here is pure: no database, no network. A file that cannot be read, or that goes past
one of its `Limits`, raises `ExtractionError` with a reason a person can act on. The platform runs
it in a child process with a memory and time limit (knowledge.parse, chatplatform.children).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

ACCEPTED_TYPES = ("text/plain", "text/markdown", "text/html", "application/pdf")
_ALIASES = {"text/x-markdown": "text/markdown", "application/xhtml+xml": "text/html"}
_EXTENSIONS = {
    ".txt": "text/plain",
    ".text": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".html": "text/html",
    ".htm": "text/html",
    ".pdf": "application/pdf",
}
TARGET_CHARS = 1000  # about 250 tokens: enough context per result, five results fit any model
OVERLAP_CHARS = 200


class ExtractionError(ValueError):
    """The file cannot be turned into text; the message says why."""


@dataclass(frozen=True, slots=True)
class Limits:
    """How much a document may expand to (the settings of the same names, docs/deploy.md): its
    text in characters, its pages (PDF) and the decompressed bytes of any one stream (PDF)."""

    text_chars: int = 10_000_000
    pages: int = 2000
    decompressed_bytes: int = 50 * 1024 * 1024


def _check_text(length: int, limits: Limits) -> None:
    if length > limits.text_chars:
        raise ExtractionError(f"the document's text is more than {limits.text_chars} characters (CHAT_KB_MAX_TEXT_CHARS)")


@dataclass(frozen=True, slots=True)
class Block:
    """A heading (level 1-6) or a paragraph (level 0): the span [start, end) of the text."""

    start: int
    end: int
    level: int = 0
    page: int | None = None


@dataclass(frozen=True, slots=True)
class Extracted:
    text: str
    blocks: list[Block]


@dataclass(frozen=True, slots=True)
class Span:
    """A chunk: text[start:end], under `heading` ("Install > Linux"), starting on `page`."""

    start: int
    end: int
    heading: str
    page: int | None
    text: str


def mime_type_of(content_type: str | None, filename: str | None) -> str | None:
    """The accepted type of an upload from its declared type, else its file name; when neither
    is accepted, the declared type (for the refusal to name), or None."""
    declared = (content_type or "").split(";")[0].strip().lower()
    declared = _ALIASES.get(declared, declared)
    if declared in ACCEPTED_TYPES:
        return declared
    name = (filename or "").lower()
    for extension, mime_type in _EXTENSIONS.items():
        if name.endswith(extension):
            return mime_type
    return declared or None


# --- extraction --------------------------------------------------------------------------------


def _decode(data: bytes) -> str:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ExtractionError(f"the text is not UTF-8 (invalid byte at position {exc.start})") from None
    if "\x00" in text:
        raise ExtractionError("the file holds NUL bytes: it is not a text file")
    return text


def _paragraphs(text: str, start: int, end: int, page: int | None = None) -> list[Block]:
    """Runs of non-blank lines within [start, end)."""
    blocks = []
    for match in re.finditer(r"\S(?:.*\S)?(?:\n[ \t]*\S.*)*", text[start:end]):
        stripped = match.group(0).rstrip()
        blocks.append(Block(start + match.start(), start + match.start() + len(stripped), 0, page))
    return blocks


_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+\S")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def extract_markdown(text: str) -> Extracted:
    """ATX headings (`#` to `######`) outside code fences; paragraphs between blank lines; a
    fenced code block is one paragraph, blank lines included."""
    blocks: list[Block] = []
    paragraph_start: int | None = None
    fence: str | None = None
    offset = 0
    for line in text.splitlines(keepends=True):
        line_end = offset + len(line.rstrip("\r\n"))
        fence_match = _FENCE.match(line)
        if fence is not None:
            if fence_match and fence_match.group(1) == fence:
                fence = None
                blocks.append(Block(paragraph_start, line_end))  # type: ignore[arg-type]
                paragraph_start = None
        elif fence_match:
            if paragraph_start is not None:
                blocks.extend(_paragraphs(text, paragraph_start, offset))
            fence, paragraph_start = fence_match.group(1), offset
        elif (heading := _HEADING.match(line)) is not None:
            if paragraph_start is not None:
                blocks.extend(_paragraphs(text, paragraph_start, offset))
                paragraph_start = None
            blocks.append(Block(offset + line.index("#"), line_end, len(heading.group(1))))
        elif not line.strip():
            if paragraph_start is not None:
                blocks.extend(_paragraphs(text, paragraph_start, offset))
                paragraph_start = None
        elif paragraph_start is None:
            paragraph_start = offset
        offset += len(line)
    if paragraph_start is not None:
        blocks.extend(_paragraphs(text, paragraph_start, len(text)))
    return Extracted(text, blocks)


def extract_plain(text: str) -> Extracted:
    return Extracted(text, _paragraphs(text, 0, len(text)))


_SKIPPED_TAGS = frozenset({"script", "style", "noscript", "template", "head", "svg", "iframe", "object"})
_BLOCK_TAGS = frozenset(
    {
        "address", "article", "aside", "blockquote", "br", "dd", "details", "div", "dl", "dt", "figcaption", "figure",
        "footer", "form", "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section", "summary", "table", "td",
        "th", "tr", "ul", "caption",
    }
)  # fmt: skip
_HEADING_TAGS = {f"h{level}": level for level in range(1, 7)}


class _HtmlText(HTMLParser):
    """Collects the visible text as (level, text) pieces: markup, scripts and styles are dropped."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.pieces: list[tuple[int, str]] = []
        self._current: list[str] = []
        self._level = 0
        self._skipping = 0
        self._pre = 0

    def _flush(self) -> None:
        raw = "".join(self._current)
        text = raw.strip("\n") if self._pre else " ".join(raw.split())
        if text.strip():
            self.pieces.append((self._level, text))
        self._current = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED_TAGS:
            self._skipping += 1
        elif tag in _HEADING_TAGS:
            self._flush()
            self._level = _HEADING_TAGS[tag]
        elif tag in _BLOCK_TAGS:
            self._flush()
            if tag == "pre":
                self._pre += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCK_TAGS:
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED_TAGS:
            self._skipping = max(0, self._skipping - 1)
        elif tag in _HEADING_TAGS:
            self._flush()
            self._level = 0
        elif tag in _BLOCK_TAGS:
            self._flush()
            if tag == "pre":
                self._pre = max(0, self._pre - 1)

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self._current.append(data)

    def close(self) -> None:
        super().close()
        self._flush()


def _joined(pieces: list[tuple[int, str, int | None]]) -> Extracted:
    """Pieces (level, text, page) laid out one after another, separated by blank lines."""
    parts: list[str] = []
    blocks: list[Block] = []
    offset = 0
    for level, text, page in pieces:
        if parts:
            parts.append("\n\n")
            offset += 2
        if level:
            blocks.append(Block(offset, offset + len(text), level, page))
        else:
            blocks.extend(Block(b.start + offset, b.end + offset, 0, page) for b in _paragraphs(text, 0, len(text)))
        parts.append(text)
        offset += len(text)
    return Extracted("".join(parts), blocks)


def extract_html(text: str) -> Extracted:
    """The visible text; h1-h6 become headings, block elements paragraph breaks."""
    parser = _HtmlText()
    parser.feed(text)
    parser.close()
    return _joined([(level, piece, None) for level, piece in parser.pieces])


def extract_pdf(data: bytes, limits: Limits = Limits()) -> Extracted:
    """The text layer of each page (pypdf); no OCR, so a scanned PDF has no text and fails.
    A stream that decompresses past `limits.decompressed_bytes`, more pages than `limits.pages`
    or more text than `limits.text_chars` stops the extraction there."""
    from pypdf import PdfReader, apply_configuration
    from pypdf.errors import LimitReachedError, PyPdfError

    ceiling = limits.decompressed_bytes
    decoding: dict[str, Any] = {
        "maximum_declared_stream_length": ceiling,
        "array_based_stream_maximum_output_length": ceiling,
        "zlib_maximum_output_length": ceiling,
        "lzw_maximum_output_length": ceiling,
        "run_length_maximum_output_length": ceiling,
        "brotli_maximum_output_length": ceiling,
        "jbig2_maximum_output_length": ceiling,
    }
    pages: list[str] = []
    try:
        with apply_configuration(**decoding):
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted and not reader.decrypt(""):
                raise ExtractionError("the PDF is encrypted with a password")
            if len(reader.pages) > limits.pages:
                raise ExtractionError(f"the PDF has {len(reader.pages)} pages, more than {limits.pages} (CHAT_KB_MAX_PAGES)")
            length = 0
            for page in reader.pages:
                pages.append((page.extract_text() or "").replace("\x00", ""))
                length += len(pages[-1])
                _check_text(length, limits)
    except ExtractionError:
        raise
    except LimitReachedError as exc:
        raise ExtractionError(
            f"the PDF goes past a limit of its parser ({str(exc)[:200]}); a stream may decompress to at most "
            f"{ceiling} bytes (CHAT_KB_MAX_DECOMPRESSED_BYTES)"
        ) from None
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise ExtractionError(f"not a readable PDF ({exc.__class__.__name__}: {str(exc)[:200]})") from None
    extracted = _joined([(0, text.strip(), number) for number, text in enumerate(pages, start=1) if text.strip()])
    if not extracted.blocks:
        raise ExtractionError("the PDF has no text layer (a scanned PDF needs OCR, which is not supported)")
    return extracted


def extract(data: bytes, mime_type: str, limits: Limits = Limits()) -> Extracted:
    """The text and blocks of a file of an accepted type; ExtractionError when it cannot be read."""
    if mime_type == "application/pdf":
        extracted = extract_pdf(data, limits)
    elif mime_type in ("text/html", "text/markdown", "text/plain"):
        text = _decode(data)
        _check_text(len(text), limits)
        extractor = {"text/html": extract_html, "text/markdown": extract_markdown, "text/plain": extract_plain}[mime_type]
        extracted = extractor(text)
    else:
        raise ExtractionError(f"{mime_type} is not accepted; use one of {', '.join(ACCEPTED_TYPES)}")
    if not extracted.blocks:
        raise ExtractionError("the document holds no text")
    return extracted


# --- chunking ----------------------------------------------------------------------------------

# A sentence's end, or a paragraph break (a single newline is only a wrapped line in Markdown).
_SENTENCE_END = re.compile(r"[.!?;:][\"')\]]*\s+|\n[ \t]*\n")


def _cut(text: str, start: int, limit: int) -> int:
    """Where a piece of [start, limit) should end: after the last sentence end in its second
    half, else at its last whitespace, else at `limit`."""
    window = text[start:limit]
    half = len(window) // 2
    ends = [m.end() for m in _SENTENCE_END.finditer(window) if m.end() > half]
    if ends:
        return start + ends[-1]
    space = window.rfind(" ", half)
    return start + space + 1 if space > 0 else limit


def _pieces(text: str, block: Block, size: int) -> list[Block]:
    """The block itself, or consecutive pieces of at most `size` characters when it is longer."""
    pieces = []
    start = block.start
    while block.end - start > size:
        end = _cut(text, start, start + size)
        pieces.append(Block(start, end, block.level, block.page))
        start = end
        while start < block.end and text[start].isspace():
            start += 1
    if start < block.end:
        pieces.append(Block(start, block.end, block.level, block.page))
    return pieces


def _overlap_start(text: str, start: int, end: int, overlap: int) -> int:
    """Where the next chunk starts so that it repeats the last sentence(s) of [start, end) that fit in `overlap`."""
    earliest = max(start, end - overlap)
    match = _SENTENCE_END.search(text, earliest, end)
    if match is not None and match.end() < end:
        return match.end()
    space = text.find(" ", earliest, end)
    return space + 1 if 0 <= space < end - 1 else end


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def chunk(extracted: Extracted, *, target: int = TARGET_CHARS, overlap: int = OVERLAP_CHARS) -> list[Span]:
    """Group the blocks into chunks of about `target` characters: a heading or a new page always
    starts a new chunk (without overlap); a chunk that is full starts the next with up to `overlap`
    characters of its end, cut at a sentence or word boundary."""
    text = extracted.text
    spans: list[Span] = []
    path: list[tuple[int, str]] = []
    members: list[Block] = []  # the blocks of the chunk being built
    chunk_start: int | None = None  # set ahead of its blocks when the chunk opens with an overlap
    start_page: int | None = None
    heading = ""

    def flush() -> None:
        nonlocal members, chunk_start
        if members:
            start, end = _trimmed(text, chunk_start, members[-1].end)  # type: ignore[arg-type]
            if end > start:
                spans.append(Span(start, end, heading, start_page, text[start:end]))
        members, chunk_start = [], None

    def add(block: Block) -> None:
        nonlocal chunk_start, start_page, heading
        if not members:
            if chunk_start is None:
                chunk_start, start_page = block.start, block.page
            heading = " > ".join(title for _, title in path)
        members.append(block)

    for block in extracted.blocks:
        if block.level:
            if any(not member.level for member in members):
                flush()
            while path and path[-1][0] >= block.level:
                path.pop()
            path.append((block.level, " ".join(text[block.start : block.end].strip().strip("#").split())))
            add(block)
            continue
        if members and block.page != start_page and any(not member.level for member in members):
            flush()  # a chunk stays on one page, so that its citation names the right one
        for piece in _pieces(text, block, target):
            if chunk_start is not None and any(not m.level for m in members) and piece.end - chunk_start > target:
                full = members
                flush()
                carried = _overlap_start(text, full[0].start, full[-1].end, overlap)
                if carried < full[-1].end:
                    chunk_start = carried
                    start_page = next(m.page for m in reversed(full) if m.start <= carried)
            add(piece)
    flush()
    return spans
