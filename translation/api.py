"""HTTP endpoints of translation: the model status and the languages."""

from __future__ import annotations

from dataclasses import asdict

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from core.views import AnonymousAPIView
from translation.engines import model_status
from translation.selectors import languages_read
from translation.serializers import LanguagesSerializer, ModelStatusSerializer


class ModelStatusView(AnonymousAPIView):
    """GET /v1/model-status: whether the translation model is ready, still starting, throttled
    or not set up. Anonymous and cheap (the status is cached for a few seconds)."""

    @extend_schema(
        operation_id="get_model_status",
        summary="Model status",
        description="Whether the GPU-backed model is ready, still starting (warming up), throttled or "
        "unconfigured; the project status view's GPU overlay reads the same. Cached for "
        "MODEL_STATUS_CACHE_SECONDS.",
        responses={200: ModelStatusSerializer},
        tags=["meta"],
        auth=[],
    )
    def get(self, request: Request) -> Response:
        return Response(ModelStatusSerializer(asdict(model_status())).data)


class LanguagesView(AnonymousAPIView):
    """GET /v1/languages: the target languages, and which source -> target pairs and OCR
    languages the configured engine handles. Anonymous, like discovery."""

    @extend_schema(
        operation_id="list_languages",
        summary="Languages",
        description="The service's 20 target languages, and for the configured engine the targets it can "
        "produce, the source -> target pairs it translates (source null: any source) and the languages it "
        "reads from page images. A project whose target (or source language override) the engine cannot do "
        "is refused with 400 language_pair_unsupported at create and PATCH.",
        responses={200: LanguagesSerializer},
        tags=["discovery"],
        auth=[],
    )
    def get(self, request: Request) -> Response:
        return Response(LanguagesSerializer(languages_read()).data)
