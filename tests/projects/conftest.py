"""Every projects test stores files in a fresh local folder (the S3 tests override it)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _files_in_a_fresh_folder(local_storage):
    return local_storage
