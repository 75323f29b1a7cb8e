"""The price table, the batch quote (over HTTP) and the affordability gate."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.exceptions import ImproperlyConfigured

from core.errors import ServiceError
from projects.models import PageStatus, Project
from projects.selectors.billing import next_batch_pages, project_batch_gate, project_batch_quote
from tests.factories import ProjectFactory, pages_add
from tests.support.problems import assert_problem
from wallet.errors import InsufficientCredit
from wallet.models import EntryKind, Wallet
from wallet.selectors.pricing import PriceTier, price_tiers, tier_for
from wallet.services.ledger import hold_place, hold_settle, wallet_credit
from wallet.services.preferences import spending_ceiling_set

pytestmark = pytest.mark.django_db

QUOTE_FIELDS = {
    "canStart",
    "bookCost",
    "balanceUsd",
    "spendableUsd",
    "estimatedUsd",
    "expectedUsd",
    "estimable",
    "pageCount",
    "explanation",
    "costPerPageUsd",
    "targetLanguage",
    "unlimited",
    "blockedOn",
    "shortfallUsd",
}


def credit(user, amount: str) -> None:  # type: ignore[no-untyped-def]
    wallet_credit(user=user, amount=Decimal(amount), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id=amount)


def calibrated(project: Project, *, cost_per_page: str, batches: int = 1, pages: int = 1) -> None:
    """Marks the first `pages` pages translated at the given measured cost, `batches` rungs done."""
    for page in project.pages.order_by("index")[:pages]:
        page.status, page.cost_usd = PageStatus.APPROVED, Decimal(cost_per_page)
        page.save()
    Project.objects.filter(pk=project.pk).update(approval_count=batches)
    project.refresh_from_db()


def test_the_default_price_table_goes_up_and_ends_unbounded():
    tiers = price_tiers()
    assert len(tiers) == 4
    assert tiers[-1].up_to is None
    assert all(tier.ceiling >= tier.expected for tier in tiers)
    assert tier_for(Decimal("0.002")) == (1, tiers[0])
    assert tier_for(Decimal("0.0021")) == (2, tiers[1])
    assert tier_for(Decimal("5")) == (4, tiers[3])


@pytest.mark.parametrize(
    "spec",
    [
        "0.01:0.005:0.02",  # the last tier must be unbounded
        "-:0.01:0.02,0.5:0.1:0.2",  # only the last may be unbounded
        "0.01:0.02:0.015,-:0.05:0.1",  # ceiling below expected
        "0.02:0.01:0.015,-:0.05:0.1",  # ceiling below upTo
        "0.02:0.01:0.03,0.01:0.01:0.02,-:0.05:0.1",  # not going up
        "0.01:x:0.02,-:0.05:0.1",
        "0.01:0.005,-:0.05:0.1",
        "-:0:0.1",
    ],
)
def test_a_malformed_price_table_is_a_configuration_error(settings, spec):
    settings.PRICE_TIERS = spec
    with pytest.raises(ImproperlyConfigured):
        price_tiers()


def test_an_empty_price_table_is_no_table(settings):
    settings.PRICE_TIERS = ""
    assert price_tiers() == ()
    assert tier_for(Decimal("0.01")) is None


def test_the_ladder_takes_1_5_25_100_then_every_remaining_included_page():
    project = ProjectFactory()
    pages_add(project, 200)
    project.pages.filter(index__in=[150, 151]).update(included=False)
    sizes = []
    for rung in range(6):
        project.approval_count = rung
        sizes.append(next_batch_pages(project=project).count())
    assert sizes == [1, 5, 25, 100, 198, 198]
    calibrated(project, cost_per_page="0.001", batches=4, pages=131)
    assert next_batch_pages(project=project).count() == 67
    assert next_batch_pages(project=project).first().index == 132


def test_the_first_batch_is_calibration_without_a_dollar_estimate(user, auth_client):
    project = ProjectFactory(owner=user, target_language_code="ja")
    pages_add(project, 10)
    response = auth_client.get(f"/v1/projects/{project.pk}/batch-quote")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == QUOTE_FIELDS
    assert (body["estimable"], body["pageCount"], body["estimatedUsd"], body["costPerPageUsd"]) == (False, 1, 0, 0)
    assert (body["canStart"], body["blockedOn"], body["targetLanguage"]) == (False, "credit", "ja")
    assert "positive" in body["explanation"]

    credit(user, "0.20")
    body = auth_client.get(f"/v1/projects/{project.pk}/batch-quote").json()
    assert (body["canStart"], body["blockedOn"], body["spendableUsd"]) == (True, None, 0.2)
    assert "Calibration" in body["explanation"]
    assert project_batch_quote(project=project).hold == Decimal("0.2")  # capped at the spendable credit


def test_once_measured_the_estimate_is_pages_times_the_tier_ceiling(user, auth_client):
    project = ProjectFactory(owner=user)
    pages_add(project, 50)
    calibrated(project, cost_per_page="0.005")
    credit(user, "1")
    body = auth_client.get(f"/v1/projects/{project.pk}/batch-quote").json()
    assert (body["estimable"], body["pageCount"], body["costPerPageUsd"]) == (True, 5, 0.005)
    assert (body["estimatedUsd"], body["expectedUsd"]) == (0.06, 0.03)  # 5 x 0.012 and 5 x 0.006 (tier 2)
    assert body["canStart"] is True
    assert "price tier 2" in body["explanation"]
    assert project_batch_gate(project=project).hold == Decimal("0.06")


def test_without_a_price_table_both_figures_are_the_measured_rate(user, settings):
    settings.PRICE_TIERS = ""
    project = ProjectFactory(owner=user)
    pages_add(project, 50)
    calibrated(project, cost_per_page="0.0123")
    credit(user, "5")
    quote = project_batch_quote(project=project)
    assert quote.estimated == quote.expected == Decimal("0.0615")


def test_the_gate_refuses_an_unaffordable_batch_with_the_shortfall(user):
    project = ProjectFactory(owner=user)
    pages_add(project, 50)
    calibrated(project, cost_per_page="0.02", batches=2, pages=6)  # tier 3: ceiling 0.036
    credit(user, "0.50")
    hold_place(user=user, amount=Decimal("0.10"), cause_type="job", cause_id="other-book")
    quote = project_batch_quote(project=project)
    assert (quote.page_count, quote.estimated, quote.can_start, quote.blocked_by) == (
        25,
        Decimal("0.9"),
        False,
        "credit",
    )
    with pytest.raises(InsufficientCredit) as refused:
        project_batch_gate(project=project)
    assert refused.value.shortfall == Decimal("0.5")  # 0.90 needed, 0.40 spendable
    assert refused.value.status_code == 402


def test_calibration_is_refused_on_an_empty_wallet(user):
    project = ProjectFactory(owner=user)
    pages_add(project, 3)
    with pytest.raises(InsufficientCredit):
        project_batch_gate(project=project)


def test_an_unlimited_account_can_always_start_and_holds_nothing(user):
    project = ProjectFactory(owner=user)
    pages_add(project, 30)
    calibrated(project, cost_per_page="0.05")
    credit(user, "0.01")
    Wallet.objects.filter(user=user).update(unlimited=True)
    quote = project_batch_gate(project=project)
    assert (quote.can_start, quote.unlimited, quote.hold) == (True, True, Decimal(0))


def test_a_book_with_nothing_pending_cannot_start(user):
    project = ProjectFactory(owner=user)
    pages_add(project, 2, status=PageStatus.APPROVED)
    credit(user, "5")
    quote = project_batch_quote(project=project)
    assert (quote.page_count, quote.can_start, quote.blocked_by) == (0, False, "nothing_pending")
    with pytest.raises(ServiceError) as refused:
        project_batch_gate(project=project)
    assert (refused.value.code, refused.value.status_code) == ("nothing_to_process", 409)


def test_the_monthly_spending_ceiling_refuses_a_batch_that_would_pass_it(user, auth_client):
    project = ProjectFactory(owner=user)
    pages_add(project, 50)
    calibrated(project, cost_per_page="0.005")
    credit(user, "10")
    hold = hold_place(user=user, amount=Decimal("1"), cause_type="job", cause_id="earlier")
    hold_settle(hold=hold, amount=Decimal("0.98"))
    spending_ceiling_set(user=user, ceiling=Decimal("1.02"))
    body = auth_client.get(f"/v1/projects/{project.pk}/batch-quote").json()
    assert (body["canStart"], body["blockedOn"]) == (False, "spending_ceiling")  # 0.98 + 0.06 > 1.02
    with pytest.raises(ServiceError) as refused:
        project_batch_gate(project=project)
    assert (refused.value.code, refused.value.status_code) == ("spending_ceiling_reached", 402)
    assert refused.value.extra == {"ceiling_usd": 1.02, "spent_this_month_usd": 0.98, "estimated_usd": 0.06}
    spending_ceiling_set(user=user, ceiling=Decimal("1.04"))
    assert project_batch_gate(project=project).can_start is True


def test_someone_elses_project_has_no_quote(other_user, auth_client):
    project = ProjectFactory(owner=other_user)
    pages_add(project, 1)
    assert_problem(auth_client.get(f"/v1/projects/{project.pk}/batch-quote"), 404, "not_found")


def test_a_configured_table_is_read_into_its_rates_and_a_boundary_belongs_to_the_lower_tier(settings):
    settings.PRICE_TIERS = " 0.01:0.005:0.02 , -:0.05:0.1 "

    tiers = price_tiers()

    assert tiers == (
        PriceTier(up_to=Decimal("0.01"), expected=Decimal("0.005"), ceiling=Decimal("0.02")),
        PriceTier(up_to=None, expected=Decimal("0.05"), ceiling=Decimal("0.1")),
    )
    assert tier_for(Decimal("0.01")) == (1, tiers[0])
    assert tier_for(Decimal("0.010001")) == (2, tiers[1])
