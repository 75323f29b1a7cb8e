"""HTTP endpoints of the account avatar: its limits, upload, download and removal."""

from __future__ import annotations

from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.serializers import AvatarUploadInputSerializer, ProfileSerializer
from accounts.authentication import request_user
from accounts.services import avatars
from core.negotiation import AcceptAnyNegotiation
from core.openapi import problem_responses
from core.serializers import UploadLimitsSerializer, validated
from core.uploads import MULTIPART_OVERHEAD_BYTES


class AvatarLimitsView(APIView):
    @extend_schema(
        operation_id="get_avatar_limits",
        tags=["account"],
        responses={200: UploadLimitsSerializer, **problem_responses(401, 403)},
        description="The file extensions and the size PUT /v1/me/avatar accepts.",
    )
    def get(self, request: Request) -> Response:
        return Response(UploadLimitsSerializer(avatars.avatar_limits()).data)


class AvatarView(APIView):
    parser_classes = [MultiPartParser]
    body_file_limits = staticmethod(avatars.avatar_limits)  # enforced as the body arrives (config/asgi.py)
    content_negotiation_class = AcceptAnyNegotiation

    @extend_schema(
        operation_id="upload_avatar",
        tags=["account"],
        request={"multipart/form-data": AvatarUploadInputSerializer},
        responses={200: ProfileSerializer, **problem_responses(400, 401, 403, 413)},
        description="Set or replace the avatar (multipart/form-data, the file in the part `file`). "
        "The content decides the type, not the name: PNG, JPEG and WebP are accepted; anything else, "
        "a damaged image or one with too many pixels is `avatar_invalid`; a file over the size limit "
        "is `request_too_large`. The image is turned upright, cropped to a centred square, resized "
        "and stored as a PNG without metadata.",
    )
    def put(self, request: Request) -> Response:
        # Refuse an oversized body before it is parsed and spooled to disk.
        avatars.avatar_size_check(size_bytes=_content_length(request) - MULTIPART_OVERHEAD_BYTES)
        upload = validated(AvatarUploadInputSerializer, request.data)["file"]
        user = avatars.avatar_set(user=request_user(request), upload=upload)
        return Response(ProfileSerializer(user).data)

    @extend_schema(
        operation_id="download_avatar",
        tags=["account"],
        responses={
            (200, avatars.AVATAR_CONTENT_TYPE): OpenApiResponse(
                response=OpenApiTypes.BINARY, description="The avatar."
            ),
            **problem_responses(401, 403, 404),
        },
        description="The avatar as a PNG; `not_found` when the account has none.",
    )
    def get(self, request: Request) -> FileResponse:
        response = FileResponse(
            avatars.avatar_open(user=request_user(request)),
            content_type=avatars.AVATAR_CONTENT_TYPE,
            filename="avatar.png",
        )
        response["Cache-Control"] = "private, no-cache"
        return response

    @extend_schema(
        operation_id="delete_avatar",
        tags=["account"],
        responses={204: OpenApiResponse(description="Removed, or there was none."), **problem_responses(401, 403)},
    )
    def delete(self, request: Request) -> Response:
        avatars.avatar_clear(user=request_user(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


def _content_length(request: Request) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0
