"""S3 for the tests: moto's S3 server (a real HTTP S3 endpoint on loopback), the bucket the
`s3_bucket` fixture (tests/conftest.py) creates, and storage settings that point at it."""

from __future__ import annotations

from typing import Any

BUCKET = "books"
CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "region_name": "us-east-1"}


def s3_storages(current: dict[str, Any], endpoint: str) -> dict[str, Any]:
    """`current` (settings.STORAGES) with the default storage on the test bucket."""
    return {
        **current,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": BUCKET,
                "endpoint_url": endpoint,
                "access_key": CREDENTIALS["aws_access_key_id"],
                "secret_key": CREDENTIALS["aws_secret_access_key"],
                "region_name": CREDENTIALS["region_name"],
                "default_acl": None,
                "file_overwrite": False,
                "querystring_auth": True,
            },
        },
    }
