"""`manage.py requeue_stuck_jobs`: what beat's reaper does, on demand: running jobs whose
worker stopped beating go back to the queue (their committed pages kept, their hold kept)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from projects.services.jobs import jobs_stale_requeue


class Command(BaseCommand):
    help = "Requeue running jobs whose heartbeat is older than --stale-seconds (default JOB_STALE_SECONDS)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--stale-seconds", type=int, help="Silence after which a running job is taken as lost.")

    def handle(self, *args: Any, **options: Any) -> None:
        count = jobs_stale_requeue(stale_seconds=options["stale_seconds"])
        self.stdout.write(f"{count} stuck job(s) requeued.")
