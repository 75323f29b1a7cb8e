"""A GPU node serving many books at once: is the model server kept full?

Real traffic is many books, most of them on their first rungs (1, 5, 25 pages). FLEET_BOOKS
books of FLEET_PAGES pages (batches of 1, 5 and 14) and one book of BIG_PAGES pages (1, 5,
25, 100, 369) among them are started at once through the API (POST process, each by its
own reader, over HTTP to the API server as `make run` serves it), and go through the whole
pipeline: the job queue on Redis, the GPU node's worker (a real Celery worker process), the
`vllm` engine pointed at the OpenAI-compatible stand-in (capacity C=64, latency L: at best
C/L pages/s, bench_saturation's `StandIn`), the completeness check, a commit per page,
settlement and the ladder's next rungs, until every book is Complete.

Two layouts of the node, each on fresh books, in the same run:
- **the page pool** (docs/deploy.md): one worker process running up to C batches at once
  (`--pool threads -c 64`) whose pages share one pool of ENGINE_CONCURRENCY=C pages, the
  job with the lowest queue position first;
- **the layout before it**: two batches at once (two single-batch worker processes), each
  with its own 32 pages at the engine — compose's defaults until the pool (not in
  BENCH_QUICK mode: it takes about three times as long).

L is 4 s: a real node's pages take longer still (at 64 sequences, a text page of about 500
generated tokens takes 10-15 s on an H100, docs/deploy.md), and at 1-2 s the 2-core
machine's CPU, shared by the API, PostgreSQL, the stand-in and the worker, is what the
bench measures.

Printed, for the page pool: all the fleet's pages/s over C/L (goal: at least 0.9); the
p50 and p95 of the time from a small book's POST process to its first translated page,
and the big book's first page, each over L (one engine round: the least it can be); the
big book's pages/s over C/L; and the fleet's pages/s over the layout before it.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import httpx
from django.db.models import Max, Min

from accounts.services.users import token_issue
from bench.bench_api import (
    REPO_ROOT,
    api_server,
    bench_redis_settings,
    percentile,
    process_stop,
    redis_server,
    wait_for,
)
from bench.bench_overhead import book_create
from bench.bench_saturation import MODEL, StandIn
from bench.common import Result, quick
from projects.models import Page, PageStatus, Project, ProjectStatus

CAPACITY = 64
LATENCY_SECONDS = 4.0
FLEET_BOOKS = 50
FLEET_PAGES = 20
BIG_PAGES = 500
BIG_AT = 25  # the big book is started after the 25th small one
OLD_BATCHES = 2
OLD_PAGES_PER_BATCH = 32
DEADLINE_SECONDS = 900


@contextlib.contextmanager
def worker(workdir: Path, redis_url: str, name: str, *, pool: str, concurrency: int, **env: str) -> Iterator[None]:
    """A Celery worker on the process and retry queues, as the GPU node runs it, ready."""
    log = workdir / f"worker-{name}.log"
    environment = {
        **os.environ,
        "REDIS_URL": redis_url,
        "CELERY_BROKER_URL": redis_url,
        "CACHE_URL": redis_url,
        "CHANNELS_REDIS_URL": redis_url,
        "PYTHONUNBUFFERED": "1",
        **env,
    }
    argv = [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "process,retry", "-n", f"{name}@%h"]
    argv += [f"--pool={pool}", "-c", str(concurrency), "--without-heartbeat", "--without-mingle", "--without-gossip"]
    argv.append("--loglevel=INFO")
    with log.open("wb") as output:
        process = subprocess.Popen(argv, cwd=REPO_ROOT, env=environment, stdout=output, stderr=output)
    try:
        wait_for(lambda: " ready." in log.read_text(errors="replace"), what=f"worker {name}", log=log)
        yield
    finally:
        process_stop(process, timeout=60)


def fleet_create(run: str) -> list[tuple[Project, str]]:
    """The fleet's books, in the order they are started, each with its reader's token."""
    books = []
    for number in range(FLEET_BOOKS + 1):
        big = number == BIG_AT
        pages = BIG_PAGES if big else FLEET_PAGES
        owner, project = book_create(email=f"fleet-{run}-{number}@example.com", pages=pages)
        books.append((project, token_issue(user=owner).token))
    return books


def fleet_start(base: str, books: list[tuple[Project, str]]) -> dict[str, float]:
    """POST process for every book at once; when each call was sent (time.time())."""

    def start(book: tuple[Project, str]) -> tuple[str, float]:
        project, token = book
        sent = time.time()
        answer = httpx.post(
            f"{base}/v1/projects/{project.pk}/process", headers={"Authorization": f"Bearer {token}"}, timeout=120
        )
        assert answer.status_code == 202, answer.text
        return str(project.pk), sent

    with ThreadPoolExecutor(max_workers=16) as pool:
        return dict(pool.map(start, books))


def fleet_wait(books: list[tuple[Project, str]]) -> None:
    ids = [project.pk for project, _ in books]
    deadline = time.monotonic() + DEADLINE_SECONDS
    while True:
        statuses = list(Project.objects.filter(pk__in=ids).values_list("status", flat=True))
        if set(statuses) == {ProjectStatus.COMPLETE}:
            return
        unfinished = set(statuses) - {ProjectStatus.COMPLETE, ProjectStatus.PROCESSING, ProjectStatus.CALIBRATING}
        assert not unfinished, unfinished
        if time.monotonic() > deadline:
            raise RuntimeError(f"the fleet did not finish in {DEADLINE_SECONDS} s: {statuses}")
        time.sleep(0.5)


def fleet_run(base: str, books: list[tuple[Project, str]]) -> dict[str, float]:
    """Starts the fleet and waits for it: seconds from the first POST to the last page, to
    each book's first page (from its own POST), and the big book's pages/s."""
    sent = fleet_start(base, books)
    fleet_wait(books)
    ids = [project.pk for project, _ in books]
    pages = Page.objects.filter(project_id__in=ids)
    assert not pages.exclude(status=PageStatus.APPROVED).exists()
    times = dict(
        (str(project_id), (first.timestamp(), last.timestamp()))
        for project_id, first, last in pages.values("project_id")
        .annotate(first=Min("translated_at"), last=Max("translated_at"))
        .values_list("project_id", "first", "last")
    )
    big = str(books[BIG_AT][0].pk)
    firsts = [times[book][0] - sent[book] for book in sent if book != big]
    # No small book's first page waited behind the big book: when the last of them was
    # translated, the big book had at most its first two rungs (1 + 5 pages) done.
    last_first = max(times[book][0] for book in sent if book != big)
    big_done_by_then = pages.filter(project_id=big, translated_at__lte=datetime.fromtimestamp(last_first, UTC))
    assert big_done_by_then.count() <= 6, big_done_by_then.count()
    return {
        "seconds": max(last for _, last in times.values()) - min(sent.values()),
        "first_p50": statistics.median(firsts),
        "first_p95": percentile(firsts, 0.95),
        "big_first": times[big][0] - sent[big],
        "big_rate": BIG_PAGES / (times[big][1] - sent[big]),
    }


def run() -> list[Result]:
    workdir = Path(tempfile.mkdtemp(prefix="bench-fleet-"))
    stand_in = StandIn(capacity=CAPACITY, latency=LATENCY_SECONDS)
    engine = {"TRANSLATION_ENGINE": "vllm", "VLLM_MODEL": MODEL, "VLLM_BASE_URL": stand_in.url}
    old: dict[str, float] | None = None
    try:
        with (
            redis_server(workdir) as redis_url,
            bench_redis_settings(redis_url),
            api_server(workdir, redis_url, **engine) as base,
        ):
            pooled_books, old_books = fleet_create("pool"), fleet_create("old")
            with worker(
                workdir,
                redis_url,
                "pool",
                pool="threads",
                concurrency=CAPACITY,
                ENGINE_CONCURRENCY=str(CAPACITY),
                **engine,
            ):
                pooled = fleet_run(base, pooled_books)
            if not quick():  # the layout before the pool takes about three times as long
                with contextlib.ExitStack() as stack:
                    for number in range(OLD_BATCHES):
                        settings_env = {"ENGINE_CONCURRENCY": str(OLD_PAGES_PER_BATCH), **engine}
                        stack.enter_context(
                            worker(workdir, redis_url, f"old{number}", pool="solo", concurrency=1, **settings_env)
                        )
                    old = fleet_run(base, old_books)
    finally:
        seen = stand_in.stop()
    assert seen["maxInFlight"] <= CAPACITY, seen
    return fleet_results(pooled, old)


def fleet_results(pooled: dict[str, float], old: dict[str, float] | None) -> list[Result]:
    ideal = CAPACITY / LATENCY_SECONDS
    total_pages = FLEET_BOOKS * FLEET_PAGES + BIG_PAGES
    label = f"C={CAPACITY} L={LATENCY_SECONDS:g}"
    rate = total_pages / pooled["seconds"]
    results = [
        Result(f"fleet: {FLEET_BOOKS}x{FLEET_PAGES} + {BIG_PAGES} pages vs C/L, {label}, p/s", rate, ideal, "p/s"),
        Result("fleet: small book's first page, p50 vs L, s", pooled["first_p50"], LATENCY_SECONDS, "s"),
        Result("fleet: small book's first page, p95 vs L, s", pooled["first_p95"], LATENCY_SECONDS, "s"),
        Result("fleet: the big book's first page vs L, s", pooled["big_first"], LATENCY_SECONDS, "s"),
        Result(f"fleet: the big book ({BIG_PAGES} pages) vs C/L, p/s", pooled["big_rate"], ideal, "p/s"),
    ]
    if old is not None:
        results += [
            Result(
                f"fleet: page pool vs {OLD_BATCHES} batches x {OLD_PAGES_PER_BATCH} pages (before), p/s",
                rate,
                total_pages / old["seconds"],
                "p/s",
            ),
            Result("fleet: before: small book's first page, p95 vs L, s", old["first_p95"], LATENCY_SECONDS, "s"),
        ]
    return results
