"""Exports: asking for a format, rendering it on the `export` queue, and the Archive.

An export is identified by (project, format, options, content digest): the digest covers
everything a file is made from (the title, the languages, each included page's status,
translation time and failure), so a book that changed since gets a new file instead of a
stale one, and asking twice for the same thing finds the file already made (or being made)
instead of rendering it again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import tempfile
import uuid
import zipfile
from collections import Counter
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import IO, BinaryIO
from urllib.parse import quote

from celery import signature
from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from core.errors import NotFound, ValidationFailed
from core.storage import storage_delete_quietly, storage_tree_delete_quietly
from exports.blocks import plain_text_of
from exports.book import ORIGINAL, PAGE_CHUNK, REFLOW, BookSource, ExportBook, ExportOptions, ExportPage, PageLayout
from exports.errors import ExportNotReady, ExportOutdated
from exports.events import export_ready_publish
from exports.models import ExportFile, ExportStatus
from exports.renderers import RENDERERS, renderer_for
from projects.models import PageStatus, Project, ProjectStatus, SourceKind
from projects.services.normalize import source_local_copy
from projects.services.projects import project_files_prefix

EXPORT_RENDER_TASK = "exports.tasks.export_render"
logger = logging.getLogger(__name__)

SINGLE_FORMATS = list(RENDERERS)  # Markdown, PlainText, Html, Epub, Docx, Pdf
ARCHIVE = "Archive"
ALL = "All"
BILINGUAL_FORMATS = frozenset({"Html", "Epub", "Docx", "Pdf", ARCHIVE})
DONE_STATES = (ProjectStatus.COMPLETE, ProjectStatus.COMPLETED_WITH_ERRORS)
ARCHIVE_MIME = "application/zip"


def title_of(project: Project) -> str:
    """The title a book's files carry: the name its owner gave it; for a book named after
    its file (no name given), the book's own title (its PDF's metadata or first heading)."""
    named_after_file = project.name == Path(project.source_file_name).stem
    return project.book_title if project.book_title and named_after_file else project.name


def original_available(*, project: Project) -> bool:
    """The book has what the original-layout Pdf is laid on: its PDF source, still stored,
    or, for a book of images, its page images."""
    if project.source_kind != SourceKind.PDF:
        return project.pages.filter(included=True).exclude(image_key="").exists()
    if project.source_object_key:
        return bool(default_storage.exists(project.source_object_key))
    return Path(project.source_path).is_file()


def book_for(*, project: Project) -> ExportBook:
    """The project as renderers see it; its pages are read from the database in chunks
    each time `pages()` is called."""
    included = project.pages.filter(included=True)
    detected = Counter(
        included.exclude(detected_source_language="").values_list("detected_source_language", flat=True)[:200]
    )
    source_language = project.source_language_override or (detected.most_common(1)[0][0] if detected else None)
    level_one = included.filter(status=PageStatus.APPROVED, translation__startswith="# ").values_list("pk")[:2]

    def pages() -> Iterator[ExportPage]:
        fields = (
            "index",
            "status",
            "translation",
            "source_text",
            "text_layer",
            "failure_reason",
            "failure_code",
            "image_key",
            "structured",
            "source_markdown",
            "review_flags",
        )
        last = 0
        while True:
            chunk = list(included.filter(index__gt=last).order_by("index").values_list(*fields)[:PAGE_CHUNK])
            if not chunk:
                return
            for (
                index,
                status,
                translation,
                source_text,
                text_layer,
                failure_reason,
                failure_code,
                image_key,
                structured,
                source_markdown,
                review_flags,
            ) in chunk:
                translated = status == PageStatus.APPROVED and bool(translation.strip())
                # A page read with its layout keeps its body as Markdown: its text, as text.
                source = plain_text_of(source_text or source_markdown) if structured else source_text or text_layer
                yield ExportPage(
                    index=index,
                    translated=translated,
                    translation=translation if translated else "",
                    source_text=source,
                    failed=status == PageStatus.FAILED,
                    failure_reason=failure_reason,
                    failure_code=failure_code,
                    image_key=image_key,
                    blank=status == PageStatus.APPROVED and not translated,
                    review_flags=tuple(review_flags),
                )
            last = chunk[-1][0]

    def layouts(first: int, last: int) -> list[PageLayout]:
        rows = (
            included.filter(index__gte=first, index__lte=last)
            .order_by("index")
            .values_list("index", "layout", "carried_from", "carried_lines", "furniture")
        )
        return [
            PageLayout(
                index=index,
                layout=layout or {},
                carried_from=carried_from,
                carried_lines=tuple((block, line) for block, line in carried_lines),
                furniture=tuple(furniture),
            )
            for index, layout, carried_from, carried_lines, furniture in rows
        ]

    def source_pdf() -> AbstractContextManager[Path | None]:
        if project.source_kind != SourceKind.PDF:
            return nullcontext(None)
        return source_local_copy(project)

    return ExportBook(
        identifier=str(project.pk),
        title=title_of(project),
        language=project.target_language_code,
        source_language=source_language,
        created_at=project.created_at,
        page_count=included.count(),
        status=project.status,
        pages=pages,
        chapter_level=1 if len(level_one) == 2 else 2,
        source=BookSource(pdf=source_pdf, layouts=layouts, page_image=_page_image),
    )


def _page_image(image_key: str) -> bytes:
    with default_storage.open(image_key, "rb") as stored:
        return bytes(stored.read())


def content_digest(*, project: Project, options: ExportOptions) -> str:
    """What a file of this project with these options is made from, as a SHA-256."""
    digest = hashlib.sha256(
        json.dumps(
            [title_of(project), project.target_language_code, project.source_language_override, options.key()]
        ).encode()
    )
    rows = (
        project.pages.filter(included=True)
        .order_by("index")
        .values_list("index", "status", "translated_at", "updated_at", "failure_code", "failure_reason")
    )
    for row in rows.iterator(chunk_size=2000):
        digest.update(repr(row).encode())
    return digest.hexdigest()


def _options_for(export_format: str, options: ExportOptions) -> ExportOptions:
    """The options that matter to a format (bilingual only where the format has it; the
    original layout keeps only bilingual and partial), so that equal files share one identity."""
    if options.original:
        return ExportOptions(bilingual=options.bilingual, partial=options.partial, layout=ORIGINAL)
    if export_format not in BILINGUAL_FORMATS and options.bilingual:
        return ExportOptions(
            bilingual=False,
            page_markers=options.page_markers,
            partial=options.partial,
            pages_per_chapter=options.pages_per_chapter,
        )
    return options


def _names(project: Project, export_format: str, options: ExportOptions, digest: str) -> tuple[str, str, str]:
    """(file name in the url, save-as name, mime type)."""
    if export_format == ARCHIVE:
        extension, mime = "zip", ARCHIVE_MIME
    else:
        renderer = renderer_for(export_format)
        extension, mime = renderer.extension, renderer.mime_type
    variant = "".join(
        suffix
        for flag, suffix in (
            (options.original, "-original"),
            (options.bilingual, "-bilingual"),
            (options.partial, "-partial"),
        )
        if flag
    )
    file_name = f"{export_format.lower()}{variant}-{digest[:12]}-{uuid.uuid4().hex[:6]}.{extension}"
    date = timezone.localdate().isoformat()
    title = slugify(project.name, allow_unicode=True) or "book"
    save_as = f"{title}-{date}-{export_format.lower()}{variant}.{extension}"
    return file_name, save_as, mime


def export_request(*, project: Project, export_format: str, options: ExportOptions) -> list[ExportFile]:
    """Asks for a format (All: every format and the Archive). Each file already made from
    the book as it now is, or being made, is returned as it is; the others are queued on
    the `export` queue."""
    if export_format not in (*SINGLE_FORMATS, ARCHIVE, ALL):
        raise ValidationFailed({"format": [f"One of {', '.join([ALL, *SINGLE_FORMATS, ARCHIVE])}."]})
    if project.status not in DONE_STATES:
        translated = project.pages.filter(included=True, status=PageStatus.APPROVED).exists()
        if not (options.partial and translated):
            raise ExportNotReady()
    if options.original and not original_available(project=project):
        raise ValidationFailed(
            {
                "layout": [
                    "The original layout needs the book's PDF source or its page images (a source no "
                    "longer stored has neither)."
                ]
            }
        )
    if export_format == ALL:
        # Every format, the original-layout Pdf beside the reflowed one where it can be made, and the Archive.
        reflowed = replace(options, layout=REFLOW)
        wanted = [(each, _options_for(each, reflowed)) for each in SINGLE_FORMATS]
        if original_available(project=project):
            wanted.append(("Pdf", _options_for("Pdf", replace(options, layout=ORIGINAL))))
        wanted.append((ARCHIVE, _options_for(ARCHIVE, reflowed)))
    else:
        wanted = [(export_format, _options_for(export_format, options))]
    files = []
    with transaction.atomic():
        Project.objects.select_for_update().get(pk=project.pk)
        for each, each_options in wanted:
            digest = content_digest(project=project, options=each_options)
            existing = ExportFile.objects.filter(
                project=project, format=each, options_key=each_options.key(), content_hash=digest
            ).first()
            if existing is not None and existing.status != ExportStatus.FAILED:
                files.append(existing)
                continue
            if existing is not None:
                existing.delete()
            file_name, save_as, mime = _names(project, each, each_options, digest)
            export = ExportFile.objects.create(
                project=project,
                format=each,
                options_key=each_options.key(),
                content_hash=digest,
                file_name=file_name,
                save_as_name=save_as,
                mime_type=mime,
            )
            transaction.on_commit(partial(_enqueue, export.pk))
            files.append(export)
    return files


def _enqueue(export_id: uuid.UUID) -> None:
    # By the task's name: the task module calls this one (no import either way but that).
    signature(EXPORT_RENDER_TASK, args=[str(export_id)]).apply_async(queue="export")


def export_render(*, export_id: uuid.UUID | str) -> ExportFile | None:
    """Renders a pending export to storage (the worker's entry point). An export that is
    not pending (made already, or gone) is left alone; a render that fails marks it
    failed with the reason, and asking again retries it. A book deleted while its file
    was being made keeps no file: the one written is deleted here (None is returned)."""
    export = ExportFile.objects.select_related("project").filter(pk=export_id).first()
    if export is None or export.status != ExportStatus.PENDING:
        return export
    book = book_for(project=export.project)
    options = ExportOptions.from_key(export.options_key)
    key = f"{project_files_prefix(project_id=export.project_id)}/exports/{export.file_name}"
    try:
        with tempfile.TemporaryFile() as spool:
            if export.format == ARCHIVE:
                archive_write(project=export.project, book=book, options=options, out=spool)
            else:
                renderer_for(export.format).render(book, options, spool)
            size = spool.tell()
            spool.seek(0)
            stored = default_storage.save(key, File(spool, name=export.file_name))
    except Exception as error:
        logger.exception("export %s (%s) failed", export.pk, export.format)
        ExportFile.objects.filter(pk=export.pk, status=ExportStatus.PENDING).update(
            status=ExportStatus.FAILED, error_text=f"{type(error).__name__}: {error}"[:2000], finished_at=timezone.now()
        )
        return ExportFile.objects.filter(pk=export.pk).first()
    updated = ExportFile.objects.filter(pk=export.pk, status=ExportStatus.PENDING).update(
        status=ExportStatus.READY, storage_key=stored, size_bytes=size, finished_at=timezone.now()
    )
    if not updated:  # deleted (or redone) meanwhile: keep no stray file
        storage_delete_quietly([stored])
        if not Project.objects.filter(pk=export.project_id).exists():
            # The book was deleted while this ran, perhaps after its files were swept.
            storage_tree_delete_quietly(project_files_prefix(project_id=export.project_id))
            return None
    else:
        export_ready_publish(export_id=export.pk, project_id=export.project_id, owner_id=export.project.owner_id)
    return ExportFile.objects.filter(pk=export.pk).first()


def archive_write(*, project: Project, book: ExportBook, options: ExportOptions, out: BinaryIO) -> None:
    """A zip of every format, the page images and a JSON manifest, written entry by entry
    (each format is rendered straight into its zip entry)."""
    manifest: dict[str, object] = {
        "project": {"id": str(project.pk), "name": project.name, "status": project.status},
        "targetLanguage": book.language,
        "sourceLanguage": book.source_language,
        "pageCount": book.page_count,
        "options": {"bilingual": options.bilingual, "pageMarkers": options.page_markers, "partial": options.partial},
        "generatedUtc": timezone.now().isoformat(),
        "files": [],
        "pages": [],
    }
    files: list[dict[str, object]] = []
    pages: list[dict[str, object]] = []
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, allowZip64=True) as archive:
        for export_format in SINGLE_FORMATS:
            renderer = renderer_for(export_format)
            name = f"book.{renderer.extension}"
            with tempfile.TemporaryFile() as spool:
                renderer.render(book, _options_for(export_format, options), spool)
                spool.seek(0)
                with archive.open(name, "w", force_zip64=True) as entry:
                    _copy(spool, entry)
            files.append({"name": name, "format": export_format, "mimeType": renderer.mime_type})
        # A book built in memory (no source to read) has no original layout.
        if book.source is not None and original_available(project=project):
            original = _options_for("Pdf", replace(options, layout=ORIGINAL))
            with tempfile.TemporaryFile() as spool:
                renderer_for("Pdf").render(book, original, spool)
                spool.seek(0)
                with archive.open("book-original.pdf", "w", force_zip64=True) as entry:
                    _copy(spool, entry)
            files.append(
                {"name": "book-original.pdf", "format": "Pdf", "layout": ORIGINAL, "mimeType": "application/pdf"}
            )
        for page in book.pages():
            image = f"images/page-{page.index:05d}.png" if page.image_key else ""  # none while being prepared
            try:
                if image:
                    with default_storage.open(page.image_key, "rb") as source, archive.open(image, "w") as entry:
                        _copy(source, entry)
            except FileNotFoundError:
                image = ""
            pages.append(
                {
                    "index": page.index,
                    "translated": page.translated,
                    "failed": page.failed,
                    "failureCode": page.failure_code or None,
                    "failureReason": page.failure_reason,
                    "reviewFlags": list(page.review_flags),
                    "image": image or None,
                }
            )
        manifest["files"], manifest["pages"] = files, pages
        archive.writestr("manifest.json", json.dumps(manifest, ensure_ascii=False, indent=2))


def _copy(source: IO[bytes], target: IO[bytes]) -> None:
    while block := source.read(1 << 20):
        target.write(block)


def fresh_exports(*, project: Project) -> list[ExportFile]:
    """The exports made from the book as it now is, ready to download (a file of a book
    that changed since is not listed: asking again makes a new one)."""
    ready = list(project.exports.filter(status=ExportStatus.READY).order_by("format", "-created_at"))
    digests: dict[str, str] = {}
    fresh = []
    for export in ready:
        if export.options_key not in digests:
            options = ExportOptions.from_key(export.options_key)
            digests[export.options_key] = content_digest(project=project, options=options)
        if export.content_hash == digests[export.options_key]:
            fresh.append(export)
    return fresh


def export_for_download(*, project: Project, file_name: str) -> ExportFile:
    """The ready export of that name, made from the book as it now is. A file of a book
    that changed since is never served: 410 export_outdated, with the request that makes
    a fresh one."""
    export = project.exports.filter(file_name=file_name, status=ExportStatus.READY).first()
    if export is None:
        raise NotFound("No such export file.")
    options = ExportOptions.from_key(export.options_key)
    if export.content_hash != content_digest(project=project, options=options):
        raise ExportOutdated(
            f"The book changed after this {export.format} file was made; ask for it again "
            f"(POST /v1/projects/{project.pk}/export) and download the new file.",
            format=export.format,
            exportRequest={
                "format": export.format,
                "bilingual": options.bilingual,
                "pageMarkers": options.page_markers,
                "allowPartial": options.partial,
                "pagesPerChapter": options.pages_per_chapter,
                "layout": options.layout,
            },
        )
    return export


def storage_redirects() -> bool:
    """S3 storage hands downloads to the bucket (a pre-signed URL); local storage streams."""
    backend: str = settings.STORAGE_BACKEND
    return backend == "s3"


def download_url(export: ExportFile) -> str:
    """A pre-signed URL that makes the browser save the file under its save-as name."""
    disposition = f"attachment; filename*=UTF-8''{quote(export.save_as_name)}"
    # S3Storage.url takes `parameters`; Django's Storage.url, which the stubs type, does not.
    return str(
        default_storage.url(  # type: ignore[call-arg]
            export.storage_key,
            parameters={"ResponseContentDisposition": disposition, "ResponseContentType": export.mime_type},
        )
    )
