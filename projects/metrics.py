"""Processing's scrape-time metrics (registered with core.metrics_collectors in
ProjectsConfig.ready): jobs by status and the oldest queued job's wait, pages by status."""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Min
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily, Metric

from core.metrics_collectors import counts_by_choice
from projects.models import Job, JobStatus, Page


def job_metrics() -> Iterator[Metric]:
    jobs = GaugeMetricFamily("bts_jobs", "Jobs (batches) by status.", labels=["status"])
    for status, rows in counts_by_choice(Job, "status").items():
        jobs.add_metric([status], rows)
    yield jobs
    oldest = Job.objects.filter(status=JobStatus.QUEUED).aggregate(oldest=Min("enqueued_at"))["oldest"]
    age = GaugeMetricFamily(
        "bts_jobs_oldest_queued_age_seconds", "How long the oldest Queued job has waited (0 when none)."
    )
    age.add_metric([], max((timezone.now() - oldest).total_seconds(), 0.0) if oldest else 0.0)
    yield age


def page_metrics() -> Iterator[Metric]:
    pages = GaugeMetricFamily("bts_pages", "Pages of every book by status.", labels=["status"])
    for status, rows in counts_by_choice(Page, "status").items():
        pages.add_metric([status], rows)
    yield pages
