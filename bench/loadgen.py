"""A small keep-alive HTTP/1.1 load generator (asyncio, raw sockets) for loopback benchmarks."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from bench.common import percentile


@dataclass
class Result:
    requests: int = 0
    errors: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def add(self, other: Result) -> None:
        """Fold another run's counts into this one."""
        self.requests += other.requests
        self.errors += other.errors
        self.seconds += other.seconds
        self.latencies += other.latencies
        for status, count in other.statuses.items():
            self.statuses[status] = self.statuses.get(status, 0) + count

    def percentile(self, p: float) -> float:
        return percentile(self.latencies, p) * 1000


async def _worker(host: str, port: int, request: bytes, deadline: float, result: Result) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            writer.write(request)
            status_line = await reader.readline()
            if not status_line:  # the server closed the connection: count it and reconnect
                result.errors += 1
                writer.close()
                reader, writer = await asyncio.open_connection(host, port)
                continue
            length = 0
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b""):
                    break
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            status = int(status_line.split()[1])
            result.statuses[status] = result.statuses.get(status, 0) + 1
            result.requests += 1
            result.latencies.append(time.perf_counter() - started)
    except (ConnectionError, asyncio.IncompleteReadError):
        result.errors += 1
    finally:
        writer.close()


def run(host: str, port: int, path: str, *, headers: dict[str, str], seconds: float, connections: int) -> Result:
    head = "".join(f"{k}: {v}\r\n" for k, v in {"Host": f"{host}:{port}", **headers}.items())
    request = f"GET {path} HTTP/1.1\r\n{head}\r\n".encode()
    result = Result()

    async def main() -> None:
        deadline = time.perf_counter() + seconds
        started = time.perf_counter()
        await asyncio.gather(*(_worker(host, port, request, deadline, result) for _ in range(connections)))
        result.seconds = time.perf_counter() - started

    asyncio.run(main())
    return result
