"""Fixtures shared by every test: API clients signed in each way, and a clean cache."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from moto.server import ThreadedMotoServer
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from accounts.models import User
from accounts.services.api_keys import api_key_create
from accounts.services.users import token_issue
from config.celery_app import app
from tests.e2e.processes import Services
from tests.factories import UserFactory
from tests.support.s3 import BUCKET, CREDENTIALS, s3_storages
from tests.wallet.stripe_stand_in import API_KEY as STRIPE_API_KEY
from tests.wallet.stripe_stand_in import WEBHOOK_SECRET as STRIPE_WEBHOOK_SECRET
from tests.wallet.stripe_stand_in import StripeStandIn
from translation.engines import model_status_local_drop


@pytest.fixture(autouse=True)
def _clean_cache() -> Iterator[None]:
    """Rate-limit counters live in Redis; each test starts from none (and from no model
    status kept in this process: translation/engines/status.py)."""
    cache.clear()
    model_status_local_drop()
    yield
    cache.clear()
    model_status_local_drop()


@pytest.fixture(autouse=True)
def _echo_engine_by_default(settings: Settings) -> None:
    """Tests translate with the echo engine (any source into any of the 20 targets), unless
    they name another; the embedded default (local) translates only its installed pairs and
    would refuse most books' languages."""
    settings.TRANSLATION_ENGINE = "echo"


@pytest.fixture
def local_engine(settings: Settings) -> Settings:
    """The local engine translates, with Tesseract and Apertium as found on the PATH (mark
    the test `needs_local_tools`); returns the settings."""
    settings.TRANSLATION_ENGINE = "local"
    settings.TESSERACT_COMMAND = "tesseract"
    settings.APERTIUM_COMMAND = "apertium"
    return settings


@pytest.fixture
def local_storage(settings, tmp_path: Path) -> Path:
    """Stored files go to a fresh folder for this test (returned)."""
    root = tmp_path / "storage"
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(root)}},
    }
    return root


@pytest.fixture
def fresh_tempdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Temporary files (a request's spooled upload, poppler's output, zip entries) go to a
    folder of their own, which must be empty once the test is over."""
    folder = tmp_path / "tempdir"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    assert sorted(os.listdir(folder)) == []


@pytest.fixture
def eager_celery() -> Iterator[None]:
    """Celery runs a sent task at once, in this process (its conf was read at start-up)."""
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = previous


@pytest.fixture
def api_client() -> APIClient:
    return APIClient()


@pytest.fixture
def user(db: None) -> User:
    return UserFactory()


@pytest.fixture
def other_user(db: None) -> User:
    return UserFactory()


@pytest.fixture
def operator(db: None) -> User:
    """A staff superuser, who runs the Django admin."""
    return UserFactory(email="operator@example.com", is_staff=True, is_superuser=True)


@pytest.fixture
def staff_client(client: Client, operator: User) -> Client:
    """Django's test client, signed in to the admin as the operator."""
    client.force_login(operator)
    return client


@pytest.fixture
def stripe_stand_in(settings: Settings) -> Iterator[StripeStandIn]:
    """A running Stripe stand-in, and the settings that send the service's Stripe calls to it."""
    with StripeStandIn.running(api_key=STRIPE_API_KEY) as stand_in:
        settings.STRIPE_SECRET_KEY = STRIPE_API_KEY
        settings.STRIPE_WEBHOOK_SECRET = STRIPE_WEBHOOK_SECRET
        settings.STRIPE_API_BASE = stand_in.base_url
        yield stand_in


@pytest.fixture
def jwt_client() -> Callable[[User], APIClient]:
    """A client signed in as the user with an interactive JWT."""

    def make(for_user: User) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token_issue(user=for_user).token}")
        return client

    return make


@pytest.fixture
def key_client() -> Callable[..., APIClient]:
    """A client authenticated with a new API key of the given scopes."""

    def make(for_user: User, scopes: list[str] | None = None, header: str = "bearer") -> APIClient:
        _, secret = api_key_create(user=for_user, name="test key", scopes=scopes)
        client = APIClient()
        if header == "bearer":
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        else:
            client.credentials(HTTP_X_API_KEY=secret)
        return client

    return make


@pytest.fixture
def auth_client(user: User, jwt_client: Callable[[User], APIClient]) -> APIClient:
    return jwt_client(user)


@pytest.fixture
def services(transactional_db: None, tmp_path: Path, settings: Settings) -> Iterator[Services]:
    """Starts processes for the test and kills every one of them afterwards (before the
    test database is flushed). Stale messages of earlier tests are purged first, so a
    worker only sees this test's. The test's own process uses the engine the processes
    use (echo), so that its calls (the language check of process) agree with theirs."""
    if connection.vendor != "postgresql":
        pytest.skip("the end-to-end tests run on PostgreSQL (workers share the test database)")
    settings.TRANSLATION_ENGINE = "echo"
    app.control.purge()
    started = Services(tmp_path)
    try:
        yield started
    finally:
        started.stop_all()


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server, started once for the session; its address."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3_bucket(s3_endpoint: str, settings: Settings) -> Iterator[Any]:
    """An empty bucket that the default storage writes to (STORAGE_BACKEND s3); a boto3
    client for it. Emptied and removed afterwards."""
    client = boto3.client("s3", endpoint_url=s3_endpoint, **CREDENTIALS)
    client.create_bucket(Bucket=BUCKET)
    settings.STORAGE_BACKEND = "s3"
    settings.STORAGES = s3_storages(settings.STORAGES, s3_endpoint)
    yield client
    for item in client.list_objects_v2(Bucket=BUCKET).get("Contents", []):
        client.delete_object(Bucket=BUCKET, Key=item["Key"])
    client.delete_bucket(Bucket=BUCKET)


@pytest.fixture(params=["local", "s3"])
def stored_keys(request: pytest.FixtureRequest) -> Callable[[], list[str]]:
    """The test runs twice, its files on local storage and then on S3 (moto); returns a
    function listing what is stored: every file (local: also every folder left under
    projects/), every object (S3)."""
    if request.param == "local":
        root: Path = request.getfixturevalue("local_storage")

        def local() -> list[str]:
            found = []
            for path in root.rglob("*"):
                parts = path.relative_to(root).parts
                if path.is_file() or (len(parts) > 1 and parts[0] == "projects"):
                    found.append("/".join(parts))
            return sorted(found)

        return local
    bucket = request.getfixturevalue("s3_bucket")
    return lambda: sorted(item["Key"] for item in bucket.list_objects_v2(Bucket=BUCKET).get("Contents", []))
