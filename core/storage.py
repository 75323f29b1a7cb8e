"""Small helpers around Django's default storage (local files or S3)."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.core.files.storage import default_storage
from django.db import transaction

logger = logging.getLogger(__name__)


def storage_delete_quietly(keys: Iterable[str]) -> None:
    """Delete these files; a failure is logged, never raised (cleanup must not mask errors)."""
    for key in keys:
        if not key:
            continue
        try:
            default_storage.delete(key)
        except Exception:
            logger.exception("Could not delete stored file %s", key)


def storage_delete_on_commit(keys: Iterable[str]) -> None:
    """Delete these files once the current transaction commits (at once outside one)."""
    pending = [key for key in keys if key]
    if pending:
        transaction.on_commit(lambda: storage_delete_quietly(pending), robust=True)
