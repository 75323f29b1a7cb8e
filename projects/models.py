from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import models
from django.utils import timezone

from core.money import MONEY_DIGITS, MONEY_PLACES


class SourceKind(models.TextChoices):
    PDF = "pdf", "PDF"
    IMAGE = "image", "Single image"
    ZIP = "zip", "Zip of images"
    FOLDER = "folder", "Folder of images (server path)"


class Upload(models.Model):
    """A file received and checked, waiting to become a project's source.

    An owner's upload is adopted by POST /v1/projects with its uploadKey; an anonymous one
    (from an estimate) by a signed-in user with its anonymousUploadKey, within its window.
    Unadopted uploads are deleted with their file when they expire.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    key = models.CharField(max_length=64, unique=True, help_text="the opaque key given to the client")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="uploads"
    )
    storage_key = models.CharField(max_length=512)
    file_name = models.CharField(max_length=255, help_text="sanitized file name")
    size_bytes = models.BigIntegerField()
    kind = models.CharField(max_length=8, choices=SourceKind.choices)
    page_count = models.PositiveIntegerField()
    word_estimate = models.PositiveIntegerField(default=0)
    has_text_layer = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    adopted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["expires_at"], condition=models.Q(adopted_at__isnull=True), name="upload_unadopted_expiry"
            )
        ]

    def __str__(self) -> str:
        return f"{self.file_name} ({self.key[:12]}…)"

    @property
    def is_anonymous(self) -> bool:
        return self.owner_id is None


class ProjectStatus(models.TextChoices):
    CREATED = "Created"
    CALIBRATING = "Calibrating"
    PROCESSING = "Processing"
    PAUSED_NEEDS_CREDIT = "PausedNeedsCredit"
    PAUSED_NEEDS_CAPACITY = "PausedNeedsCapacity"
    COMPLETE = "Complete"
    COMPLETED_WITH_ERRORS = "CompletedWithErrors"
    FAILED = "Failed"
    CANCELLING = "Cancelling"
    CANCELLED = "Cancelled"


class NormalizeState(models.TextChoices):
    NOT_STARTED = "not_started"
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class Project(models.Model):
    """A book: its source, its pages, its target language and where it stands."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="projects"
    )
    name = models.CharField(max_length=200)
    book_title = models.CharField(
        max_length=300, blank=True, help_text="the book's own title: its PDF's metadata, else its first page's heading"
    )
    status = models.CharField(max_length=24, choices=ProjectStatus.choices, default=ProjectStatus.CREATED)
    target_language_code = models.CharField(max_length=8)
    source_language_override = models.CharField(max_length=8, null=True, blank=True)
    approval_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    status_changed_at = models.DateTimeField(default=timezone.now)

    source_kind = models.CharField(max_length=8, choices=SourceKind.choices)
    source_object_key = models.CharField(max_length=512, null=True, blank=True)
    source_path = models.CharField(max_length=1024, blank=True)
    source_file_name = models.CharField(max_length=255, blank=True)
    source_size_bytes = models.BigIntegerField(null=True, blank=True)
    source_page_count = models.PositiveIntegerField(default=0, help_text="pages found when the source was checked")
    source_has_text_layer = models.BooleanField(
        default=False, help_text="whether the source's check found text in it (a PDF with a text layer)"
    )

    normalize_state = models.CharField(
        max_length=12, choices=NormalizeState.choices, default=NormalizeState.NOT_STARTED
    )
    normalize_pages_done = models.PositiveIntegerField(default=0)
    normalize_heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="last sign of life of the running normalize"
    )
    failure_code = models.CharField(max_length=64, blank=True)
    failure_reason = models.TextField(blank=True)
    glossary = models.JSONField(
        default=dict, blank=True, help_text="names and terms -> their translation, kept the same across pages"
    )

    class Meta:
        indexes = [
            models.Index(fields=["owner", "-created_at"], name="project_owner_newest"),
            models.Index(fields=["status", "created_at"], name="project_status_created"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(source_object_key__isnull=False) | ~models.Q(source_path=""),
                name="project_has_a_source",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def retention_days(self) -> int:
        """The retention window of the current status (a never-started draft's is shorter)."""
        if self.status == ProjectStatus.CREATED:
            return settings.RETENTION_DRAFT_DAYS
        return settings.RETENTION_DAYS

    @property
    def expires_at(self) -> datetime:
        return self.created_at + timedelta(days=self.retention_days)


class PageStatus(models.TextChoices):
    PENDING = "Pending"
    IN_PROGRESS = "InProgress"
    APPROVED = "Approved"
    FAILED = "Failed"


class Page(models.Model):
    """One page of a book, in order: its image, its text layer if the PDF had one, and
    later its translation. Normalize creates every row of the book at once (not prepared),
    then stores each page's image and text and marks it prepared."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="pages")
    index = models.PositiveIntegerField(help_text="1-based position in the book")
    source_name = models.CharField(max_length=255, help_text="the file (or PDF page) it came from")
    prepared = models.BooleanField(
        default=True,
        help_text="its image, thumbnail and text layer are stored (normalize makes the rows first, then fills them)",
    )
    image_key = models.CharField(max_length=512, blank=True)
    thumbnail_key = models.CharField(max_length=512, blank=True)
    width = models.PositiveIntegerField(default=0)
    height = models.PositiveIntegerField(default=0)
    text_layer = models.TextField(blank=True)
    layout = models.JSONField(
        default=dict, blank=True, help_text="its blocks, lines and font runs with positions (docs/book-structure.md)"
    )
    structured = models.BooleanField(
        default=False, help_text="its body was read from its layout into source_markdown (docs/book-structure.md)"
    )
    source_markdown = models.TextField(
        blank=True,
        help_text="what is translated: the page's body as Markdown (furniture left out, paragraphs joined, "
        "a paragraph carried over the page break whole, headings, code, tables)",
    )
    furniture = models.JSONField(
        default=list, blank=True, help_text="running headers, footers and page numbers left out: [{kind, text}]"
    )
    carried_from = models.PositiveIntegerField(
        null=True, blank=True, help_text="the page whose paragraph this page's first lines finish (translated there)"
    )
    carried_lines = models.JSONField(
        default=list, blank=True, help_text="those lines, as [block, line] of its layout (left out of its body)"
    )
    has_text_layer = models.BooleanField(default=False)
    word_count = models.PositiveIntegerField(default=0)
    included = models.BooleanField(default=True)
    source_language_override = models.CharField(max_length=8, null=True, blank=True)
    status = models.CharField(max_length=12, choices=PageStatus.choices, default=PageStatus.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    cost_usd = models.DecimalField(
        max_digits=MONEY_DIGITS,
        decimal_places=MONEY_PLACES,
        null=True,
        blank=True,
        help_text="measured engine cost of its translation",
    )
    job = models.ForeignKey(
        "Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="pages", help_text="its latest batch"
    )
    # The review package of the latest translation.
    translation = models.TextField(blank=True)
    source_text = models.TextField(blank=True, help_text="the text layer, or what the engine transcribed")
    review_flags = models.JSONField(
        default=list,
        blank=True,
        help_text="why its translation needs a look though Approved, in words (an OCR reading that cannot be "
        "trusted: low confidence, text cut at the edge, ink left unread); [] when nothing says so",
    )
    detected_source_language = models.CharField(max_length=8, blank=True)
    engine = models.CharField(max_length=32, blank=True)
    model_name = models.CharField(max_length=255, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    failure_reason = models.TextField(blank=True)
    failure_code = models.CharField(
        max_length=32,
        blank=True,
        help_text="why it failed, for machines: engine_error, language_unsupported, translation_incomplete, "
        "internal_error",
    )
    failure_retryable = models.BooleanField(
        default=True, help_text="False when the failure would repeat (the ladder does not retry it by itself)"
    )
    translated_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["project", "index"]
        constraints = [
            models.UniqueConstraint(fields=["project", "index"], name="page_unique_index"),
        ]

    def __str__(self) -> str:
        return f"{self.project_id} page {self.index}"


class JobKind(models.TextChoices):
    PROCESS_NEXT_BATCH = "ProcessNextBatch"
    RETRY_FAILED_PAGES = "RetryFailedPages"


class JobStatus(models.TextChoices):
    QUEUED = "Queued"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


class QueueTicket(models.Model):
    """One row per enqueue: its auto-increment id is the global queue position, handed out
    in enqueue order without a lock shared by every project."""

    id = models.BigAutoField(primary_key=True)

    def __str__(self) -> str:
        return f"queue ticket {self.pk}"


class Job(models.Model):
    """One batch of a book: queued with its hold, claimed by one worker, settled once.
    The Job table is the source of truth; a Celery message only wakes a worker."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="jobs")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="jobs"
    )
    kind = models.CharField(max_length=20, choices=JobKind.choices)
    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.QUEUED)
    queue_position = models.BigIntegerField(db_index=True)
    rung = models.PositiveIntegerField(help_text="the approval count the batch was cut at")
    page_count = models.PositiveIntegerField()
    held_usd = models.DecimalField(max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES, default=Decimal(0))
    charged_usd = models.DecimalField(max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES, null=True, blank=True)
    measured_usd = models.DecimalField(
        max_digits=MONEY_DIGITS,
        decimal_places=MONEY_PLACES,
        null=True,
        blank=True,
        help_text="what its translated pages measured, at settlement: above charged_usd when the charge was "
        "capped at the hold (an engine costlier than the price table)",
    )
    error_text = models.TextField(blank=True)
    progress_note = models.CharField(max_length=500, blank=True)
    claims = models.PositiveSmallIntegerField(default=0, help_text="times a worker claimed it")
    enqueued_at = models.DateTimeField(default=timezone.now)
    status_changed_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["queue_position"], condition=models.Q(status="Queued"), name="job_queued_by_position"),
            models.Index(fields=["status", "heartbeat_at"], name="job_status_heartbeat"),
        ]
        constraints = [
            # Single in flight: at most one Queued or Running job per project.
            models.UniqueConstraint(
                fields=["project"],
                condition=models.Q(status__in=["Queued", "Running"]),
                name="job_one_in_flight_per_project",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.id} ({self.status})"

    @property
    def in_flight(self) -> bool:
        return self.status in (JobStatus.QUEUED, JobStatus.RUNNING)
