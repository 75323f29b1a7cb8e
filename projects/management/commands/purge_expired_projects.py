"""`manage.py purge_expired_projects`: what beat does hourly, on demand: projects past their
retention window are deleted with their files."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from projects.services.projects import retention_purge


class Command(BaseCommand):
    help = "Delete projects past their retention window, with their files."

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(f"{retention_purge()} expired project(s) purged.")
