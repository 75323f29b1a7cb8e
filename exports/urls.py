from django.urls import path

from exports import api

urlpatterns = [
    path("projects/<uuid:project_id>/export", api.ExportRequestView.as_view(), name="project-export"),
    path("projects/<uuid:project_id>/exports", api.ExportListView.as_view(), name="project-exports"),
    path("projects/<uuid:project_id>/exports/<str:name>", api.ExportFileView.as_view(), name="project-export-file"),
]
