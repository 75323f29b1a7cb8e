"""Wire shapes of exports."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.urls import reverse
from rest_framework import serializers

from core.serializers import Int64Field
from exports.book import LAYOUTS, REFLOW, ExportOptions
from exports.models import ExportFile, ExportStatus


class ExportRequestSerializer(serializers.Serializer[Any]):
    format = serializers.ChoiceField(choices=settings.EXPORT_FORMATS, help_text="All makes every format.")
    bilingual = serializers.BooleanField(
        default=False, help_text="Source and translation together (Html, Epub, Docx, Pdf, and the Archive's copies)."
    )
    page_markers = serializers.BooleanField(default=False, help_text="A visible marker at each page start.")
    allow_partial = serializers.BooleanField(
        default=False, help_text="Export a book still in progress, with the pages translated so far."
    )
    pages_per_chapter = serializers.IntegerField(
        default=20, min_value=1, max_value=1000, help_text="Chapter length when the book has no headings to cut at."
    )
    layout = serializers.ChoiceField(
        choices=LAYOUTS,
        default=REFLOW,
        help_text="Pdf only. reflow: the book typeset anew (the default). original: each page of the source PDF "
        "(for a book of images, each page image) with its text replaced by the translation, its drawings, images, "
        "links and page size kept; with bilingual, each source page followed by its translated page. The Archive "
        "and All include both.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("layout", REFLOW) != REFLOW and attrs.get("format") != "Pdf":
            raise serializers.ValidationError(
                {"layout": ["Only the Pdf format has a layout; the Archive and All include the original-layout Pdf."]}
            )
        return attrs


class ExportFileSerializer(serializers.ModelSerializer[ExportFile]):
    """The contract's Export file entry, plus the format, its options and its state."""

    save_as_name = serializers.CharField(help_text="Suggested name to save it as (project, date and format).")
    file_name = serializers.CharField(help_text="The name on disk, also the last segment of the url.")
    size_bytes = Int64Field(allow_null=True, help_text="Null until made (or when storage reports none).")
    url = serializers.SerializerMethodField(help_text="Relative path of GET /v1/projects/{id}/exports/{name}.")
    status = serializers.ChoiceField(choices=ExportStatus.choices)
    bilingual = serializers.SerializerMethodField()
    layout = serializers.SerializerMethodField(help_text="Pdf: reflow or original (the source's pages).")
    is_partial = serializers.SerializerMethodField(help_text="Made from a book still in progress.")
    created_utc = serializers.DateTimeField(source="created_at")

    class Meta:
        model = ExportFile
        fields = [
            "format",
            "mime_type",
            "save_as_name",
            "file_name",
            "size_bytes",
            "url",
            "status",
            "bilingual",
            "layout",
            "is_partial",
            "created_utc",
        ]
        ref_name = "ExportFileEntry"

    def get_url(self, export: ExportFile) -> str:
        return reverse("project-export-file", kwargs={"project_id": export.project_id, "name": export.file_name})

    def get_bilingual(self, export: ExportFile) -> bool:
        return ExportOptions.from_key(export.options_key).bilingual

    def get_layout(self, export: ExportFile) -> str:
        return ExportOptions.from_key(export.options_key).layout

    def get_is_partial(self, export: ExportFile) -> bool:
        return ExportOptions.from_key(export.options_key).partial
