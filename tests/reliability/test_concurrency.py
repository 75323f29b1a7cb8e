"""Concurrency over HTTP: 100 identical requests at the same moment against a real API
server process (uvicorn, as `make run` serves it) on this test's PostgreSQL database, for
each billable or effectful POST: process, a manual top-up, a redeem of one code and an
export. Once all with the same Idempotency-Key, once with none (the double-submit window).

Each has exactly one effect (one job and one hold; one credit; one redemption; one render
queued per format), and every answer is the first response or that response replayed
(`Idempotent-Replayed: true`, the same body); with one key, a 409 request_in_progress
problem too (the contract for a key still running), never without a key (a double-submit
waits for the first's answer). Never a 5xx. The database is checked afterwards."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import httpx
import pytest
import redis
from django.conf import settings
from django.utils import timezone

from accounts.models import User
from accounts.services.users import token_issue
from exports.models import ExportFile, ExportStatus
from exports.services import ARCHIVE, SINGLE_FORMATS
from projects.models import Job, JobStatus, PageStatus, Project, ProjectStatus
from tests.e2e.processes import Services
from tests.factories import ProjectFactory, UserFactory, pages_add
from wallet.models import EntryKind, Hold, HoldState, LedgerEntry, RedeemCode, TopUp, Wallet
from wallet.services.ledger import wallet_credit
from wallet.services.redeem import codes_issue

pytestmark = [pytest.mark.slow, pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]

CALLERS = 100
DEADLINE = 120.0  # seconds one request may take before the test fails (a hang guard, not a timing check)
KEYED, KEYLESS = "same Idempotency-Key", "no key (double-submit)"
MODES = [KEYED, KEYLESS]
PAGE_TEXT = "The lamp was lit before the guests arrived, and the house smelled of rain. " * 4


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any
    content_type: str
    replayed: bool


@pytest.fixture
def api(services: Services) -> Iterator[str]:
    """A running API server (a development deployment, so the manual top-up works; the
    redeem limits raised so that all 100 redeems reach the code, not the rate limit);
    its base URL. The export queue's messages in the broker are counted by the export
    test, so none of an earlier test may be left there."""
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    broker.delete("export")
    yield services.api_server(
        DEVELOPMENT_DEPLOYMENT="true", THROTTLE_REDEEM="10000/min", THROTTLE_REDEEM_ADDRESS="10000/min"
    )
    broker.delete("export")
    broker.close()


def fire(
    base: str, path: str, body: dict[str, Any] | None, *, token: str, key: str | None, key_each: bool = False
) -> list[Answer]:
    """CALLERS threads, each with a connection of its own, send the same POST at the same
    moment (a barrier releases them together); their answers. With `key_each`, each
    caller sends an Idempotency-Key of its own (`key` and its number)."""
    barrier = threading.Barrier(CALLERS)
    answers: list[Answer] = []
    failures: list[BaseException] = []
    lock = threading.Lock()

    def call(number: int) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        if key is not None:
            headers["Idempotency-Key"] = f"{key}-{number}" if key_each else key
        try:
            with httpx.Client(base_url=base, timeout=DEADLINE, headers=headers) as client:
                barrier.wait(timeout=DEADLINE)
                response = client.post(path, json=body) if body is not None else client.post(path)
            content_type = response.headers.get("content-type", "")
            parsed = response.json() if "json" in content_type else response.text
            answer = Answer(
                response.status_code, parsed, content_type, response.headers.get("Idempotent-Replayed") == "true"
            )
            with lock:
                answers.append(answer)
        except BaseException as error:
            with lock:
                failures.append(error)

    threads = [threading.Thread(target=call, args=(number,)) for number in range(CALLERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=DEADLINE)
    assert not failures, failures[:3]
    assert len(answers) == CALLERS
    return answers


def assert_one_effect(answers: list[Answer], *, success: int, mode: str) -> Answer:
    """Exactly one answer did the work; every other is it replayed, or (with a key only)
    request_in_progress. Returns the first."""
    tally = Counter((answer.status, answer.replayed) for answer in answers)
    assert all(answer.status < 500 for answer in answers), tally
    originals = [answer for answer in answers if answer.status == success and not answer.replayed]
    assert len(originals) == 1, tally
    first = originals[0]
    for answer in answers:
        if answer is first:
            continue
        if answer.status == 409 and mode == KEYED:
            assert answer.content_type.startswith("application/problem+json"), answer
            assert answer.body["code"] == "request_in_progress", answer
        else:
            assert (answer.status, answer.replayed, answer.body) == (success, True, first.body), answer
    return first


def key_for(mode: str, name: str) -> str | None:
    return f"{name}-{timezone.now().timestamp()}" if mode == KEYED else None


def owner_with_credit(amount: int = 0) -> tuple[User, str]:
    owner = UserFactory()
    if amount:
        wallet_credit(
            user=owner, amount=Decimal(amount), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id="conc"
        )
    return owner, token_issue(user=owner).token


def wallet_of(owner: User) -> Wallet:
    return Wallet.objects.get(user=owner)


@pytest.mark.parametrize("mode", MODES)
def test_a_hundred_process_requests_queue_one_job_with_one_hold(api: str, mode: str):
    owner, token = owner_with_credit(100)
    project = ProjectFactory(owner=owner)
    pages_add(project, 3, text_layer=PAGE_TEXT, has_text_layer=True)

    answers = fire(api, f"/v1/projects/{project.pk}/process", None, token=token, key=key_for(mode, "process"))

    first = assert_one_effect(answers, success=202, mode=mode)
    (job,) = Job.objects.filter(project=project)
    assert first.body == {"jobId": str(job.pk), "status": "Queued"}
    assert job.status == JobStatus.QUEUED
    wallet = wallet_of(owner)
    (hold,) = Hold.objects.filter(wallet=wallet)
    assert hold.state == HoldState.OPEN
    assert hold.cause_id == str(job.pk)
    assert LedgerEntry.objects.filter(wallet=wallet, kind=EntryKind.HOLD).count() == 1
    assert wallet.reserved == hold.amount
    assert wallet.balance == 100


@pytest.mark.parametrize("mode", MODES)
def test_a_hundred_manual_top_ups_credit_once(api: str, mode: str):
    owner, token = owner_with_credit()

    answers = fire(api, "/v1/wallet/top-up", {"amount": 7, "method": "manual"}, token=token, key=key_for(mode, "pay"))

    first = assert_one_effect(answers, success=200, mode=mode)
    (top_up,) = TopUp.objects.filter(user=owner)
    assert first.body["reference"] == top_up.reference
    assert first.body["status"] == "confirmed"
    wallet = wallet_of(owner)
    assert wallet.balance == 7
    assert LedgerEntry.objects.filter(wallet=wallet, kind=EntryKind.TOP_UP_CREDIT).count() == 1


@pytest.mark.parametrize("mode", MODES)
def test_a_hundred_redeems_of_one_code_redeem_it_once(api: str, mode: str):
    owner, token = owner_with_credit()
    _, (code,) = codes_issue(amount=Decimal(12), count=1, operator=None)

    answers = fire(api, "/v1/wallet/redeem", {"code": code}, token=token, key=key_for(mode, "redeem"))

    first = assert_one_effect(answers, success=200, mode=mode)
    assert first.body["status"] == "confirmed"
    (redeemed,) = RedeemCode.objects.all()
    assert redeemed.redeemed_by_id == owner.pk
    assert TopUp.objects.filter(user=owner).count() == 1
    wallet = wallet_of(owner)
    assert wallet.balance == 12
    assert LedgerEntry.objects.filter(wallet=wallet, kind=EntryKind.REDEEM_CREDIT).count() == 1


def test_a_hundred_process_requests_with_a_key_each_still_queue_one_job(api: str):
    """Different keys get past idempotency: the single-in-flight guard (the project's row
    lock) answers each with the one job."""
    owner, token = owner_with_credit(100)
    project = ProjectFactory(owner=owner)
    pages_add(project, 3, text_layer=PAGE_TEXT, has_text_layer=True)

    answers = fire(api, f"/v1/projects/{project.pk}/process", None, token=token, key="each", key_each=True)

    (job,) = Job.objects.filter(project=project)
    assert {(answer.status, answer.replayed) for answer in answers} == {(202, False)}
    assert {answer.body["jobId"] for answer in answers} == {str(job.pk)}
    assert Hold.objects.filter(wallet__user=owner).count() == 1


def test_a_hundred_redeems_with_a_key_each_redeem_the_code_once(api: str):
    """Different keys get past idempotency: the code's row lock lets one through and the
    others are refused as used, with nothing credited."""
    owner, token = owner_with_credit()
    _, (code,) = codes_issue(amount=Decimal(12), count=1, operator=None)

    answers = fire(api, "/v1/wallet/redeem", {"code": code}, token=token, key="each", key_each=True)

    tally = Counter((answer.status, answer.body.get("code")) for answer in answers)
    assert tally == {(200, None): 1, (400, "redeem_code_used"): CALLERS - 1}, tally
    assert wallet_of(owner).balance == 12
    assert LedgerEntry.objects.filter(wallet__user=owner, kind=EntryKind.REDEEM_CREDIT).count() == 1


def export_messages() -> list[str]:
    """The export ids of the render messages waiting on the broker's export queue."""
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    try:
        raw = broker.lrange("export", 0, -1)
    finally:
        broker.close()
    ids = []
    for message in raw:
        envelope = json.loads(message)
        assert envelope["headers"]["task"] == "exports.tasks.export_render", envelope["headers"]
        ids.append(envelope["headers"]["argsrepr"].strip("()[]',\" "))
    return ids


@pytest.mark.parametrize("mode", MODES)
def test_a_hundred_export_requests_queue_one_render_per_format(api: str, mode: str):
    owner, token = owner_with_credit()
    project = ProjectFactory(owner=owner, status=ProjectStatus.COMPLETE)
    pages_add(project, 3, text_layer=PAGE_TEXT, has_text_layer=True)
    project.pages.update(
        status=PageStatus.APPROVED, translated_at=timezone.now(), engine="echo", translation="La lampe était allumée."
    )

    answers = fire(api, f"/v1/projects/{project.pk}/export", {"format": "All"}, token=token, key=key_for(mode, "exp"))

    first = assert_one_effect(answers, success=202, mode=mode)
    formats = [*SINGLE_FORMATS, ARCHIVE]
    files = ExportFile.objects.filter(project=project)
    assert sorted(files.values_list("format", flat=True)) == sorted(formats)
    assert set(files.values_list("status", flat=True)) == {ExportStatus.PENDING}
    assert sorted(entry["fileName"] for entry in first.body) == sorted(files.values_list("file_name", flat=True))
    assert sorted(export_messages()) == sorted(str(pk) for pk in files.values_list("pk", flat=True))
    assert Project.objects.get(pk=project.pk).status == ProjectStatus.COMPLETE


def test_a_hundred_export_requests_with_a_key_each_queue_one_render_per_format(api: str):
    """Different keys get past idempotency: the project's row lock and the content digest
    give every caller the same files, queued once."""
    owner, token = owner_with_credit()
    project = ProjectFactory(owner=owner, status=ProjectStatus.COMPLETE)
    pages_add(project, 3, text_layer=PAGE_TEXT, has_text_layer=True)
    project.pages.update(status=PageStatus.APPROVED, translated_at=timezone.now(), translation="La lampe.")

    answers = fire(api, f"/v1/projects/{project.pk}/export", {"format": "All"}, token=token, key="x", key_each=True)

    files = ExportFile.objects.filter(project=project)
    assert files.count() == len(SINGLE_FORMATS) + 1
    assert {answer.status for answer in answers} == {202}
    names = sorted(files.values_list("file_name", flat=True))
    assert all(sorted(entry["fileName"] for entry in answer.body) == names for answer in answers)
    assert sorted(export_messages()) == sorted(str(pk) for pk in files.values_list("pk", flat=True))


def test_a_hundred_refused_top_ups_are_each_a_clean_400_and_change_nothing(api: str):
    """A refusal is not replayed: each waiting double-submit runs afresh once the one before
    it is refused, one at a time, so some may reach their wait's end (409 request_in_progress)."""
    owner, token = owner_with_credit()

    answers = fire(api, "/v1/wallet/top-up", {"amount": -1}, token=token, key=None)

    codes = Counter((answer.status, answer.body["code"], answer.replayed) for answer in answers)
    assert (400, "validation_error", False) in codes
    assert set(codes) <= {(400, "validation_error", False), (409, "request_in_progress", False)}, codes
    assert not TopUp.objects.filter(user=owner).exists()
    assert not LedgerEntry.objects.filter(wallet__user=owner).exists()
