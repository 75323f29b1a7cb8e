"""Real processes for the end-to-end tests: a Celery worker and the API server (uvicorn),
each in a session of its own so that a kill reaches every process it started, with its
output in a log file that a failing test shows."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import quote

import httpx
from django.conf import settings
from django.db import connection

REPO_ROOT = Path(__file__).resolve().parents[2]
WORK_QUEUES = "process,retry,default"


def database_url() -> str:
    """The database this test runs on (pytest-django's `test_<name>`), as a DATABASE_URL."""
    db = connection.settings_dict
    credentials = quote(db["USER"] or "", safe="")
    if db["PASSWORD"]:
        credentials += ":" + quote(db["PASSWORD"], safe="")
    host = db["HOST"] or "127.0.0.1"
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgres://{credentials}@{host}{port}/{quote(db['NAME'], safe='')}"


def service_env(var_dir: Path, **overrides: object) -> dict[str, str]:
    """The environment of a worker or server: this test's database and Redis, the echo
    engine, files under `var_dir`; `overrides` on top (values turned into strings)."""
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": database_url(),
            "REDIS_URL": settings.REDIS_URL,
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "CACHE_URL": settings.CACHES["default"]["LOCATION"],
            "VAR_DIR": str(var_dir),
            "MEDIA_ROOT": str(var_dir / "media"),
            "TRANSLATION_ENGINE": "echo",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update({name: str(value) for name, value in overrides.items()})
    return env


class Service:
    """One started process (and whatever it forks), its output in `log`."""

    def __init__(self, name: str, argv: list[str], env: Mapping[str, str], log: Path) -> None:
        self.name, self.log = name, log
        self.killed = False
        with log.open("wb") as output:
            self.process = subprocess.Popen(
                argv,
                cwd=REPO_ROOT,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: killpg reaches its children
            )

    def kill(self) -> None:
        """SIGKILL to the whole process group, then reap it. Safe to call twice."""
        self.killed = True
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):  # it died between the two calls
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return f"--- {self.name} ({self.log}) ---\n" + "\n".join(text.splitlines()[-lines:])


class Services:
    """What a test started; the fixture kills them all at the end, whatever happened."""

    def __init__(self, var_dir: Path) -> None:
        self.var_dir = var_dir
        self.started: list[Service] = []

    def worker(
        self, name: str, queues: str = WORK_QUEUES, *, pool: str = "solo", concurrency: int = 1, **env: object
    ) -> Service:
        """A worker on `queues` (comma-separated; processing's by default), one task at a
        time; `pool="prefork"` as in production where a test needs its time limits, or
        `pool="threads"` with a `concurrency` as the GPU node runs its batches."""
        argv = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-Q",
            queues,
            f"--pool={pool}",
            "-c",
            str(concurrency),
            "--without-heartbeat",
            "--without-mingle",
            "--without-gossip",
            "-n",
            f"{name}@%h",
            "--loglevel=INFO",
        ]
        # Its database sessions carry its name (libpq's PGAPPNAME), so a test can find them.
        return self._start(name, argv, service_env(self.var_dir, PGAPPNAME=f"worker-{name}", **env))

    def server(self, port: int, **env: object) -> Service:
        argv = [
            sys.executable,
            "-m",
            "uvicorn",
            "config.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--lifespan",
            "off",
            "--log-level",
            "warning",
        ]
        return self._start("server", argv, service_env(self.var_dir, **env))

    def api_server(self, **env: object) -> str:
        """An API server on a free port, started and answering; its base URL."""
        port = free_port()
        self.server(port, **env)
        base = f"http://127.0.0.1:{port}"

        def up() -> bool:
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=5) as answer:  # noqa: S310 (loopback)
                    return bool(answer.status == 200)
            except OSError:
                return False

        wait_until(up, what="the API server", services=self)
        return base

    def _start(self, name: str, argv: list[str], env: Mapping[str, str]) -> Service:
        service = Service(name, argv, env, self.var_dir / f"{name}.log")
        self.started.append(service)
        return service

    def logs(self) -> str:
        return "\n".join(service.tail() for service in self.started)

    def stop_all(self) -> None:
        for service in self.started:
            service.kill()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until(
    condition: Callable[[], object], *, what: str, services: Services, timeout: float = 60.0, every: float = 0.1
) -> object:
    """Polls `condition` until it returns something truthy; fails with the services' logs
    after `timeout` (a deadline against hanging, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        for service in services.started:
            if not service.killed and service.process.poll() is not None:
                raise AssertionError(f"{service.name} exited ({service.process.returncode}) while waiting for {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}\n{services.logs()}")
        time.sleep(every)


def book_create(api: httpx.Client, book: bytes, *, file_name: str = "book.pdf", target: str = "fr") -> str:
    """Uploads the PDF and makes a project of it, into the target language, through the
    API the client speaks to; the project's id."""
    uploaded = api.post("/v1/uploads", files={"file": (file_name, book, "application/pdf")})
    assert uploaded.status_code == 200, uploaded.text
    created = api.post("/v1/projects", json={"uploadKey": uploaded.json()["uploadKey"], "targetLanguageCode": target})
    assert created.status_code == 201, created.text
    return str(created.json()["id"])
