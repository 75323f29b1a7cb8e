"""The Python client of the Book translation service (/v1).

`Client` reaches every operation of the API (one method per operationId of GET /v1/schema,
answers typed by `booktranslate.models`), raises each problem+json answer as the exception
of its code (`booktranslate.problems`, all `BookTranslateError`s), and translates a book in
one call (`Client.translate_book`, `Client.resume`). The `booktranslate` command is
`booktranslate.cli`.
"""

from booktranslate import problems
from booktranslate._transport import RetryPolicy, Upload
from booktranslate._version import __version__
from booktranslate.book import BookProgress, BookResult
from booktranslate.client import Client
from booktranslate.config import Settings, settings_load
from booktranslate.errors import (
    BookTranslateError,
    ServiceUnreachable,
    TranslationStopped,
    UnknownProblem,
    WaitTimedOut,
)
from booktranslate.problems import *  # noqa: F403 (one class per problem code, listed in its __all__)

__all__ = [
    "BookProgress",
    "BookResult",
    "BookTranslateError",
    "Client",
    "RetryPolicy",
    "ServiceUnreachable",
    "Settings",
    "TranslationStopped",
    "UnknownProblem",
    "Upload",
    "WaitTimedOut",
    "__version__",
    "settings_load",
]
__all__ += problems.__all__
