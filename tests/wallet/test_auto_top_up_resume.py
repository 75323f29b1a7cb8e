"""Auto top-up meets paused books, end to end in this process: Celery runs its tasks at once
and on-commit work runs, the card is charged on the Stripe stand-in, the credit lands and
the paused book continues. Also: two triggers at the same moment charge the card once."""

from __future__ import annotations

import threading
from decimal import Decimal

import pytest
from django.db import connection

from core.money import exact_sum
from projects.models import JobKind, JobStatus, PageStatus, Project, ProjectStatus
from tests.factories import ProjectFactory, pages_add
from tests.support.problems import assert_problem
from tests.wallet.helpers import assert_wallet_invariants
from tests.wallet.stripe_stand_in import StripeStandIn
from tests.wallet.test_stripe import assert_card_saved
from wallet.models import SavedCard, TopUp, TopUpOrigin, TopUpStatus, Wallet
from wallet.services.alerts import auto_top_up_start
from wallet.services.ledger import hold_place, hold_settle
from wallet.services.preferences import auto_top_up_set

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _echo_engine(settings, local_storage):  # type: ignore[no-untyped-def]
    settings.TRANSLATION_ENGINE = "echo"
    settings.TRANSLATION_ENGINE_OPTIONS = {}


def costly_book(owner, *, status: str = ProjectStatus.PROCESSING) -> Project:  # type: ignore[no-untyped-def]
    """A book past the ladder's rungs whose measured 0.05 USD a page (the top tier, 0.08 a
    page at most) makes its last batch of 120 pages cost at most 9.60 USD."""
    project = ProjectFactory(owner=owner, status=status)
    pages_add(project, 124, text_layer="A page of text. " * 20, has_text_layer=True)
    project.pages.filter(index__lte=4).update(status=PageStatus.APPROVED, cost_usd=Decimal("0.05"))
    Project.objects.filter(pk=project.pk).update(approval_count=4)
    project.refresh_from_db()
    return project


def assert_resumed(project: Project) -> None:
    """The book continued: its last batch was queued with a 9.60 USD hold and, Celery
    running eagerly, translated by the worker's task; the book is complete."""
    project.refresh_from_db()
    assert project.status == ProjectStatus.COMPLETE
    job = project.jobs.get()
    assert (job.status, job.kind, job.page_count, job.held_usd) == (
        JobStatus.SUCCEEDED,
        JobKind.PROCESS_NEXT_BATCH,
        120,
        Decimal("9.6"),
    )


def assert_one_auto_charge(user, stripe_stand_in: StripeStandIn, card: SavedCard) -> TopUp:  # type: ignore[no-untyped-def]
    (request,) = stripe_stand_in.requests_to("POST", "/v1/payment_intents")
    assert request.form["payment_method"] == card.stripe_payment_method_id
    assert request.form["off_session"] == "true"
    (top_up,) = TopUp.objects.filter(user=user, origin=TopUpOrigin.AUTO)
    assert (top_up.status, top_up.amount) == (TopUpStatus.CONFIRMED, Decimal("20"))
    return top_up


@pytest.mark.usefixtures("eager_celery")
def test_a_settlement_that_takes_spendable_to_the_threshold_tops_up_and_the_paused_book_resumes(
    user, auth_client, api_client, stripe_stand_in, django_capture_on_commit_callbacks
):
    card = assert_card_saved(auth_client, api_client, stripe_stand_in, amount=10)
    auto_top_up_set(user=user, threshold=Decimal("5"), amount=Decimal("20"))
    running = hold_place(user=user, amount=Decimal("6"), cause_type="job", cause_id="another-book-batch")
    paused = costly_book(user, status=ProjectStatus.PAUSED_NEEDS_CREDIT)
    assert auth_client.get(f"/v1/projects/{paused.pk}/status").json()["waitingOn"] == "credit"
    assert stripe_stand_in.requests_to("POST", "/v1/payment_intents") == []

    with django_capture_on_commit_callbacks(execute=True):
        hold_settle(hold=running, amount=Decimal("5.5"))  # balance 4.5: at or below the threshold of 5

    assert_one_auto_charge(user, stripe_stand_in, card)
    assert_resumed(paused)
    wallet = assert_wallet_invariants(Wallet.objects.get(user=user).pk)
    assert wallet.reserved == 0
    assert wallet.balance == Decimal("24.5") - exact_sum(paused.pages.filter(index__gt=4), "cost_usd")


@pytest.mark.usefixtures("eager_celery")
def test_a_book_that_pauses_for_credit_starts_the_auto_top_up_at_once_and_resumes(
    user, auth_client, api_client, stripe_stand_in, django_capture_on_commit_callbacks
):
    card = assert_card_saved(auth_client, api_client, stripe_stand_in, amount=4)
    auto_top_up_set(user=user, threshold=Decimal("1"), amount=Decimal("20"))  # spendable 4 is above it
    project = costly_book(user)

    with django_capture_on_commit_callbacks(execute=True):
        refused = auth_client.post(f"/v1/projects/{project.pk}/process")

    assert_problem(refused, 402, "insufficient_credit")
    assert_one_auto_charge(user, stripe_stand_in, card)
    assert_resumed(project)
    assert_wallet_invariants(Wallet.objects.get(user=user).pk)


@pytest.mark.usefixtures("eager_celery")
def test_a_paused_book_without_a_usable_auto_top_up_asks_for_credit_and_charges_nothing(
    user, auth_client, api_client, stripe_stand_in, django_capture_on_commit_callbacks
):
    assert_card_saved(auth_client, api_client, stripe_stand_in, amount=4)
    auto_top_up_set(user=user, threshold=Decimal("1"), amount=Decimal("20"), monthly_cap=Decimal("10"))
    project = costly_book(user)

    with django_capture_on_commit_callbacks(execute=True):
        assert_problem(auth_client.post(f"/v1/projects/{project.pk}/process"), 402, "insufficient_credit")

    assert stripe_stand_in.requests_to("POST", "/v1/payment_intents") == []
    assert not TopUp.objects.filter(origin=TopUpOrigin.AUTO).exists()
    status = auth_client.get(f"/v1/projects/{project.pk}/status").json()
    assert (status["state"], status["waitingOn"], status["blockedOn"], status["nextAction"]) == (
        "PausedNeedsCredit",
        None,
        "credit",
        "add_credit",
    )


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_two_triggers_at_the_same_moment_charge_the_card_once(user, jwt_client, api_client, stripe_stand_in):
    card = assert_card_saved(jwt_client(user), api_client, stripe_stand_in, amount=10)
    auto_top_up_set(user=user, threshold=Decimal("5"), amount=Decimal("20"))
    hold_place(user=user, amount=Decimal("6"), cause_type="job", cause_id="a-batch")  # spendable 4
    wallet_id = Wallet.objects.get(user=user).pk
    barrier = threading.Barrier(2)
    started: list[TopUp | None] = []

    def trigger(short_of: Decimal | None) -> None:
        try:
            barrier.wait()
            started.append(auto_top_up_start(wallet_id=wallet_id, short_of=short_of))
        finally:
            connection.close()

    # The threshold rule (a debit) and a book paused short of 9.60 USD, at once.
    threads = [threading.Thread(target=trigger, args=(short_of,)) for short_of in (None, Decimal("9.6"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert len(started) == 2
    assert sum(top_up is not None for top_up in started) == 1
    assert_one_auto_charge(user, stripe_stand_in, card)
    assert Wallet.objects.get(pk=wallet_id).spendable == Decimal("24")
    assert_wallet_invariants(wallet_id)
