"""What projects publish on the event bus (webhooks/events.py): status changes and job ends.
Called inside the transaction that made the change; sent after it commits."""

from __future__ import annotations

import uuid
from typing import Any

from webhooks.events import JOB_FAILED, JOB_SUCCEEDED, PROJECT_STATUS_CHANGED, publish


def status_changed_publish(*, project_id: uuid.UUID, owner_id: uuid.UUID | None) -> None:
    """project.status_changed, carrying the status view as it is after the commit."""

    def status_view() -> dict[str, Any]:
        from projects.models import Project
        from projects.serializers import StatusViewSerializer
        from projects.status_view import status_view_for

        return dict(StatusViewSerializer(status_view_for(project=Project.objects.get(pk=project_id))).data)

    publish(PROJECT_STATUS_CHANGED, owner_id=owner_id, project_id=project_id, data=status_view)


def job_finished_publish(*, job_id: uuid.UUID, project_id: uuid.UUID, owner_id: uuid.UUID | None, ok: bool) -> None:
    """job.succeeded or job.failed, carrying the job as GET /v1/jobs/{id} shows it."""

    def job_view() -> dict[str, Any]:
        from projects.models import Job
        from projects.serializers import JobSerializer

        return dict(JobSerializer(Job.objects.get(pk=job_id)).data)

    publish(JOB_SUCCEEDED if ok else JOB_FAILED, owner_id=owner_id, project_id=project_id, data=job_view)
