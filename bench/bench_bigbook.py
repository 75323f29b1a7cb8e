"""A big book stays light to read: GET /v1/projects/{id} (the project with its pages) of a
4,000-page book, against the same read of a 400-page book, on the real API server.

The bench makes both books in its database directly (factory rows, as bench_api makes its
300-page book), each page as normalize and a translation leave it (its layout, text layer,
Markdown body, furniture and translation stored, a cost measured on the first half), starts
the API server as `make run` serves it (uvicorn, one process, bench_api's) on its own Redis,
and reads from this process, one request at a time:

- **Time**: READS reads of each book after a warm-up: the median and the 95th percentile of
  the 4,000-page read, each over the same figure of the 400-page read.
- **Memory**: the server process's resident memory (VmRSS of /proc/<pid>/status) after
  RSS_READS reads of the 4,000-page book, over the same after RSS_READS reads of the
  400-page one; and its peak (VmHWM) over both, over the peak after the 400-page reads.
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import tempfile
import time
from decimal import Decimal
from pathlib import Path

import httpx
from django.db import connection

from accounts.models import User
from accounts.services.users import token_issue
from bench.bench_api import api_server, bench_redis_settings, percentile, redis_server
from bench.common import Result, memory_mib, quick
from projects.models import PageStatus, Project, ProjectStatus
from tests.factories import ProjectFactory, pages_add

BIG_PAGES = 4_000
SMALL_PAGES = 400
READS = 8 if quick() else 20
RSS_READS = 10 if quick() else 30
WARMUP_READS = 2

PAGE_MARKDOWN = "## A chapter\n\n" + "A sentence of the book, long enough to be read as prose. " * 30
PAGE_TRANSLATION = "Une phrase du livre, assez longue pour se lire comme de la prose. " * 30
PAGE_LAYOUT = {
    "blocks": [
        {"bbox": [72, 72 + 40 * n, 540, 100 + 40 * n], "lines": [{"text": "A line of the book.", "size": 11}]}
        for n in range(12)
    ]
}


def book(owner: User, pages: int) -> Project:
    """A book of `pages` pages, half of them translated and measured, as a long run leaves it."""
    project = ProjectFactory.create(owner=owner, status=ProjectStatus.PROCESSING, approval_count=4)
    rows = pages_add(
        project,
        pages,
        has_text_layer=True,
        word_count=330,
        text_layer=PAGE_MARKDOWN,
        source_markdown=PAGE_MARKDOWN,
        structured=True,
        layout=PAGE_LAYOUT,
        furniture=[{"kind": "header", "text": "The book"}, {"kind": "page_number", "text": "1"}],
    )
    translated = [page.pk for page in rows[: pages // 2]]
    project.pages.filter(pk__in=translated).update(
        status=PageStatus.APPROVED,
        translation=PAGE_TRANSLATION,
        source_text=PAGE_MARKDOWN,
        cost_usd=Decimal("0.000412"),
        engine="echo",
        attempts=1,
    )
    return project


def server_pid(port: str) -> int:
    """The process listening as the bench's API server (uvicorn's, found by its argv)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"config.asgi:application" in argv and port.encode() in argv:
            return int(entry.name)
    raise RuntimeError(f"no API server process on port {port}")


async def reads(client: httpx.AsyncClient, path: str, count: int) -> list[float]:
    """Seconds of each of `count` reads, one after the other; every answer must be a 200."""
    seconds = []
    for _ in range(count):
        started = time.perf_counter()
        response = await client.get(path)
        seconds.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise AssertionError(f"bench_bigbook: {path} answered {response.status_code}: {response.text[:300]}")
    return seconds


def run() -> list[Result]:
    workdir = Path(tempfile.mkdtemp(prefix="bench-bigbook-"))
    with redis_server(workdir) as redis_url, bench_redis_settings(redis_url):
        owner = User.objects.create_user("bigbook-bench@example.com", "bench-password-123", display_name="Bench")
        small, big = book(owner, SMALL_PAGES), book(owner, BIG_PAGES)
        token = token_issue(user=owner).token
        connection.close()
        with api_server(workdir, redis_url) as base:
            pid = server_pid(base.rsplit(":", 1)[1])
            small_path, big_path = f"/v1/projects/{small.pk}", f"/v1/projects/{big.pk}"

            async def measure() -> tuple[list[float], list[float], dict[str, float]]:
                headers = {"Authorization": f"Bearer {token}"}
                async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120) as client:
                    await reads(client, small_path, WARMUP_READS)
                    await reads(client, small_path, RSS_READS)
                    memory = {"small_rss": memory_mib("VmRSS", pid), "small_hwm": memory_mib("VmHWM", pid)}
                    await reads(client, big_path, RSS_READS)
                    memory |= {"big_rss": memory_mib("VmRSS", pid), "big_hwm": memory_mib("VmHWM", pid)}
                    small_seconds = await reads(client, small_path, READS)
                    big_seconds = await reads(client, big_path, READS)
                return small_seconds, big_seconds, memory

            small_seconds, big_seconds, memory = asyncio.run(measure())
    shutil.rmtree(workdir, ignore_errors=True)

    def ms(seconds: list[float], fraction: float | None = None) -> float:
        return 1000 * (statistics.median(seconds) if fraction is None else percentile(seconds, fraction))

    big, small_label, n = f"{BIG_PAGES:,} p", f"{SMALL_PAGES} p", RSS_READS
    return [
        Result(f"bigbook: GET project {big} vs {small_label}, median ms", ms(big_seconds), ms(small_seconds), "ms"),
        Result(
            f"bigbook: GET project {big} vs {small_label}, p95 ms",
            ms(big_seconds, 0.95),
            ms(small_seconds, 0.95),
            "ms",
        ),
        Result(
            f"bigbook: API RSS after {n} reads of {big} vs of {small_label}",
            memory["big_rss"],
            memory["small_rss"],
            "MiB",
        ),
        Result(
            f"bigbook: API peak RSS after {n} reads of {big} vs of {small_label}",
            memory["big_hwm"],
            memory["small_hwm"],
            "MiB",
        ),
    ]
