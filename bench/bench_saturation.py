"""Engine saturation: does the pipeline keep a GPU server of known capacity busy?

A stand-in for vLLM (tests/support/openai_server.py, in a process of its own as a real
server would be) works on at most C completions at once, L seconds each: at best C/L
pages/s. A 500-page book goes through the whole pipeline — POST process over HTTP, the job
queue, the worker's entry point `projects.tasks.job_run_next` (in this process; Celery
messages go to an in-memory broker), the `vllm` engine pointed at the stand-in with
ENGINE_CONCURRENCY=C, the completeness check, a commit per page, settlement, the ladder's
next rung — until the book is Complete.

The ladder caps the whole book below C/L: batches of 1, 5, 25, 100 and 369 pages run one
after the other (the next is cut only when the last is settled), each in ceil(pages / C)
rounds of L, and the small ones cannot fill C slots. With C=8 that is 1 + 1 + 4 + 13 + 47
= 66 rounds where 500 / 8 = 62.5 would do: at most 0.947 of C/L (with C=16, 35 rounds for
31.25: 0.893, below the 0.9 goal whatever the platform does). So C=8.

- The whole book, in pages/s, over C/L. Goal: at least 0.9.
- The ladder's ideal (its rounds of L and nothing else) over C/L: the cap above.
- The whole book over the ladder's ideal: what the platform loses, all of it.
- The last batch (369 pages) alone, in pages/s from its claim to its settlement, over
  C/L: the steady state.
- The same over the stand-in alone, driven by a bare client (C threads posting the
  requests the engine sends, no database): what the pipeline loses against what the
  stand-in can serve on this machine.
- The stand-in alone over C/L: the ceiling of the stand-in and of this machine.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from bench.bench_overhead import book_create, ideal_ladder_seconds, ladder_run, page_input, pipeline_settings
from bench.common import Result
from projects.models import JobStatus, Project
from translation.engines.prompts import chat_messages

BOOK_PAGES = 500
CAPACITY = 8
LATENCY_SECONDS = 0.5
MODEL = "bench-org/bench-vl-model"
REPO_ROOT = Path(__file__).resolve().parent.parent
# The stand-in runs in a child process (its HTTP handling must not share this process's
# interpreter lock with the pipeline); it prints its address, serves until its stdin
# closes, then prints what it saw.
_SERVE = """
import json, sys
from tests.support.openai_server import OpenAIServer
server = OpenAIServer(model=sys.argv[1], capacity=int(sys.argv[2]), latency=float(sys.argv[3])).start()
print(server.url, flush=True)
sys.stdin.read()
print(json.dumps({"maxInFlight": server.max_in_flight, "completions": len(server.chat_requests())}), flush=True)
server.stop()
"""


class StandIn:
    """The OpenAI-compatible stand-in in a child process."""

    def __init__(self, *, capacity: int, latency: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _SERVE, MODEL, str(capacity), str(latency)],
            cwd=REPO_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        if not self.url.startswith("http://"):
            self.process.kill()
            raise RuntimeError(f"the stand-in did not start: {self.url!r}")
        self.seen: dict[str, Any] = {}

    def stop(self) -> dict[str, Any]:
        """Stops it and returns what it saw (maxInFlight, completions)."""
        if self.process.poll() is None:
            output, _ = self.process.communicate(timeout=30)
            self.seen = json.loads(output.strip().splitlines()[-1])
        return self.seen


def bare_client_rate(url: str, *, pages: int, concurrency: int) -> float:
    """Pages/s of the stand-in driven by `concurrency` threads posting the requests the
    engine would send for `pages` pages (no database, no pipeline)."""
    bodies = [
        {
            "model": MODEL,
            "messages": chat_messages(page_input(index), image_png=None),
            "max_tokens": 4096,
            "temperature": 0.2,
        }
        for index in range(1, pages + 1)
    ]
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    # TCP_NODELAY as the engine's own client sets it.
    transport = httpx.HTTPTransport(limits=limits, socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
    with httpx.Client(base_url=url, transport=transport, timeout=60) as client:

        def post(body: dict[str, Any]) -> None:
            client.post("/v1/chat/completions", json=body).raise_for_status()

        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            list(pool.map(post, bodies))
        return pages / (time.perf_counter() - started)


def run() -> list[Result]:
    ideal_rate = CAPACITY / LATENCY_SECONDS
    owner, project = book_create(email="saturation-bench@example.com", pages=BOOK_PAGES)
    stand_in = StandIn(capacity=CAPACITY, latency=LATENCY_SECONDS)
    try:
        bare_rate = bare_client_rate(stand_in.url, pages=BOOK_PAGES // 2, concurrency=CAPACITY)
        with pipeline_settings(
            TRANSLATION_ENGINE="vllm", VLLM_BASE_URL=stand_in.url, VLLM_MODEL=MODEL, ENGINE_CONCURRENCY=CAPACITY
        ):
            seconds = ladder_run(owner=owner, project=project)
    finally:
        seen = stand_in.stop()
    assert seen["maxInFlight"] <= CAPACITY, seen
    last = Project.objects.get(pk=project.pk).jobs.order_by("queue_position").last()
    assert last is not None
    assert last.status == JobStatus.SUCCEEDED
    assert last.started_at is not None
    assert last.finished_at is not None
    last_seconds = (last.finished_at - last.started_at).total_seconds()
    ladder_ideal = ideal_ladder_seconds(pages=BOOK_PAGES, concurrency=CAPACITY, latency=LATENCY_SECONDS)
    label = f"C={CAPACITY} L={LATENCY_SECONDS:g}"
    last_rate = last.page_count / last_seconds
    book_rate = BOOK_PAGES / seconds
    return [
        Result(f"saturation: 500 pages vs C/L, {label}, p/s", book_rate, ideal_rate, "p/s"),
        Result("saturation: the ladder's ideal vs C/L (its cap), p/s", BOOK_PAGES / ladder_ideal, ideal_rate, "p/s"),
        Result("saturation: 500 pages vs the ladder's ideal, p/s", book_rate, BOOK_PAGES / ladder_ideal, "p/s"),
        Result(f"saturation: last batch ({last.page_count} pages) vs C/L, p/s", last_rate, ideal_rate, "p/s"),
        Result("saturation: last batch vs the stand-in alone, p/s", last_rate, bare_rate, "p/s"),
        Result("saturation: stand-in alone (bare client) vs C/L, p/s", bare_rate, ideal_rate, "p/s"),
    ]
