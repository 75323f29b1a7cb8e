from django.urls import path

from projects.api import jobs as api_jobs
from projects.api import projects as api

urlpatterns = [
    path("uploads/limits", api.UploadLimitsView.as_view(), name="uploads-limits"),
    path("uploads", api.UploadView.as_view(), name="uploads"),
    path("anonymous-estimate", api.AnonymousEstimateView.as_view(), name="anonymous-estimate"),
    path("projects", api.ProjectListView.as_view(), name="projects"),
    path("projects/<uuid:project_id>", api.ProjectDetailView.as_view(), name="project-detail"),
    path("projects/<uuid:project_id>/normalize", api.ProjectNormalizeView.as_view(), name="project-normalize"),
    path("projects/<uuid:project_id>/batch-quote", api.BatchQuoteView.as_view(), name="project-batch-quote"),
    path("projects/<uuid:project_id>/process", api_jobs.ProcessView.as_view(), name="project-process"),
    path(
        "projects/<uuid:project_id>/process-next-batch",
        api_jobs.ProcessNextBatchView.as_view(),
        name="project-process-next-batch",
    ),
    path("projects/<uuid:project_id>/retry", api_jobs.RetryView.as_view(), name="project-retry"),
    path("projects/<uuid:project_id>/cancel", api_jobs.CancelView.as_view(), name="project-cancel"),
    path("projects/<uuid:project_id>/status", api_jobs.StatusReadView.as_view(), name="project-status"),
    path("jobs/<uuid:job_id>", api_jobs.JobDetailView.as_view(), name="job-detail"),
    path("jobs/<uuid:job_id>/move", api_jobs.QueueMoveView.as_view(), name="job-queue-move"),
    path(
        "projects/<uuid:project_id>/pages/<uuid:page_id>/approve",
        api_jobs.PageApproveView.as_view(),
        name="page-approve",
    ),
    path(
        "projects/<uuid:project_id>/pages/<uuid:page_id>/reject", api_jobs.PageRejectView.as_view(), name="page-reject"
    ),
    path("projects/<uuid:project_id>/pages", api.PageListView.as_view(), name="pages"),
    path("projects/<uuid:project_id>/pages/selection", api.PageSelectionView.as_view(), name="pages-selection"),
    path("projects/<uuid:project_id>/pages/<uuid:page_id>", api.PageDetailView.as_view(), name="page-detail"),
    path("projects/<uuid:project_id>/pages/<uuid:page_id>/image", api.PageImageView.as_view(), name="page-image"),
]
