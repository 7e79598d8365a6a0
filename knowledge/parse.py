"""The child process that turns an uploaded document into chunks (knowledge.services runs it
through chatplatform.children, with a memory and time limit).

    python -m knowledge.parse MIME_TYPE LIMITS_JSON < document

Writes one JSON object to standard output: `{"spans": [[start, end, heading, page, text], ...]}`,
or `{"error": reason}` when the document cannot be read or goes past a limit. JSON, not pickle:
the parent must not run anything a child that parsed hostile bytes might have been led to write.
Imports nothing of Django: it starts in tens of milliseconds.
"""

from __future__ import annotations

import dataclasses
import json
import sys

from knowledge import ingest


def parse(data: bytes, mime_type: str, limits: ingest.Limits) -> list[ingest.Span]:
    spans = ingest.chunk(ingest.extract(data, mime_type, limits))
    if not spans:
        raise ingest.ExtractionError("the document holds no text")
    return spans


def encode_limits(limits: ingest.Limits) -> str:
    return json.dumps(dataclasses.asdict(limits))


def decode_answer(output: bytes) -> list[ingest.Span]:
    """The spans a child wrote; ExtractionError with its reason when it wrote one."""
    answer = json.loads(output)
    if "error" in answer:
        raise ingest.ExtractionError(answer["error"])
    return [ingest.Span(start, end, heading, page, text) for start, end, heading, page, text in answer["spans"]]


def main() -> None:
    mime_type, limits = sys.argv[1], ingest.Limits(**json.loads(sys.argv[2]))
    data = sys.stdin.buffer.read()
    try:
        answer: dict = {"spans": [[s.start, s.end, s.heading, s.page, s.text] for s in parse(data, mime_type, limits)]}
    except ingest.ExtractionError as exc:
        answer = {"error": str(exc)}
    sys.stdout.buffer.write(json.dumps(answer).encode())  # ASCII: any lone surrogate of a PDF's text survives


if __name__ == "__main__":
    main()
