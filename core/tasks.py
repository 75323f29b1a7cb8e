"""Periodic housekeeping of core."""

from celery import shared_task

from core.idempotency import idempotency_records_purge
from core.uploads import upload_temporary_files_sweep


@shared_task(name="core.tasks.idempotency_records_purge")
def idempotency_records_purge_task() -> int:
    return idempotency_records_purge()


@shared_task(name="core.tasks.upload_temporary_files_sweep")
def upload_temporary_files_sweep_task() -> int:
    """Delete the upload temporary files of processes on this machine that died."""
    return upload_temporary_files_sweep()
