"""What exports tell the owner (through webhooks' events): a file is ready."""

from __future__ import annotations

import uuid
from typing import Any

from exports.models import ExportFile
from exports.serializers import ExportFileSerializer
from webhooks.events import EXPORT_READY, publish


def export_ready_publish(*, export_id: uuid.UUID, project_id: uuid.UUID, owner_id: uuid.UUID | None) -> None:
    """export.ready, carrying the Export file entry (as the API lists it)."""

    def entry() -> dict[str, Any]:
        return dict(ExportFileSerializer(ExportFile.objects.get(pk=export_id)).data)

    publish(EXPORT_READY, owner_id=owner_id, project_id=project_id, data=entry)
