"""HTTP endpoints of exports: ask for a format, list what is made, download a file."""

from __future__ import annotations

from django.core.files.storage import default_storage
from django.http import FileResponse, HttpResponseRedirect
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import request_user
from core.idempotency import idempotent
from core.negotiation import AcceptAnyNegotiation
from core.openapi import problem_responses
from core.serializers import validated
from exports import services
from exports.book import ExportOptions
from exports.renderers import media_types
from exports.serializers import ExportFileSerializer, ExportRequestSerializer
from projects.models import Project
from projects.selectors.projects import project_get_for_owner

# Binary formats first: a client generator that picks one media type takes bytes.
DOWNLOAD_MEDIA_TYPES = sorted(
    {*media_types(), services.ARCHIVE_MIME}, key=lambda media: (media.startswith("text/"), media)
)


def _owned_project(request: Request, project_id: str) -> Project:
    """The caller's book from the path (projects' read layer); anyone else's is a 404."""
    return project_get_for_owner(owner=request_user(request), project_id=project_id)


class ExportRequestView(APIView):
    @extend_schema(
        operation_id="request_export",
        tags=["exports"],
        request=ExportRequestSerializer,
        responses={202: ExportFileSerializer(many=True), **problem_responses(409)},
        description="Make a format (All: every format and the Archive) on the export queue; poll "
        "GET /v1/projects/{id}/exports. A Complete or CompletedWithErrors book (failed pages are marked in the "
        "text), or a book in progress with allowPartial: true. Asking again for a file already made from the book as "
        "it now is, or being made, does not render it twice; a book that changed since gets a new file. Pdf with "
        "layout: original gives the source PDF's pages with their text replaced (docs/exports.md, \"The original "
        'layout"); layout on another format is a 400 validation_error.',
    )
    @idempotent
    def post(self, request: Request, project_id: str) -> Response:
        project = _owned_project(request, project_id)  # someone else's book: 404, whatever the body
        data = validated(ExportRequestSerializer, request.data)
        options = ExportOptions(
            bilingual=data["bilingual"],
            page_markers=data["page_markers"],
            partial=data["allow_partial"],
            pages_per_chapter=data["pages_per_chapter"],
            layout=data["layout"],
        )
        files = services.export_request(project=project, export_format=data["format"], options=options)
        return Response(ExportFileSerializer(files, many=True).data, status=status.HTTP_202_ACCEPTED)


class ExportListView(APIView):
    @extend_schema(
        operation_id="list_exports",
        tags=["exports"],
        responses={200: ExportFileSerializer(many=True)},
        description="The files made from the book as it now is, ready to download (only formats already made).",
    )
    def get(self, request: Request, project_id: str) -> Response:
        files = services.fresh_exports(project=_owned_project(request, project_id))
        return Response(ExportFileSerializer(files, many=True).data)


class ExportFileView(APIView):
    content_negotiation_class = AcceptAnyNegotiation

    @extend_schema(
        operation_id="download_export",
        tags=["exports"],
        responses={
            **{
                (200, media_type): OpenApiResponse(
                    response=OpenApiTypes.BINARY,
                    description="The file, as an attachment with its UTF-8 save-as name; the media type is "
                    "the format's (mimeType in the export list).",
                )
                for media_type in DOWNLOAD_MEDIA_TYPES
            },
            302: OpenApiResponse(description="With S3 storage: a redirect to a pre-signed URL (Location)."),
            **problem_responses(410),
        },
        description="Download a file the export list names. 410 export_outdated when the book changed since "
        "it was made (the problem carries `exportRequest`, the request that makes a fresh one).",
    )
    def get(self, request: Request, project_id: str, name: str) -> FileResponse | HttpResponseRedirect:
        export = services.export_for_download(project=_owned_project(request, project_id), file_name=name)
        if services.storage_redirects():
            return HttpResponseRedirect(services.download_url(export))
        response = FileResponse(
            default_storage.open(export.storage_key, "rb"),
            content_type=export.mime_type,
            as_attachment=True,
            filename=export.save_as_name,
        )
        response["Cache-Control"] = "private, max-age=300"
        return response
