"""Billing faults (issue 15), in-process on the real database: credit a settled hold frees
goes to the books paused for it; a batch that costs more than its hold (an engine costlier
than the price table) is never charged more than was held, tells operators, and the next
batch is quoted from what the pages measured."""

from __future__ import annotations

from decimal import Decimal

import pytest
from prometheus_client import REGISTRY

from projects.models import JobKind, ProjectStatus
from tests.factories import ProjectFactory, UserFactory, pages_add
from tests.projects.test_processing import assert_settled_exactly, book, credit, run_worker
from wallet.models import Wallet

pytestmark = pytest.mark.django_db


def test_books_paused_for_credit_resume_when_settled_holds_free_it(
    user, auth_client, settings, django_capture_on_commit_callbacks
):
    """$1: two books hold $0.50 each for their calibration, a third is refused and pauses;
    when the two settle (at a few cents), the credit they did not spend is back and the
    third goes on by itself, in the order the books paused."""
    settings.CALIBRATION_HOLD_USD = "0.50"
    first, second, third, fourth = (book(user, pages=1) for _ in range(4))
    credit(user, "1")
    for project in (first, second):
        assert auth_client.post(f"/v1/projects/{project.pk}/process").status_code == 202
    for project in (third, fourth):
        refused = auth_client.post(f"/v1/projects/{project.pk}/process")
        assert refused.status_code == 402, refused.json()
        project.refresh_from_db()
        assert project.status == ProjectStatus.PAUSED_NEEDS_CREDIT

    for _ in range(3):  # the worker runs the batches; what their commits start runs next
        with django_capture_on_commit_callbacks(execute=True):
            run_worker()

    for project in (first, second, third, fourth):
        project.refresh_from_db()
        assert project.status == ProjectStatus.COMPLETE, project.status
        assert_settled_exactly(project)
    assert Wallet.objects.get(user=user).reserved == 0


def _undercharged(engine: str = "echo") -> float:
    return REGISTRY.get_sample_value("bts_batch_undercharged_usd_total", {"engine": engine}) or 0.0


def test_an_engine_costlier_than_the_price_table_is_quoted_and_charged_what_it_measured(user, auth_client, settings):
    """A price table far below what the engine measures: after calibration each batch is
    held at the measured cost per page, so it is charged in full (not 53% of it), and the
    book's maximum follows the measured cost."""
    settings.PRICE_TIERS = "-:0.000001:0.000002"
    project = book(user, pages=12)
    credit(user, "20")
    before = _undercharged()
    assert auth_client.post(f"/v1/projects/{project.pk}/process").status_code == 202
    run_worker()

    project.refresh_from_db()
    assert project.status == ProjectStatus.COMPLETE
    batches = list(project.jobs.order_by("queue_position"))
    assert [job.page_count for job in batches] == [1, 5, 6]
    for job in batches:
        assert job.measured_usd == job.charged_usd > 0, (job.page_count, job.measured_usd, job.charged_usd)
        assert job.held_usd >= job.measured_usd
    assert_settled_exactly(project)
    assert _undercharged() == before
    quote = auth_client.get(f"/v1/projects/{project.pk}/batch-quote").json()
    per_page = Decimal(str(quote["costPerPageUsd"]))
    assert per_page > Decimal("0.000002")  # measured, above the table's top ceiling
    assert Decimal(str(quote["bookCost"]["maxUsd"])) >= 11 * per_page


def test_a_batch_that_measures_more_than_its_hold_is_capped_and_operators_are_told(
    user, auth_client, settings, caplog, client
):
    """Pages far costlier than the one the hold was quoted from: the customer pays no more
    than the hold, and the shortfall shows in the log, the metric, the job and the admin."""
    settings.PRICE_TIERS = "-:0.000001:0.000002"
    project = ProjectFactory(owner=user)
    pages_add(project, 1, text_layer="A short first page.", has_text_layer=True)
    long_page = "A long page of many words that costs far more to translate. " * 60
    pages_add(project, 5, text_layer=long_page, has_text_layer=True)
    credit(user, "20")
    before = _undercharged()
    assert auth_client.post(f"/v1/projects/{project.pk}/process").status_code == 202
    with caplog.at_level("WARNING", logger="projects.services.jobs"):
        run_worker()

    second = project.jobs.get(kind=JobKind.PROCESS_NEXT_BATCH, page_count=5)
    assert second.measured_usd > second.charged_usd == second.held_usd
    shortfall = float(second.measured_usd - second.charged_usd)
    assert _undercharged() - before == pytest.approx(shortfall)
    assert any("charged" in record.getMessage() and str(second.pk) in record.getMessage() for record in caplog.records)
    assert Wallet.objects.get(user=user).balance == Decimal("20") - sum(job.charged_usd for job in project.jobs.all())
    client.force_login(UserFactory(email="ops@example.com", is_staff=True, is_superuser=True))
    listed = client.get("/admin/projects/job/", {"charge": "below_measured"}).content.decode()
    assert str(second.pk) in listed
    assert all(str(job.pk) not in listed for job in project.jobs.exclude(pk=second.pk))
