"""Input and output shapes of the intake endpoints (snake_case here, camelCase on the wire)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.serializers import Int64Field, MoneyField
from projects.models import Job, JobKind, JobStatus, Page, PageStatus, Project, ProjectStatus, SourceKind, Upload
from projects.selectors.billing import project_book_cost
from projects.selectors.projects import PAGE_ROW_FIELDS, ROW_ID, ROW_STATUS, PageRow, page_rows
from translation.engines import ModelState
from wallet.api.serializers import BookCostSerializer
from wallet.selectors.pricing import BookCost

LANGUAGE_CHOICES = settings.TARGET_LANGUAGES


# --- Uploads --------------------------------------------------------------------------


class UploadInputSerializer(serializers.Serializer[Any]):
    # An empty file reaches the content check, which answers file_empty.
    file = serializers.FileField(allow_empty_file=True, help_text="The book: a PDF, an image, or a zip of images.")


class UploadResultSerializer(serializers.Serializer[Any]):
    upload_key = serializers.CharField(help_text="Give it to POST /v1/projects as uploadKey.")
    file_name = serializers.CharField(help_text="The sanitized file name.")
    size_bytes = Int64Field()
    kind = serializers.ChoiceField(choices=SourceKind.choices)
    page_count = serializers.IntegerField()
    word_estimate = serializers.IntegerField()
    expires_utc = serializers.DateTimeField(help_text="Unadopted uploads are deleted after this.")

    @staticmethod
    def from_upload(upload: Upload) -> dict[str, Any]:
        """The fields every upload answer shares (the key is added by the caller: it is not stored)."""
        return {
            "file_name": upload.file_name,
            "size_bytes": upload.size_bytes,
            "kind": upload.kind,
            "page_count": upload.page_count,
            "word_estimate": upload.word_estimate,
            "expires_utc": upload.expires_at,
        }


class AnonymousEstimateSerializer(serializers.Serializer[Any]):
    page_count = serializers.IntegerField(help_text="Pages the book will have.")
    word_estimate = serializers.IntegerField(
        help_text="Words of the PDF text layer where there is one; else estimated from a few sample pages read "
        "with Tesseract (within WORD_ESTIMATE_BUDGET_SECONDS), or pages x a words-per-page constant when none "
        "could be read."
    )
    book_cost = BookCostSerializer(
        help_text="The whole book's cost before signing up: about expectedUsd, at most maxUsd (an estimate)."
    )
    has_text_layer = serializers.BooleanField()
    anonymous_upload_key = serializers.CharField(
        help_text="Give it to POST /v1/projects as anonymousUploadKey (once signed in) before expiresUtc."
    )
    expires_utc = serializers.DateTimeField()
    file_name = serializers.CharField()
    size_bytes = Int64Field()
    kind = serializers.ChoiceField(choices=SourceKind.choices)


# --- Projects and pages ---------------------------------------------------------------


class ProjectCreateInputSerializer(serializers.Serializer[Any]):
    name = serializers.CharField(
        max_length=200, required=False, allow_blank=True, help_text="Default: the source file's name."
    )
    upload_key = serializers.CharField(max_length=200, required=False, allow_null=True)
    anonymous_upload_key = serializers.CharField(max_length=200, required=False, allow_null=True)
    source_path = serializers.CharField(
        max_length=1024, required=False, allow_null=True, help_text="Staff only, inside SOURCE_PATH_ROOTS."
    )
    target_language_code = serializers.ChoiceField(choices=LANGUAGE_CHOICES, required=False, allow_null=True)
    source_language_override = serializers.ChoiceField(choices=LANGUAGE_CHOICES, required=False, allow_null=True)
    source_size_bytes = Int64Field(min_value=0, required=False, allow_null=True)


GLOSSARY_MAX_ENTRIES = 500


class GlossaryEntrySerializer(serializers.Serializer[Any]):
    """A name or term and how it is always translated in this book. A list of pairs (not an
    object keyed by term), so that terms are never touched by the camelCase conversion."""

    term = serializers.CharField(max_length=200)
    translation = serializers.CharField(max_length=200)

    class Meta:
        ref_name = "GlossaryEntry"


class ProjectUpdateInputSerializer(serializers.Serializer[Any]):
    name = serializers.CharField(max_length=200, required=False)
    glossary = serializers.ListField(
        child=GlossaryEntrySerializer(),
        required=False,
        max_length=GLOSSARY_MAX_ENTRIES,
        help_text="Replaces the book's glossary: names and terms the engine keeps consistent across pages.",
    )
    target_language_code = serializers.ChoiceField(choices=LANGUAGE_CHOICES, required=False)
    source_language_override = serializers.ChoiceField(
        choices=LANGUAGE_CHOICES, required=False, allow_null=True, help_text="null clears it (auto-detect)."
    )

    def validate_name(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("The name cannot be blank.")
        return value

    def validate_glossary(self, entries: list[dict[str, str]]) -> dict[str, str]:
        glossary: dict[str, str] = {}
        for entry in entries:
            term = entry["term"].strip()
            if term in glossary:
                raise serializers.ValidationError(f"The term {term!r} appears twice.")
            glossary[term] = entry["translation"].strip()
        return glossary


FAILURE_CODES = (
    "engine_error (the engine failed on it), language_unsupported (it is in a language the engine cannot "
    "translate into the target: set its source language if that was misread), translation_incomplete (the "
    "translation was refused as incomplete), internal_error."
)


REVIEW_FLAGS = (
    "Why the page needs a look though it is Approved, in words; empty when nothing says so. A page read from its "
    "image whose reading cannot be trusted (low OCR confidence, many unsure words, text cut at the image's edge, "
    "much of its ink outside every word read) is flagged here, in its review package and in the status view's "
    "flaggedPages (docs/book-structure.md, OCR)."
)


class PageSerializer(serializers.ModelSerializer[Page]):
    image_url = serializers.SerializerMethodField()
    thumbnail_url = serializers.SerializerMethodField()
    status = serializers.ChoiceField(choices=PageStatus.choices)
    cost_usd = MoneyField(allow_null=True, help_text="Measured cost of its translation; null until translated.")
    review_flags = serializers.ListField(child=serializers.CharField(), help_text=REVIEW_FLAGS)

    class Meta:
        model = Page
        fields = [*PAGE_ROW_FIELDS, "image_url", "thumbnail_url"]  # the columns the project read fetches
        extra_kwargs = {
            "prepared": {"help_text": "False while its image and text are still being made from the file."},
            "failure_code": {"help_text": "Why its last attempt failed (empty unless Failed): " + FAILURE_CODES},
            "failure_reason": {"help_text": "The same, in words (empty unless Failed)."},
        }

    def _url(self, page: Page, variant: str) -> str | None:
        if not page.prepared:
            return None
        path = reverse("page-image", kwargs={"project_id": page.project_id, "page_id": page.pk})
        return f"{path}?variant={variant}"

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_image_url(self, page: Page) -> str | None:
        return self._url(page, "full")

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_thumbnail_url(self, page: Page) -> str | None:
        return self._url(page, "thumbnail")


class PageRowRepresentation:
    """PageSerializer's representation of a page, from its row (selectors.projects.PageRow)
    instead of a model instance: the same keys in the same order and the same JSON, at a
    fraction of the cost, for the project read's thousands of pages. `keys` renames the
    fields (the project read streams them already in camelCase)."""

    def __init__(self, *, project_id: uuid.UUID, keys: Sequence[str] = PageSerializer.Meta.fields) -> None:
        self.keys = tuple(keys)
        self.money = MoneyField(allow_null=True)
        marker = uuid.UUID(int=0)
        path = reverse("page-image", kwargs={"project_id": project_id, "page_id": marker})
        self.image_path = path.replace(str(marker), "{page_id}")

    def __call__(self, row: PageRow) -> dict[str, Any]:
        page_id, *columns, cost_usd, failure_code, failure_reason, review_flags, prepared = row
        cost = None if cost_usd is None else self.money.to_representation(cost_usd)
        image = thumbnail = None
        if prepared:
            path = self.image_path.format(page_id=page_id)
            image, thumbnail = f"{path}?variant=full", f"{path}?variant=thumbnail"
        values = (page_id, *columns, cost, failure_code, failure_reason, review_flags, prepared, image, thumbnail)
        return dict(zip(self.keys, values, strict=True))


class NormalizationSerializer(serializers.Serializer[Any]):
    state = serializers.CharField(source="normalize_state")
    pages_done = serializers.IntegerField(source="normalize_pages_done")
    pages_total = serializers.IntegerField(source="source_page_count")


class FailureSerializer(serializers.Serializer[Any]):
    code = serializers.CharField(source="failure_code")
    reason = serializers.CharField(source="failure_reason")


class ProjectSummarySerializer(serializers.ModelSerializer[Project]):
    """A project without its pages (the list view)."""

    owner_id = serializers.UUIDField(allow_null=True)
    status = serializers.ChoiceField(choices=ProjectStatus.choices)
    created_at_utc = serializers.DateTimeField(source="created_at")
    expires_at_utc = serializers.DateTimeField(source="expires_at", read_only=True)
    retention_days = serializers.IntegerField(read_only=True, help_text="The retention window of the current status.")
    source_size_bytes = Int64Field(allow_null=True)
    page_count = serializers.IntegerField(source="source_page_count")
    normalization = serializers.SerializerMethodField()
    failure = serializers.SerializerMethodField()
    book_title = serializers.CharField(
        read_only=True,
        help_text="The book's own title, once its pages are read: its PDF's metadata, else its first page's "
        "first heading (empty when neither has one). A book created without a name is exported under it.",
    )

    class Meta:
        model = Project
        fields = [
            "id",
            "name",
            "book_title",
            "owner_id",
            "status",
            "target_language_code",
            "approval_count",
            "created_at_utc",
            "expires_at_utc",
            "retention_days",
            "source_language_override",
            "source_object_key",
            "source_path",
            "source_file_name",
            "source_kind",
            "source_size_bytes",
            "page_count",
            "normalization",
            "failure",
        ]

    @extend_schema_field(NormalizationSerializer)
    def get_normalization(self, project: Project) -> dict[str, Any]:
        return NormalizationSerializer(project).data

    @extend_schema_field(FailureSerializer(allow_null=True))
    def get_failure(self, project: Project) -> dict[str, Any] | None:
        return FailureSerializer(project).data if project.failure_code else None


class ProjectSerializer(ProjectSummarySerializer):
    """The Project of the contract: the summary plus its pages and the batch in flight."""

    pages = serializers.SerializerMethodField()
    current_batch_page_ids = serializers.SerializerMethodField()
    glossary = serializers.SerializerMethodField()
    book_cost = serializers.SerializerMethodField()

    class Meta(ProjectSummarySerializer.Meta):
        fields = [*ProjectSummarySerializer.Meta.fields, "pages", "current_batch_page_ids", "glossary", "book_cost"]

    @extend_schema_field(BookCostSerializer)
    def get_book_cost(self, project: Project) -> Any:
        """About and at most what the whole book costs; an estimate until a page is measured."""
        cost: BookCost = project_book_cost(project=project)
        return BookCostSerializer(cost).data

    @extend_schema_field(GlossaryEntrySerializer(many=True))
    def get_glossary(self, project: Project) -> list[dict[str, str]]:
        return [{"term": term, "translation": text} for term, text in (project.glossary or {}).items()]

    def _rows(self, project: Project) -> list[PageRow]:
        loaded: list[PageRow] | None = getattr(project, "page_rows", None)
        if loaded is None:
            loaded = project.page_rows = page_rows(project=project)  # type: ignore[attr-defined]
        return loaded

    @extend_schema_field(PageSerializer(many=True))
    def get_pages(self, project: Project) -> Any:
        """Every page, as PageSerializer writes it; an empty list when the context says
        `pages_in_chunks` (the caller writes them, chunk by chunk: projects.api.project_read)."""
        if self.context.get("pages_in_chunks"):
            return []
        represent = PageRowRepresentation(project_id=project.pk)
        return [represent(row) for row in self._rows(project)]

    @extend_schema_field(serializers.ListField(child=serializers.UUIDField()))
    def get_current_batch_page_ids(self, project: Project) -> list[str]:
        return [row[ROW_ID] for row in self._rows(project) if row[ROW_STATUS] == PageStatus.IN_PROGRESS]


class ProjectListQuerySerializer(serializers.Serializer[Any]):
    status = serializers.ChoiceField(choices=ProjectStatus.choices, required=False)


class PageUpdateInputSerializer(serializers.Serializer[Any]):
    included = serializers.BooleanField(required=False)
    source_language_override = serializers.ChoiceField(
        choices=LANGUAGE_CHOICES, required=False, allow_null=True, help_text="null clears it."
    )


class PageSelectionInputSerializer(serializers.Serializer[Any]):
    included = serializers.BooleanField(help_text="true includes the pages in the translation, false leaves them out.")
    page_ids = serializers.ListField(child=serializers.UUIDField(), required=False, max_length=10_000)
    indexes = serializers.ListField(
        child=serializers.IntegerField(min_value=1),
        required=False,
        max_length=10_000,
        help_text="1-based page numbers.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs.get("page_ids") and not attrs.get("indexes"):
            raise serializers.ValidationError("Give pageIds or indexes.")
        return attrs


class PageSelectionResultSerializer(serializers.Serializer[Any]):
    updated = serializers.IntegerField(help_text="How many pages matched.")


class PageImageQuerySerializer(serializers.Serializer[Any]):
    variant = serializers.ChoiceField(choices=["full", "thumbnail"], default="full")


# --- Processing -----------------------------------------------------------------------


class FurnitureLineSerializer(serializers.Serializer[Any]):
    kind = serializers.ChoiceField(choices=["header", "footer", "page_number"])
    text = serializers.CharField()


class ReviewSerializer(serializers.ModelSerializer[Page]):
    """A translated page's review package."""

    page_id = serializers.UUIDField(source="id")
    model = serializers.CharField(source="model_name")
    cost_usd = MoneyField(allow_null=True)
    translated_utc = serializers.DateTimeField(source="translated_at", allow_null=True)
    review_flags = serializers.ListField(child=serializers.CharField(), help_text=REVIEW_FLAGS)
    source_text = serializers.CharField(
        help_text="What was translated: the page's body as Markdown when it was read with its layout (running "
        "headers, footers and page numbers left out, a paragraph carried over the page break whole), else its text "
        "layer or what was read from its image."
    )
    furniture = FurnitureLineSerializer(
        many=True, help_text="The running headers, footers and page numbers left out of the translation and exports."
    )
    carried_from = serializers.IntegerField(
        allow_null=True,
        help_text="The page whose paragraph this page's first lines finish: they are translated (and billed) there.",
    )

    class Meta:
        model = Page
        fields = [
            "page_id",
            "index",
            "status",
            "review_flags",
            "source_text",
            "furniture",
            "carried_from",
            "translation",
            "detected_source_language",
            "engine",
            "model",
            "prompt_tokens",
            "completion_tokens",
            "cost_usd",
            "translated_utc",
            "failure_reason",
            "attempts",
        ]
        ref_name = "PageReview"


class PageDetailSerializer(PageSerializer):
    review = serializers.SerializerMethodField()

    class Meta(PageSerializer.Meta):
        fields = [*PageSerializer.Meta.fields, "failure_reason", "review"]

    @extend_schema_field(ReviewSerializer(allow_null=True))
    def get_review(self, page: Page) -> dict[str, Any] | None:
        """Null until the page has been through the engine."""
        return dict(ReviewSerializer(page).data) if page.engine else None


class JobSerializer(serializers.ModelSerializer[Job]):
    project_id = serializers.UUIDField()
    owner_id = serializers.UUIDField(allow_null=True)
    kind = serializers.ChoiceField(choices=JobKind.choices)
    status = serializers.ChoiceField(choices=JobStatus.choices)
    queue_position = Int64Field(help_text="Global dispatch order: the lowest Queued position runs next.")
    held_credit_usd = MoneyField(source="held_usd", help_text="USD held on the wallet for this batch.")
    charged_usd = MoneyField(allow_null=True, help_text="What the batch was charged, once settled.")
    error_text = serializers.CharField(help_text="Why it failed; empty unless Failed.")
    enqueued_utc = serializers.DateTimeField(source="enqueued_at")
    status_changed_utc = serializers.DateTimeField(source="status_changed_at")
    started_utc = serializers.DateTimeField(source="started_at", allow_null=True)
    finished_utc = serializers.DateTimeField(source="finished_at", allow_null=True)

    class Meta:
        model = Job
        fields = [
            "id",
            "project_id",
            "owner_id",
            "kind",
            "status",
            "queue_position",
            "page_count",
            "held_credit_usd",
            "charged_usd",
            "error_text",
            "progress_note",
            "enqueued_utc",
            "status_changed_utc",
            "started_utc",
            "finished_utc",
        ]
        ref_name = "Job"


class JobHandleSerializer(serializers.Serializer[Any]):
    job_id = serializers.UUIDField(source="id")
    status = serializers.ChoiceField(choices=JobStatus.choices)

    class Meta:
        ref_name = "JobHandle"


class PageRefSerializer(serializers.ModelSerializer[Page]):
    page_id = serializers.UUIDField(source="id")

    class Meta:
        model = Page
        fields = ["page_id", "index", "failure_reason"]
        ref_name = "PageRef"


class BatchRunResultSerializer(serializers.Serializer[Any]):
    batch_size = serializers.IntegerField(source="job.page_count", help_text="Pages the batch was granted.")
    processed_pages = PageRefSerializer(source="processed", many=True)
    failed_pages = PageRefSerializer(source="failed", many=True, help_text="In page order; they stay retryable.")
    total_cost_usd = MoneyField(source="measured_usd", help_text="Measured cost of the batch.")
    charged_usd = MoneyField(source="job.charged_usd", allow_null=True, help_text="What the wallet was charged.")
    project_status = serializers.CharField()
    job_id = serializers.UUIDField(source="job.id")
    reviews = ReviewSerializer(source="processed", many=True)

    class Meta:
        ref_name = "BatchRunResult"


class ProgressSerializer(serializers.Serializer[Any]):
    translated_pages = serializers.IntegerField()
    total_pages = serializers.IntegerField(help_text="Included pages.")
    failed_pages = serializers.IntegerField()
    flagged_pages = serializers.IntegerField(
        help_text="Approved pages with reviewFlags (an OCR reading that cannot be trusted): they need a look."
    )
    rung = serializers.IntegerField(help_text="The ladder rung (approvalCount).")
    next_batch_size = serializers.IntegerField(allow_null=True, help_text="Null on the final rung (all remaining).")


class IntakeSerializer(serializers.Serializer[Any]):
    prepared_pages = serializers.IntegerField(help_text="Pages rendered and ready to translate.")
    total_pages = serializers.IntegerField(help_text="Pages of the book.")

    class Meta:
        ref_name = "IntakeProgress"


class StatusViewSerializer(serializers.Serializer[Any]):
    project_id = serializers.UUIDField()
    state = serializers.ChoiceField(choices=ProjectStatus.choices)
    phase = serializers.ChoiceField(choices=["intake", "working", "waiting", "done", "error", "cancelled"])
    waiting_on = serializers.ChoiceField(
        choices=["gpu_capacity", "gpu_warmup", "queue", "credit"], allow_null=True, help_text="Resumes by itself."
    )
    blocked_on = serializers.ChoiceField(choices=["credit", "retry"], allow_null=True, help_text="The caller must act.")
    next_action = serializers.ChoiceField(choices=["add_credit", "retry", "download"], allow_null=True)
    gpu = serializers.ChoiceField(choices=ModelState.choices, help_text="The GPU backend overlay.")
    title = serializers.CharField()
    detail = serializers.CharField()
    progress = ProgressSerializer()
    intake = IntakeSerializer(
        allow_null=True,
        help_text="While the book's pages are still being prepared (after normalize): how far it is. Batches "
        "may run meanwhile; each starts once its own pages are ready. Null once every page is ready.",
    )
    job_id = serializers.UUIDField(allow_null=True, help_text="The job in flight, if any.")
    timestamp = serializers.DateTimeField()

    class Meta:
        ref_name = "ProjectStatusView"


class QueueMoveInputSerializer(serializers.Serializer[Any]):
    before_job_id = serializers.UUIDField(
        required=False, allow_null=True, help_text="Place it just before this queued job; omit for the front."
    )
