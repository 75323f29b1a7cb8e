"""bench_api's server's addresses: the service's, after two reads that tell what any read
costs at least, served under /bench/ by the same server in the same run as the reads it
measures (docs/performance.md, "The API under load"):

- GET /bench/query: one SQL query (`SELECT 1`) in a plain Django view, no credential: the
  cost of touching the database from a request.
- GET /bench/authenticated: a DRF view with the API's own authentication and permission
  that answers a constant: the cost of an authenticated read before it reads anything
  (the credential checked, its account read, DRF's request and response).
"""

from __future__ import annotations

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.urls import URLPattern, URLResolver, path
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.urls import handler400, handler403, handler404, handler500
from config.urls import urlpatterns as service_urlpatterns

__all__ = ["handler400", "handler403", "handler404", "handler500", "urlpatterns"]


@require_safe
@never_cache
def query(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return JsonResponse({"status": "ok"})


class AuthenticatedView(APIView):
    def get(self, request: Request) -> Response:
        return Response({"status": "ok"})


urlpatterns: list[URLPattern | URLResolver] = [
    path("bench/query", query),
    path("bench/authenticated", AuthenticatedView.as_view()),
    *service_urlpatterns,
]
