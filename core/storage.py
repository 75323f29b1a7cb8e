"""Small helpers around Django's default storage (local files or S3)."""

from __future__ import annotations

import logging
import os
import posixpath
from collections.abc import Iterable
from pathlib import Path

from django.core.files.storage import default_storage
from django.db import transaction

logger = logging.getLogger(__name__)


def storage_delete_quietly(keys: Iterable[str]) -> None:
    """Delete these files; a failure is logged, never raised (cleanup must not mask errors)."""
    if isinstance(keys, str):  # one key, not its characters
        keys = [keys]
    for key in keys:
        if not key:
            continue
        try:
            default_storage.delete(key)
        except Exception:
            logger.exception("Could not delete stored file %s", key)


def storage_files_under(prefix: str) -> list[str]:
    """The key of every stored file under the folder `prefix`, at any depth (S3: every
    object whose key starts with `prefix/`). A folder that does not exist has none."""
    prefix = prefix.strip("/")
    try:
        folders, files = default_storage.listdir(prefix)
    except FileNotFoundError:
        return []
    keys = [posixpath.join(prefix, name) for name in files]
    for folder in folders:
        keys += storage_files_under(posixpath.join(prefix, folder))
    return keys


def storage_tree_delete_quietly(prefix: str) -> None:
    """Delete every file under the folder `prefix` (and, on local storage, the emptied
    folders with it). A failure is logged, never raised."""
    try:
        storage_delete_quietly(storage_files_under(prefix))
        _local_folders_prune(prefix)
    except Exception:
        logger.exception("Could not delete the stored files under %s", prefix)


def _local_folders_prune(prefix: str) -> None:
    """Local storage: remove the empty folders left under `prefix`, and `prefix` itself.
    Object storage has no folders to remove."""
    try:
        root = Path(default_storage.path(prefix.strip("/")))
    except NotImplementedError:
        return
    if not root.is_dir():
        return
    for folder, _, _ in sorted(os.walk(root), key=lambda entry: len(entry[0]), reverse=True):
        try:
            os.rmdir(folder)
        except OSError:  # not empty: a file still there (or written meanwhile) keeps it
            continue


def storage_delete_on_commit(keys: Iterable[str], *, trees: Iterable[str] = ()) -> None:
    """Delete these files, and every file under the folders `trees`, once the current
    transaction commits (at once outside one)."""
    pending = [key for key in keys if key]
    folders = [folder for folder in trees if folder]

    def delete() -> None:
        storage_delete_quietly(pending)
        for folder in folders:
            storage_tree_delete_quietly(folder)

    if pending or folders:
        transaction.on_commit(delete, robust=True)
