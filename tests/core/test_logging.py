"""Structured logs: JSON lines with request ids that follow a call into the worker, and no
secret in any line. Output is captured from the real LOGGING setting, its console
handler writing to a buffer instead of stderr."""

from __future__ import annotations

import copy
import io
import json
import logging
import logging.config
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal

import pytest
from celery.contrib.testing.worker import start_worker

from accounts.services.api_keys import api_key_create
from accounts.services.users import token_issue
from config.celery_app import app as celery_app
from core.logging import log_context_bind, log_context_reset, redact_text
from projects.models import Job, JobStatus
from tests.factories import ProjectFactory, pages_add
from wallet.models import EntryKind
from wallet.services.ledger import wallet_credit

probe_logger = logging.getLogger("tests.core.probe")


@celery_app.task(name="tests.core.log_probe")
def log_probe(word: str) -> str:
    probe_logger.info("the probe ran with %s", word)
    return word


class LogCapture:
    """The real logging configuration (LOGGING) in the given format, writing to a buffer."""

    def __init__(self, settings, log_format: str) -> None:  # type: ignore[no-untyped-def]
        self.stream = io.StringIO()
        self.config = copy.deepcopy(settings.LOGGING)
        self.config["handlers"]["console"]["formatter"] = log_format
        self.config["handlers"]["console"]["stream"] = self.stream

    def attach(self) -> None:
        """(Again) route the logs to the buffer: an embedded Celery worker sets Django up anew."""
        logging.config.dictConfig(self.config)

    def text(self) -> str:
        return self.stream.getvalue()

    def lines(self) -> list[dict]:
        """Every line so far, parsed: each must be one JSON object."""
        return [json.loads(line) for line in self.text().splitlines()]


@pytest.fixture
def json_log(settings) -> Iterator[LogCapture]:
    capture = LogCapture(settings, "json")
    capture.attach()
    yield capture
    logging.config.dictConfig(settings.LOGGING)


@pytest.fixture(params=["json", "plain"])
def any_format_log(request, settings) -> Iterator[LogCapture]:
    capture = LogCapture(settings, request.param)
    capture.attach()
    yield capture
    logging.config.dictConfig(settings.LOGGING)


def assert_no_secret(output: str, secrets: list[str]) -> None:
    leaked = [secret for secret in secrets if secret in output]
    assert not leaked, f"secrets in the log: {leaked}"


def assert_logged_within(lines: Callable[[], list[dict]], wanted: Callable[[dict], bool], seconds: float = 30) -> None:
    """Waits for a line from another thread (a deadline against hanging, not a timing check)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if any(wanted(line) for line in lines()):
            return
        time.sleep(0.05)
    raise AssertionError("the expected line was not logged:\n" + "\n".join(map(str, lines())))


@contextmanager
def embedded_worker(queue: str) -> Iterator[None]:
    """A Celery worker in a thread of this process, consuming one queue (its messages go
    through the real broker, so only the message headers carry the request id). The app's
    queue selection is put back afterwards: a later purge must reach every queue again."""
    queues = celery_app.amqp.queues
    selected = queues._consume_from
    try:
        with start_worker(
            celery_app, pool="threads", concurrency=1, perform_ping_check=False, queues=[queue], loglevel="INFO"
        ):
            yield
    finally:
        queues._consume_from = selected


# --- Format and request ids -----------------------------------------------------------


@pytest.mark.django_db
def test_a_log_line_is_one_json_object_with_level_logger_message_and_extras(json_log):
    probe_logger.warning("pages %s of %s", 3, 7, extra={"project_id": "p-1", "pages": [3, 4]})

    (line,) = [line for line in json_log.lines() if line["logger"] == "tests.core.probe"]
    assert line["level"] == "WARNING"
    assert line["message"] == "pages 3 of 7"
    assert line["project_id"] == "p-1"
    assert line["pages"] == [3, 4]
    assert line["timestamp"].endswith("Z")
    assert "request_id" in line


@pytest.mark.django_db
def test_an_exception_is_logged_with_its_traceback_in_one_line(json_log):
    try:
        raise RuntimeError("the disk is on fire")
    except RuntimeError:
        probe_logger.exception("could not store the page")

    (line,) = [line for line in json_log.lines() if line["logger"] == "tests.core.probe"]
    assert line["level"] == "ERROR"
    assert "RuntimeError: the disk is on fire" in line["exception"]


@pytest.mark.django_db
def test_a_sane_incoming_request_id_is_echoed_and_on_the_requests_log_lines(api_client, json_log):
    response = api_client.get("/v1/meta", HTTP_X_REQUEST_ID="edge-7f3a.42")

    assert response.status_code == 200
    assert response["X-Request-ID"] == "edge-7f3a.42"
    access = [line for line in json_log.lines() if line["logger"] == "core.access"]
    assert access, "no access line"
    assert {line["request_id"] for line in access} == {"edge-7f3a.42"}
    assert access[-1]["route"] == "v1/meta"
    assert access[-1]["status"] == 200


@pytest.mark.django_db
@pytest.mark.parametrize("offered", [None, "has spaces", 'quote"and\\backslash', "x" * 300, "-leading-dash"])
def test_a_missing_or_unsafe_request_id_is_replaced_by_a_new_one(api_client, offered):
    extra = {} if offered is None else {"HTTP_X_REQUEST_ID": offered}

    first = api_client.get("/healthz", **extra)["X-Request-ID"]
    second = api_client.get("/healthz", **extra)["X-Request-ID"]

    assert first != offered
    assert len(first) == 32
    assert int(first, 16) >= 0
    assert first != second


@pytest.mark.django_db
def test_a_task_run_by_a_worker_logs_the_request_id_of_the_call_that_queued_it(json_log):
    token = log_context_bind(request_id="call-5e1d")
    try:
        with embedded_worker("observability-test"):
            json_log.attach()
            log_probe.apply_async(args=["carried"], queue="observability-test")
            assert_logged_within(json_log.lines, lambda line: line["message"] == "the probe ran with carried")
    finally:
        log_context_reset(token)

    (line,) = [line for line in json_log.lines() if line["message"] == "the probe ran with carried"]
    assert line["request_id"] == "call-5e1d"
    assert line["task_name"] == "tests.core.log_probe"
    assert line["task_id"]


@pytest.mark.django_db
def test_a_task_applied_with_the_header_logs_its_request_id_and_then_forgets_it(json_log):
    log_probe.apply(args=["applied"], headers={"request_id": "call-9b7c"})
    probe_logger.info("after the task")

    lines = {line["message"]: line for line in json_log.lines()}
    assert lines["the probe ran with applied"]["request_id"] == "call-9b7c"
    assert lines["after the task"]["request_id"] != "call-9b7c"
    assert "task_id" not in lines["after the task"]


@pytest.mark.django_db(transaction=True)
def test_a_job_queued_by_an_api_call_carries_the_calls_request_id_into_the_worker(
    settings, json_log, user, auth_client
):
    settings.TRANSLATION_ENGINE = "echo"
    settings.TRANSLATION_ENGINE_OPTIONS = {}
    project = ProjectFactory(owner=user)
    pages_add(project, 1, text_layer="The quick brown fox jumps over the lazy dog. " * 20, has_text_layer=True)
    wallet_credit(user=user, amount=Decimal(5), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id="seed")
    celery_app.control.purge()

    with embedded_worker("process"):
        json_log.attach()
        response = auth_client.post(f"/v1/projects/{project.pk}/process", HTTP_X_REQUEST_ID="follow-this-book")
        assert response.status_code == 202, response.json()
        job_id = response.json()["jobId"]
        assert_logged_within(
            json_log.lines,
            lambda line: line.get("task_name") == "projects.tasks.job_run_next" and job_id in line["message"],
        )

    assert Job.objects.get(pk=job_id).status == JobStatus.SUCCEEDED
    worker_lines = [line for line in json_log.lines() if line.get("task_name") == "projects.tasks.job_run_next"]
    finished = [line for line in worker_lines if job_id in line["message"]]
    assert finished
    assert {line["request_id"] for line in finished} == {"follow-this-book"}


# --- No secrets -----------------------------------------------------------------------


@pytest.mark.django_db
def test_no_key_token_password_or_secret_reaches_the_log(any_format_log, user, api_client):
    _, api_key = api_key_create(user=user, name="ci")
    jwt = token_issue(user=user).token
    secrets = [
        api_key,
        jwt,
        "hunter2-wrong-password",
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "sk_live_51HxAbCdEfGhIjKlMnOp",
        "sk_test_51HxQrStUvWxYz012345",
        "dXNlcjpjb3JyZWN0LWhvcnNl",
    ]

    by_key = api_client.get("/v1/me", HTTP_X_API_KEY=api_key)
    by_jwt = api_client.get("/v1/me", HTTP_AUTHORIZATION=f"Bearer {jwt}")
    probe_logger.warning("request headers: %s", dict(by_jwt.wsgi_request.headers))
    probe_logger.info("incoming", extra={"headers": dict(by_key.wsgi_request.headers), "request": by_key.wsgi_request})
    probe_logger.info("query string access_token=%s&api_key=%s", jwt, api_key)

    login = {"email": user.email, "password": "hunter2-wrong-password"}
    refused = api_client.post("/v1/auth/login", login)
    probe_logger.warning("sign-in refused for %s", login, extra={"body": login})
    probe_logger.warning("raw body %s", json.dumps(login))

    try:
        raise ValueError(
            "Stripe refused sk_live_51HxAbCdEfGhIjKlMnOp; webhook whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw; "
            "Authorization: Basic dXNlcjpjb3JyZWN0LWhvcnNl; test key sk_test_51HxQrStUvWxYz012345"
        )
    except ValueError:
        probe_logger.exception("the payment provider failed")

    assert (by_key.status_code, by_jwt.status_code, refused.status_code) == (200, 200, 401)
    output = any_format_log.text()
    assert "the payment provider failed" in output
    assert "sign-in refused" in output
    assert "[REDACTED]" in output
    assert_no_secret(output, secrets)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("key svc_sk_live_7Hq2vB9xZ0aLmN3pQ4rS5tU6wY8zA1bC2dE3fG4hJ5k", "7Hq2vB9xZ0aLmN3pQ4rS5tU6wY8zA1bC2dE3fG4hJ5k"),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", "eyJzdWIiOiIxIn0"),
        ("Authorization: Bearer opaque-token-123456", "opaque-token-123456"),
        ("{'password': 'correct horse battery'}", "correct horse"),
        ('{"new_password": "s3cret-value"}', "s3cret-value"),
        ("password=hunter2&next=/", "hunter2"),
        ("client_secret: abc123xyz", "abc123xyz"),
        ("whsec_c2VjcmV0LXNpZ25pbmcta2V5", "c2VjcmV0LXNpZ25pbmcta2V5"),
        ("rk_live_51Habcdefghij", "51Habcdefghij"),
    ],
)
def test_redaction_removes_each_kind_of_secret(text, secret):
    redacted = redact_text(text)

    assert secret not in redacted
    assert "[REDACTED]" in redacted


def test_redaction_keeps_token_counts_and_ordinary_text():
    text = "page 3: prompt_tokens=812 completion_tokens=640, status Approved"

    assert redact_text(text) == text
