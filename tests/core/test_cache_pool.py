"""The cache's Redis pool is the process's, not each request's (core/cache.py): cache
objects made in other threads or request contexts use the same connections."""

from __future__ import annotations

import threading

from django.core.cache import cache, caches


def test_cache_objects_of_other_threads_share_one_redis_pool():
    pools = []

    def use_the_cache() -> None:
        mine = caches["default"]  # a new object: the handler is context-local
        mine.set("pool-probe", threading.get_ident())
        pools.append((mine, mine._cache.get_client().connection_pool))

    threads = [threading.Thread(target=use_the_cache) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert len({id(made) for made, _ in pools}) == 3
    assert len({id(pool) for _, pool in pools}) == 1
    assert pools[0][1] is cache._cache.get_client().connection_pool
