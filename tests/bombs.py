"""Hostile objects for tests and bench/bombs.py, built here rather than stored: a gzip bomb, and how
much memory a process holds (the PDF bomb is tests/knowledge/pdf.py's `pdf_bomb`)."""

from __future__ import annotations

import re
import zlib
from pathlib import Path

GIGABYTE = 1 << 30


def gzip_bomb(inflated: int) -> bytes:
    """About 1 KB per MB inflated: one gzip member of 64 MB of zeros, repeated (a valid gzip file)."""
    compressor = zlib.compressobj(9, wbits=16 + zlib.MAX_WBITS)
    member = compressor.compress(bytes(64 << 20)) + compressor.flush()
    return member * (inflated // (64 << 20))


def rss(pid: int, field: str = "VmRSS") -> int:
    """Bytes of the process's resident memory now (VmRSS) or at its peak so far (VmHWM)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(rf"^{field}:\s+(\d+) kB", status, re.MULTILINE).group(1)) * 1024
