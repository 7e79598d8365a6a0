"""Comments, docstrings and docs cite the project's own docs: every citation of a section of
docs/<name>.md or README.md names a file and a heading that exist, and nothing cites a document the
repository does not hold or an issue number."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIPPED_DIRS = {".git", ".venv", "node_modules", "vendor", "staticfiles", "__pycache__", ".ruff_cache", ".pytest_cache"}
SUFFIXES = {".py", ".js", ".html", ".md", ".css", ".toml", ".yaml", ".yml"}
NAMES = {"Makefile", "Dockerfile"}

# `docs/api.md, "Converse"`, `docs/api.md "Converse"`, `README.md, "Configuration"`, and further
# sections after it (`, "Sessions"`, ` and "Files"`). A path inside quotes is a string, not a citation.
CITATION = re.compile(
    r"""(?<![\w/"'.-])(?P<file>docs/[\w-]+\.md|README\.md)(?!["'\w])(?:,|'s)?[ \t]*\n?[ \t#/]*"(?P<first>[^"\n]+)\""""
    r"""(?P<more>(?:[ \t]*(?:,|;|and)[ \t]*\n?[ \t#/]*"[^"\n]+")*)"""
)
QUOTED = re.compile(r'"([^"\n]+)"')
# Documents outside the repository and issue numbers; spelt so that this file does not match itself.
FOREIGN = re.compile("CONTRAC[T]|SPE[C]\\.md|SPE[C] \u00a7|[Ii]ssu[e] [0-9]+|\u00a7 ?[0-9]+")


def _files() -> list[Path]:
    found = []
    for path in ROOT.rglob("*"):
        if any(part in SKIPPED_DIRS for part in path.relative_to(ROOT).parts):
            continue
        if path.is_file() and (path.suffix in SUFFIXES or path.name in NAMES):
            found.append(path)
    return found


@cache
def _headings(document: str) -> frozenset[str]:
    """The headings of a Markdown file, backticks dropped, leaving out fenced code blocks."""
    headings, fenced = set(), False
    for line in (ROOT / document).read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := re.match(r"#{1,6} (.+)", line)):
            headings.add(match.group(1).replace("`", "").strip())
    return frozenset(headings)


def _citations(text: str) -> list[tuple[str, str, int]]:
    """(file, section, line) of each citation in `text`."""
    found = []
    for match in CITATION.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        sections = [match.group("first"), *QUOTED.findall(match.group("more"))]
        found += [(match.group("file"), section.replace("`", ""), line) for section in sections]
    return found


def test_citation_pattern_reads_the_forms_the_code_uses():
    text = 'a (docs/api.md, "Converse") b docs/widgets.md "`window.chatRuntime`"\nc (docs/api.md, "Tag definitions",\n"Rate limits").'
    assert _citations(text) == [
        ("docs/api.md", "Converse", 1),
        ("docs/widgets.md", "window.chatRuntime", 1),
        ("docs/api.md", "Tag definitions", 2),
        ("docs/api.md", "Rate limits", 2),
    ]
    assert _citations('{"README.md", "docs/api.md", "docs/decisions.md"}') == []


def test_every_docs_citation_names_an_existing_heading():
    broken = []
    for path in _files():
        for document, section, line in _citations(path.read_text(encoding="utf-8", errors="replace")):
            where = f"{path.relative_to(ROOT)}:{line}"
            if not (ROOT / document).is_file():
                broken.append(f"{where}: {document} does not exist")
            elif section not in _headings(document):
                broken.append(f'{where}: {document} has no heading "{section}"')
    assert not broken, "\n".join(broken)


def test_nothing_cites_documents_outside_the_repository_or_issue_numbers():
    found = []
    for path in _files():
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if FOREIGN.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}")
    assert not found, "cite docs/ or README.md instead:\n" + "\n".join(found)
