"""Generated export files: one row per (project, format, options, content), so that a book
that changed since gets a new file and a double-submit finds the one already made."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone


class ExportStatus(models.TextChoices):
    PENDING = "pending"
    READY = "ready"
    FAILED = "failed"


class ExportFile(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="exports")
    format = models.CharField(max_length=16)
    options_key = models.CharField(max_length=128, help_text="the export options in text form")
    content_hash = models.CharField(max_length=64, help_text="digest of the book's state the file was made from")
    status = models.CharField(max_length=8, choices=ExportStatus.choices, default=ExportStatus.PENDING)
    file_name = models.CharField(max_length=128, unique=True, help_text="the name in the download url")
    save_as_name = models.CharField(max_length=255)
    mime_type = models.CharField(max_length=128)
    storage_key = models.CharField(max_length=512, blank=True)
    size_bytes = models.BigIntegerField(null=True, blank=True)
    error_text = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "format", "options_key", "content_hash"], name="export_one_per_content"
            ),
        ]
        indexes = [models.Index(fields=["project", "status"], name="export_project_status")]

    def __str__(self) -> str:
        return f"{self.format} export of {self.project_id} ({self.status})"
