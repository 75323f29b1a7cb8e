# syntax=docker/dockerfile:1
# The CPU nodes' images, one target per node kind (docs/deploy.md). Build from the
# repository root, e.g. `docker build -f docker/app.Dockerfile --target web .`:
#
#   web     the API and the websocket hub: uvicorn serving the ASGI application; the
#           static files (admin, Swagger UI) collected at build, served by WhiteNoise
#   worker  a Celery worker on default, export and webhooks (normalize, exports,
#           webhook deliveries, mail): never the processing queues, which are the GPU
#           nodes' (docker/gpu.Dockerfile)
#   beat    Celery beat, the periodic tasks: exactly one in a deployment
#
# Migrations are not run by any of them: the compose file's one-shot `migrate` service
# (`python manage.py migrate`, from the web image) runs them before the rest starts.

FROM python:3.11-slim-bookworm AS runtime
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    DJANGO_SETTINGS_MODULE=config.settings
# poppler renders PDFs and reads their text layer: normalize runs on the workers, and
# inside the HTTP call for books of up to NORMALIZE_INLINE_MAX_PAGES pages.
RUN apt-get update \
 && apt-get install -y --no-install-recommends poppler-utils \
 && rm -rf /var/lib/apt/lists/*
RUN useradd --system --uid 10001 --user-group --create-home --home-dir /home/app app
WORKDIR /app
COPY requirements/base.txt requirements/prod.txt requirements/
RUN python -m venv /opt/venv && pip install -r requirements/prod.txt

FROM runtime AS web
# The code is root's and read-only to the service; only var/ is the service's.
COPY . .
ENV STATIC_ROOT=/app/staticfiles
RUN python manage.py collectstatic --no-input -v 0 \
 && mkdir -p var && chown app:app var
USER app
EXPOSE 8000
CMD ["uvicorn", "config.asgi:application", "--host", "0.0.0.0", "--port", "8000", "--lifespan", "off", "--no-server-header", "--no-access-log"]

FROM runtime AS worker
# The fonts the PDF export embeds, one family per script (exports/renderers/_pdf_fonts.py);
# installed before the code is copied, so a code change does not reinstall them.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      fonts-noto-core fonts-ipafont-mincho fonts-nanum fonts-wqy-microhei fonts-dejavu-core fonts-liberation2 \
 && rm -rf /var/lib/apt/lists/*
COPY . .
RUN mkdir -p var && chown app:app var
USER app
CMD ["celery", "-A", "config", "worker", "-Q", "default,export,webhooks", "-n", "cpu@%h", "--loglevel", "INFO"]

FROM runtime AS beat
COPY . .
# var/ holds beat's schedule file (CELERY_BEAT_SCHEDULE_FILENAME); a volume in compose.
RUN mkdir -p var && chown app:app var
USER app
CMD ["celery", "-A", "config", "beat", "--loglevel", "INFO"]
