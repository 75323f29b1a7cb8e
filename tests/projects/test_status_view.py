"""The project status view: every state with its phase, what it waits on, what blocks it
and the next action; the GPU overlay."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import timezone

from projects.models import Job, JobKind, JobStatus, NormalizeState, PageStatus, ProjectStatus, QueueTicket
from tests.factories import ProjectFactory, pages_add
from wallet.models import SavedCard, TopUp, TopUpMethod, TopUpOrigin, TopUpStatus, Wallet, WalletSettings
from wallet.services.ledger import hold_place, hold_settle, wallet_credit

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
    "intake",
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


def auto_top_up_on(project, *, primary_card: bool = True, monthly_cap: str | None = None):  # type: ignore[no-untyped-def]
    wallet, _ = Wallet.objects.get_or_create(user=project.owner)
    WalletSettings.objects.create(
        wallet=wallet,
        auto_top_up_threshold=Decimal(1),
        auto_top_up_amount=Decimal(10),
        auto_top_up_monthly_cap=None if monthly_cap is None else Decimal(monthly_cap),
    )
    return SavedCard.objects.create(
        user=project.owner, stripe_payment_method_id=f"pm_{project.pk}", last4="4242", is_primary=primary_card
    )


def auto_top_up_without_primary_card(project) -> None:  # type: ignore[no-untyped-def]
    auto_top_up_on(project, primary_card=False)


def auto_top_up_capped(project) -> None:  # type: ignore[no-untyped-def]
    auto_top_up_on(project, monthly_cap="15")
    auto_top_up_made(project, TopUpStatus.CONFIRMED)  # 10 of 15 this month: another 10 would pass it


def auto_top_up_made(project, status: str) -> None:  # type: ignore[no-untyped-def]
    resolved = None if status == TopUpStatus.PENDING else timezone.now()
    TopUp.objects.create(
        reference=f"tu_{project.pk.hex[:12]}",
        user=project.owner,
        method=TopUpMethod.CARD,
        origin=TopUpOrigin.AUTO,
        amount=Decimal(10),
        status=status,
        credited_amount=Decimal(10) if status == TopUpStatus.CONFIRMED else None,
        resolved_at=resolved,
    )


def auto_top_up_pending(project) -> None:  # type: ignore[no-untyped-def]
    auto_top_up_on(project)
    auto_top_up_made(project, TopUpStatus.PENDING)


def auto_top_up_failed_today(project) -> None:  # type: ignore[no-untyped-def]
    auto_top_up_on(project)
    auto_top_up_made(project, TopUpStatus.FAILED)


def spending_ceiling_reached(project) -> None:  # type: ignore[no-untyped-def]
    """Credit enough, but this month's charges already reach the ceiling."""
    wallet_credit(user=project.owner, amount=Decimal(50), kind="adjustment", cause_type="operator", cause_id="seed")
    hold = hold_place(user=project.owner, amount=Decimal(5), cause_type="job", cause_id="earlier")
    hold_settle(hold=hold, amount=Decimal(5))
    WalletSettings.objects.update_or_create(
        wallet=Wallet.objects.get(user=project.owner), defaults={"monthly_spending_ceiling": Decimal(5)}
    )


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
    (ProjectStatus.PAUSED_NEEDS_CREDIT, auto_top_up_pending, False, ("waiting", "credit", None, None)),
    (
        ProjectStatus.PAUSED_NEEDS_CREDIT,
        auto_top_up_without_primary_card,
        False,
        ("waiting", None, "credit", "add_credit"),
    ),
    (ProjectStatus.PAUSED_NEEDS_CREDIT, auto_top_up_capped, False, ("waiting", None, "credit", "add_credit")),
    (ProjectStatus.PAUSED_NEEDS_CREDIT, auto_top_up_failed_today, False, ("waiting", None, "credit", "add_credit")),
    (ProjectStatus.PAUSED_NEEDS_CREDIT, spending_ceiling_reached, False, ("waiting", None, "credit", None)),
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
    settings.TRANSLATION_ENGINE_OPTIONS = {"unavailable": engine_down}
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


@pytest.mark.parametrize("normalize_state", [NormalizeState.QUEUED, NormalizeState.RUNNING])
def test_a_created_book_being_normalized_inside_its_request_never_asks_for_normalize(
    user, auth_client, normalize_state
):
    # A book of at most NORMALIZE_INLINE_MAX_PAGES pages stays Created while normalize
    # renders it; a status read from elsewhere meanwhile must not ask for normalize again.
    project = ProjectFactory(owner=user, status=ProjectStatus.CREATED, normalize_state=normalize_state)
    pages_add(project, 4)
    project.pages.filter(index__gte=3).update(prepared=False)

    body = auth_client.get(f"/v1/projects/{project.pk}/status").json()

    assert (body["state"], body["phase"], body["title"]) == ("Created", "intake", "Preparing pages")
    assert body["intake"] == {"preparedPages": 2, "totalPages": 4}
    assert "normalize" not in body["detail"].lower()


def test_the_overlay_reads_unconfigured_without_an_engine_server(user, auth_client, settings):
    settings.TRANSLATION_ENGINE = "vllm"
    settings.VLLM_BASE_URL = ""
    project = ProjectFactory(owner=user)
    pages_add(project, 1)
    assert auth_client.get(f"/v1/projects/{project.pk}/status").json()["gpu"] == "unconfigured"


def test_a_book_stopped_by_the_spending_ceiling_names_it_and_does_not_ask_for_credit(user, auth_client, settings):
    settings.TRANSLATION_ENGINE = "echo"
    project = ProjectFactory(owner=user, status=ProjectStatus.PAUSED_NEEDS_CREDIT)
    pages_add(project, 4)
    spending_ceiling_reached(project)

    body = auth_client.get(f"/v1/projects/{project.pk}/status").json()

    assert body["title"] == "Paused: monthly spending ceiling reached"
    assert "monthly spending ceiling of 5" in body["detail"]
    assert "raise or remove the ceiling" in body["detail"]
