"""How the Django admin shows an insight's Markdown."""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def markdown_html() -> Any:
    """The insight reports' renderer, built at the first report shown (not when Django starts).
    Raw HTML in a model's report is escaped, not rendered; an image is shown as a link, never
    loaded (a report's image on another host would tell it who reads the report)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).disable("image")
