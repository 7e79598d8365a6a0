"""Where a server's CPU goes while a bench drives it: py-spy sampling the server process (and its
workers) and a breakdown of the samples by the parts of a turn.

    with Profile(server.pid) as profile:
        ...  # the requests to profile
    profile.report()

py-spy (a dev/bench requirement) reads the process from outside without stopping it
(`--nonblocking`), so the server runs as it does unprofiled; idle threads are not sampled, so
the samples are CPU time. Each sample is counted once in `own` (the part of the innermost frame
that belongs to one: a standard-library frame is charged to its caller's part) and once in the
cumulative figure of every part on its stack.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import TracebackType

ROOT = Path(__file__).resolve().parent.parent
FRAME = re.compile(r"^(?P<function>.*) \((?P<file>.*):(?P<line>\d+)\)$")

# (part, path fragments): the first part one of whose fragments is in a frame's file names it.
PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("metrics", ("chatplatform/metrics.py", "prometheus_client/")),
    ("audit", ("chatplatform/audit.py",)),
    ("telemetry", ("chatplatform/telemetry.py", "chatplatform/llm/spans.py", "opentelemetry/")),
    ("logging", ("chatplatform/logs.py", "pythonjsonlogger/", "/logging/")),
    (
        "admission",
        (
            "chat/turn/admission.py",
            "chat/turn/lock.py",
            "chat/turn/branches.py",
            "chat/turn/handover.py",
            "chat/turn/serializers.py",
            "chatplatform/api/",
            "chatplatform/generations.py",
        ),
    ),
    ("prompt", ("chat/turn/prompt.py", "agents/prompts.py", "pybars/", "tags/", "directives/", "agents/access.py", "celpy/")),
    ("model client", ("chatplatform/llm/", "aiohttp/", "yarl/", "multidict/")),
    ("event encoding", ("chat/turn/events.py", "chat/turn/door.py", "chat/doors/", "chat/endpoint.py", "orjson")),
    (
        "database",
        ("chatplatform/db.py", "chat/turn/usage.py", "django/db/", "sqlite3/", "psycopg", "redis/", "chatplatform/redis_cache.py"),
    ),
    ("turn (rest)", ("chat/turn/", "chat/", "agents/", "tools/", "knowledge/", "chatplatform/")),
    ("server", ("uvicorn/", "httptools/", "h11/", "websockets/", "channels/", "daphne/")),
    ("django/asgiref", ("django/", "asgiref/", "rest_framework/")),
    ("event loop", ("asyncio/", "selectors.py", "concurrent/futures/", "threading.py")),
)


def part_of(path: str) -> str | None:
    """The part a frame's file belongs to; None for the standard library and anything unnamed."""
    relative = path.removeprefix(str(ROOT) + "/")
    for part, fragments in PARTS:
        if any(fragment in relative for fragment in fragments):
            # Files of the standard library match only the event loop's and logging's fragments.
            if "/site-packages/" not in path and not path.startswith(str(ROOT)) and part not in ("event loop", "logging"):
                continue
            return part
    return None


def short(path: str) -> str:
    for prefix in (str(ROOT) + "/", "site-packages/"):
        if prefix in path:
            return path.split(prefix, 1)[1]
    return path.rsplit("/lib/", 1)[-1]


class Profile:
    """py-spy recording `pid` (and its children) while the block runs."""

    def __init__(self, pid: int, rate: int = 200) -> None:
        self.pid, self.rate = pid, rate
        self.stacks: Counter[tuple[tuple[str, str], ...]] = Counter()
        self.folder = tempfile.TemporaryDirectory()
        self.process: subprocess.Popen[bytes] | None = None
        self.runs = 0

    def __enter__(self) -> Profile:
        py_spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
        if py_spy is None:
            raise SystemExit("--profile needs py-spy (pip install -r requirements.txt)")
        self.runs += 1
        self.output = output = Path(self.folder.name) / f"{self.runs}.txt"
        self.process = subprocess.Popen(
            [py_spy, "record", "--pid", str(self.pid), "--rate", str(self.rate), "--format", "raw", "--output", str(output),
             "--nonblocking", "--subprocesses", "--full-filenames"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=30)
        if self.output.exists():
            for line in self.output.read_text().splitlines():
                stack, _, count = line.rpartition(" ")
                frames = tuple((match["function"], match["file"]) for frame in stack.split(";") if (match := FRAME.match(frame)))
                self.stacks[frames] += int(count)
            os.unlink(self.output)

    def save(self, path: str) -> None:
        """The samples as collapsed stacks (flamegraph.pl's and speedscope's input)."""
        with open(path, "w") as out:
            for frames, count in self.stacks.items():
                out.write(";".join(f"{function} ({file})" for function, file in frames) + f" {count}\n")

    def report(self, top: int = 12) -> None:
        """Print the samples by part (own and cumulative) and the top functions (own and cumulative)."""
        total = sum(self.stacks.values())
        if not total:
            print("profile: no samples")
            return
        own_part: Counter[str] = Counter()
        cumulative_part: Counter[str] = Counter()
        own_function: Counter[str] = Counter()
        cumulative_function: Counter[str] = Counter()
        for frames, count in self.stacks.items():
            parts = [part_of(file) for _, file in frames]
            own_part[next((part for part in reversed(parts) if part), "other")] += count
            for part in set(filter(None, parts)):
                cumulative_part[part] += count
            names = [f"{function} ({short(file)})" for function, file in frames]
            if names:
                own_function[names[-1]] += count
            for name in set(names):
                cumulative_function[name] += count
        print(f"\nprofile: {total} samples at {self.rate}/s ({total / self.rate:.1f} s of CPU) in the server process(es)")
        print(f"{'part':<16} {'own':>6} {'cumulative':>11}")
        for part, count in sorted(own_part.items(), key=lambda item: -item[1]):
            print(f"{part:<16} {count / total:6.1%} {cumulative_part[part] / total:11.1%}")
        for part in cumulative_part.keys() - own_part.keys():
            print(f"{part:<16} {0:6.1%} {cumulative_part[part] / total:11.1%}")
        print(f"\ntop {top} functions, own time:")
        for name, count in own_function.most_common(top):
            print(f"  {count / total:6.1%}  {name}")
        print(f"\ntop {top} project functions, cumulative:")
        project = [(name, count) for name, count in cumulative_function.items() if name.split(" (", 1)[1].startswith(PROJECT)]
        for name, count in sorted(project, key=lambda item: -item[1])[:top]:
            print(f"  {count / total:6.1%}  {name}")


PROJECT = ("chat/", "chatplatform/", "agents/", "tools/", "tags/", "directives/", "knowledge/")
