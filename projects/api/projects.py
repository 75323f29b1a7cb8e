"""HTTP endpoints of intake: uploads, the anonymous estimate, projects and pages."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.files.storage import default_storage
from django.http import FileResponse, HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import request_user
from core.idempotency import idempotent
from core.negotiation import AcceptAnyNegotiation
from core.openapi import problem_responses
from core.pagination import StrictPageNumberPagination
from core.serializers import UploadLimitsSerializer, validated, validated_query
from core.throttling import ClientAddressRateThrottle
from core.uploads import OwnedTemporaryFileUploadHandler
from projects.api.project_read import project_response
from projects.api.serializers import (
    AnonymousEstimateSerializer,
    PageDetailSerializer,
    PageImageQuerySerializer,
    PageSelectionInputSerializer,
    PageSelectionResultSerializer,
    PageSerializer,
    PageUpdateInputSerializer,
    ProjectCreateInputSerializer,
    ProjectListQuerySerializer,
    ProjectSerializer,
    ProjectSummarySerializer,
    ProjectUpdateInputSerializer,
    UploadInputSerializer,
    UploadResultSerializer,
)
from projects.errors import PagesNotReady
from projects.models import Project
from projects.selectors import projects as selectors
from projects.selectors.billing import upload_book_cost
from projects.selectors.languages import project_batch_quote_read
from projects.services import projects as services
from projects.services import uploads
from projects.services.normalize import project_normalize
from wallet.api.serializers import BatchQuoteSerializer

UPLOAD_DESCRIPTION = (
    "multipart/form-data with the file in the part `file`. The content is checked (magic bytes, "
    "then the real parser), whatever the name or Content-Type says; see GET /v1/uploads/limits."
)


def received_file(request: Request) -> Any:
    """The multipart `file`, spooled to a temporary file and cut off past the size limit."""
    request._request.upload_handlers = [
        uploads.SizeLimitedUploadHandler(max_bytes=settings.UPLOAD_MAX_BYTES),
        OwnedTemporaryFileUploadHandler(request._request),
    ]
    return validated(UploadInputSerializer, request.data)["file"]


class UploadLimitsView(APIView):
    @extend_schema(operation_id="get_upload_limits", tags=["uploads"], responses={200: UploadLimitsSerializer})
    def get(self, request: Request) -> Response:
        return Response(UploadLimitsSerializer(uploads.upload_limits()).data)


class UploadView(APIView):
    parser_classes = [MultiPartParser]
    body_file_limits = staticmethod(uploads.upload_limits)  # enforced as the body arrives (config/asgi.py)

    @extend_schema(
        operation_id="upload_file",
        tags=["uploads"],
        request={"multipart/form-data": UploadInputSerializer},
        responses={200: UploadResultSerializer, **problem_responses(413)},
        description=UPLOAD_DESCRIPTION,
    )
    def post(self, request: Request) -> Response:
        record, raw_key = uploads.upload_receive(owner=request_user(request), upload=received_file(request))
        body = {**UploadResultSerializer.from_upload(record), "upload_key": raw_key}
        return Response(UploadResultSerializer(body).data)


class AnonymousEstimateView(APIView):
    permission_classes = [AllowAny]
    authentication_classes: list[type] = []
    parser_classes = [MultiPartParser]
    body_file_limits = staticmethod(uploads.upload_limits)
    throttle_classes = [ClientAddressRateThrottle]
    throttle_scope = "estimate"

    @extend_schema(
        operation_id="estimate_anonymously",
        tags=["uploads"],
        auth=[],
        request={"multipart/form-data": UploadInputSerializer},
        responses={200: AnonymousEstimateSerializer, **problem_responses(413)},
        description=UPLOAD_DESCRIPTION + " No charge. Pages without a text layer have their words estimated "
        "from a few sample pages read with Tesseract, within WORD_ESTIMATE_BUDGET_SECONDS (no OCR of the book). "
        "bookCost says what the whole book would cost: about expectedUsd, at most maxUsd. The file is kept for "
        "ANONYMOUS_UPLOAD_HOURS (24 h) so that a signed-in user can adopt it with anonymousUploadKey.",
    )
    def post(self, request: Request) -> Response:
        record, raw_key = uploads.upload_receive(owner=None, upload=received_file(request))
        body = {
            **UploadResultSerializer.from_upload(record),
            "has_text_layer": record.has_text_layer,
            "anonymous_upload_key": raw_key,
            "book_cost": upload_book_cost(upload=record),
        }
        return Response(AnonymousEstimateSerializer(body).data)


class ProjectPagination(StrictPageNumberPagination):
    """?page=N&pageSize=M; the default page size is the account's preference."""

    def page_size_max(self) -> int:
        return settings.PROJECTS_PAGE_SIZE_MAX

    def get_page_size(self, request: Request) -> int:
        return super().get_page_size(request) or request_user(request).projects_page_size


class PagePagination(StrictPageNumberPagination):
    page_size = 200
    max_page_size = 1000


class ProjectListView(APIView):
    pagination_class = ProjectPagination  # the schema shows the page envelope

    @extend_schema(
        operation_id="list_projects",
        tags=["projects"],
        parameters=[ProjectListQuerySerializer, *ProjectPagination.query_parameters()],
        responses={200: ProjectSummarySerializer(many=True)},
        description="The caller's projects, newest first, paginated (default page size: the account's "
        "projectsPageSize preference), optionally of one status.",
    )
    def get(self, request: Request) -> Response:
        query = validated_query(ProjectListQuerySerializer, request.query_params)
        projects = selectors.project_list_for_owner(owner=request_user(request), status=query.get("status"))
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(projects, request, view=self)
        return paginator.get_paginated_response(ProjectSummarySerializer(page, many=True).data)

    @extend_schema(
        operation_id="create_project",
        tags=["projects"],
        request=ProjectCreateInputSerializer,
        responses={201: ProjectSerializer, **problem_responses(403, 409)},
        description="Exactly one source: uploadKey (POST /v1/uploads), anonymousUploadKey (an anonymous "
        "estimate, adopted without re-uploading) or sourcePath (staff, inside the configured folders). "
        "Idempotent: see Idempotency-Key in docs/api.md.",
    )
    @idempotent
    def post(self, request: Request) -> Response:
        data = validated(ProjectCreateInputSerializer, request.data)
        project = services.project_create(owner=request_user(request), **data)
        return Response(ProjectSerializer(project).data, status=status.HTTP_201_CREATED)


def owned_project(request: Request, project_id: str) -> Project:
    """The caller's project from the path; anyone else's is a 404, like a missing one."""
    return selectors.project_get_for_owner(owner=request_user(request), project_id=project_id)


class ProjectDetailView(APIView):
    @extend_schema(operation_id="get_project", tags=["projects"], responses={200: ProjectSerializer})
    def get(self, request: Request, project_id: str) -> HttpResponseBase:
        project = selectors.project_with_pages(project=owned_project(request, project_id))
        return project_response(request, project)

    @extend_schema(
        operation_id="update_project",
        tags=["projects"],
        request=ProjectUpdateInputSerializer,
        responses={200: ProjectSerializer, **problem_responses(409)},
        description="Rename, set the project-wide source language override (null clears it), or change the "
        "target language (only before translation starts).",
    )
    def patch(self, request: Request, project_id: str) -> HttpResponseBase:
        data = validated(ProjectUpdateInputSerializer, request.data)
        clear = "source_language_override" in data and data["source_language_override"] is None
        project = services.project_update(
            project=owned_project(request, project_id), clear_source_language_override=clear, **data
        )
        return project_response(request, selectors.project_with_pages(project=project))

    @extend_schema(
        operation_id="delete_project",
        tags=["projects"],
        responses={204: OpenApiResponse(description="Deleted, with its pages and files.")},
    )
    def delete(self, request: Request, project_id: str) -> Response:
        services.project_delete(project=owned_project(request, project_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class ProjectNormalizeView(APIView):
    @extend_schema(
        operation_id="normalize_project",
        tags=["projects"],
        request=None,
        responses={200: ProjectSerializer, **problem_responses(409)},
        description="Turn the source into ordered pages. Every page row is made at once and the book is "
        "Calibrating when this returns, so `process` may follow right away. Small books (up to "
        "NORMALIZE_INLINE_MAX_PAGES) are also rendered before it returns; larger ones are rendered on a "
        "worker, page by page (`normalization.pagesDone`, each page's `prepared`), and a batch starts as soon "
        "as its own pages are ready. A file that turns out unreadable makes the book Failed, with `failure`. "
        "Calling it again is harmless.",
    )
    def post(self, request: Request, project_id: str) -> HttpResponseBase:
        project = owned_project(request, project_id)
        project = project_normalize(project=project)
        return project_response(request, selectors.project_with_pages(project=project))


class BatchQuoteView(APIView):
    @extend_schema(
        operation_id="get_batch_quote",
        tags=["projects"],
        responses={200: BatchQuoteSerializer},
        description="What the next batch of the ladder would cover and cost, against the wallet as it is now. "
        "The first batch is calibration (estimable false, no dollar estimate, a positive balance needed); "
        "afterwards estimatedUsd is pages x the ceiling rate of the book's price tier, the figure the gate "
        "and the hold use. canStart is false with blockedOn language_pair_unsupported (the explanation says "
        "which pair) when the engine cannot translate the book's languages. bookCost prices the whole book "
        "(about expectedUsd, at most maxUsd). See docs/billing.md.",
    )
    def get(self, request: Request, project_id: str) -> Response:
        quote = project_batch_quote_read(project=owned_project(request, project_id))
        return Response(BatchQuoteSerializer(quote).data)


class PageListView(APIView):
    pagination_class = PagePagination  # the schema shows the page envelope

    @extend_schema(
        operation_id="list_pages",
        tags=["pages"],
        parameters=PagePagination.query_parameters(),
        responses={200: PageSerializer(many=True)},
        description="The project's pages in order, paginated.",
    )
    def get(self, request: Request, project_id: str) -> Response:
        project = owned_project(request, project_id)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(selectors.page_list(project=project), request, view=self)
        return paginator.get_paginated_response(PageSerializer(page, many=True).data)


class PageSelectionView(APIView):
    @extend_schema(
        operation_id="select_pages",
        tags=["pages"],
        request=PageSelectionInputSerializer,
        responses={200: PageSelectionResultSerializer},
        description="Include pages in the translation, or leave them out, by id or by page number.",
    )
    def post(self, request: Request, project_id: str) -> Response:
        project = owned_project(request, project_id)
        updated = services.pages_select(project=project, **validated(PageSelectionInputSerializer, request.data))
        return Response(PageSelectionResultSerializer({"updated": updated}).data)


class PageDetailView(APIView):
    @extend_schema(
        operation_id="get_page",
        tags=["pages"],
        responses={200: PageDetailSerializer},
        description="One page with its review package (source text, translation, detected source language, "
        "engine and model, tokens, cost), null until it has been translated.",
    )
    def get(self, request: Request, project_id: str, page_id: str) -> Response:
        project = owned_project(request, project_id)
        return Response(PageDetailSerializer(selectors.page_get(project=project, page_id=page_id)).data)

    @extend_schema(
        operation_id="update_page",
        tags=["pages"],
        request=PageUpdateInputSerializer,
        responses={200: PageDetailSerializer},
        description="Include or leave out one page, or set its source language override (null clears it).",
    )
    def patch(self, request: Request, project_id: str, page_id: str) -> Response:
        project = owned_project(request, project_id)
        data = validated(PageUpdateInputSerializer, request.data)
        clear = "source_language_override" in data and data["source_language_override"] is None
        page = services.page_update(
            page=selectors.page_get(project=project, page_id=page_id), clear_source_language_override=clear, **data
        )
        return Response(PageDetailSerializer(page).data)


class PageImageView(APIView):
    content_negotiation_class = AcceptAnyNegotiation

    @extend_schema(
        operation_id="get_page_image",
        tags=["pages"],
        parameters=[PageImageQuerySerializer],
        responses={
            (200, "image/png"): OpenApiResponse(response=OpenApiTypes.BINARY, description="The page image."),
            **problem_responses(409),
        },
        description="The page as rendered (variant=full) or its thumbnail (variant=thumbnail), as PNG; 409 "
        "pages_not_ready while the page is still being rendered from the file.",
    )
    def get(self, request: Request, project_id: str, page_id: str) -> FileResponse:
        project = owned_project(request, project_id)
        page = selectors.page_get(project=project, page_id=page_id)
        variant = validated_query(PageImageQuerySerializer, request.query_params)["variant"]
        if not page.prepared:
            raise PagesNotReady("This page is still being rendered from the file; ask again shortly.")
        key = page.thumbnail_key if variant == "thumbnail" else page.image_key
        response = FileResponse(
            default_storage.open(key, "rb"),
            content_type="image/png",
            filename=f"page-{page.index}{'-thumbnail' if variant == 'thumbnail' else ''}.png",
        )
        response["Cache-Control"] = "private, max-age=3600"
        return response
