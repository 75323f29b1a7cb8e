"""`make test` starts its own PostgreSQL (scripts/lib.sh `pg_ensure`). As root it runs the
server as the postgres user, who cannot enter a clone under a folder only root may enter
(`/root/project`, the usual place on a fresh Debian machine): its data and log must lie
where that user can reach them. Tested for real: the scripts copied under a mode-700
folder in root's home, `pg_ensure` run from there, a connection made, the server stopped."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.deploy.local import command_run
from tests.deploy.stack import REPO_ROOT
from tests.e2e.processes import free_port

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="as another user the server runs as that user, under VAR_DIR"),
]


def lib_sh(clone: Path, command: str) -> str:
    """Runs `command` after sourcing the clone's scripts/lib.sh, from the clone (as `make
    test` does, with the default VAR_DIR); its output."""
    env = {name: value for name, value in os.environ.items() if name != "VAR_DIR"}
    done = command_run(
        ["bash", "-c", f"set -euo pipefail; source scripts/lib.sh; {command}"], env, cwd=clone, timeout=180
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip()


@pytest.fixture
def clone_under_root_only_folder() -> Iterator[Path]:
    """The repository's scripts in `<mode-700 folder in /root>/project`, removed afterwards
    (/root itself is mode 700 on Debian; mkdtemp's folder is, wherever it lies)."""
    parent = Path(tempfile.mkdtemp(prefix="bt-clone-", dir="/root"))
    clone = parent / "project"
    shutil.copytree(REPO_ROOT / "scripts", clone / "scripts")
    yield clone
    shutil.rmtree(parent)


def test_pg_ensure_starts_a_server_for_a_clone_the_postgres_user_cannot_enter(clone_under_root_only_folder):
    clone, port = clone_under_root_only_folder, free_port()
    refused = subprocess.run(["runuser", "-u", "postgres", "--", "test", "-x", str(clone)], check=False)
    assert refused.returncode != 0, "the postgres user can enter the clone: this test would prove nothing"

    data = Path(lib_sh(clone, f"pg_data_dir {port}"))
    try:
        lib_sh(clone, f"pg_ensure {port}")

        with psycopg.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres") as connection:
            assert connection.execute("SHOW data_directory").fetchone() == (str(data),)
        assert not data.is_relative_to(clone)
        assert data.owner() == "postgres"
        assert (data / "server.log").is_file()
        # The same clone finds the same folder again; another clone gets another one.
        assert lib_sh(clone, f"pg_data_dir {port}") == str(data)
        assert lib_sh(REPO_ROOT, f"pg_data_dir {port}") != str(data)
    finally:
        if (data / "postmaster.pid").exists():
            lib_sh(clone, f'runuser -u postgres -- "$(pg_bindir)/pg_ctl" -D {data} -w -m fast stop')
        shutil.rmtree(data, ignore_errors=True)
