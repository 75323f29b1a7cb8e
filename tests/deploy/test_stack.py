"""The stack as the compose file starts it, on loopback: the web command, the CPU worker,
the GPU node's worker and beat with their compose arguments and production environment
(this test's PostgreSQL and Redis, the echo engine in place of vLLM). A book goes from
upload to an export; normalize, the export, the webhook deliveries and beat's periodic
tasks run on the CPU worker, every batch on the GPU worker, whose metrics port reports
the pages its prefork children translated."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from decimal import Decimal

import httpx
import pytest

from accounts.models import User
from projects.models import JobStatus, PageStatus, Project
from tests.deploy.local import (
    assert_process_answers,
    celery_inspect,
    healthcheck_argv,
    local_argv,
    local_env,
    started,
)
from tests.deploy.stack import Service, node_of
from tests.e2e.processes import Services, book_create, free_port, wait_until
from tests.support.pdfs import pdf_bytes
from tests.webhooks.receiver import Receiver, running_receiver
from wallet.models import EntryKind
from wallet.services.ledger import wallet_credit

pytestmark = [pytest.mark.slow, pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]

PAGES = 12  # more than NORMALIZE_INLINE_MAX_PAGES (10): normalize runs on a worker
PASSWORD = "Lantern-Orchard-47-Quietly"
# The test's webhook receiver listens on 127.0.0.1, which production refuses: the one
# setting changed from the compose environment, on the nodes that check webhook addresses.
LOOPBACK_WEBHOOKS = {"WEBHOOK_ALLOW_PRIVATE_ADDRESSES": "true"}


def tasks_run_by(node: str, env: Mapping[str, str]) -> dict[str, int]:
    """How many tasks of each name the worker `node` has run (`celery inspect stats`)."""
    return json.loads(celery_inspect("stats", node, env, "--json"))[node]["total"]


def worker_started(services: Services, service: Service, **overrides: str) -> tuple[str, dict[str, str]]:
    env = local_env(service, services.var_dir, **overrides)
    started(services, service.name, local_argv(service.argv), env)
    assert_process_answers(healthcheck_argv(service), env, what=f"{service.name}'s health check", services=services)
    return node_of(service.argv).replace("$HOSTNAME", env["HOSTNAME"]), env


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as started:
        yield started


def worker_metrics(env: Mapping[str, str]) -> str:
    """What the worker serves on its WORKER_METRICS_PORT."""
    answer = httpx.get(f"http://127.0.0.1:{env['WORKER_METRICS_PORT']}/metrics", timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.text


def sample_total(text: str, name: str) -> float:
    """The sum of a metric's samples (every label set) in Prometheus text."""
    return sum(
        float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith((f"{name}{{", f"{name} "))
    )


def test_a_book_is_normalized_and_exported_on_the_cpu_worker_and_translated_on_the_gpu_worker(
    services: Services, variables, stack, receiver: Receiver
):
    beat = stack["beat"]
    beat_env = local_env(beat, services.var_dir)
    started(services, "beat", local_argv(beat.argv), beat_env)
    port = free_port()
    web_env = local_env(stack["web"], services.var_dir, **LOOPBACK_WEBHOOKS)
    started(services, "web", local_argv(stack["web"].argv, port=port), web_env)
    cpu_node, cpu_env = worker_started(services, stack["worker"], **LOOPBACK_WEBHOOKS)
    gpu_node, gpu_env = worker_started(services, stack["gpu-worker"])
    assert_process_answers(healthcheck_argv(beat), beat_env, what="beat's health check", services=services)

    # Through the TLS proxy, as the production settings expect.
    api = httpx.Client(
        base_url=f"http://127.0.0.1:{port}",
        timeout=30,
        headers={"Host": variables["PUBLIC_HOST"], "X-Forwarded-Proto": "https"},
    )

    def web_up() -> bool:
        try:
            return api.get("/v1/meta").status_code == 200
        except httpx.TransportError:
            return False

    wait_until(web_up, what="the web command", services=services)
    # The web node signs tokens with the stack's SECRET_KEY: an account made through it.
    registered = api.post(
        "/v1/auth/register", json={"email": "operator@example.com", "password": PASSWORD, "displayName": "Ops"}
    )
    assert registered.status_code == 201, registered.text
    api.headers["Authorization"] = f"Bearer {registered.json()['token']}"
    subscribed = api.post("/v1/webhooks", json={"url": receiver.url(), "eventTypes": ["job.succeeded"]})
    assert subscribed.status_code == 201, subscribed.text
    receiver.secret = subscribed.json()["secret"]
    owner = User.objects.get(email="operator@example.com")
    wallet_credit(user=owner, amount=Decimal(20), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id="deploy")
    book = pdf_bytes(PAGES, text=lambda n: f"Chapter {n} begins here with a few words of plain text " * 5)
    project_id = book_create(api, book)
    normalizing = api.post(f"/v1/projects/{project_id}/normalize")
    assert normalizing.json()["normalization"]["state"] == "queued", normalizing.text

    def normalized() -> bool:
        return api.get(f"/v1/projects/{project_id}").json()["normalization"]["state"] == "done"

    wait_until(normalized, what="normalize on the CPU worker", services=services)
    processing = api.post(f"/v1/projects/{project_id}/process")
    assert processing.status_code == 202, processing.text

    def complete() -> bool:
        state = api.get(f"/v1/projects/{project_id}/status").json()["state"]
        assert state not in ("Failed", "CompletedWithErrors", "PausedNeedsCredit", "PausedNeedsCapacity"), state
        return state == "Complete"

    wait_until(complete, what="the book to be Complete", services=services)
    exporting = api.post(f"/v1/projects/{project_id}/export", json={"format": "Markdown"})
    assert exporting.status_code == 202, exporting.text

    def exported() -> dict[str, object] | None:
        ready = [file for file in api.get(f"/v1/projects/{project_id}/exports").json() if file["status"] == "ready"]
        return ready[0] if ready else None

    export = wait_until(exported, what="the export on the CPU worker", services=services)
    assert isinstance(export, dict)
    downloaded = api.get(str(export["url"]), follow_redirects=True)
    assert downloaded.status_code == 200, downloaded.text
    assert "[echo → fr] Chapter 12 begins" in downloaded.text

    project = Project.objects.get(pk=project_id)
    assert set(project.pages.values_list("status", flat=True)) == {PageStatus.APPROVED}
    assert [job.page_count for job in project.jobs.order_by("queue_position")] == [1, 5, 6]
    assert set(project.jobs.values_list("status", flat=True)) == {JobStatus.SUCCEEDED}
    # The routing: each worker ran only its tier's tasks.
    ran_on_gpu = tasks_run_by(gpu_node, gpu_env)
    ran_on_cpu = tasks_run_by(cpu_node, cpu_env)
    assert set(ran_on_gpu) == {"projects.tasks.job_run_next"}
    assert ran_on_gpu["projects.tasks.job_run_next"] >= 3
    assert {"projects.tasks.normalize_project", "exports.tasks.export_render"} <= set(ran_on_cpu)
    assert "projects.tasks.job_run_next" not in ran_on_cpu

    # Each batch's end (on the GPU worker) reached the receiver through the CPU worker.
    def delivered() -> bool:
        return len([hook for hook in receiver.received if hook.verified]) >= 3

    wait_until(delivered, what="the webhook deliveries", services=services)
    assert {hook.payload["type"] for hook in receiver.received} == {"job.succeeded"}
    assert tasks_run_by(cpu_node, cpu_env).get("webhooks.tasks.delivery_attempt", 0) >= 3
    assert "webhooks.tasks.delivery_attempt" not in tasks_run_by(gpu_node, gpu_env)

    # Beat, started as compose starts it, sends the reaper every 30 s: the CPU worker runs it.
    def reaper_ran() -> bool:
        return "projects.tasks.jobs_stale_requeue" in tasks_run_by(cpu_node, cpu_env)

    wait_until(reaper_ran, what="beat's reaper on the CPU worker", services=services, timeout=90, every=2.0)
    assert "projects.tasks.jobs_stale_requeue" not in tasks_run_by(gpu_node, gpu_env)

    # The GPU node's metrics port sums what its prefork children did (PROMETHEUS_MULTIPROC_DIR).
    gpu_metrics = worker_metrics(gpu_env)
    assert sample_total(gpu_metrics, "bts_pages_translated_total") == PAGES
    assert sample_total(gpu_metrics, "bts_engine_request_duration_seconds_count") == PAGES
    assert sample_total(worker_metrics(cpu_env), "bts_pages_translated_total") == 0
