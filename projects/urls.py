from django.urls import path

from projects import api

urlpatterns = [
    path("uploads/limits", api.UploadLimitsView.as_view(), name="uploads-limits"),
    path("uploads", api.UploadView.as_view(), name="uploads"),
    path("anonymous-estimate", api.AnonymousEstimateView.as_view(), name="anonymous-estimate"),
    path("projects", api.ProjectListView.as_view(), name="projects"),
    path("projects/<uuid:project_id>", api.ProjectDetailView.as_view(), name="project-detail"),
    path("projects/<uuid:project_id>/normalize", api.ProjectNormalizeView.as_view(), name="project-normalize"),
    path("projects/<uuid:project_id>/batch-quote", api.BatchQuoteView.as_view(), name="project-batch-quote"),
    path("projects/<uuid:project_id>/pages", api.PageListView.as_view(), name="pages"),
    path("projects/<uuid:project_id>/pages/selection", api.PageSelectionView.as_view(), name="pages-selection"),
    path("projects/<uuid:project_id>/pages/<uuid:page_id>", api.PageDetailView.as_view(), name="page-detail"),
    path("projects/<uuid:project_id>/pages/<uuid:page_id>/image", api.PageImageView.as_view(), name="page-image"),
]
