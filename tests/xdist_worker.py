"""Each pytest-xdist worker on a Redis database of its own, as pytest-django gives it a
database of its own. Loaded before Django's settings (scripts/test.sh runs the suite with
`-n auto -p tests.xdist_worker`), it moves the worker's Redis addresses (the Celery broker,
the cache and the hub's channel layer) from database N to N + the worker's number. Without
it, one worker's Celery workers would take the other's tasks, and each test's
`cache.clear()` would wipe the other's counters. Outside xdist it changes nothing."""

from __future__ import annotations

import os
import re

REDIS_ADDRESSES = ("REDIS_URL", "CELERY_BROKER_URL", "CACHE_URL", "CHANNELS_REDIS_URL")
_DATABASE = re.compile(r"/(\d+)$")


def worker_redis_url(url: str, worker_number: int) -> str:
    """The address of database N + worker_number on the same server (N is 0 when the
    address names none)."""
    found = _DATABASE.search(url)
    base = int(found.group(1)) if found else 0
    stem = url[: found.start()] if found else url.rstrip("/")
    return f"{stem}/{base + worker_number}"


_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _worker.startswith("gw"):
    for _name in REDIS_ADDRESSES:
        if os.environ.get(_name):
            os.environ[_name] = worker_redis_url(os.environ[_name], int(_worker.removeprefix("gw")))
