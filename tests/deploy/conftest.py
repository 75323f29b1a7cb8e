"""The deployment tests: the compose file as Compose reads it with an operator's `.env`
(docker/env.example, blanks filled), and the shared `services` fixture (tests/conftest.py)
to start its commands as real processes on this test's PostgreSQL
database and Redis, every process killed at the end."""

from __future__ import annotations

from typing import Any

import pytest

from tests.deploy.stack import Service, compose_load, dot_env, services_of


@pytest.fixture(scope="module")
def variables() -> dict[str, str]:
    return dot_env()


@pytest.fixture(scope="module")
def compose(variables: dict[str, str]) -> dict[str, Any]:
    return compose_load(variables)


@pytest.fixture(scope="module")
def stack(compose: dict[str, Any]) -> dict[str, Service]:
    """The compose file's services, by name."""
    return services_of(compose)
