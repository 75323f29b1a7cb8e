"""Platform overhead: a 1,000-page book through the whole ladder with the echo engine.

The pipeline, as a worker runs it: the process call over HTTP (gate, hold, job, in one
transaction), then the worker's entry point `projects.tasks.job_run_next` until the book is
Complete — claim, pages to the engine from ENGINE_CONCURRENCY threads, a commit per page,
settlement, the next rung queued (1, 5, 25, 100, then 869 pages). Celery messages go to an
in-memory broker (nothing consumes them: this process is the worker), so the figures have
no broker hop in them (a Redis round trip per batch, five per book).

Engine time is measured from inside: the engine is a subclass of the echo engine, defined
here, that records when each `translate` call starts and ends; the time during which no
page is at the engine is the platform's own.

- No delay: pages/s of the book over pages/s of the same engine alone on the same pages
  from as many threads (what the platform adds per page), and the share of the wall time
  during which no page is at the engine.
- A per-page delay standing for a GPU (0.1 s, 8 at once: at most 80 pages/s): pages/s over
  the engine's ideal for the same ladder (each batch takes ceil(pages / 8) x 0.1 s), and
  the share of wall time with no page at the engine.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from decimal import Decimal

from django.conf import settings
from django.db.models import Count
from django.test import Client, override_settings

from accounts.models import User
from accounts.services.users import token_issue
from bench.common import Result
from config.celery_app import app as celery_app
from projects.models import Page, PageStatus, Project, ProjectStatus
from projects.tasks import job_run_next
from tests.factories import ProjectFactory, pages_add
from translation.engines import PageInput, PageResult, engine_get
from translation.engines import factory as engine_factory
from translation.engines.echo import EchoEngine
from wallet.models import EntryKind
from wallet.services.ledger import wallet_credit

BOOK_PAGES = 1000
WORDS_PER_PAGE = 250
DELAYED_CONCURRENCY = 8
DELAY_SECONDS = 0.1
# Words a page of a novel is made of (for variety, not meaning).
_PROSE = (
    "the of and to in a is that for it as was with be by on not he this are or his from at which but have an "
    "they you were her she there been one all we their has would when if so no will more out up into do any "
    "river morning letter garden window evening mountain silence harbour journey promise kingdom lantern"
)
_WORDS = tuple(_PROSE.split())


# --- shared with bench_saturation --------------------------------------------------------


@contextmanager
def pipeline_settings(**overrides: object) -> Iterator[None]:
    """Settings for a book run in this process: the cache, the hub's channel layer and
    Celery's broker in memory (the benchmark needs no Redis), plus `overrides`."""
    celery_app.conf.broker_url = "memory://localhost/"
    locmem = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    channels = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    with override_settings(CACHES=locmem, CHANNEL_LAYERS=channels, **overrides):
        yield


def page_text(index: int) -> str:
    """A page of prose, different on every page (so no page repeats its neighbour's end)."""
    words = random.Random(index).choices(_WORDS, k=WORDS_PER_PAGE)
    return f"Page {index}. " + " ".join(words).capitalize() + "."


def page_input(index: int, *, previous_context: str = "") -> PageInput:
    """Page `index` of the bench's book, to be translated into French, as an engine is given it."""
    return PageInput(
        page_id=str(index),
        index=index,
        text=page_text(index),
        image=None,
        source_language=None,
        target_language="fr",
        previous_context=previous_context,
    )


def book_create(*, email: str, pages: int) -> tuple[User, Project]:
    """A reader with credit and a normalized book of `pages` text pages (rows only)."""
    owner = User.objects.create_user(email, "bench-password-123", display_name="Bench")
    wallet_credit(user=owner, amount=Decimal(1000), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id=email)
    project = ProjectFactory.create(owner=owner, target_language_code="fr")
    rows = pages_add(project, pages, has_text_layer=True)
    for row in rows:
        row.text_layer = page_text(row.index)
    Page.objects.bulk_update(rows, ["text_layer"], batch_size=500)
    return owner, project


def ladder_run(*, owner: User, project: Project) -> float:
    """Seconds from POST process to the book Complete, a worker running its batches."""
    client = Client()
    token = token_issue(user=owner).token
    started = time.perf_counter()
    response = client.post(
        f"/v1/projects/{project.pk}/process", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.status_code == 202, response.content
    while job_run_next() is not None:
        pass
    seconds = time.perf_counter() - started
    project.refresh_from_db()
    statuses = dict(project.pages.values_list("status").annotate(n=Count("pk")))
    assert project.status == ProjectStatus.COMPLETE, (project.status, statuses)
    assert statuses == {PageStatus.APPROVED: project.pages.count()}, statuses
    return seconds


def ladder_batches(pages: int) -> list[int]:
    """The batch sizes of a book of `pages` pages: the ladder, then the rest."""
    sizes: list[int] = []
    for rung in settings.BATCH_LADDER:
        if pages - sum(sizes) <= 0:
            return sizes
        sizes.append(min(rung, pages - sum(sizes)))
    return sizes + ([pages - sum(sizes)] if pages > sum(sizes) else [])


def ideal_ladder_seconds(*, pages: int, concurrency: int, latency: float) -> float:
    """The engine's time for the book if nothing else took any: each batch in rounds of
    `concurrency` pages of `latency` seconds."""
    return sum(math.ceil(size / concurrency) * latency for size in ladder_batches(pages))


# --- the engine, timed from inside -------------------------------------------------------


class TimedEchoEngine(EchoEngine):
    """The echo engine, recording when each page was at it."""

    def __init__(self, **options: object) -> None:
        super().__init__(**options)  # type: ignore[arg-type]
        self.spans: list[tuple[float, float]] = []
        self._spans_lock = threading.Lock()

    def translate(self, page: PageInput) -> PageResult:
        started = time.perf_counter()
        try:
            return super().translate(page)
        finally:
            ended = time.perf_counter()
            with self._spans_lock:
                self.spans.append((started, ended))


def busy_seconds(spans: list[tuple[float, float]]) -> float:
    """The length of the union of the spans: time during which some page was at the engine."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end <= reach:
            continue
        total += end - max(start, reach)
        reach = end
    return total


@contextmanager
def timed_echo_engine(*, delay_seconds: float) -> Iterator[TimedEchoEngine]:
    """The echo engine the pipeline uses while inside: engine_get() hands it out as long as
    the engine settings stay as they are."""
    engine = TimedEchoEngine(delay_seconds=delay_seconds)
    engine_get()  # the factory's key for the current settings
    saved = engine_factory._current
    assert saved is not None
    engine_factory._current = (saved[0], engine)
    try:
        yield engine
    finally:
        engine_factory._current = None


def echo_run(*, email: str, concurrency: int, delay_seconds: float) -> tuple[float, float]:
    """(seconds, seconds with some page at the engine) for a BOOK_PAGES book."""
    owner, project = book_create(email=email, pages=BOOK_PAGES)
    with (
        pipeline_settings(
            TRANSLATION_ENGINE="echo",
            ENGINE_CONCURRENCY=concurrency,
            TRANSLATION_ENGINE_OPTIONS={"delay_seconds": delay_seconds},
        ),
        timed_echo_engine(delay_seconds=delay_seconds) as engine,
    ):
        seconds = ladder_run(owner=owner, project=project)
    return seconds, busy_seconds(engine.spans)


def engine_alone_rate(*, concurrency: int) -> float:
    """Pages/s of the echo engine alone on BOOK_PAGES pages, from `concurrency` threads."""
    engine = EchoEngine()
    inputs = [page_input(index, previous_context=page_text(index - 1)[-600:]) for index in range(1, BOOK_PAGES + 1)]
    translate: Callable[[PageInput], PageResult] = engine.translate
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(translate, inputs))
    return BOOK_PAGES / (time.perf_counter() - started)


def run() -> list[Result]:
    concurrency = settings.ENGINE_CONCURRENCY
    alone = engine_alone_rate(concurrency=concurrency)
    seconds, busy = echo_run(email="overhead-bench@example.com", concurrency=concurrency, delay_seconds=0)
    delayed_seconds, delayed_busy = echo_run(
        email="overhead-delay-bench@example.com", concurrency=DELAYED_CONCURRENCY, delay_seconds=DELAY_SECONDS
    )
    ideal = ideal_ladder_seconds(pages=BOOK_PAGES, concurrency=DELAYED_CONCURRENCY, latency=DELAY_SECONDS)
    return [
        Result("overhead: 1,000 pages, echo, vs echo alone, p/s", BOOK_PAGES / seconds, alone, "p/s"),
        Result("overhead: echo, wall time with no page at engine", 100 * (1 - busy / seconds), 100, "%"),
        Result(
            f"overhead: echo {DELAY_SECONDS:g} s x {DELAYED_CONCURRENCY} vs its ideal ladder, p/s",
            BOOK_PAGES / delayed_seconds,
            BOOK_PAGES / ideal,
            "p/s",
        ),
        Result(
            f"overhead: echo {DELAY_SECONDS:g} s, wall time with no page at eng.",
            100 * (1 - delayed_busy / delayed_seconds),
            100,
            "%",
        ),
    ]
