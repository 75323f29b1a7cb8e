"""Discovery: the /v1/meta body and the problem-type pages."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.errors import NotFound, ServiceError, problem_class, problem_classes, type_uri
from core.throttling import ClientAddressRateThrottle


class DiscoverySerializer(serializers.Serializer[Any]):
    api_version = serializers.CharField()
    batch_ladder = serializers.ListField(child=serializers.IntegerField())
    final_batch = serializers.CharField()
    export_formats = serializers.ListField(child=serializers.CharField())
    problem_type_base = serializers.URLField()
    languages_url = serializers.URLField(
        help_text="GET it for the target languages and the language pairs the configured engine translates."
    )


class ProblemTypeSerializer(serializers.Serializer[Any]):
    code = serializers.CharField()
    status = serializers.IntegerField()
    title = serializers.CharField()
    description = serializers.CharField()
    type = serializers.URLField()


FINAL_BATCH = "remaining"


class AnonymousAPIView(APIView):
    """A read anyone may make with no credential, rate-limited per client address."""

    permission_classes = [AllowAny]
    authentication_classes: list[type] = []
    throttle_classes = [ClientAddressRateThrottle]
    throttle_scope = "anonymous"


class MetaView(AnonymousAPIView):
    """GET /v1/meta: what a client needs to know before its first call."""

    @extend_schema(operation_id="get_meta", responses={200: DiscoverySerializer}, tags=["discovery"], auth=[])
    def get(self, request: Request) -> Response:
        body = {
            "api_version": settings.API_VERSION,
            "batch_ladder": list(settings.BATCH_LADDER),
            "final_batch": FINAL_BATCH,
            "export_formats": list(settings.EXPORT_FORMATS),
            "problem_type_base": settings.PROBLEM_TYPE_BASE,
            "languages_url": f"{settings.PUBLIC_BASE_URL}{reverse('languages')}",
        }
        return Response(DiscoverySerializer(body).data)


def _problem_data(problem: type[ServiceError]) -> dict[str, object]:
    return {
        "code": problem.code,
        "status": problem.status,
        "title": problem.title,
        "description": problem.description,
        "type": type_uri(problem.code),
    }


class ProblemListView(APIView):
    """GET /v1/problems: every problem code the API can answer with."""

    permission_classes = [AllowAny]
    authentication_classes: list[type] = []

    @extend_schema(
        operation_id="list_problems", responses={200: ProblemTypeSerializer(many=True)}, tags=["discovery"], auth=[]
    )
    def get(self, request: Request) -> Response:
        return Response([_problem_data(problem) for problem in problem_classes()])


class ProblemDetailView(APIView):
    """GET /v1/problems/{code}: what one problem type means (the target of `type`)."""

    permission_classes = [AllowAny]
    authentication_classes: list[type] = []

    @extend_schema(operation_id="get_problem", responses={200: ProblemTypeSerializer}, tags=["discovery"], auth=[])
    def get(self, request: Request, code: str) -> Response:
        problem = problem_class(code)
        if problem is None:
            raise NotFound("No such problem type.")
        return Response(_problem_data(problem))
