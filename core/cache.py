"""The cache's Redis connections, shared by every request of a process.

Django keeps a cache object per request context under ASGI (its cache handler is
context-local), and each object made its own connection pool: every request that touched
the cache (the engine's status in the status view, rate limits) opened, and left behind, a
new Redis connection. `SharedConnectionPool` (CACHES' `pool_class`) hands out one pool per
server and options for the whole process instead; redis-py's pools are thread-safe and
start afresh in a forked child.
"""

from __future__ import annotations

import threading
from typing import Any, Self

import redis


class SharedConnectionPool(redis.ConnectionPool):
    _shared_pools: dict[tuple[str, str], Any] = {}
    _shared_lock = threading.Lock()

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> Self:
        """The process's pool for `url` and these options, made on first use."""
        key = (url, repr(sorted(kwargs.items())))
        with cls._shared_lock:
            if key not in cls._shared_pools:
                cls._shared_pools[key] = super().from_url(url, **kwargs)
            pool: Self = cls._shared_pools[key]
            return pool
