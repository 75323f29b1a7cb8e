"""What every upload endpoint shares: the limits shape and how an extension is read."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class UploadLimits:
    """What an endpoint accepts: extensions with a leading dot, and a size in bytes."""

    accepted_extensions: tuple[str, ...]
    max_file_size_bytes: int


def extension_of(file_name: str) -> str:
    """The lower-case extension with its leading dot (".png"), or "" when there is none."""
    return os.path.splitext(os.path.basename(file_name or ""))[1].lower()
