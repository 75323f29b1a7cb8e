"""The problem codes exports owns: a book with nothing to export yet, and a file made
from a book that has changed since."""

from __future__ import annotations

from core.errors import ServiceError


class ExportNotReady(ServiceError):
    code = "export_not_ready"
    status = 409
    title = "Nothing to export yet"
    description = (
        "The book is not translated yet: export a Complete or CompletedWithErrors book, or ask for a partial "
        "export (allowPartial: true) once some pages are translated."
    )


class ExportOutdated(ServiceError):
    code = "export_outdated"
    status = 410
    title = "Export outdated"
    description = (
        "The book changed after this file was made (a page was translated again, rejected or retried, or the title "
        "or languages changed), so it is no longer served. Ask for the format again (POST /v1/projects/{id}/export "
        "with the same options, or the request in `exportRequest`) and download the new file once it is listed."
    )
