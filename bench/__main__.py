"""`make bench`: run every bench/bench_*.py against a throw-away SQLite database.

Each module has `run() -> list[Result]`; the results are printed as a table.
"""

from __future__ import annotations

import importlib
import os
import platform
import sys
import tempfile
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    selected = set(argv)
    workdir = tempfile.mkdtemp(prefix="bench-")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["VAR_DIR"] = workdir
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("PASSWORD_HASHERS", "django.contrib.auth.hashers.MD5PasswordHasher")
    sys.path.insert(0, str(BENCH_DIR.parent))

    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"{'benchmark':<44} {'figure':>14} {'baseline':>14} {'ratio':>8}")
    for path in sorted(BENCH_DIR.glob("bench_*.py")):
        if selected and path.stem not in selected:
            continue
        module = importlib.import_module(f"bench.{path.stem}")
        for result in module.run():
            print(result.line())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
