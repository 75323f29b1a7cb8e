"""The settings module: every knob from the environment, documented in the README."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from config import celery_app

ROOT = Path(__file__).resolve().parents[2]


def settings_from_env(**env: str) -> dict:
    """Load config.settings in a fresh interpreter with this environment; return a few values."""
    script = (
        "import json, django; django.setup(); from django.conf import settings as s;"
        "print(json.dumps({'engine': s.DATABASES['default']['ENGINE'],"
        " 'db_name': s.DATABASES['default']['NAME'], 'storage': s.STORAGES['default']['BACKEND'],"
        " 'jwt_hours': s.SIMPLE_JWT['ACCESS_TOKEN_LIFETIME'].total_seconds() / 3600,"
        " 'debug': s.DEBUG, 'hsts': s.SECURE_HSTS_SECONDS, 'cors': s.CORS_ALLOWED_ORIGINS}))"
    )
    clean = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "STORAGE_BACKEND", "DEBUG")}
    result = subprocess.run(
        [sys.executable, "-c", script],
        env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0 or env.get("EXPECT_FAILURE"), result.stderr
    return json.loads(result.stdout) if result.returncode == 0 else {"stderr": result.stderr}


def test_the_embedded_defaults_are_sqlite_and_local_files_with_12_hour_tokens(tmp_path):
    values = settings_from_env(VAR_DIR=str(tmp_path))

    assert values["engine"] == "django.db.backends.sqlite3"
    assert values["db_name"] == str(tmp_path / "db.sqlite3")
    assert values["storage"] == "django.core.files.storage.FileSystemStorage"
    assert values["jwt_hours"] == 12


def test_postgresql_and_s3_are_used_when_configured():
    values = settings_from_env(
        DATABASE_URL="postgres://u:p@db.internal:5432/books", STORAGE_BACKEND="s3", AWS_STORAGE_BUCKET_NAME="books"
    )

    assert values["engine"] == "django.db.backends.postgresql"
    assert values["db_name"] == "books"
    assert values["storage"] == "storages.backends.s3.S3Storage"


def test_cors_origins_come_from_the_environment_with_the_web_app_when_it_is_elsewhere():
    api = "https://api.example.org"
    same = settings_from_env(PUBLIC_BASE_URL=api, APP_URL=f"{api}/", CORS_ALLOWED_ORIGINS="https://a.example.org")
    elsewhere = settings_from_env(
        PUBLIC_BASE_URL=api,
        APP_URL="https://app.example.org/books",
        CORS_ALLOWED_ORIGINS="https://a.example.org,https://b.example.org:8443",
    )

    assert same["cors"] == ["https://a.example.org"]
    assert elsewhere["cors"] == ["https://a.example.org", "https://b.example.org:8443", "https://app.example.org"]


def test_production_refuses_the_development_secret_key():
    refused = settings_from_env(DEBUG="false", EXPECT_FAILURE="1")
    accepted = settings_from_env(DEBUG="false", SECRET_KEY="a-real-secret-" + "x" * 40)

    assert "SECRET_KEY" in refused["stderr"]
    assert accepted["debug"] is False
    assert accepted["hsts"] == 31_536_000


def test_celery_acknowledges_late_and_requeues_a_lost_workers_task():
    conf = celery_app.conf

    assert conf.task_acks_late is True
    assert conf.task_reject_on_worker_lost is True
    assert conf.worker_prefetch_multiplier == 1
    assert {queue.name: queue.routing_key for queue in conf.task_queues} == {
        name: name for name in ("default", "process", "retry", "export", "webhooks")
    }


def test_every_environment_variable_of_the_settings_is_documented_in_the_readme():
    settings_source = (ROOT / "config" / "settings.py").read_text()
    readme = (ROOT / "README.md").read_text()
    variables = set(re.findall(r'env\.\w+\(\s*"([A-Z][A-Z0-9_]+)"', settings_source))
    variables |= set(re.findall(r'Env\(\)\.\w+\(\s*"([A-Z][A-Z0-9_]+)"', settings_source))

    assert len(variables) > 40
    missing = sorted(name for name in variables if name not in readme)
    assert not missing, f"undocumented: {missing}"
