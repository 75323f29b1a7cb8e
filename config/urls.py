from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from core import health, problem_json
from core.views import MetaView, ProblemDetailView, ProblemListView

api_v1: list[URLPattern | URLResolver] = [
    path("meta", MetaView.as_view(), name="meta"),
    path("problems", ProblemListView.as_view(), name="problems"),
    path("problems/<str:code>", ProblemDetailView.as_view(), name="problem-detail"),
    path("schema", SpectacularAPIView.as_view(), name="schema"),
    path("docs", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("", include("accounts.urls")),
    path("", include("projects.urls")),
    path("", include("wallet.urls")),
    path("", include("exports.urls")),
    path("", include("webhooks.urls")),
    path("", include("translation.urls")),
    # Last: any other /v1 address is a problem+json 404, even with DEBUG on (and even with a
    # newline in it, which `.` would not match).
    re_path(r"^[\s\S]*$", problem_json.api_not_found),
]

urlpatterns = [
    # Operators' endpoints, outside the API (docs/observability.md).
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", health.metrics, name="metrics"),
    path("v1/", include(api_v1)),
    path("admin/", admin.site.urls),
    # Last: the web app's pages, and its 404 page for any other address outside /v1.
    path("", include("webapp.urls")),
]

handler400 = problem_json.handler400
handler403 = problem_json.handler403
handler404 = problem_json.handler404
handler500 = problem_json.handler500
