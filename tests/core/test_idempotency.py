"""Idempotency records: in-progress claims, abandoned claims, expiry (through POST /v1/projects)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from core.idempotency import fingerprint_of, idempotency_records_purge
from core.models import IdempotencyRecord
from projects.models import Project
from tests.support.pdfs import pdf_bytes
from tests.support.problems import assert_problem

pytestmark = pytest.mark.django_db

BODY = {"uploadKey": "upl_does-not-exist"}


def claim(user, *, key: str, age: timedelta = timedelta(0), fingerprint: str = "x" * 64) -> IdempotencyRecord:
    now = timezone.now()
    return IdempotencyRecord.objects.create(
        owner=user, key=key, fingerprint=fingerprint, created_at=now - age, expires_at=now + timedelta(hours=1)
    )


def test_a_key_still_in_progress_is_a_conflict_and_another_body_is_refused(auth_client, user):
    parsed = {"upload_key": BODY["uploadKey"]}  # what the view sees after camelCase parsing
    claim(user, key="k1", fingerprint=fingerprint_of(method="POST", path="/v1/projects", data=parsed))

    same = auth_client.post("/v1/projects", BODY, format="json", HTTP_IDEMPOTENCY_KEY="k1")
    other = auth_client.post("/v1/projects", {"uploadKey": "upl_other"}, format="json", HTTP_IDEMPOTENCY_KEY="k1")

    assert_problem(same, 409, "request_in_progress")
    assert_problem(other, 422, "idempotency_key_reused")


def test_an_abandoned_claim_is_taken_over(auth_client, user, settings):
    claim(user, key="k3", age=timedelta(seconds=settings.IDEMPOTENCY_IN_PROGRESS_TIMEOUT_SECONDS + 1))

    response = auth_client.post("/v1/projects", BODY, format="json", HTTP_IDEMPOTENCY_KEY="k3")

    assert_problem(response, 400, "upload_key_unknown")
    assert not IdempotencyRecord.objects.filter(key="k3").exists()


@pytest.mark.parametrize("key", ["", "x" * 256, "naïve-key", "tab\there"])
def test_a_malformed_idempotency_key_is_refused(auth_client, key):
    response = auth_client.post("/v1/projects", BODY, format="json", HTTP_IDEMPOTENCY_KEY=key)

    assert_problem(response, 400, "idempotency_key_invalid")


def test_expired_records_are_purged(user):
    claim(user, key="old")
    IdempotencyRecord.objects.filter(key="old").update(expires_at=timezone.now() - timedelta(seconds=1))
    claim(user, key="fresh")

    assert idempotency_records_purge() == 1
    assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == ["fresh"]


def _race(token: str, *, upload_key: str, idempotency_key: str, callers: int) -> list[tuple[int, dict]]:
    """`callers` threads POST the same create at the same moment; their (status, body)."""
    barrier = threading.Barrier(callers)
    results: list[tuple[int, dict]] = []

    def call() -> None:
        caller = APIClient()
        caller.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        barrier.wait()
        response = caller.post(
            "/v1/projects", {"uploadKey": upload_key}, format="json", HTTP_IDEMPOTENCY_KEY=idempotency_key
        )
        results.append((response.status_code, response.json()))
        connection.close()

    threads = [threading.Thread(target=call) for _ in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return results


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_with_one_key_have_one_effect(user, jwt_client, local_storage):
    client = jwt_client(user)
    token = client._credentials["HTTP_AUTHORIZATION"].split()[1]
    rounds, callers = 4, 6
    for round_number in range(rounds):
        upload_key = client.post(
            "/v1/uploads", {"file": SimpleUploadedFile("b.pdf", pdf_bytes(1))}, format="multipart"
        ).json()["uploadKey"]

        results = _race(token, upload_key=upload_key, idempotency_key=f"same-{round_number}", callers=callers)

        assert len(results) == callers
        assert {status for status, _ in results} <= {201, 409}, results
        assert len({body["id"] for status, body in results if status == 201}) == 1
        assert all(body["code"] == "request_in_progress" for status, body in results if status == 409)
    assert Project.objects.count() == rounds
