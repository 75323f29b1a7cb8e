"""The one settings module: every knob is an environment variable with an embedded default.

The defaults start the whole service on one machine (SQLite, local file storage, the
Redis that `make run` starts). Production sets DATABASE_URL, REDIS_URL, the S3 variables,
SECRET_KEY and DEBUG=false. Every variable is listed in the README.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import django_stubs_ext
import environ
from celery.schedules import crontab
from corsheaders.defaults import default_headers as cors_default_headers
from django.core.exceptions import ImproperlyConfigured

# The admin's classes, File and the other generics of django-stubs take their type
# parameters at run time too (`admin.ModelAdmin[User]`), as mypy strict asks.
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(environ.Env().str("VAR_DIR", default=str(BASE_DIR / "var")))

env = environ.Env()


def _origin(url: str) -> str:
    """scheme://host[:port] of an address, as a browser sends it in Origin."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


# --- Core ---------------------------------------------------------------------------

DEBUG = env.bool("DEBUG", default=True)
# The development key only works while DEBUG is on; production must set SECRET_KEY.
_DEV_SECRET_KEY = "dev-insecure-key-change-me-0123456789abcdefghijklmnop"
SECRET_KEY = env.str("SECRET_KEY", default=_DEV_SECRET_KEY)
if not DEBUG and SECRET_KEY == _DEV_SECRET_KEY:
    raise ImproperlyConfigured("Set SECRET_KEY: the development key is refused when DEBUG is off.")
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
# The public address of the API (no trailing slash); used for links in responses.
PUBLIC_BASE_URL = env.str("PUBLIC_BASE_URL", default="http://127.0.0.1:8000").rstrip("/")
# The web app (webapp/: sign-up, books, wallet, Settings -> Developer for API keys). The
# service serves it at its own address, so it is PUBLIC_BASE_URL unless the app is served
# elsewhere.
APP_URL = env.str("APP_URL", default=PUBLIC_BASE_URL).rstrip("/")
# Web apps on other origins that may call the API and the hub from a browser
# (scheme://host[:port] each); the web app at APP_URL is one of them when it is served
# elsewhere. The API's credentials are bearer tokens, never cookies: no answer allows
# credentials, and a preflight is answered without any (docs/deploy.md, "A web app on
# another origin").
CORS_ALLOWED_ORIGINS = list(
    dict.fromkeys(
        [
            *env.list("CORS_ALLOWED_ORIGINS", default=[]),
            *([_origin(APP_URL)] if _origin(APP_URL) != _origin(PUBLIC_BASE_URL) else []),
        ]
    )
)
CORS_URLS_REGEX = r"^/v1/"
CORS_ALLOW_CREDENTIALS = False
CORS_ALLOW_HEADERS = (*cors_default_headers, "idempotency-key", "x-api-key", "x-request-id")
CORS_EXPOSE_HEADERS = [
    "X-Request-Id",
    "Retry-After",
    "Location",
    "Content-Disposition",
    "Idempotent-Replayed",
    "WWW-Authenticate",
]
CORS_PREFLIGHT_MAX_AGE = 86400
# A development deployment allows instant `manual` top-ups and the dev-user command.
DEVELOPMENT_DEPLOYMENT = env.bool("DEVELOPMENT_DEPLOYMENT", default=DEBUG)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "corsheaders",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "core",
    "accounts",
    "projects",
    "wallet",
    "translation",
    "exports",
    "webhooks",
    "webapp",
]

MIDDLEWARE = [
    "core.middleware.RequestIdMiddleware",
    "core.middleware.RequestMetricsMiddleware",
    # Before anything that can answer: a preflight is answered here, without a credential.
    "corsheaders.middleware.CorsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "core.problem_json.ProblemJsonMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"
WSGI_APPLICATION = None
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Data -----------------------------------------------------------------------------

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}"),
}
# PostgreSQL gets psycopg's connection pool, so a request does not pay for a new
# connection (the pool needs CONN_MAX_AGE=0). SQLite has no pool: its connections are kept
# for a minute by the thread that opened them (the API's request threads are kept from one
# request to the next: core/asgi_handler.py), so a read does not reopen the file and parse
# the schema every time.
DATABASES["default"]["CONN_MAX_AGE"] = 0
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env.bool("DATABASE_POOL", default=True):
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": env.int("DATABASE_POOL_MIN_SIZE", default=1),
        "max_size": env.int("DATABASE_POOL_MAX_SIZE", default=20),
        "timeout": env.float("DATABASE_POOL_TIMEOUT_SECONDS", default=10.0),
    }
    # With the pool, this checks each connection as it leaves the pool (one round trip), so
    # a session PostgreSQL ended (a restart, a failover, pg_terminate_backend) is replaced,
    # not handed to a request or a task that would fail on it.
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL and a busy timeout let the API and the worker share the embedded database.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 60
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "accounts.User"

REDIS_URL = env.str("REDIS_URL", default="redis://127.0.0.1:6379/0")
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": env.str("CACHE_URL", default=REDIS_URL),
        "KEY_PREFIX": env.str("CACHE_KEY_PREFIX", default="bts"),
        # One pool per process, not one per request (core/cache.py).
        "OPTIONS": {"pool_class": "core.cache.SharedConnectionPool"},
    }
}

# --- Files ----------------------------------------------------------------------------

MEDIA_ROOT = env.str("MEDIA_ROOT", default=str(VAR_DIR / "media"))
STATIC_URL = "/static/"
STATIC_ROOT = env.str("STATIC_ROOT", default=str(VAR_DIR / "static"))
# "local" keeps files under MEDIA_ROOT; "s3" uses django-storages with the AWS_* variables
# (AWS S3 or any S3-compatible store such as MinIO).
STORAGE_BACKEND = env.str("STORAGE_BACKEND", default="local")
if STORAGE_BACKEND == "s3":
    _default_storage = {
        "BACKEND": "storages.backends.s3.S3Storage",
        # A default of None comes back as None (environ's annotations allow only a str).
        "OPTIONS": {
            "bucket_name": env.str("AWS_STORAGE_BUCKET_NAME"),
            "endpoint_url": env.str("AWS_S3_ENDPOINT_URL", default=None),  # type: ignore[arg-type]
            "region_name": env.str("AWS_S3_REGION_NAME", default=None),  # type: ignore[arg-type]
            "access_key": env.str("AWS_ACCESS_KEY_ID", default=None),  # type: ignore[arg-type]
            "secret_key": env.str("AWS_SECRET_ACCESS_KEY", default=None),  # type: ignore[arg-type]
            "default_acl": None,
            "file_overwrite": False,
            "querystring_auth": True,
            "querystring_expire": env.int("AWS_QUERYSTRING_EXPIRE", default=900),
        },
    }
else:
    _default_storage = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": MEDIA_ROOT},
    }
STORAGES = {
    "default": _default_storage,
    "staticfiles": {
        "BACKEND": env.str(
            "STATICFILES_BACKEND",
            default="whitenoise.storage.CompressedStaticFilesStorage",
        )
    },
}
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG
FILE_UPLOAD_MAX_MEMORY_SIZE = env.int("FILE_UPLOAD_MAX_MEMORY_SIZE", default=2_621_440)
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("DATA_UPLOAD_MAX_MEMORY_SIZE", default=2_621_440)
# Where uploaded files are spooled (empty: the system's temporary folder); each spool file is
# named after its process, so the files of a process that died are swept (core/uploads.py).
FILE_UPLOAD_TEMP_DIR = env.str("FILE_UPLOAD_TEMP_DIR", default="") or None
FILE_UPLOAD_HANDLERS = [
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "core.uploads.OwnedTemporaryFileUploadHandler",
]

# --- Accounts -------------------------------------------------------------------------

AUTH_PASSWORD_VALIDATORS = [
    {
        "NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator",
        "OPTIONS": {"user_attributes": ("email", "display_name")},
    },
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": env.int("PASSWORD_MIN_LENGTH", default=10)},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
PASSWORD_HASHERS = env.list(
    "PASSWORD_HASHERS",
    default=[
        "django.contrib.auth.hashers.PBKDF2PasswordHasher",
        "django.contrib.auth.hashers.ScryptPasswordHasher",
    ],
)

JWT_ACCESS_TOKEN_HOURS = env.int("JWT_ACCESS_TOKEN_HOURS", default=12)
# DELETE /v1/me from an account without a password (an identity provider's) needs a JWT
# issued at most this many minutes before: a fresh sign-in stands in for the password.
ACCOUNT_DELETE_SIGN_IN_MAX_AGE_MINUTES = env.int("ACCOUNT_DELETE_SIGN_IN_MAX_AGE_MINUTES", default=10)
SIMPLE_JWT = {
    "ACCESS_TOKEN_LIFETIME": timedelta(hours=JWT_ACCESS_TOKEN_HOURS),
    "ALGORITHM": "HS256",
    "SIGNING_KEY": env.str("JWT_SIGNING_KEY", default=SECRET_KEY),
    "AUTH_HEADER_TYPES": ("Bearer",),
    "USER_ID_FIELD": "id",
    "USER_ID_CLAIM": "sub",
    "TOKEN_TYPE_CLAIM": "token_type",
    "UPDATE_LAST_LOGIN": False,
    # A password change invalidates every token issued before it.
    "CHECK_REVOKE_TOKEN": True,
    "REVOKE_TOKEN_CLAIM": "pwd",
    "AUTH_TOKEN_CLASSES": ("rest_framework_simplejwt.tokens.AccessToken",),
}

# Scoped API keys: svc_sk_live_<43 base62 characters><6-character checksum>.
API_KEY_MAX_EXPIRY_DAYS = env.int("API_KEY_MAX_EXPIRY_DAYS", default=3650)
# lastUsedUtc is written at most once per this many seconds per key.
API_KEY_LAST_USED_RESOLUTION_SECONDS = env.int("API_KEY_LAST_USED_RESOLUTION_SECONDS", default=60)

# External identity providers (OpenID Connect ID tokens). A provider is enabled when its
# client ids are set. Extra providers: OIDC_PROVIDERS=name1,name2 plus the three
# OIDC_<NAME>_* variables for each.
OIDC_PROVIDER_DEFAULTS = {
    "google": {
        "issuers": "https://accounts.google.com,accounts.google.com",
        "jwks_url": "https://www.googleapis.com/oauth2/v3/certs",
        "authorize_url": "https://accounts.google.com/o/oauth2/v2/auth",
    },
    "apple": {
        "issuers": "https://appleid.apple.com",
        "jwks_url": "https://appleid.apple.com/auth/keys",
    },
}
OIDC_PROVIDERS: dict[str, dict[str, object]] = {}
for _name in ["google", "apple", *env.list("OIDC_PROVIDERS", default=[])]:
    _prefix = f"OIDC_{_name.upper()}_"
    _defaults = OIDC_PROVIDER_DEFAULTS.get(_name, {})
    OIDC_PROVIDERS[_name] = {
        "issuers": env.list(_prefix + "ISSUERS", default=_defaults.get("issuers", "").split(",")),
        "jwks_url": env.str(_prefix + "JWKS_URL", default=_defaults.get("jwks_url", "")),
        "client_ids": env.list(_prefix + "CLIENT_IDS", default=[]),
        # Where the web app sends the browser for an ID token (docs/webapp.md); without one,
        # the provider is offered to API clients only.
        "authorize_url": env.str(_prefix + "AUTHORIZE_URL", default=_defaults.get("authorize_url", "")),
    }
OIDC_LEEWAY_SECONDS = env.int("OIDC_LEEWAY_SECONDS", default=60)
OIDC_JWKS_CACHE_SECONDS = env.int("OIDC_JWKS_CACHE_SECONDS", default=3600)
# A token whose key id is not in the cached key set forces one refetch (key rotation), at
# most once per this many seconds per provider, so junk tokens cannot hammer the provider.
OIDC_JWKS_REFRESH_COOLDOWN_SECONDS = env.float("OIDC_JWKS_REFRESH_COOLDOWN_SECONDS", default=30.0)
OIDC_HTTP_TIMEOUT_SECONDS = env.float("OIDC_HTTP_TIMEOUT_SECONDS", default=5.0)

AVATAR_MAX_BYTES = env.int("AVATAR_MAX_BYTES", default=5 * 1024 * 1024)
AVATAR_MAX_PIXELS = env.int("AVATAR_MAX_PIXELS", default=40_000_000)
AVATAR_SIZE = env.int("AVATAR_SIZE", default=512)

# --- Intake ---------------------------------------------------------------------------

UPLOAD_EXTENSIONS = env.list(
    "UPLOAD_EXTENSIONS", default=[".pdf", ".png", ".jpg", ".jpeg", ".webp", ".tif", ".tiff", ".zip"]
)
UPLOAD_MAX_BYTES = env.int("UPLOAD_MAX_BYTES", default=500 * 1024 * 1024)
MAX_PAGES = env.int("MAX_PAGES", default=5000)
# Per image (a page image, an image in a zip): Pillow's decompression-bomb guard.
IMAGE_MAX_PIXELS = env.int("IMAGE_MAX_PIXELS", default=100_000_000)
ZIP_MAX_ENTRIES = env.int("ZIP_MAX_ENTRIES", default=10_000)
ZIP_MAX_UNCOMPRESSED_BYTES = env.int("ZIP_MAX_UNCOMPRESSED_BYTES", default=4 * 1024 * 1024 * 1024)
ZIP_MAX_RATIO = env.int("ZIP_MAX_RATIO", default=200)
PDF_TOOL_TIMEOUT_SECONDS = env.int("PDF_TOOL_TIMEOUT_SECONDS", default=120)
WORDS_PER_PAGE_ESTIMATE = env.int("WORDS_PER_PAGE_ESTIMATE", default=250)
# Pages without a text layer: this many sample pages are read with Tesseract, and the ink of
# this many (every page of a shorter book) is measured, to estimate the book's words, all
# within this many seconds (see projects/intake/word_estimate.py).
WORD_ESTIMATE_SAMPLE_PAGES = env.int("WORD_ESTIMATE_SAMPLE_PAGES", default=5)
WORD_ESTIMATE_INK_PAGES = env.int("WORD_ESTIMATE_INK_PAGES", default=60)
WORD_ESTIMATE_BUDGET_SECONDS = env.float("WORD_ESTIMATE_BUDGET_SECONDS", default=10.0)
RENDER_DPI = env.int("RENDER_DPI", default=150)
THUMBNAIL_SIZE = env.int("THUMBNAIL_SIZE", default=320)
NORMALIZE_CHUNK_PAGES = env.int("NORMALIZE_CHUNK_PAGES", default=8)
NORMALIZE_THREADS = env.int("NORMALIZE_THREADS", default=2)
# Books with at most this many pages normalize inside the HTTP call; larger ones on a worker.
NORMALIZE_INLINE_MAX_PAGES = env.int("NORMALIZE_INLINE_MAX_PAGES", default=10)
# Pages one normalize task prepares before it queues the rest behind other books' work.
NORMALIZE_TASK_PAGES = env.int("NORMALIZE_TASK_PAGES", default=50)
# Pages without a text layer are read (OCR) on the normalize worker, when the engine reads
# them itself (the local engine), so a scanned book is structured like a text PDF (running
# headers left out, paragraphs across pages; docs/book-structure.md). Not inside the
# normalize call: a book normalized inline is read page by page when translated.
INTAKE_OCR = env.bool("INTAKE_OCR", default=True)
# A running normalize that has stored no page for this long lost its worker: beat requeues it.
NORMALIZE_STALE_SECONDS = env.int("NORMALIZE_STALE_SECONDS", default=600)
ANONYMOUS_UPLOAD_HOURS = env.int("ANONYMOUS_UPLOAD_HOURS", default=24)
UPLOAD_UNADOPTED_HOURS = env.int("UPLOAD_UNADOPTED_HOURS", default=72)
RETENTION_DRAFT_DAYS = env.int("RETENTION_DRAFT_DAYS", default=7)
RETENTION_DAYS = env.int("RETENTION_DAYS", default=30)
# Folders a staff member may name as a project's sourcePath (nothing outside them).
SOURCE_PATH_ROOTS = env.list("SOURCE_PATH_ROOTS", default=[])

# --- Processing -----------------------------------------------------------------------

# Attempts a page gets before it stays Failed (CompletedWithErrors).
PAGE_MAX_ATTEMPTS = env.int("PAGE_MAX_ATTEMPTS", default=3)
# A running job writes a heartbeat this often; one silent for JOB_STALE_SECONDS lost its
# worker, and beat's reaper queues it again.
JOB_HEARTBEAT_SECONDS = env.int("JOB_HEARTBEAT_SECONDS", default=15)
JOB_STALE_SECONDS = env.int("JOB_STALE_SECONDS", default=120)
# While the engine is down, warming up or saturated (429s), a paused batch is tried again
# this often.
CAPACITY_RETRY_SECONDS = env.int("CAPACITY_RETRY_SECONDS", default=30)
# A Queued job that waited this long (a paused one: this long past its capacity retry) has
# its worker's wake-up sent again by beat, in case the Celery message was lost.
JOB_REDISPATCH_SECONDS = env.int("JOB_REDISPATCH_SECONDS", default=300)

# --- API ------------------------------------------------------------------------------

API_VERSION = "1.0"
BATCH_LADDER = [1, 5, 25, 100]
EXPORT_FORMATS = ["All", "Markdown", "PlainText", "Html", "Epub", "Docx", "Pdf", "Archive"]
TARGET_LANGUAGES = [
    "en",
    "es",
    "fr",
    "de",
    "it",
    "pt",
    "nl",
    "pl",
    "ru",
    "uk",
    "tr",
    "ar",
    "he",
    "hi",
    "ja",
    "ko",
    "zh",
    "la",
    "el",
    "sv",
]
# Problem types are {PROBLEM_TYPE_BASE}/{code}; each resolves to a page describing it.
PROBLEM_TYPE_BASE = env.str("PROBLEM_TYPE_BASE", default=f"{PUBLIC_BASE_URL}/v1/problems").rstrip("/")
PROJECTS_PAGE_SIZE_MAX = env.int("PROJECTS_PAGE_SIZE_MAX", default=200)
# Idempotency-Key responses are kept this long; without a key, the same request within the
# window is a double-submit, and one arriving while the first runs waits up to
# DOUBLE_SUBMIT_WAIT_SECONDS for its answer. A claim older than the timeout is abandoned.
IDEMPOTENCY_KEY_HOURS = env.int("IDEMPOTENCY_KEY_HOURS", default=24)
DOUBLE_SUBMIT_WINDOW_SECONDS = env.int("DOUBLE_SUBMIT_WINDOW_SECONDS", default=10)
DOUBLE_SUBMIT_WAIT_SECONDS = env.float("DOUBLE_SUBMIT_WAIT_SECONDS", default=5.0)
IDEMPOTENCY_IN_PROGRESS_TIMEOUT_SECONDS = env.int("IDEMPOTENCY_IN_PROGRESS_TIMEOUT_SECONDS", default=300)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.ApiKeyAuthentication",
        "accounts.authentication.JwtAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "accounts.permissions.HasScope",
    ],
    "DEFAULT_RENDERER_CLASSES": ["djangorestframework_camel_case.render.CamelCaseJSONRenderer"],
    # JSON only: a view that receives a file says so (parser_classes = [MultiPartParser]),
    # so that the schema declares each body in the one media type it is read in.
    "DEFAULT_PARSER_CLASSES": ["core.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "core.schema.ProblemAutoSchema",
    "EXCEPTION_HANDLER": "core.problem_json.problem_exception_handler",
    "DEFAULT_THROTTLE_CLASSES": [],
    "JSON_UNDERSCOREIZE": {"no_underscore_before_number": True},
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    # The client address used for rate limits: REMOTE_ADDR, or the address this many
    # trusted proxies back in X-Forwarded-For.
    "NUM_PROXIES": env.int("NUM_PROXIES", default=0),
}
# Rate limits (DRF throttling on the Redis cache); "N/period" with period s, m, h or d.
THROTTLE_RATES = {
    "login": env.str("THROTTLE_LOGIN", default="10/min"),
    "register": env.str("THROTTLE_REGISTER", default="5/min"),
    "oauth": env.str("THROTTLE_OAUTH", default="20/min"),
    "anonymous": env.str("THROTTLE_ANONYMOUS", default="60/min"),
    "estimate": env.str("THROTTLE_ESTIMATE", default="10/min"),
    "password": env.str("THROTTLE_PASSWORD", default="10/min"),
    "redeem": env.str("THROTTLE_REDEEM", default="10/min"),
    # Per client address, across accounts (several accounts made to guess codes).
    "redeem_address": env.str("THROTTLE_REDEEM_ADDRESS", default="30/min"),
}

SPECTACULAR_SETTINGS: dict[str, Any] = {
    "TITLE": "Book Translation Service API",
    "DESCRIPTION": (
        "Translate whole books page by page. Upload, normalize into pages, process in a "
        "paid batch ladder (1, 5, 25, 100, then the rest), export. Errors are RFC 9457 "
        "problem+json. See docs/api.md for every decision the contract leaves open."
    ),
    "VERSION": API_VERSION,
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": r"/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "CAMELIZE_NAMES": False,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.contrib.djangorestframework_camel_case.camelize_serializer_fields",
        "drf_spectacular.hooks.postprocess_schema_enums",
        "core.schema.path_parameters_as_in_contract",
        "core.schema.problem_code_enum",
    ],
    "ENUM_NAME_OVERRIDES": {
        "ProjectStatusEnum": "projects.models.ProjectStatus",
        "PageStatusEnum": "projects.models.PageStatus",
        "SourceKindEnum": "projects.models.SourceKind",
        "LanguageCodeEnum": TARGET_LANGUAGES,
        "JobStatusEnum": "projects.models.JobStatus",
        "JobKindEnum": "projects.models.JobKind",
        "TopUpStatusEnum": "wallet.models.TopUpStatus",
        "TopUpMethodEnum": "wallet.models.TopUpMethod",
    },
}

# --- Translation engines --------------------------------------------------------------

# Which engine translates pages: "local" (Tesseract OCR + Apertium on the CPU, the embedded
# default), "vllm" (any OpenAI-compatible server, a vision-language model on a GPU node) or
# "echo" (deterministic and marked, for tests and benchmarks). See docs/engines.md.
TRANSLATION_ENGINE = env.str("TRANSLATION_ENGINE", default="local")
# The page pool: pages this process has at the engine at once, from every batch it runs
# (translation/engines/pool.py; also the vLLM client's pool size).
ENGINE_CONCURRENCY = env.int("ENGINE_CONCURRENCY", default=8)
# Measured cost: tokens x these USD rates per million tokens (every engine reports tokens).
ENGINE_USD_PER_M_INPUT_TOKENS = env.str("ENGINE_USD_PER_M_INPUT_TOKENS", default="0.10")
ENGINE_USD_PER_M_OUTPUT_TOKENS = env.str("ENGINE_USD_PER_M_OUTPUT_TOKENS", default="0.40")
# GET /v1/model-status (and the status view's GPU overlay) probe the engine at most this often.
MODEL_STATUS_CACHE_SECONDS = env.float("MODEL_STATUS_CACHE_SECONDS", default=5.0)
# The OpenAI-compatible server: its root address (a trailing /v1 is accepted), the served
# model's name as GET /v1/models lists it, and its API key (vllm serve --api-key), if any.
VLLM_BASE_URL = env.str("VLLM_BASE_URL", default="").rstrip("/")
VLLM_MODEL = env.str("VLLM_MODEL", default="Qwen/Qwen3-VL-30B-A3B-Instruct-FP8")
VLLM_API_KEY = env.str("VLLM_API_KEY", default="")
VLLM_CONNECT_TIMEOUT_SECONDS = env.float("VLLM_CONNECT_TIMEOUT_SECONDS", default=5.0)
# One page's whole answer must come within this (long pages on a busy server take minutes).
VLLM_TIMEOUT_SECONDS = env.float("VLLM_TIMEOUT_SECONDS", default=600.0)
VLLM_STATUS_TIMEOUT_SECONDS = env.float("VLLM_STATUS_TIMEOUT_SECONDS", default=3.0)
# Retries of one request on 429, 5xx and connection errors: exponential backoff from the
# base delay, capped (Retry-After is honoured up to the cap).
VLLM_MAX_RETRIES = env.int("VLLM_MAX_RETRIES", default=4)
VLLM_RETRY_BASE_SECONDS = env.float("VLLM_RETRY_BASE_SECONDS", default=1.0)
VLLM_RETRY_MAX_SECONDS = env.float("VLLM_RETRY_MAX_SECONDS", default=30.0)
VLLM_MAX_TOKENS = env.int("VLLM_MAX_TOKENS", default=4096)
VLLM_TEMPERATURE = env.float("VLLM_TEMPERATURE", default=0.2)
# The model status reads "throttled" for this long after the server answered 429.
VLLM_THROTTLED_SECONDS = env.int("VLLM_THROTTLED_SECONDS", default=60)
# The languages (ISO 639-1) the served model reads from page images, as its model card
# says (default: the 20 target languages); GET /v1/languages lists them.
VLLM_OCR_LANGUAGES = env.list("VLLM_OCR_LANGUAGES", default=TARGET_LANGUAGES)
# With the vLLM engine, a page image is also read with Tesseract at intake (when it is
# installed) so a scanned book is structured across its pages; a reading Tesseract cannot be
# trusted on is dropped and the model reads that page's image itself (docs/engines.md).
VLLM_INTAKE_OCR = env.bool("VLLM_INTAKE_OCR", default=True)
# The local engine's programs (Debian: tesseract-ocr, apertium, apertium-eng-spa, ...).
TESSERACT_COMMAND = env.str("TESSERACT_COMMAND", default="tesseract")
APERTIUM_COMMAND = env.str("APERTIUM_COMMAND", default="apertium")
LOCAL_ENGINE_TIMEOUT_SECONDS = env.int("LOCAL_ENGINE_TIMEOUT_SECONDS", default=120)
# Keyword arguments for the engine's class, over what the settings above give it (JSON).
# The echo engine takes only these (translation/engines/echo.py): `delay_seconds` per page;
# `fail_pages` (1-based indexes) that fail on their first `fail_attempts` attempts (0:
# always); `blank_pages` whose translation comes back empty; `unavailable` (reads as
# starting, refuses every page); `pairs` it translates (["en-es", ...]; empty: any).
TRANSLATION_ENGINE_OPTIONS: dict[str, Any] = env.json("TRANSLATION_ENGINE_OPTIONS", default={})
# The completeness check: a translation whose length (scaled for each language's density)
# is outside these ratios of its source's fails, for sources of at least this many characters.
COMPLETENESS_MIN_LENGTH_RATIO = env.float("COMPLETENESS_MIN_LENGTH_RATIO", default=0.35)
COMPLETENESS_MAX_LENGTH_RATIO = env.float("COMPLETENESS_MAX_LENGTH_RATIO", default=3.0)
COMPLETENESS_MIN_SOURCE_CHARS = env.int("COMPLETENESS_MIN_SOURCE_CHARS", default=200)
# The engines' model status enum is one schema component, wherever a serializer uses it.
SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"]["ModelStateEnum"] = "translation.engines.base.ModelState"

# --- Webhooks -------------------------------------------------------------------------

# Deliver to private, loopback and link-local addresses too (tests, on-premise receivers);
# never on a public deployment (it opens the door to server-side request forgery).
WEBHOOK_ALLOW_PRIVATE_ADDRESSES = env.bool("WEBHOOK_ALLOW_PRIVATE_ADDRESSES", default=False)
# Signing secrets are stored encrypted with a key derived from this (empty: from SECRET_KEY);
# keys listed in the fallbacks still decrypt, so the key can be rotated.
WEBHOOK_SECRET_KEY = env.str("WEBHOOK_SECRET_KEY", default="")
WEBHOOK_SECRET_KEY_FALLBACKS = env.list("WEBHOOK_SECRET_KEY_FALLBACKS", default=[])
WEBHOOK_TIMEOUT_SECONDS = env.float("WEBHOOK_TIMEOUT_SECONDS", default=15.0)
# Delays before each retry, each after the attempt before it (the Standard Webhooks / Svix
# schedule: about 27.6 hours in all, +/- 10 % jitter); a delivery whose every attempt failed is dead.
WEBHOOK_RETRY_SCHEDULE_SECONDS = env.list(
    "WEBHOOK_RETRY_SCHEDULE_SECONDS", cast=int, default=[5, 300, 1800, 7200, 18000, 36000, 36000]
)
# This many dead deliveries in a row disable the subscription (and its owner is emailed); 0: never.
WEBHOOK_DISABLE_AFTER_DEAD_DELIVERIES = env.int("WEBHOOK_DISABLE_AFTER_DEAD_DELIVERIES", default=5)
# Beat queues pending deliveries overdue by more than this, this often (lost messages, long retries).
WEBHOOK_SWEEP_SECONDS = env.int("WEBHOOK_SWEEP_SECONDS", default=60)
WEBHOOK_MAX_SUBSCRIPTIONS = env.int("WEBHOOK_MAX_SUBSCRIPTIONS", default=20)
# A CA bundle for receivers' certificates (a private CA on premise); empty: the usual ones.
WEBHOOK_CA_BUNDLE = env.str("WEBHOOK_CA_BUNDLE", default="")
SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"].update(
    {
        "WebhookDeliveryStatusEnum": "webhooks.models.DeliveryStatus",
        "WebhookEventTypeEnum": "webhooks.events.EVENT_TYPES",
    }
)

# --- Billing --------------------------------------------------------------------------

# The price table: tiers of measured engine cost per page, "upTo:expected:ceiling" USD per
# page, comma-separated, the last tier's upTo "-" (no bound). A calibrated book falls in the
# first tier whose upTo covers its measured cost per page; its estimate (and hold) is pages x
# the tier's ceiling rate, its expected cost pages x the expected rate. Empty: no table, and
# both figures are pages x the measured cost per page. See docs/billing.md.
PRICE_TIERS = env.str("PRICE_TIERS", default="0.002:0.0015:0.003,0.01:0.006:0.012,0.03:0.02:0.036,-:0.05:0.08")
# The first (calibration) batch has no dollar estimate: its hold is this, or the spendable
# credit if that is less.
CALIBRATION_HOLD_USD = env.str("CALIBRATION_HOLD_USD", default="0.50")
TOP_UP_MIN_USD = env.str("TOP_UP_MIN_USD", default="1")
TOP_UP_MAX_USD = env.str("TOP_UP_MAX_USD", default="10000")
# Stripe (card top-ups). STRIPE_API_BASE points the stripe library elsewhere (tests).
STRIPE_SECRET_KEY = env.str("STRIPE_SECRET_KEY", default="")
STRIPE_WEBHOOK_SECRET = env.str("STRIPE_WEBHOOK_SECRET", default="")
STRIPE_API_BASE = env.str("STRIPE_API_BASE", default="")
# How often the Stripe customers of deleted accounts that Stripe could not take at once are
# tried again (wallet.tasks.stripe_customers_erase).
STRIPE_ERASURE_SWEEP_SECONDS = env.int("STRIPE_ERASURE_SWEEP_SECONDS", default=900)
# Crypto top-ups through a BTCPay Server store (Greenfield API); empty URL: disabled.
BTCPAY_URL = env.str("BTCPAY_URL", default="").rstrip("/")
BTCPAY_API_KEY = env.str("BTCPAY_API_KEY", default="")
BTCPAY_STORE_ID = env.str("BTCPAY_STORE_ID", default="")
BTCPAY_WEBHOOK_SECRET = env.str("BTCPAY_WEBHOOK_SECRET", default="")
CRYPTO_COINS = env.list("CRYPTO_COINS", default=["BTC"])
PAYMENT_HTTP_TIMEOUT_SECONDS = env.float("PAYMENT_HTTP_TIMEOUT_SECONDS", default=15.0)
LOW_BALANCE_ALERT_REPEAT_HOURS = env.int("LOW_BALANCE_ALERT_REPEAT_HOURS", default=24)

# Outgoing email (low-balance alerts, failed auto top-ups): an EMAIL_URL such as
# smtp+tls://user:password@mail.example.com:587; the default prints mail to the console.
vars().update(env.email_url("EMAIL_URL", default="consolemail://"))
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="Book Translation Service <noreply@localhost>")

# --- Background work ------------------------------------------------------------------

CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=REDIS_URL)
# The queues the workers consume (config/celery_app.py declares them; /metrics reads their depth).
WORK_QUEUES = ("default", "process", "retry", "export", "webhooks")
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=3600),
}
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    "projects-retention-purge": {"task": "projects.tasks.retention_purge", "schedule": 3600.0},
    "uploads-expired-purge": {"task": "projects.tasks.uploads_expired_purge", "schedule": 900.0},
    "normalize-stale-requeue": {"task": "projects.tasks.normalize_stale_requeue", "schedule": 120.0},
    "jobs-stale-requeue": {"task": "projects.tasks.jobs_stale_requeue", "schedule": 30.0},
    "jobs-queued-redispatch": {"task": "projects.tasks.jobs_queued_redispatch", "schedule": 60.0},
    "uploads-orphaned-purge": {"task": "projects.tasks.uploads_orphaned_purge", "schedule": 3600.0},
    "idempotency-records-purge": {"task": "core.tasks.idempotency_records_purge", "schedule": 3600.0},
    "upload-temporary-files-sweep": {"task": "core.tasks.upload_temporary_files_sweep", "schedule": 900.0},
    "crypto-pending-reconcile": {"task": "wallet.tasks.crypto_pending_reconcile", "schedule": 300.0},
    "stripe-customers-erase": {
        "task": "wallet.tasks.stripe_customers_erase",
        "schedule": float(STRIPE_ERASURE_SWEEP_SECONDS),
    },
    # Books paused by the monthly spending ceiling continue when a new month (UTC) begins.
    "spending-month-begin": {
        "task": "wallet.tasks.spending_month_begin",
        "schedule": crontab(minute=1, hour=0, day_of_month=1),
    },
    "webhook-deliveries-sweep": {"task": "webhooks.tasks.deliveries_sweep", "schedule": float(WEBHOOK_SWEEP_SECONDS)},
}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# --- Real-time hub ----------------------------------------------------------------------

CHANNEL_LAYERS = {
    "default": {
        # Redis pub/sub: an event is published once per group and each server process hands
        # it to its own connections in that group. The list-based layer (channels_redis.core)
        # stored a copy per connection and popped each with its own round trip, which was
        # most of the hub's publish-to-receipt time (docs/performance.md, "The API under load").
        "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
        "CONFIG": {
            # The layer polls its subscriptions every 0.1 s; a read that waits longer than
            # this means Redis is gone, and shows.
            "hosts": [{"address": env.str("CHANNELS_REDIS_URL", default=REDIS_URL), "socket_timeout": 15}],
        },
    }
}
# Each hub connection checks its credential again this often (besides at once when it is
# revoked or a password changes): it bounds how long a socket outlives a revocation whose
# announcement was lost (docs/hub.md).
HUB_CREDENTIAL_RECHECK_SECONDS = env.int("HUB_CREDENTIAL_RECHECK_SECONDS", default=300)

# --- Security -------------------------------------------------------------------------

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env.bool("BEHIND_TLS_PROXY", default=False) else None
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=not DEBUG)
# Probes and Prometheus reach a node directly, over plain HTTP inside the network.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=not DEBUG)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0 if DEBUG else 31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
CSRF_FAILURE_VIEW = "core.problem_json.csrf_failure"

# --- Observability --------------------------------------------------------------------

# Log lines: "json" (one object per line, with request ids) or "plain" (for a terminal).
LOG_FORMAT = env.str("LOG_FORMAT", default="plain" if DEBUG else "json")
if LOG_FORMAT not in ("json", "plain"):
    raise ImproperlyConfigured("LOG_FORMAT must be json or plain.")
# GET /metrics answers 404 while this is empty; Prometheus sends it as a bearer token.
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
# A Celery worker serves its own metrics (engine latency, tokens, pages) on this port (0: off).
WORKER_METRICS_PORT = env.int("WORKER_METRICS_PORT", default=0)
WORKER_METRICS_ADDRESS = env.str("WORKER_METRICS_ADDRESS", default="0.0.0.0")  # noqa: S104  (scraped from outside)
# prometheus_client's multiprocess mode (prefork workers, several uvicorn workers): a folder
# of its own per node; prometheus_client reads the variable itself.
PROMETHEUS_MULTIPROC_DIR = env.str("PROMETHEUS_MULTIPROC_DIR", default="")
# Each readiness check (and the scrape-time Redis reads) gives up after this long.
HEALTH_CHECK_TIMEOUT_SECONDS = env.float("HEALTH_CHECK_TIMEOUT_SECONDS", default=2.0)

# --- Time, language, logs -------------------------------------------------------------

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

LOG_LEVEL = env.str("LOG_LEVEL", default="INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Every line carries the log context (request id, task) and passes the secrets filter.
    "filters": {
        "context": {"()": "core.logging.LogContextFilter"},
        "redact": {"()": "core.logging.RedactSecretsFilter"},
    },
    "formatters": {
        "plain": {"()": "core.logging.PlainFormatter"},
        "json": {"()": "core.logging.JsonFormatter"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["context", "redact"]}
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        # Named so that Django's own console handler is dropped: every line goes through ours.
        "django": {"level": LOG_LEVEL},
        "django.request": {"level": "ERROR"},
        # One line per outgoing request (the engine, payment providers) is noise at INFO.
        "httpx": {"level": "WARNING"},
    },
}
