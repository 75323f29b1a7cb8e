"""HTTP endpoints of processing: process, process-next-batch, retry, cancel, the status
view, jobs, page review and the staff's queue order. Thin: parse, call a service, render."""

from __future__ import annotations

from functools import cache
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import request_user
from accounts.models import Scope
from accounts.permissions import requires_scope
from core.idempotency import idempotent
from core.openapi import problem_responses
from core.serializers import validated
from projects.api.projects import owned_project
from projects.api.serializers import (
    BatchRunResultSerializer,
    JobHandleSerializer,
    JobSerializer,
    PageDetailSerializer,
    QueueMoveInputSerializer,
    StatusViewSerializer,
)
from projects.models import JobKind
from projects.selectors import projects as selectors
from projects.selectors.status import status_view_get
from projects.services import jobs, review
from projects.services.runner import batch_run_now


@cache
def _status_serializer() -> StatusViewSerializer:
    """One status serializer per process, its fields bound once: DRF deep-copies a
    serializer's declared fields for every instance, which cost the polled reads more than
    rendering them (docs/performance.md, "The API under load"). Rendering keeps no state
    on the serializer, so threads share it."""
    serializer = StatusViewSerializer()
    serializer.fields  # noqa: B018  (bound here, once)
    return serializer


@cache
def _job_serializer() -> JobSerializer:
    """One job serializer per process, as _status_serializer."""
    serializer = JobSerializer()
    serializer.fields  # noqa: B018  (bound here, once)
    return serializer


def status_response(project_id: str, request: Request) -> Response:
    view = status_view_get(owner=request_user(request), project_id=project_id)
    return Response(_status_serializer().to_representation(view))


class ProcessView(APIView):
    @extend_schema(
        operation_id="process_project",
        tags=["processing"],
        request=None,
        responses={202: JobHandleSerializer, **problem_responses(400, 402, 409)},
        description="Queue the next batch of the ladder (1, 5, 25, 100, then the rest). The quote is checked "
        "and the hold placed in the transaction that queues the job: 402 insufficient_credit (with the "
        "shortfall) or spending_ceiling_reached when unaffordable. A job already in flight is returned "
        "instead of a new one. After each batch the next is queued by itself while the wallet covers it.",
    )
    @idempotent
    def post(self, request: Request, project_id: str) -> Response:
        job = jobs.process_start(owner=request_user(request), project_id=project_id)
        return Response(JobHandleSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class ProcessNextBatchView(APIView):
    @extend_schema(
        operation_id="process_next_batch",
        tags=["processing"],
        request=None,
        responses={200: BatchRunResultSerializer, **problem_responses(400, 402, 409, 503)},
        description="Run the next batch synchronously and answer with its result (manual and admin use); "
        "the next rung is not queued. 409 job_in_flight when a batch is already queued or running. 503 "
        "engine_unavailable (with Retry-After) when the engine is down, warming up or at capacity: the batch "
        "ended, its finished pages kept and charged, the rest of the hold released.",
    )
    @idempotent
    def post(self, request: Request, project_id: str) -> Response:
        result = batch_run_now(owner=request_user(request), project_id=project_id)
        return Response(BatchRunResultSerializer(result).data)


class RetryView(APIView):
    @extend_schema(
        operation_id="retry_failed_pages",
        tags=["processing"],
        request=None,
        responses={202: JobHandleSerializer, **problem_responses(402, 409)},
        description="Queue a RetryFailedPages job for the failed pages with attempts left (3 per page), "
        "wallet-checked like process. 409 conflict when nothing is retryable.",
    )
    @idempotent
    def post(self, request: Request, project_id: str) -> Response:
        job = jobs.process_start(owner=request_user(request), project_id=project_id, kind=JobKind.RETRY_FAILED_PAGES)
        return Response(JobHandleSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class CancelView(APIView):
    @extend_schema(
        operation_id="cancel_project",
        tags=["processing"],
        request=None,
        responses={200: StatusViewSerializer, **problem_responses(409)},
        description="Stop the book: a queued batch is dropped (its hold released) and the book is Cancelled; "
        "a running batch stops at the next page boundary (Cancelling), charging only the finished pages.",
    )
    def post(self, request: Request, project_id: str) -> Response:
        jobs.project_cancel(owner=request_user(request), project_id=project_id)
        return status_response(project_id, request)


class StatusReadView(APIView):
    @extend_schema(
        operation_id="get_project_status",
        tags=["processing"],
        responses={200: StatusViewSerializer},
        description="The single read an agent polls: state, phase, waitingOn (resumes by itself), blockedOn "
        "and nextAction (the caller must act), the GPU overlay, progress and a display title and detail.",
    )
    def get(self, request: Request, project_id: str) -> Response:
        return status_response(project_id, request)


class JobDetailView(APIView):
    @extend_schema(operation_id="get_job", tags=["processing"], responses={200: JobSerializer})
    def get(self, request: Request, job_id: str) -> Response:
        job = selectors.job_get_for_owner(owner=request_user(request), job_id=job_id)
        return Response(_job_serializer().to_representation(job))


class QueueMoveView(APIView):
    @extend_schema(
        operation_id="move_job",
        tags=["processing"],
        request=QueueMoveInputSerializer,
        responses={200: JobSerializer, **problem_responses(409)},
        description="Staff only: move a queued job to the front of the global queue, or just before another.",
    )
    def post(self, request: Request, job_id: str) -> Response:
        if not request_user(request).is_staff:
            raise PermissionDenied("Only staff can reorder the queue.")
        selectors.job_get(job_id=job_id)  # a 404 before the body is read
        data = validated(QueueMoveInputSerializer, request.data)
        return Response(JobSerializer(jobs.queue_move(job_id=job_id, **data)).data)


class PageRejectInputSerializer(serializers.Serializer[Any]):
    reason = serializers.CharField(required=False, allow_blank=True, max_length=500)

    class Meta:
        ref_name = "PageRejectInput"


class PageApproveView(APIView):
    @extend_schema(
        operation_id="approve_page",
        tags=["pages"],
        request=None,
        responses={200: PageDetailSerializer, **problem_responses(409)},
        description="Keep a page's translation (needs the approve scope for an API key).",
    )
    @requires_scope(Scope.APPROVE)
    def post(self, request: Request, project_id: str, page_id: str) -> Response:
        project = owned_project(request, project_id)
        page = review.page_approve(project=project, page=selectors.page_get(project=project, page_id=page_id))
        return Response(PageDetailSerializer(page).data)


class PageRejectView(APIView):
    @extend_schema(
        operation_id="reject_page",
        tags=["pages"],
        request=PageRejectInputSerializer,
        responses={200: PageDetailSerializer, **problem_responses(409)},
        description="Send a page back for another attempt (needs the approve scope for an API key); the ladder "
        "retries it at once when the wallet covers it.",
    )
    @requires_scope(Scope.APPROVE)
    def post(self, request: Request, project_id: str, page_id: str) -> Response:
        project = owned_project(request, project_id)
        reason = validated(PageRejectInputSerializer, request.data).get("reason", "")
        page = review.page_reject(
            project=project, page=selectors.page_get(project=project, page_id=page_id), reason=reason
        )
        return Response(PageDetailSerializer(page).data)
