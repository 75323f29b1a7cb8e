"""The API under load: the two reads an agent polls, and the hub's fan-out, against a real
server on loopback.

The bench starts a Redis of its own (the cache, the broker and the hub's channel layer, as
in production) and the API server as `make run` serves it (uvicorn, one process), on the
bench's throw-away SQLite database, then drives it from this process for a bounded time:

- HTTP: CONCURRENCY clients (httpx, one keep-alive connection each, asyncio) each sending
  the next request as soon as the last is answered, for SECONDS: requests/s and the 99th
  percentile latency of GET /v1/projects/{id}/status (a 300-page book in progress, a batch
  running: the page counts, the job in flight, the engine's status) and of GET
  /v1/jobs/{id}, each over GET /healthz through the same server and client (routing and
  the ASGI handler, no credential, no database) measured in the same run. Beside them, two
  reads the bench adds to the same server (bench/api_floor_urls.py) tell what any read
  costs at least: one SQL query with no credential, and an authenticated DRF read that
  answers a constant (the credential checked, its account read); the status read is also
  given over the second.
- Hub: HUB_CLIENTS websocket clients of one owner connected to /v1/hub; events published
  through the fan-out (`webhooks.services.fanout.publish`, as the API and the workers do: the
  webhook sink, then the channel layer) with at most WINDOW events not yet received by
  every client; messages received per second over all clients, and the p99 from publish to
  receipt. Baseline: a bare websocket broadcast server (the `websockets` package, a child
  process, no Django, no Redis) relaying the same messages from one publisher connection to
  the same clients.

Every answer must be a 200 (HTTP) and every message must arrive (hub): the errors are
counted, reported and must be 0, or the bench fails. BENCH_QUICK=1 shortens each run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
from django.conf import settings
from django.db import connection
from django.test import override_settings
from django.utils import timezone
from websockets.asyncio.client import ClientConnection, connect

from accounts.models import User
from accounts.services.users import token_issue
from bench.common import Result, quick
from config.celery_app import app as celery_app
from projects.models import Job, PageStatus, Project, ProjectStatus
from projects.services import jobs
from tests.factories import ProjectFactory, pages_add
from wallet.models import EntryKind
from wallet.services.ledger import wallet_credit

REPO_ROOT = Path(__file__).resolve().parent.parent
CONCURRENCY = 16
SECONDS = 3.0 if quick() else 10.0
WARMUP_SECONDS = 1.0
HUB_CLIENTS = 50
HUB_SECONDS = 3.0 if quick() else 8.0
WINDOW = 8  # events published but not yet received by every client
DRAIN_SECONDS = 15.0  # how long the last messages may take before they count as lost
BOOK_PAGES = 300

# The bare websocket broadcast server: a connection to /publish relays every message it
# sends to every other connection. Prints its port, serves until stdin closes.
_BARE_SERVER = """
import asyncio, sys
from websockets.asyncio.server import broadcast, serve

clients = set()

async def handler(ws):
    if ws.request.path == "/publish":
        async for message in ws:
            broadcast(clients, message)
        return
    clients.add(ws)
    try:
        await ws.wait_closed()
    finally:
        clients.discard(ws)

async def main():
    async with serve(handler, "127.0.0.1", 0, compression=None) as server:
        print(server.sockets[0].getsockname()[1], flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

asyncio.run(main())
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(condition: Callable[[], bool], *, what: str, log: Path | None = None, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-3000:] if log is not None and log.exists() else ""
            raise RuntimeError(f"{what} did not start in {timeout:g} s\n{tail}")
        time.sleep(0.1)


@contextlib.contextmanager
def redis_server(workdir: Path) -> Iterator[str]:
    """A Redis of the bench's own on a free loopback port; its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("bench_api needs redis-server (apt-get install redis-server; `make bench` installs it)")
    port = free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", workdir],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def answers() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as probe:
                probe.sendall(b"PING\r\n")
                return probe.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    try:
        wait_for(answers, what="redis-server")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextlib.contextmanager
def api_server(workdir: Path, redis_url: str, **settings_env: str) -> Iterator[str]:
    """The API server (uvicorn, as scripts/run.sh starts it) on the bench's database and
    Redis, with DEBUG off as in production (DEBUG on records every query it runs, which
    only the reads that touch the database pay), with `settings_env` over the environment;
    its base URL."""
    port = free_port()
    log = workdir / "api-server.log"
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "CELERY_BROKER_URL": redis_url,
        "CACHE_URL": redis_url,
        "CHANNELS_REDIS_URL": redis_url,
        "PYTHONUNBUFFERED": "1",
        "DEBUG": "false",
        "SECURE_SSL_REDIRECT": "false",  # plain HTTP on loopback, where production has its proxy's TLS
        **settings_env,
    }
    argv = [sys.executable, "-m", "uvicorn", "config.asgi:application", "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--lifespan", "off", "--log-level", "warning", "--no-access-log"]
    with log.open("wb") as output:
        process = subprocess.Popen(argv, cwd=REPO_ROOT, env=env, stdout=output, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"the API server exited\n{log.read_text(errors='replace')[-3000:]}")
        try:
            return httpx.get(f"{base}/healthz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_for(answers, what="the API server", log=log)
        yield base
    finally:
        process_stop(process)


def process_stop(process: subprocess.Popen[bytes], *, timeout: float = 30) -> None:
    """SIGTERM, and SIGKILL when it has not ended in `timeout` seconds."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=30)


@contextlib.contextmanager
def bare_broadcast_server() -> Iterator[str]:
    """The baseline's websocket relay in a child process; its ws:// address."""
    process = subprocess.Popen(
        [sys.executable, "-c", _BARE_SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    assert process.stdin is not None
    try:
        port = process.stdout.readline().strip()
        if not port.isdigit():
            raise RuntimeError(f"the bare websocket server did not start: {port!r}")
        yield f"ws://127.0.0.1:{port}"
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


# --- The book the reads are about ------------------------------------------------------


def book_in_progress() -> tuple[User, Project, Job, str]:
    """A reader with credit and a 300-page book in progress: the first four batches (131
    pages) translated, the last (169 pages) queued with its hold, as POST process leaves
    it. Returns the owner, the book, the job and a JWT."""
    owner = User.objects.create_user("api-bench@example.com", "bench-password-123", display_name="Bench")
    wallet_credit(user=owner, amount=Decimal(500), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id="api")
    project = ProjectFactory.create(owner=owner, status=ProjectStatus.PROCESSING, approval_count=4)
    pages = pages_add(project, BOOK_PAGES, has_text_layer=True, text_layer="A page of the book, in a sentence.")
    translated = [page.pk for page in pages[:131]]
    project.pages.filter(pk__in=translated).update(
        status=PageStatus.APPROVED, translation="Une page du livre.", translated_at=timezone.now()
    )
    job = jobs.process_start(owner=owner, project_id=project.pk)
    assert job.page_count == BOOK_PAGES - len(translated), job.page_count
    return owner, project, job, token_issue(user=owner).token


# --- HTTP load ------------------------------------------------------------------------


@dataclass
class Timed:
    """What a run counted (requests answered, messages received), how long it took, and the
    latency of each."""

    count: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.count / self.seconds if self.seconds else 0.0

    @property
    def p99_ms(self) -> float:
        return percentile(self.latencies, 0.99) * 1000


@dataclass
class Load(Timed):
    """What one load run saw: requests answered (count), and errors."""

    errors: int = 0


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def http_load(base: str, path: str, *, headers: dict[str, str], seconds: float, concurrency: int) -> Load:
    """`concurrency` clients GET `path` back to back for `seconds` (after a warm-up)."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    load = Load()
    async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits, timeout=30) as client:
        measuring = False
        stop_at = time.perf_counter() + WARMUP_SECONDS

        async def one_client() -> None:
            while time.perf_counter() < stop_at:
                started = time.perf_counter()
                try:
                    response = await client.get(path)
                    failed = response.status_code != 200
                except httpx.HTTPError:
                    failed = True
                if measuring:
                    load.count += 1
                    load.errors += failed
                    load.latencies.append(time.perf_counter() - started)

        await asyncio.gather(*(one_client() for _ in range(concurrency)))  # the warm-up
        measuring = True
        started = time.perf_counter()
        stop_at = started + seconds
        await asyncio.gather(*(one_client() for _ in range(concurrency)))
        load.seconds = time.perf_counter() - started
    return load


# --- Hub fan-out ------------------------------------------------------------------------


@dataclass
class FanOut(Timed):
    """What one fan-out run saw: messages received over all clients (count), and those lost."""

    lost: int = 0


async def fan_out(
    clients: list[ClientConnection], publish: Callable[[int, float], Awaitable[None]], *, seconds: float
) -> FanOut:
    """Publishes events numbered 0, 1, ... for `seconds`, at most WINDOW of them not yet
    received by every client; each message carries its number and the time it was
    published. Returns what the clients received."""
    result = FanOut()
    loop = asyncio.get_running_loop()
    complete: dict[int, asyncio.Future[None]] = {}
    counts: dict[int, int] = {}

    def expect(number: int) -> asyncio.Future[None]:
        if number not in complete:
            complete[number] = loop.create_future()
        return complete[number]

    async def receive(client: ClientConnection) -> None:
        async for raw in client:
            message = json.loads(raw)
            data = message.get("data", {})
            if "seq" not in data:
                continue
            result.latencies.append(time.time() - data["sentAt"])
            result.count += 1
            number = data["seq"]
            counts[number] = counts.get(number, 0) + 1
            if counts[number] == len(clients):
                expect(number).set_result(None)

    receivers = [asyncio.create_task(receive(client)) for client in clients]
    started = time.perf_counter()
    published = 0
    while time.perf_counter() - started < seconds:
        if published >= WINDOW:
            try:
                async with asyncio.timeout(DRAIN_SECONDS):
                    await expect(published - WINDOW)
            except TimeoutError:
                break  # an event some client never received: counted as lost below
        await publish(published, time.time())
        published += 1
    waiting = [expect(number) for number in range(published)]
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(DRAIN_SECONDS):
            await asyncio.gather(*waiting)
    result.seconds = time.perf_counter() - started
    for task in receivers:
        task.cancel()
    await asyncio.gather(*receivers, return_exceptions=True)
    result.lost = published * len(clients) - result.count
    return result


async def connect_all(url: str, *, count: int, headers: dict[str, str] | None = None) -> list[ClientConnection]:
    clients = []
    for _ in range(count):
        client = await connect(url, additional_headers=headers, compression=None, proxy=None, open_timeout=30)
        clients.append(client)
    return clients


def envelope(number: int, sent_at: float) -> dict[str, Any]:
    """The data of a bench event: its number and when it was published."""
    return {"seq": number, "sentAt": sent_at}


async def hub_fan_out(base: str, *, owner: User, token: str) -> FanOut:
    """Events published through the bus (in a thread, as a sync view or task publishes)."""
    from webhooks.events import WALLET_LOW_BALANCE
    from webhooks.services.fanout import publish

    url = base.replace("http://", "ws://") + f"/v1/hub?access_token={token}"
    clients = await connect_all(url, count=HUB_CLIENTS)
    publisher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="publish")
    loop = asyncio.get_running_loop()

    def publish_one(number: int, sent_at: float) -> None:
        publish(WALLET_LOW_BALANCE, owner_id=owner.pk, data=envelope(number, sent_at))

    async def publish_async(number: int, sent_at: float) -> None:
        await loop.run_in_executor(publisher, publish_one, number, sent_at)

    try:
        await fan_out(clients, publish_async, seconds=WARMUP_SECONDS)
        return await fan_out(clients, publish_async, seconds=HUB_SECONDS)
    finally:
        await loop.run_in_executor(publisher, lambda: connection.close())  # the thread's own
        publisher.shutdown()
        await asyncio.gather(*(client.close() for client in clients))


async def bare_fan_out(address: str) -> FanOut:
    clients = await connect_all(f"{address}/listen", count=HUB_CLIENTS)
    source = await connect(f"{address}/publish", compression=None, proxy=None)
    hub_shaped = {"id": "", "type": "wallet.low_balance", "timestamp": ""}

    async def publish(number: int, sent_at: float) -> None:
        message = {**hub_shaped, "id": f"evt_{uuid.uuid4().hex}", "timestamp": timezone.now().isoformat()}
        await source.send(json.dumps({**message, "data": envelope(number, sent_at)}))

    try:
        await fan_out(clients, publish, seconds=WARMUP_SECONDS)
        return await fan_out(clients, publish, seconds=HUB_SECONDS)
    finally:
        await source.close()
        await asyncio.gather(*(client.close() for client in clients))


# --- The bench --------------------------------------------------------------------------


@contextlib.contextmanager
def bench_redis_settings(redis_url: str) -> Iterator[None]:
    """This process's cache and hub channel layer on the bench's Redis, as the server's
    are (the book's setup and the event bus run here). Celery's messages (the queued
    batch's) go to an in-memory broker, as in the other benches: Celery keeps its
    connection pool for the process, and this Redis stops with the bench."""
    from channels.layers import channel_layers

    cache = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": redis_url}}
    layer = {"default": {"BACKEND": settings.CHANNEL_LAYERS["default"]["BACKEND"], "CONFIG": {"hosts": [redis_url]}}}
    celery_app.conf.broker_url = "memory://localhost/"
    try:
        with override_settings(CACHES=cache, CHANNEL_LAYERS=layer, TRANSLATION_ENGINE="echo"):
            channel_layers.backends.clear()
            yield
    finally:
        channel_layers.backends.clear()


def run() -> list[Result]:
    workdir = Path(tempfile.mkdtemp(prefix="bench-api-"))
    with redis_server(workdir) as redis_url, bench_redis_settings(redis_url):
        owner, project, job, token = book_in_progress()
        connection.close()  # the server and the publisher open their own
        auth = {"Authorization": f"Bearer {token}"}
        # The service's server with two reads added (bench/api_floor_urls.py): what any read costs.
        with api_server(workdir, redis_url, DJANGO_SETTINGS_MODULE="bench.api_floor_settings") as base:

            async def http_runs() -> dict[str, Load]:
                reads = {
                    "status": (f"/v1/projects/{project.pk}/status", auth),
                    "job": (f"/v1/jobs/{job.pk}", auth),
                    "authenticated": ("/bench/authenticated", auth),
                    "query": ("/bench/query", {}),
                    "healthz": ("/healthz", {}),
                }
                return {
                    name: await http_load(base, path, headers=headers, seconds=SECONDS, concurrency=CONCURRENCY)
                    for name, (path, headers) in reads.items()
                }

            loads = asyncio.run(http_runs())
            if errors := sum(load.errors for load in loads.values()):
                raise AssertionError(f"bench_api: {errors} HTTP errors (must be 0): see {workdir}/api-server.log")
            hub = asyncio.run(hub_fan_out(base, owner=owner, token=token))
    with bare_broadcast_server() as address:
        bare = asyncio.run(bare_fan_out(address))
    shutil.rmtree(workdir, ignore_errors=True)

    status, job_read, health = loads["status"], loads["job"], loads["healthz"]
    authenticated, query = loads["authenticated"], loads["query"]
    errors = sum(load.errors for load in loads.values())
    lost = hub.lost + bare.lost
    if errors or lost:
        raise AssertionError(f"bench_api: {errors} HTTP errors, {lost} hub messages lost (both must be 0)")
    c, n = CONCURRENCY, HUB_CLIENTS
    return [
        Result(f"api: GET status, {c} clients, vs /healthz, req/s", status.rate, health.rate, "r/s"),
        Result(f"api: GET status p99, {c} clients, vs /healthz, ms", status.p99_ms, health.p99_ms, "ms"),
        Result(f"api: GET job, {c} clients, vs /healthz, req/s", job_read.rate, health.rate, "r/s"),
        Result(f"api: GET job p99, {c} clients, vs /healthz, ms", job_read.p99_ms, health.p99_ms, "ms"),
        Result(f"api: GET one SQL query, {c} clients, vs /healthz, req/s", query.rate, health.rate, "r/s"),
        Result(
            f"api: GET authenticated constant, {c} clients, vs /healthz, req/s", authenticated.rate, health.rate, "r/s"
        ),
        Result(
            f"api: GET status vs authenticated constant, {c} clients, req/s", status.rate, authenticated.rate, "r/s"
        ),
        Result(f"api: hub fan-out to {n} clients vs bare ws, msg/s", hub.rate, bare.rate, "m/s"),
        Result("api: hub publish-to-receipt p99 vs bare ws, ms", hub.p99_ms, bare.p99_ms, "ms"),
        Result(
            "api: errors and lost messages vs requests and messages",
            float(errors + lost),
            float(sum(load.count for load in loads.values()) + hub.count + bare.count),
            "n",
        ),
    ]
