"""Problem codes owned by exports."""

from core.problems import register

register(
    "export_not_ready",
    409,
    "Nothing to export yet",
    "The book is not translated yet: export a Complete or CompletedWithErrors book, or ask for a partial "
    "export (allowPartial: true) once some pages are translated.",
)
