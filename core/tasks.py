"""Periodic housekeeping of core."""

from celery import shared_task

from core.idempotency import idempotency_records_purge


@shared_task(name="core.tasks.idempotency_records_purge")
def idempotency_records_purge_task() -> int:
    return idempotency_records_purge()
