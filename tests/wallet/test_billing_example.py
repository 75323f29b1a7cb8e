"""The worked example of docs/billing.md, replayed through the services."""

from __future__ import annotations

from decimal import Decimal

import pytest

from projects.models import PageStatus, Project
from projects.selectors.billing import next_batch_pages, project_batch_gate
from tests.factories import ProjectFactory, pages_add
from wallet.errors import InsufficientCredit
from wallet.models import EntryKind, Wallet
from wallet.services.ledger import hold_place, hold_settle, wallet_credit

pytestmark = pytest.mark.django_db

# (pages, hold, measured cost per page, balance after) for each batch of the table.
BATCHES = [
    (1, "0.5", "0.0048", "1.9952"),
    (5, "0.06", "0.00502", "1.9701"),
    (25, "0.3", "0.00484", "1.8491"),
    (100, "1.2", "0.00489", "1.3601"),
]


def batch_run(project: Project, number: int, per_page: str) -> Decimal:
    """Holds the gate's figure, 'translates' the batch at the given cost per page, settles."""
    quote = project_batch_gate(project=project)
    hold = hold_place(user=project.owner, amount=quote.hold, cause_type="job", cause_id=f"{project.pk}-{number}")
    pages = list(next_batch_pages(project=project))
    for page in pages:
        page.status, page.cost_usd = PageStatus.APPROVED, Decimal(per_page)
        page.save()
    hold_settle(hold=hold, amount=Decimal(per_page) * len(pages))
    Project.objects.filter(pk=project.pk).update(approval_count=number)
    project.refresh_from_db()
    return quote.hold


def test_the_worked_example_of_the_billing_doc(user):
    wallet_credit(user=user, amount=Decimal("2"), kind=EntryKind.TOP_UP_CREDIT, cause_type="top_up", cause_id="tu")
    project = ProjectFactory(owner=user)
    pages_add(project, 131)
    for number, (pages, hold, per_page, balance) in enumerate(BATCHES, start=1):
        assert next_batch_pages(project=project).count() == pages
        assert batch_run(project, number, per_page) == Decimal(hold)
        assert Wallet.objects.get(user=user).balance == Decimal(balance)
    assert next_batch_pages(project=project).count() == 0
    assert Wallet.objects.get(user=user).reserved == 0


def test_the_short_wallet_of_the_worked_example_stops_before_batch_4(user):
    wallet_credit(user=user, amount=Decimal("1"), kind=EntryKind.TOP_UP_CREDIT, cause_type="top_up", cause_id="tu")
    project = ProjectFactory(owner=user)
    pages_add(project, 131)
    for number, (_, _, per_page, _) in enumerate(BATCHES[:3], start=1):
        batch_run(project, number, per_page)
    with pytest.raises(InsufficientCredit) as refused:
        project_batch_gate(project=project)
    assert refused.value.shortfall == Decimal("0.3509")
