"""The page pool: the pages this process has at the engine, drawn from every batch it runs.

A model server works on at most `--max-num-seqs` sequences at once; what keeps the GPU full
is that many pages are in flight at it, whichever books they come from. A worker process
runs many batches at once (the GPU worker's Celery threads), and every batch hands its
pages to this one pool instead of owning threads of its own: ENGINE_CONCURRENCY threads
take the waiting page with the lowest priority first — the job's queue position, then the
order it was handed in — so a book's 1-page calibration batch and another's 369-page last
rung share the server's slots, and the job that started first keeps its lead.

A page handed in is a `Future` (concurrent.futures'): a batch cancels the ones not started
when it stops, and waits for the rest as before. The pool belongs to the process (it is
made again after a fork, and when ENGINE_CONCURRENCY changes, the old one finishing what it
was given). See docs/deploy.md, "Sizing a GPU node".
"""

from __future__ import annotations

import heapq
import itertools
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.conf import settings

from core.metrics import ENGINE_POOL_PAGES as POOL_PAGES

T = TypeVar("T")


@dataclass(order=True)
class _Work:
    priority: int
    order: int
    future: Future[Any] = field(compare=False)
    call: Callable[[], Any] = field(compare=False)


class PagePool:
    """At most `size` calls at once, from as many threads; the waiting call with the lowest
    `priority` (then the earliest) runs next. Threads start on the first call."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self.pid = os.getpid()
        self._waiting: list[_Work] = []
        self._order = itertools.count()
        self._ready = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._closed = False
        self.in_flight = 0

    def submit(self, priority: int, call: Callable[..., T], *args: Any) -> Future[T]:
        """Hands `call(*args)` to the pool; its result (or exception) comes in the future."""
        future: Future[T] = Future()
        with self._ready:
            if self._closed:
                raise RuntimeError("the page pool is closed")
            if not self._threads:
                self._start()
            heapq.heappush(self._waiting, _Work(priority, next(self._order), future, lambda: call(*args)))
            POOL_PAGES.labels("waiting").inc()
            self._ready.notify()
        return future

    def waiting(self) -> int:
        """Calls handed in and not started (cancelled ones included until a thread drops them)."""
        with self._ready:
            return len(self._waiting)

    def close(self) -> None:
        """No more calls; the threads finish the waiting ones, then end."""
        with self._ready:
            self._closed = True
            self._ready.notify_all()

    def _start(self) -> None:
        for number in range(self.size):
            thread = threading.Thread(target=self._serve, name=f"page-pool-{number}", daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self) -> None:
        while True:
            with self._ready:
                while not self._waiting and not self._closed:
                    self._ready.wait()
                if not self._waiting:
                    return
                work = heapq.heappop(self._waiting)
                POOL_PAGES.labels("waiting").dec()
                if not work.future.set_running_or_notify_cancel():
                    continue
                self.in_flight += 1
            POOL_PAGES.labels("in_flight").inc()
            try:
                result = work.call()
            except BaseException as error:  # handed to the batch, which decides what it means
                work.future.set_exception(error)
            else:
                work.future.set_result(result)
            finally:
                POOL_PAGES.labels("in_flight").dec()
                with self._ready:
                    self.in_flight -= 1


_lock = threading.Lock()
_pool: PagePool | None = None


def page_pool() -> PagePool:
    """This process's pool, ENGINE_CONCURRENCY pages at once."""
    global _pool
    with _lock:
        pool = _pool
        if pool is None or pool.pid != os.getpid() or pool.size != max(1, settings.ENGINE_CONCURRENCY):
            if pool is not None and pool.pid == os.getpid():
                pool.close()
            pool = _pool = PagePool(settings.ENGINE_CONCURRENCY)
        return pool
