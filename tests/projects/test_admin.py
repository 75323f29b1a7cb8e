"""The processing admin: the job queue through its pages as an operator."""

from __future__ import annotations

from decimal import Decimal

import pytest

from projects import jobs
from projects.models import Job, JobStatus, PageStatus
from tests.factories import ProjectFactory, UserFactory, pages_add
from wallet.models import EntryKind, Wallet
from wallet.services import wallet_credit

pytestmark = pytest.mark.django_db

JOBS_URL = "/admin/projects/job/"


@pytest.fixture
def staff_client(client):
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    return client


@pytest.fixture
def two_queued_jobs(settings):
    settings.TRANSLATION_ENGINE = "echo"
    queued = []
    for number in range(2):
        owner = UserFactory()
        wallet_credit(
            user=owner, amount=Decimal(5), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id=str(number)
        )
        project = ProjectFactory(owner=owner)
        pages_add(project, 3, text_layer="Some words to translate here.", has_text_layer=True)
        queued.append(jobs.process_start(owner=owner, project_id=project.pk))
    return queued


def test_the_queue_lists_jobs_and_an_operator_moves_one_to_the_front(staff_client, two_queued_jobs):
    _first, second = two_queued_jobs
    listing = staff_client.get(JOBS_URL)
    assert listing.status_code == 200
    assert str(second.pk) in listing.content.decode()
    response = staff_client.post(JOBS_URL, {"action": "move_to_front", "_selected_action": [str(second.pk)]})
    assert response.status_code == 302
    assert jobs.job_claim().pk == second.pk


def test_an_operator_cancels_a_queued_job_and_its_hold_is_released(staff_client, two_queued_jobs):
    job = two_queued_jobs[0]
    staff_client.post(JOBS_URL, {"action": "cancel_queued", "_selected_action": [str(job.pk)]})
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "operator" in job.error_text
    assert Wallet.objects.get(user=job.owner).reserved == 0
    assert not job.project.pages.exclude(status=PageStatus.PENDING).exists()


def test_job_rows_cannot_be_edited_or_added(staff_client, two_queued_jobs):
    job = two_queued_jobs[0]
    assert staff_client.get(f"{JOBS_URL}add/").status_code == 403
    staff_client.post(f"{JOBS_URL}{job.pk}/change/", {"status": "Succeeded", "queue_position": 0})
    assert Job.objects.get(pk=job.pk).status == JobStatus.QUEUED


def test_non_staff_cannot_reach_the_queue(client):
    client.force_login(UserFactory())
    assert client.get(JOBS_URL).status_code == 302  # to the admin login
