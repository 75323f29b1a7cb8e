"""GET /healthz and GET /readyz: anonymous, cheap, outside /v1 and its HTTPS redirect."""

from __future__ import annotations

import socket

import pytest


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def echo_engine(settings):
    settings.TRANSLATION_ENGINE = "echo"
    settings.TRANSLATION_ENGINE_OPTIONS = {}


def test_healthz_answers_ok_without_touching_the_database(api_client):
    # No database access is allowed in this test: a query would fail the request.
    response = api_client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert "no-cache" in response["Cache-Control"]


@pytest.mark.django_db
def test_readyz_is_ok_when_the_database_redis_and_storage_answer(api_client, local_storage, echo_engine):
    response = api_client.get("/readyz")

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["checks"] == {"database": {"ok": True}, "redis": {"ok": True}, "storage": {"ok": True}}
    assert body["engine"]["engine"] == "echo"
    assert body["engine"]["state"] == "ready"
    assert "failed" not in body


@pytest.mark.django_db
def test_readyz_is_503_naming_redis_when_the_broker_does_not_answer(api_client, settings, local_storage, echo_engine):
    port = closed_port()
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{port}/0"

    response = api_client.get("/readyz")

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["failed"] == ["redis"]
    assert body["checks"]["redis"] == {"ok": False, "error": "ConnectionError"}
    assert body["checks"]["database"] == {"ok": True}
    assert str(port) not in response.content.decode()  # the body is public: no addresses


@pytest.mark.django_db
def test_readyz_stays_ready_while_the_engine_is_not(api_client, settings, local_storage, echo_engine):
    settings.TRANSLATION_ENGINE_OPTIONS = {"unavailable": True}

    response = api_client.get("/readyz")

    assert response.status_code == 200
    assert response.json()["engine"]["state"] == "starting"


@pytest.mark.django_db
def test_health_endpoints_are_anonymous_and_not_redirected_to_https(api_client, settings, local_storage, echo_engine):
    settings.SECURE_SSL_REDIRECT = True
    settings.METRICS_TOKEN = "scrape-token"

    assert api_client.get("/v1/meta").status_code == 301
    assert api_client.get("/healthz").status_code == 200
    assert api_client.get("/readyz").status_code == 200
    assert api_client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token").status_code == 200


@pytest.mark.django_db
def test_health_endpoints_refuse_writes(api_client):
    assert api_client.post("/healthz").status_code == 405
    assert api_client.post("/readyz").status_code == 405
