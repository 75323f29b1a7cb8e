"""The page pool: at most ENGINE_CONCURRENCY pages at the engine from every batch of the
process, the lowest priority (a job's queue position) first, cancellable until started."""

from __future__ import annotations

import threading
import time

import pytest

from translation.engines.pool import PagePool, page_pool


def wait_for(condition, *, what: str, timeout: float = 10.0) -> None:
    """Polls `condition` (a deadline against hanging, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


@pytest.fixture
def pool():
    made: list[PagePool] = []

    def make(size: int) -> PagePool:
        made.append(PagePool(size))
        return made[-1]

    yield make
    for each in made:
        each.close()


def test_no_more_calls_run_at_once_than_the_pools_size_and_the_rest_wait(pool):
    pages = pool(3)
    go = threading.Event()
    futures = [pages.submit(0, go.wait, 10) for _ in range(10)]

    wait_for(lambda: pages.in_flight == 3, what="three calls running")
    assert pages.waiting() == 7
    assert sum(future.running() for future in futures) == 3
    go.set()
    assert [future.result(timeout=10) for future in futures] == [True] * 10
    assert (pages.in_flight, pages.waiting()) == (0, 0)


def test_the_waiting_call_with_the_lowest_priority_runs_next_then_the_earliest_handed_in(pool):
    pages = pool(1)
    go = threading.Event()
    first = pages.submit(100, go.wait, 10)
    wait_for(first.running, what="the first call to run")
    ran: list[str] = []
    names = [(5, "five"), (1, "one-a"), (3, "three"), (1, "one-b"), (2, "two")]
    futures = [pages.submit(priority, ran.append, name) for priority, name in names]

    go.set()
    for future in futures:
        future.result(timeout=10)
    assert ran == ["one-a", "one-b", "two", "three", "five"]


def test_a_call_cancelled_before_it_starts_never_runs(pool):
    pages = pool(1)
    go = threading.Event()
    first = pages.submit(0, go.wait, 10)
    wait_for(first.running, what="the first call to run")
    ran: list[str] = []
    cancelled = pages.submit(0, ran.append, "cancelled")
    kept = pages.submit(0, ran.append, "kept")

    assert cancelled.cancel()
    assert not first.cancel()  # already at the engine: it finishes and counts
    go.set()
    kept.result(timeout=10)
    assert ran == ["kept"]
    assert cancelled.cancelled()


def test_an_exception_reaches_the_caller_and_the_pool_goes_on(pool):
    pages = pool(1)

    def fails() -> None:
        raise ValueError("the engine failed on this page")

    failed = pages.submit(0, fails)
    after = pages.submit(0, lambda: "next page")

    assert isinstance(failed.exception(timeout=10), ValueError)
    assert after.result(timeout=10) == "next page"


def test_a_closed_pool_finishes_what_it_was_given_and_takes_nothing_more(pool):
    pages = pool(1)
    go = threading.Event()
    futures = [pages.submit(0, go.wait, 10) for _ in range(3)]

    pages.close()
    with pytest.raises(RuntimeError):
        pages.submit(0, go.wait, 10)
    go.set()
    assert [future.result(timeout=10) for future in futures] == [True] * 3


def test_the_process_has_one_pool_sized_by_engine_concurrency(settings):
    settings.ENGINE_CONCURRENCY = 3
    first = page_pool()
    assert first.size == 3
    assert page_pool() is first

    settings.ENGINE_CONCURRENCY = 5
    second = page_pool()
    assert second is not first
    assert second.size == 5
    with pytest.raises(RuntimeError):  # the old pool was closed when the setting changed
        first.submit(0, print)
