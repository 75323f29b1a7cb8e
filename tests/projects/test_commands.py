"""Operators' management commands of processing and accounts."""

from __future__ import annotations

import io
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from accounts.models import User
from projects.models import Job, JobStatus, Project, ProjectStatus
from projects.services import jobs
from tests.factories import ProjectFactory, pages_add
from wallet.models import EntryKind, LedgerEntry, Wallet
from wallet.services.ledger import wallet_credit

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_requeue_stuck_jobs_puts_a_silent_running_job_back_in_the_queue(user, settings):
    settings.TRANSLATION_ENGINE = "echo"
    project = ProjectFactory(owner=user)
    pages_add(project, 2, text_layer="Words.", has_text_layer=True)
    wallet_credit(user=user, amount=Decimal(5), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id="x")
    jobs.process_start(owner=user, project_id=project.pk)
    job = jobs.job_claim()
    Job.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=90))
    assert run("requeue_stuck_jobs") == "0 stuck job(s) requeued.\n"  # 90 s is within JOB_STALE_SECONDS
    assert run("requeue_stuck_jobs", "--stale-seconds", "60") == "1 stuck job(s) requeued.\n"
    assert Job.objects.get(pk=job.pk).status == JobStatus.QUEUED


def test_purge_expired_projects_deletes_only_expired_ones(user):
    expired = ProjectFactory(owner=user, status=ProjectStatus.COMPLETE)
    Project.objects.filter(pk=expired.pk).update(created_at=timezone.now() - timedelta(days=31))
    kept = ProjectFactory(owner=user, status=ProjectStatus.COMPLETE)
    assert run("purge_expired_projects") == "1 expired project(s) purged.\n"
    assert list(Project.objects.values_list("pk", flat=True)) == [kept.pk]


def test_create_user_with_credit_staff_and_a_generated_password(db):
    output = run("create_user", "Reader@Example.com", "--credit", "25", "--staff", "--operator", "ops@example.com")
    user = User.objects.get(email="reader@example.com")
    assert user.is_staff
    password = output.split("Password (shown once): ")[1].split()[0]
    assert user.check_password(password)
    assert Wallet.objects.get(user=user).balance == Decimal(25)
    (entry,) = LedgerEntry.objects.filter(wallet__user=user)
    assert (entry.kind, entry.cause_type) == ("adjustment", "operator")
    assert "ops@example.com" in entry.memo


def test_create_user_refuses_a_taken_email_and_creates_nothing(user):
    with pytest.raises(CommandError):
        run("create_user", user.email.upper(), "--credit", "10")
    assert User.objects.count() == 1
    assert not LedgerEntry.objects.exists()


def test_create_user_unlimited(db):
    run("create_user", "vip@example.com", "--password", "a-long-enough-passphrase-42", "--unlimited")
    assert Wallet.objects.get(user__email="vip@example.com").unlimited is True
