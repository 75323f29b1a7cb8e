"""The project status view: every state with its phase, what it waits on, what blocks it
and the next action; the GPU overlay."""

from __future__ import annotations

from decimal import Decimal

import pytest

from projects.models import Job, JobKind, JobStatus, PageStatus, ProjectStatus, QueueTicket
from tests.factories import ProjectFactory, pages_add
from wallet.models import Wallet, WalletSettings

pytestmark = pytest.mark.django_db

STATUS_FIELDS = {
    "projectId",
    "state",
    "phase",
    "waitingOn",
    "blockedOn",
    "nextAction",
    "gpu",
    "title",
    "detail",
    "progress",
    "jobId",
    "timestamp",
}


def with_job(project, status: str) -> None:  # type: ignore[no-untyped-def]
    Job.objects.create(
        project=project,
        owner=project.owner,
        kind=JobKind.PROCESS_NEXT_BATCH,
        status=status,
        queue_position=QueueTicket.objects.create().pk,
        rung=0,
        page_count=1,
    )


def auto_top_up_on(project) -> None:  # type: ignore[no-untyped-def]
    wallet, _ = Wallet.objects.get_or_create(user=project.owner)
    WalletSettings.objects.create(wallet=wallet, auto_top_up_threshold=Decimal(1), auto_top_up_amount=Decimal(10))


def failed_page(attempts: int):  # type: ignore[no-untyped-def]
    def setup(project) -> None:  # type: ignore[no-untyped-def]
        project.pages.filter(index=4).update(status=PageStatus.FAILED, attempts=attempts)

    return setup


CASES = [
    # state, setup, engine unavailable, expected (phase, waitingOn, blockedOn, nextAction)
    (ProjectStatus.CREATED, None, False, ("intake", None, None, None)),
    (ProjectStatus.CALIBRATING, None, False, ("working", None, None, None)),
    (ProjectStatus.CALIBRATING, lambda p: with_job(p, JobStatus.QUEUED), False, ("working", "queue", None, None)),
    (ProjectStatus.CALIBRATING, lambda p: with_job(p, JobStatus.QUEUED), True, ("working", "gpu_warmup", None, None)),
    (ProjectStatus.PROCESSING, lambda p: with_job(p, JobStatus.RUNNING), False, ("working", None, None, None)),
    (ProjectStatus.PAUSED_NEEDS_CREDIT, None, False, ("waiting", None, "credit", "add_credit")),
    (ProjectStatus.PAUSED_NEEDS_CREDIT, auto_top_up_on, False, ("waiting", "credit", None, None)),
    (ProjectStatus.PAUSED_NEEDS_CAPACITY, None, True, ("waiting", "gpu_warmup", None, None)),
    (ProjectStatus.PAUSED_NEEDS_CAPACITY, None, False, ("waiting", "gpu_capacity", None, None)),
    (ProjectStatus.COMPLETE, None, False, ("done", None, None, "download")),
    (ProjectStatus.COMPLETED_WITH_ERRORS, failed_page(3), False, ("done", None, None, "download")),
    (ProjectStatus.COMPLETED_WITH_ERRORS, failed_page(1), False, ("done", None, "retry", "retry")),
    (ProjectStatus.FAILED, None, False, ("error", None, None, None)),
    (ProjectStatus.CANCELLING, lambda p: with_job(p, JobStatus.RUNNING), False, ("cancelled", None, None, None)),
    (ProjectStatus.CANCELLED, None, False, ("cancelled", None, None, None)),
]


@pytest.mark.parametrize(("state", "setup", "engine_down", "expected"), CASES)
def test_every_state_says_where_the_book_stands(user, auth_client, settings, state, setup, engine_down, expected):
    settings.TRANSLATION_ENGINE = "echo"
    settings.ECHO_ENGINE_UNAVAILABLE = engine_down
    project = ProjectFactory(owner=user, status=state)
    pages_add(project, 4)
    project.pages.filter(index__lte=2).update(status=PageStatus.APPROVED)
    if setup is not None:
        setup(project)
    response = auth_client.get(f"/v1/projects/{project.pk}/status")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == STATUS_FIELDS
    assert (body["phase"], body["waitingOn"], body["blockedOn"], body["nextAction"]) == expected
    assert body["state"] == state
    assert body["gpu"] == ("starting" if engine_down else "ready")
    assert body["title"]
    assert body["detail"]
    progress = body["progress"]
    assert (progress["translatedPages"], progress["totalPages"], progress["rung"]) == (2, 4, 0)


def test_every_state_has_a_case():
    assert {case[0] for case in CASES} == set(ProjectStatus.values)


def test_the_overlay_reads_unconfigured_without_an_engine_server(user, auth_client, settings):
    settings.TRANSLATION_ENGINE = "vllm"
    settings.VLLM_BASE_URL = ""
    project = ProjectFactory(owner=user)
    pages_add(project, 1)
    assert auth_client.get(f"/v1/projects/{project.pk}/status").json()["gpu"] == "unconfigured"
