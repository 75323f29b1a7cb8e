"""The compose file's commands run on this machine: the same programs and arguments, on
loopback, with this test's PostgreSQL database, Redis, files and the echo engine in place
of the stack's hosts; their own health checks tell when they are up."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from tests.deploy.stack import REPO_ROOT, Service
from tests.e2e.processes import Service as Process
from tests.e2e.processes import Services, free_port, service_env, wait_until


def command_run(
    argv: list[str], env: Mapping[str, str], *, cwd: Path = REPO_ROOT, timeout: float
) -> subprocess.CompletedProcess[str]:
    """Runs the command to its end, its output captured as text; the caller reads its exit
    status."""
    return subprocess.run(argv, env=dict(env), cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)


def celery_inspect(command: str, node: str, env: Mapping[str, str], *options: str) -> str:
    """What `celery inspect <command>` prints for the worker `node`; the command must succeed."""
    done = command_run(
        [sys.executable, "-m", "celery", "-A", "config", "inspect", command, "-d", node, *options], env, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def local_env(service: Service, var_dir: Path, **overrides: str) -> dict[str, str]:
    """The service's compose environment with this test's PostgreSQL, Redis, files and the
    echo engine in place of the stack's hosts; its metrics folder (the container's tmpfs)
    a fresh one under `var_dir`, and its metrics port a free one on this machine;
    `overrides` last (what a test needs on loopback)."""
    local = service_env(var_dir)
    here = {
        name: local[name]
        for name in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "CACHE_URL", "VAR_DIR", "MEDIA_ROOT")
    }
    here.update(
        CHANNELS_REDIS_URL=local["REDIS_URL"],
        STORAGE_BACKEND="local",
        TRANSLATION_ENGINE="echo",
        VLLM_BASE_URL="",
        PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
        HOSTNAME=socket.gethostname(),
    )
    if "PROMETHEUS_MULTIPROC_DIR" in service.environment:
        folder = var_dir / f"prometheus-{service.name}"
        folder.mkdir(parents=True, exist_ok=True)
        here["PROMETHEUS_MULTIPROC_DIR"] = str(folder)
    if int(service.environment.get("WORKER_METRICS_PORT") or 0):
        here.update(WORKER_METRICS_PORT=str(free_port()), WORKER_METRICS_ADDRESS="127.0.0.1")
    return service_env(var_dir, **{**service.environment, **here, **overrides})


def local_argv(argv: list[str], *, port: int | None = None) -> list[str]:
    """The compose command run by this interpreter, on loopback and `port`."""
    program = {"uvicorn": [sys.executable, "-m", "uvicorn"], "celery": [sys.executable, "-m", "celery"]}[argv[0]]
    local = list(argv[1:])
    if "--host" in local:
        local[local.index("--host") + 1] = "127.0.0.1"
    if "--port" in local:
        local[local.index("--port") + 1] = str(port)
    return program + local


def healthcheck_argv(service: Service, *, port: int | None = None) -> list[str]:
    """The service's health check as this machine runs it: `python` is this interpreter,
    the container's port 8000 is `port`."""
    test = [str(part) for part in service.spec["healthcheck"]["test"]]
    command = ["/bin/sh", "-c", test[1]] if test[0] == "CMD-SHELL" else test[1:]
    if command[0] == "python":
        command[0] = sys.executable
    if port is not None:
        command = [part.replace("localhost:8000", f"localhost:{port}") for part in command]
    return command


def started(services: Services, name: str, argv: list[str], env: Mapping[str, str]) -> Process:
    process = Process(name, argv, env, services.var_dir / f"{name}.log")
    services.started.append(process)
    return process


def assert_process_answers(command: list[str], env: Mapping[str, str], *, what: str, services: Services) -> str:
    """Runs a health-check command until it exits 0 (the process came up) and returns its
    output."""
    outputs: list[str] = []

    def answers() -> bool:
        done = command_run(command, env, timeout=60)
        outputs.append(done.stdout + done.stderr)
        return done.returncode == 0

    wait_until(answers, what=what, services=services, timeout=120, every=1.0)
    return outputs[-1]
