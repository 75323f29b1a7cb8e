"""Every projects test stores files in a fresh local folder (the S3 tests override it)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def local_storage(settings, tmp_path: Path) -> Path:
    root = tmp_path / "storage"
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(root)}},
    }
    return root
