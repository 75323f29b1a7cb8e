"""Idempotency: completed responses replayed to the same key or (within the window) the
same body, a key reused with another body, keys per owner, in-progress and abandoned
claims, expiry, concurrent requests with one key, a keyless duplicate that waits for the
first's answer, and refusals (402, 409) that are not kept (through POST /v1/projects, the
development top-up, process and process-next-batch)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.services.users import token_issue
from core.idempotency import fingerprint_of, idempotency_records_purge
from core.models import IdempotencyRecord
from projects.models import Job, NormalizeState, Project, ProjectStatus
from tests.factories import ProjectFactory, pages_add
from tests.support.pdfs import pdf_bytes
from tests.support.problems import assert_problem
from wallet.models import EntryKind, Hold, TopUp, Wallet
from wallet.services.ledger import wallet_credit

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
    assert same["Retry-After"] == "1"
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


# --- Completed requests (through the development top-up, a billable POST) ----------------

TOP_UP = "/v1/wallet/top-up"


@pytest.fixture
def manual_top_ups(settings):  # type: ignore[no-untyped-def]
    settings.DEVELOPMENT_DEPLOYMENT = True


def top_ups_of(user) -> int:  # type: ignore[no-untyped-def]
    return TopUp.objects.filter(user=user).count()


def test_a_completed_response_is_replayed_to_the_same_key(auth_client, user, manual_top_ups):
    first = auth_client.post(TOP_UP, {"amount": 7}, format="json", HTTP_IDEMPOTENCY_KEY="pay-1")
    again = auth_client.post(TOP_UP, {"amount": 7}, format="json", HTTP_IDEMPOTENCY_KEY="pay-1")

    assert first.status_code == again.status_code == 200
    assert "Idempotent-Replayed" not in first.headers
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert top_ups_of(user) == 1
    assert Wallet.objects.get(user=user).balance == 7


def test_the_same_key_with_another_body_after_completion_is_refused_and_changes_nothing(
    auth_client, user, manual_top_ups
):
    auth_client.post(TOP_UP, {"amount": 7}, format="json", HTTP_IDEMPOTENCY_KEY="pay-2")

    other = auth_client.post(TOP_UP, {"amount": 8}, format="json", HTTP_IDEMPOTENCY_KEY="pay-2")

    assert_problem(other, 422, "idempotency_key_reused")
    assert top_ups_of(user) == 1
    assert Wallet.objects.get(user=user).balance == 7


def test_the_same_body_without_a_key_is_a_double_submit_within_the_window_only(auth_client, user, manual_top_ups):
    first = auth_client.post(TOP_UP, {"amount": 7}, format="json")
    double = auth_client.post(TOP_UP, {"amount": 7}, format="json")
    other_body = auth_client.post(TOP_UP, {"amount": 6}, format="json")

    assert double.headers["Idempotent-Replayed"] == "true"
    assert double.json()["reference"] == first.json()["reference"]
    assert other_body.status_code == 200
    assert "Idempotent-Replayed" not in other_body.headers
    assert top_ups_of(user) == 2

    IdempotencyRecord.objects.filter(owner=user).update(expires_at=timezone.now() - timedelta(seconds=1))
    later = auth_client.post(TOP_UP, {"amount": 7}, format="json")

    assert later.status_code == 200
    assert later.json()["reference"] != first.json()["reference"]
    assert top_ups_of(user) == 3


def test_keys_are_per_owner(auth_client, user, other_user, jwt_client, manual_top_ups):
    mine = auth_client.post(TOP_UP, {"amount": 7}, format="json", HTTP_IDEMPOTENCY_KEY="shared")
    theirs = jwt_client(other_user).post(TOP_UP, {"amount": 7}, format="json", HTTP_IDEMPOTENCY_KEY="shared")

    assert "Idempotent-Replayed" not in theirs.headers
    assert theirs.json()["reference"] != mine.json()["reference"]
    assert (top_ups_of(user), top_ups_of(other_user)) == (1, 1)


def test_a_402_is_a_refusal_before_work_and_is_not_kept(auth_client, user, settings, local_storage):
    settings.TRANSLATION_ENGINE = "echo"
    project = ProjectFactory(owner=user)
    pages_add(project, 3)

    refused = auth_client.post(f"/v1/projects/{project.pk}/process", HTTP_IDEMPOTENCY_KEY="start")

    assert_problem(refused, 402, "insufficient_credit")
    assert not IdempotencyRecord.objects.filter(owner=user).exists()


# --- Refusals are answered afresh; a keyless duplicate waits for the first's answer ----------


def credit(user, amount: str = "5") -> None:  # type: ignore[no-untyped-def]
    wallet_credit(user=user, amount=Decimal(amount), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id="seed")


@pytest.mark.parametrize("key", [None, "start-1"], ids=["no key", "same key"])
def test_a_409_is_not_kept_and_the_book_once_startable_is_started(auth_client, user, settings, key):
    settings.TRANSLATION_ENGINE = "echo"
    project = ProjectFactory(owner=user, status=ProjectStatus.CREATED, normalize_state=NormalizeState.NOT_STARTED)
    pages_add(project, 3, text_layer="A page of text. " * 20, has_text_layer=True)
    credit(user)
    headers = {} if key is None else {"HTTP_IDEMPOTENCY_KEY": key}

    refused = auth_client.post(f"/v1/projects/{project.pk}/process", **headers)

    assert_problem(refused, 409, "project_not_startable")
    assert not IdempotencyRecord.objects.filter(owner=user).exists()
    assert not Job.objects.exists()

    Project.objects.filter(pk=project.pk).update(status=ProjectStatus.CALIBRATING, normalize_state=NormalizeState.DONE)
    started = auth_client.post(f"/v1/projects/{project.pk}/process", **headers)

    assert started.status_code == 202, started.json()
    assert "Idempotent-Replayed" not in started.headers
    assert started.json()["jobId"] == str(Job.objects.get(project=project).pk)


def in_background(token: str, path: str) -> Callable[[], Any]:
    """POSTs `path` (no body, no key) from another thread; a function that waits for its
    response."""
    executor = ThreadPoolExecutor(max_workers=1)

    def call() -> Any:
        caller = APIClient()
        caller.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        try:
            return caller.post(path)
        finally:
            connection.close()

    future = executor.submit(call)
    executor.shutdown(wait=False)
    return lambda: future.result(timeout=60)


def running_claim_of(user) -> None:  # type: ignore[no-untyped-def]
    """Waits until a request of the user holds an idempotency claim (is running)."""
    deadline = time.monotonic() + 30
    while not IdempotencyRecord.objects.filter(owner=user, state=IdempotencyRecord.State.IN_PROGRESS).exists():
        assert time.monotonic() < deadline, "the first request never started"
        time.sleep(0.01)


@pytest.fixture
def slow_book(user, settings, local_storage):  # type: ignore[no-untyped-def]
    """A 10-page book and credit for it; the echo engine takes a second a page."""
    settings.TRANSLATION_ENGINE = "echo"
    settings.TRANSLATION_ENGINE_OPTIONS = {"delay_seconds": 1.0}
    project = ProjectFactory(owner=user)
    pages_add(project, 10, text_layer="A page of text. " * 20, has_text_layer=True)
    credit(user)
    return project


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_keyless_duplicate_of_a_running_request_waits_and_gets_its_answer(user, jwt_client, slow_book):
    path = f"/v1/projects/{slow_book.pk}/process-next-batch"
    first = in_background(token_issue(user=user).token, path)
    running_claim_of(user)

    duplicate = jwt_client(user).post(path)

    original = first()
    assert original.status_code == 200, original.json()
    assert "Idempotent-Replayed" not in original.headers
    assert duplicate.status_code == 200, duplicate.json()
    assert duplicate.headers["Idempotent-Replayed"] == "true"
    assert duplicate.json() == original.json()
    assert Job.objects.filter(project=slow_book).count() == 1
    assert Hold.objects.filter(wallet__user=user).count() == 1


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_keyless_duplicate_that_waited_its_bound_is_told_to_retry(user, jwt_client, slow_book, settings):
    settings.DOUBLE_SUBMIT_WAIT_SECONDS = 0.2
    path = f"/v1/projects/{slow_book.pk}/process-next-batch"
    first = in_background(token_issue(user=user).token, path)
    running_claim_of(user)

    duplicate = jwt_client(user).post(path)

    assert_problem(duplicate, 409, "request_in_progress")
    assert duplicate["Retry-After"] == "1"
    assert first().status_code == 200
    assert Job.objects.filter(project=slow_book).count() == 1
