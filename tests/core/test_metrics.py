"""GET /metrics: Prometheus text behind METRICS_TOKEN, with request, queue, job, page,
hold, webhook and engine metrics; and a real prefork worker's own metrics port."""

from __future__ import annotations

import json
import socket
import sys
import urllib.request
from decimal import Decimal
from pathlib import Path

import pytest
import redis
from django.apps import apps
from django.db import transaction
from prometheus_client.parser import text_string_to_metric_families

from config.celery_app import app as celery_app
from projects.models import Job, JobStatus
from projects.tasks import job_run_next
from tests.e2e.processes import Service, free_port, service_env, wait_until
from tests.factories import ProjectFactory, pages_add
from tests.webhooks.receiver import Answer, running_receiver
from wallet.models import EntryKind
from wallet.services.ledger import wallet_credit
from webhooks.events import PROJECT_STATUS_CHANGED
from webhooks.models import DeliveryStatus
from webhooks.services.fanout import publish

pytestmark = pytest.mark.django_db

TOKEN = "scrape-me-9f2c"


@pytest.fixture
def metrics_on(settings):
    settings.METRICS_TOKEN = TOKEN


@pytest.fixture
def echo_engine(settings):
    settings.TRANSLATION_ENGINE = "echo"
    settings.ENGINE_CONCURRENCY = 2
    settings.TRANSLATION_ENGINE_OPTIONS = {}


def assert_metrics_page(response) -> None:  # type: ignore[no-untyped-def]
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")


def scrape(api_client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:  # type: ignore[no-untyped-def]
    """Every sample of GET /metrics: (name, sorted labels) -> value."""
    response = api_client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert_metrics_page(response)
    return samples_of(response.content.decode())


def samples_of(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples, name: str, **labels: str) -> float:  # type: ignore[no-untyped-def]
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def names(samples) -> set[str]:  # type: ignore[no-untyped-def]
    return {name for name, _ in samples}


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_metrics_answer_404_while_no_token_is_configured(api_client, settings):
    settings.METRICS_TOKEN = ""

    assert api_client.get("/metrics").status_code == 404
    assert api_client.get("/metrics", HTTP_AUTHORIZATION="Bearer anything").status_code == 404


def test_metrics_need_the_token_as_a_bearer_credential(api_client, metrics_on):
    missing = api_client.get("/metrics")
    wrong = api_client.get("/metrics", HTTP_AUTHORIZATION="Bearer not-the-token")
    basic = api_client.get("/metrics", HTTP_AUTHORIZATION=f"Basic {TOKEN}")
    right = api_client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    assert missing.status_code == 401
    assert missing["WWW-Authenticate"].startswith("Bearer")
    assert wrong.status_code == 403
    assert basic.status_code == 401
    assert right.status_code == 200
    assert b"# TYPE bts_http_request_duration_seconds histogram" in right.content


def test_a_request_is_counted_by_method_route_pattern_and_status_class(api_client, user, auth_client, metrics_on):
    project = ProjectFactory(owner=user)
    before = scrape(api_client)

    auth_client.get(f"/v1/projects/{project.pk}")
    auth_client.get(f"/v1/projects/{project.pk}")
    api_client.get(f"/v1/projects/{project.pk}")

    after = scrape(api_client)
    count = "bts_http_request_duration_seconds_count"
    route = "v1/projects/<uuid:project_id>"
    ok = value(after, count, method="GET", route=route, status="2xx") - value(
        before, count, method="GET", route=route, status="2xx"
    )
    refused = value(after, count, method="GET", route=route, status="4xx") - value(
        before, count, method="GET", route=route, status="4xx"
    )
    assert (ok, refused) == (2, 1)
    routes = {dict(labels).get("route") for name, labels in after if name == count}
    assert not any(str(project.pk) in (route or "") for route in routes)


def test_a_job_shows_in_jobs_pages_holds_and_engine_metrics(api_client, user, auth_client, metrics_on, echo_engine):
    project = ProjectFactory(owner=user)
    pages_add(project, 3, text_layer="The quick brown fox jumps over the lazy dog. " * 20, has_text_layer=True)
    wallet_credit(user=user, amount=Decimal(5), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id="seed")
    before = scrape(api_client)

    assert auth_client.post(f"/v1/projects/{project.pk}/process").status_code == 202
    queued = scrape(api_client)
    assert job_run_next() is not None
    done = scrape(api_client)

    assert value(queued, "bts_jobs", status="Queued") == 1
    assert value(queued, "bts_wallet_holds_open") == 1
    assert value(queued, "bts_wallet_holds_open_usd") > 0
    assert value(queued, "bts_jobs_oldest_queued_age_seconds") >= 0
    assert value(done, "bts_jobs", status="Succeeded") == 1
    assert value(done, "bts_pages", status="Approved") == 1  # the calibration batch: one page
    assert sum(value(done, "bts_pages", status=status) for status in ("Pending", "InProgress", "Failed")) == 2
    translated = value(done, "bts_pages_translated_total", engine="echo") - value(
        before, "bts_pages_translated_total", engine="echo"
    )
    calls = value(done, "bts_engine_request_duration_seconds_count", engine="echo", outcome="ok") - value(
        before, "bts_engine_request_duration_seconds_count", engine="echo", outcome="ok"
    )
    assert (translated, calls) == (1, 1)
    for counter in ("bts_engine_prompt_tokens_total", "bts_engine_completion_tokens_total"):
        assert value(done, counter, engine="echo") > value(before, counter, engine="echo")


def test_queue_depth_is_read_from_the_broker_at_scrape_time(api_client, settings, metrics_on):
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    waiting = set(broker.lrange("export", 0, -1))
    before = scrape(api_client)
    try:
        celery_app.send_task("tests.core.never_run", queue="export")
        after = scrape(api_client)
    finally:
        for message in set(broker.lrange("export", 0, -1)) - waiting:
            broker.lrem("export", 1, message)
        broker.close()

    depth = "bts_celery_queue_length"
    assert value(after, depth, queue="export") - value(before, depth, queue="export") == 1
    assert {dict(labels)["queue"] for name, labels in after if name == depth} == {
        "default",
        "process",
        "retry",
        "export",
        "webhooks",
    }
    assert value(after, "bts_metrics_collector_up", collector="queues") == 1


def test_an_unreachable_broker_leaves_the_other_metrics_served(api_client, settings, metrics_on):
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{closed_port()}/0"

    samples = scrape(api_client)

    assert value(samples, "bts_metrics_collector_up", collector="queues") == 0
    assert value(samples, "bts_metrics_collector_up", collector="jobs") == 1
    assert "bts_celery_queue_length" not in names(samples)
    assert ("bts_jobs", (("status", "Queued"),)) in samples


def test_webhook_deliveries_are_reported_when_the_webhooks_app_is_installed(api_client, metrics_on):
    samples = scrape(api_client)

    if apps.is_installed("webhooks"):
        assert value(samples, "bts_metrics_collector_up", collector="webhooks") == 1
        assert ("bts_webhook_deliveries", (("status", "dead"),)) in samples
    else:
        assert ("bts_metrics_collector_up", (("collector", "webhooks"),)) not in samples


@pytest.mark.usefixtures("eager_celery")
def test_failing_webhook_deliveries_raise_the_delivery_metrics(
    api_client, auth_client, user, settings, metrics_on, django_capture_on_commit_callbacks
):
    """What an alert on webhook failures reads: a delivery whose every attempt failed counts
    as dead, one waiting for its retry as retrying, and one whose endpoint is gone as failed."""
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True

    def published() -> None:
        with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
            publish(PROJECT_STATUS_CHANGED, owner_id=user.pk, data={"state": "Complete"})

    def delivery_counts() -> dict[str, float]:
        samples = scrape(api_client)
        counts = {status: value(samples, "bts_webhook_deliveries", status=status) for status in DeliveryStatus.values}
        return {**counts, "retrying": value(samples, "bts_webhook_deliveries_retrying")}

    with running_receiver() as receiver:
        created = auth_client.post("/v1/webhooks", {"url": receiver.url()}, format="json")
        assert created.status_code == 201, created.content
        receiver.secret = created.json()["secret"]
        receiver.default = Answer(status=500)
        before = delivery_counts()

        settings.WEBHOOK_RETRY_SCHEDULE_SECONDS = []  # the first failure is the last
        published()
        dead = delivery_counts()
        assert dead == {**before, "dead": before["dead"] + 1}

        settings.WEBHOOK_RETRY_SCHEDULE_SECONDS = [3600]  # failed once, retried in an hour
        published()
        retrying = delivery_counts()
        assert retrying == {**dead, "pending": dead["pending"] + 1, "retrying": dead["retrying"] + 1}

        # Gone (410): given up, the webhook disabled, and its delivery waiting to retry with it.
        receiver.default = Answer(status=410)
        published()
        gone = delivery_counts()
        assert gone == {
            **retrying,
            "failed": retrying["failed"] + 2,
            "pending": dead["pending"],
            "retrying": dead["retrying"],
        }
        assert len(receiver.received) == 3


def worker_scrape(port: int) -> str | None:
    """The worker's metrics page, or None while nothing answers on its port."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            return response.read().decode()
    except OSError:
        return None


WORKER_ARGV = [sys.executable, "-m", "celery", "-A", "config", "worker", "--without-heartbeat", "--without-mingle"]


def json_lines_of(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]


@pytest.mark.slow
def test_a_prefork_worker_serves_its_childrens_engine_metrics_and_logs_the_calls_request_id(
    services, tmp_path, user, auth_client
):
    port = free_port()
    worker = Service(
        "worker",
        [*WORKER_ARGV, "-Q", "process", "--pool=prefork", "-c", "2", "--loglevel=INFO"],
        service_env(
            tmp_path,
            WORKER_METRICS_PORT=port,
            WORKER_METRICS_ADDRESS="127.0.0.1",
            PROMETHEUS_MULTIPROC_DIR=tmp_path / "metrics",
            LOG_FORMAT="json",
        ),
        tmp_path / "worker.log",
    )
    services.started.append(worker)
    wait_until(lambda: worker_scrape(port) is not None, what="the worker's metrics port", services=services)
    project = ProjectFactory(owner=user)
    pages_add(project, 1, text_layer="The quick brown fox jumps over the lazy dog. " * 20, has_text_layer=True)
    wallet_credit(user=user, amount=Decimal(5), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id="seed")

    response = auth_client.post(f"/v1/projects/{project.pk}/process", HTTP_X_REQUEST_ID="gpu-node-check")
    assert response.status_code == 202
    wait_until(
        lambda: Job.objects.filter(pk=response.json()["jobId"], status=JobStatus.SUCCEEDED).exists(),
        what="the job to succeed",
        services=services,
    )

    samples = samples_of(worker_scrape(port) or "")
    assert value(samples, "bts_pages_translated_total", engine="echo") == 1
    assert value(samples, "bts_engine_request_duration_seconds_count", engine="echo", outcome="ok") == 1
    assert value(samples, "bts_engine_prompt_tokens_total", engine="echo") > 0
    assert "bts_jobs" not in names(samples)  # database counts are the web nodes' to report
    wait_until(
        lambda: any(
            line["request_id"] == "gpu-node-check" and line.get("task_name") == "projects.tasks.job_run_next"
            for line in json_lines_of(worker.log)
        ),
        what="the task's log line with the API call's request id",
        services=services,
    )
