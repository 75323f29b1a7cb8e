"""End-to-end tests with real processes: a Celery worker (and the API server) on this
test's PostgreSQL database and Redis, always killed at the end."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

from config.celery_app import app
from tests.e2e.processes import Services


@pytest.fixture
def services(transactional_db: None, tmp_path: Path) -> Iterator[Services]:
    """Starts processes for the test and kills every one of them afterwards (before the
    test database is flushed). Stale messages of earlier tests are purged first, so a
    worker only sees this test's."""
    if connection.vendor != "postgresql":
        pytest.skip("the end-to-end tests run on PostgreSQL (workers share the test database)")
    app.control.purge()
    started = Services(tmp_path)
    try:
        yield started
    finally:
        started.stop_all()
