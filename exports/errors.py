"""Problem codes owned by exports."""

from core.problems import register

register(
    "export_not_ready",
    409,
    "Nothing to export yet",
    "The book is not translated yet: export a Complete or CompletedWithErrors book, or ask for a partial "
    "export (allowPartial: true) once some pages are translated.",
)
register(
    "export_outdated",
    410,
    "Export outdated",
    "The book changed after this file was made (a page was translated again, rejected or retried, or the title "
    "or languages changed), so it is no longer served. Ask for the format again (POST /v1/projects/{id}/export "
    "with the same options, or the request in `exportRequest`) and download the new file once it is listed.",
)
