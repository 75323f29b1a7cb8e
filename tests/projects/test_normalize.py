"""Normalize at the service level: sources become ordered pages with images, thumbnails and
text layers; repeats, resumes, queueing and failures leave no duplicate or stray."""

from __future__ import annotations

import io
import zipfile
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone
from PIL import Image

from core.errors import ServiceError
from projects.models import NormalizeState, Page, Project, ProjectStatus, SourceKind
from projects.selectors.status import status_view_for
from projects.services.normalize import (
    normalize_run,
    normalize_stale_requeue,
    page_image_key,
    page_thumbnail_key,
    project_normalize,
)
from tests.factories import UserFactory, project_from_path
from tests.support.pdfs import pdf_bytes

pytestmark = pytest.mark.django_db


def text_pdf(pages: int, **kwargs) -> bytes:
    return pdf_bytes(pages, text=lambda n: f"Page {n} of the book, with a sentence of plain words.", **kwargs)


def png(size: tuple[int, int] = (400, 600), color: str = "white", mode: str = "RGB") -> bytes:
    buffer = io.BytesIO()
    Image.new(mode, size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def project_with_source(content: bytes, *, file_name: str, kind: SourceKind, pages: int) -> Project:
    owner = UserFactory()
    key = default_storage.save(f"uploads/{owner.pk}/{file_name}", ContentFile(content))
    return Project.objects.create(
        owner=owner,
        name="Book",
        target_language_code="fr",
        source_kind=kind,
        source_object_key=key,
        source_file_name=file_name,
        source_size_bytes=len(content),
        source_page_count=pages,
    )


def page_files(root: Path, project: Project) -> list[str]:
    folder = root / "projects" / str(project.pk)
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())


def stored_image(key: str) -> Image.Image:
    with default_storage.open(key, "rb") as file:
        image = Image.open(io.BytesIO(file.read()))
        image.load()
    return image


def test_a_text_pdf_becomes_ordered_pages_with_text_images_and_thumbnails(settings, local_storage):
    project = project_with_source(text_pdf(3), file_name="book.pdf", kind=SourceKind.PDF, pages=3)

    result = project_normalize(project=project)

    assert result.status == ProjectStatus.CALIBRATING
    assert result.normalize_state == NormalizeState.DONE
    assert result.normalize_pages_done == 3
    pages = list(result.pages.order_by("index"))
    assert [page.index for page in pages] == [1, 2, 3]
    assert [page.source_name for page in pages] == ["book.pdf#page=1", "book.pdf#page=2", "book.pdf#page=3"]
    expected_size = (round(612 * settings.RENDER_DPI / 72), round(792 * settings.RENDER_DPI / 72))
    for page in pages:
        assert page.has_text_layer
        assert f"Page {page.index} of the book" in page.text_layer
        assert page.word_count == 11
        assert page.image_key == page_image_key(project_id=project.pk, index=page.index)
        assert page.thumbnail_key == page_thumbnail_key(project_id=project.pk, index=page.index)
        image = stored_image(page.image_key)
        assert image.format == "PNG"
        assert image.size == (page.width, page.height) == expected_size
        thumbnail = stored_image(page.thumbnail_key)
        assert thumbnail.format == "PNG"
        assert max(thumbnail.size) == settings.THUMBNAIL_SIZE
    assert page_files(local_storage, project) == [
        "pages/1.png",
        "pages/2.png",
        "pages/3.png",
        "thumbs/1.png",
        "thumbs/2.png",
        "thumbs/3.png",
    ]


def test_normalize_again_creates_no_duplicate_page_or_file(local_storage):
    project = project_with_source(text_pdf(3), file_name="book.pdf", kind=SourceKind.PDF, pages=3)
    first = project_normalize(project=project)
    page_ids = list(first.pages.order_by("index").values_list("pk", flat=True))
    files = page_files(local_storage, project)

    again = project_normalize(project=first)

    assert again.status == ProjectStatus.CALIBRATING
    assert list(again.pages.order_by("index").values_list("pk", flat=True)) == page_ids
    assert page_files(local_storage, project) == files


def test_an_image_only_pdf_has_no_text_layer():
    project = project_with_source(pdf_bytes(2), file_name="scan.pdf", kind=SourceKind.PDF, pages=2)

    result = project_normalize(project=project)

    assert result.status == ProjectStatus.CALIBRATING
    assert [(page.has_text_layer, page.text_layer, page.word_count) for page in result.pages.order_by("index")] == [
        (False, "", 0),
        (False, "", 0),
    ]


def test_a_zip_of_images_comes_out_in_natural_order(settings):
    settings.NORMALIZE_INLINE_MAX_PAGES = 12
    names = [f"page{n}.png" for n in (10, 2, 12, 1, 11, 3, 9, 4, 8, 5, 7, 6)]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in names:
            number = int(name[4:-4])
            archive.writestr(name, png((100 + number, 150)))
    project = project_with_source(buffer.getvalue(), file_name="shots.zip", kind=SourceKind.ZIP, pages=12)

    result = project_normalize(project=project)

    pages = list(result.pages.order_by("index"))
    assert [page.source_name for page in pages] == [f"page{n}.png" for n in range(1, 13)]
    assert [page.width for page in pages] == [100 + n for n in range(1, 13)]
    assert [stored_image(page.image_key).size for page in pages] == [(100 + n, 150) for n in range(1, 13)]
    assert not any(page.has_text_layer for page in pages)
    assert result.status == ProjectStatus.CALIBRATING


def test_a_single_image_is_one_upright_rgb_page():
    buffer = io.BytesIO()
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation: the camera was turned; the page must be rotated upright
    Image.new("CMYK", (300, 200), (0, 0, 0, 0)).save(buffer, format="JPEG", exif=exif)
    project = project_with_source(buffer.getvalue(), file_name="photo.jpg", kind=SourceKind.IMAGE, pages=1)

    result = project_normalize(project=project)

    (page,) = result.pages.all()
    assert (page.index, page.source_name, page.width, page.height) == (1, "photo.jpg", 200, 300)
    image = stored_image(page.image_key)
    assert (image.format, image.mode, image.size) == ("PNG", "RGB", (200, 300))
    assert not image.getexif()
    assert result.status == ProjectStatus.CALIBRATING


def test_a_multi_page_tiff_gives_one_page_per_frame():
    frames = [Image.new("L", (120 + n, 160), 255) for n in range(3)]
    buffer = io.BytesIO()
    frames[0].save(buffer, format="TIFF", save_all=True, append_images=frames[1:])
    project = project_with_source(buffer.getvalue(), file_name="scan.tiff", kind=SourceKind.IMAGE, pages=3)

    result = project_normalize(project=project)

    pages = list(result.pages.order_by("index"))
    assert [(page.source_name, page.width) for page in pages] == [
        ("scan.tiff#frame=1", 120),
        ("scan.tiff#frame=2", 121),
        ("scan.tiff#frame=3", 122),
    ]


def test_a_folder_source_becomes_pages_in_natural_order(tmp_path):
    folder = tmp_path / "book"
    folder.mkdir()
    for name, size in (("p10.png", (30, 40)), ("p2.jpg", (20, 40)), ("p1.png", (10, 40))):
        image = Image.new("RGBA" if name.endswith("png") else "RGB", size, "white")
        image.save(folder / name)
    project = project_from_path(folder, kind=SourceKind.FOLDER, file_name="book", pages=3)

    result = project_normalize(project=project)

    pages = list(result.pages.order_by("index"))
    assert [(page.source_name, page.width) for page in pages] == [("p1.png", 10), ("p2.jpg", 20), ("p10.png", 30)]
    assert stored_image(pages[0].image_key).mode == "RGB"
    assert sorted(path.name for path in folder.iterdir()) == ["p1.png", "p10.png", "p2.jpg"]


def test_a_large_book_is_queued_once_and_normalized_by_the_task(settings, django_capture_on_commit_callbacks):
    settings.NORMALIZE_INLINE_MAX_PAGES = 2
    project = project_with_source(text_pdf(4), file_name="long.pdf", kind=SourceKind.PDF, pages=4)

    with django_capture_on_commit_callbacks() as callbacks:
        queued = project_normalize(project=project)
        again = project_normalize(project=project)

    assert len(callbacks) == 2  # the status event and the one task
    # The book is Calibrating at once, with every page row in order, none prepared yet.
    assert (queued.status, queued.normalize_state, queued.normalize_pages_done) == (
        ProjectStatus.CALIBRATING,
        NormalizeState.QUEUED,
        0,
    )
    assert (again.status, again.normalize_state) == (ProjectStatus.CALIBRATING, NormalizeState.QUEUED)
    assert list(project.pages.values_list("index", "prepared")) == [(1, False), (2, False), (3, False), (4, False)]

    normalize_run(project_id=project.pk)

    project.refresh_from_db()
    assert (project.status, project.normalize_state, project.normalize_pages_done) == (
        ProjectStatus.CALIBRATING,
        NormalizeState.DONE,
        4,
    )
    assert list(project.pages.values_list("index", flat=True)) == [1, 2, 3, 4]


@pytest.mark.usefixtures("eager_celery")
def test_the_queued_task_runs_on_commit(settings, django_capture_on_commit_callbacks):
    settings.NORMALIZE_INLINE_MAX_PAGES = 2
    project = project_with_source(text_pdf(3), file_name="long.pdf", kind=SourceKind.PDF, pages=3)

    with django_capture_on_commit_callbacks(execute=True):
        queued = project_normalize(project=project)
        assert queued.normalize_state == NormalizeState.QUEUED

    project.refresh_from_db()
    assert project.status == ProjectStatus.CALIBRATING
    assert project.pages.count() == 3


def test_a_redelivered_message_for_a_running_or_done_project_does_nothing():
    running = project_with_source(text_pdf(2), file_name="a.pdf", kind=SourceKind.PDF, pages=2)
    Project.objects.filter(pk=running.pk).update(
        normalize_state=NormalizeState.RUNNING, normalize_heartbeat_at=timezone.now()
    )
    done = project_with_source(text_pdf(2), file_name="b.pdf", kind=SourceKind.PDF, pages=2)
    project_normalize(project=done)

    normalize_run(project_id=running.pk)
    normalize_run(project_id=done.pk)

    running.refresh_from_db()
    assert (running.status, running.normalize_state) == (ProjectStatus.CREATED, NormalizeState.RUNNING)
    assert not running.pages.exists()
    assert done.pages.count() == 2


def test_a_normalize_whose_worker_died_is_requeued_and_taken_over(settings, django_capture_on_commit_callbacks):
    stale = project_with_source(text_pdf(3), file_name="a.pdf", kind=SourceKind.PDF, pages=3)
    alive = project_with_source(text_pdf(3), file_name="b.pdf", kind=SourceKind.PDF, pages=3)
    long_ago = timezone.now() - timedelta(seconds=settings.NORMALIZE_STALE_SECONDS + 1)
    Project.objects.filter(pk=stale.pk).update(normalize_state=NormalizeState.RUNNING, normalize_heartbeat_at=long_ago)
    Project.objects.filter(pk=alive.pk).update(
        normalize_state=NormalizeState.RUNNING, normalize_heartbeat_at=timezone.now()
    )

    with django_capture_on_commit_callbacks() as callbacks:
        assert normalize_stale_requeue() == 1
    assert len(callbacks) == 1
    normalize_run(project_id=stale.pk)

    stale.refresh_from_db()
    assert (stale.status, stale.normalize_state) == (ProjectStatus.CALIBRATING, NormalizeState.DONE)
    assert stale.pages.count() == 3
    assert stale.source_path == "a.pdf"
    assert not alive.pages.exists()


def test_a_resumed_run_keeps_stored_pages_and_adds_the_rest(local_storage):
    project = project_with_source(text_pdf(5), file_name="book.pdf", kind=SourceKind.PDF, pages=5)
    kept = []
    for index in (1, 2):
        image_key = default_storage.save(page_image_key(project_id=project.pk, index=index), ContentFile(png()))
        thumbnail_key = default_storage.save(
            page_thumbnail_key(project_id=project.pk, index=index), ContentFile(png((32, 48)))
        )
        kept.append(
            Page.objects.create(
                project=project,
                index=index,
                source_name=f"book.pdf#page={index}",
                image_key=image_key,
                thumbnail_key=thumbnail_key,
                width=400,
                height=600,
            )
        )
    Project.objects.filter(pk=project.pk).update(normalize_state=NormalizeState.QUEUED)

    normalize_run(project_id=project.pk)

    project.refresh_from_db()
    assert (project.status, project.normalize_pages_done) == (ProjectStatus.CALIBRATING, 5)
    pages = list(project.pages.order_by("index"))
    assert [page.index for page in pages] == [1, 2, 3, 4, 5]
    assert [page.pk for page in pages[:2]] == [page.pk for page in kept]
    assert stored_image(pages[0].image_key).size == (400, 600)  # not rendered again
    assert all(page.has_text_layer for page in pages[2:])
    assert len(page_files(local_storage, project)) == 10


def test_a_pdf_that_cannot_be_rendered_fails_and_leaves_no_page_or_file(local_storage):
    # Page 2 of the page tree points at an object that does not exist: pdfinfo counts 3
    # pages, but only 2 of them carry text, so the pages cannot be matched.
    broken = text_pdf(3).replace(b"/Kids [4 0 R 6 0 R 8 0 R]", b"/Kids [4 0 R 60 0 R 8 0 R]")
    project = project_with_source(broken, file_name="broken.pdf", kind=SourceKind.PDF, pages=3)
    # A page left over from an interrupted run goes too: a failed project has no pages.
    image_key = default_storage.save(page_image_key(project_id=project.pk, index=1), ContentFile(png()))
    Page.objects.create(
        project=project, index=1, source_name="x", image_key=image_key, thumbnail_key="", width=1, height=1
    )

    result = project_normalize(project=project)

    assert result.status == ProjectStatus.FAILED
    assert result.normalize_state == NormalizeState.FAILED
    assert result.failure_code == "file_corrupt"
    assert "does not match the page count" in result.failure_reason
    assert result.normalize_pages_done == 0
    assert not Page.objects.filter(project=project).exists()
    assert page_files(local_storage, project) == []
    assert default_storage.exists(project.source_object_key)


def test_a_pdf_page_too_large_to_render_fails_before_rendering(local_storage):
    project = project_with_source(pdf_bytes(1, size=(14400, 14400)), file_name="map.pdf", kind=SourceKind.PDF, pages=1)

    result = project_normalize(project=project)

    assert (result.status, result.failure_code) == (ProjectStatus.FAILED, "image_too_large")
    assert not result.pages.exists()
    assert page_files(local_storage, project) == []


def test_a_damaged_image_in_a_zip_fails_the_project_with_no_page_left(settings, local_storage):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("1.png", png())
        archive.writestr("2.png", png()[:200])
    project = project_with_source(buffer.getvalue(), file_name="pages.zip", kind=SourceKind.ZIP, pages=2)

    result = project_normalize(project=project)

    assert (result.status, result.failure_code) == (ProjectStatus.FAILED, "file_corrupt")
    assert not result.pages.exists()
    assert page_files(local_storage, project) == []


def assert_normalize_stops_on_a_storage_error(project: Project) -> None:
    """Storage's error is raised; the book is back to Created, failed on our side
    (server_error), without a page row."""
    with pytest.raises(OSError, match=r"Not a directory|File exists"):
        project_normalize(project=project)
    project.refresh_from_db()
    assert (project.status, project.normalize_state, project.failure_code) == (
        ProjectStatus.CREATED,
        NormalizeState.FAILED,
        "server_error",
    )
    assert not project.pages.exists()


def test_an_unexpected_error_leaves_the_book_created_with_the_reason_cleans_up_and_is_raised(settings, tmp_path):
    source = tmp_path / "book.pdf"
    source.write_bytes(text_pdf(2))
    not_a_folder = tmp_path / "storage-file"
    not_a_folder.write_bytes(b"")
    settings.STORAGES = {
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(not_a_folder)},
        },
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    project = project_from_path(source, kind=SourceKind.PDF, file_name="book.pdf", pages=2)

    assert_normalize_stops_on_a_storage_error(project)

    view = status_view_for(project=project)
    assert (view.state, view.title, view.detail) == (
        ProjectStatus.CREATED,
        "Preparing the book stopped",
        project.failure_reason,
    )


def test_a_failed_project_is_refused_and_left_as_it_is():
    project = project_with_source(text_pdf(1), file_name="book.pdf", kind=SourceKind.PDF, pages=1)
    Project.objects.filter(pk=project.pk).update(
        status=ProjectStatus.FAILED, normalize_state=NormalizeState.FAILED, failure_code="file_corrupt"
    )

    with pytest.raises(ServiceError) as refused:
        project_normalize(project=project)

    assert (refused.value.code, refused.value.status_code) == ("project_not_editable", 409)
    project.refresh_from_db()
    assert (project.status, project.normalize_state) == (ProjectStatus.FAILED, NormalizeState.FAILED)
    assert not project.pages.exists()


def test_a_project_past_created_is_returned_unchanged():
    project = project_with_source(text_pdf(1), file_name="book.pdf", kind=SourceKind.PDF, pages=1)
    Project.objects.filter(pk=project.pk).update(status=ProjectStatus.PROCESSING)

    result = project_normalize(project=project)

    assert (result.status, result.normalize_state) == (ProjectStatus.PROCESSING, NormalizeState.NOT_STARTED)
    assert not result.pages.exists()


def test_a_source_in_storage_without_local_paths_is_streamed_to_a_temporary_copy(settings):
    settings.STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.InMemoryStorage"},
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    project = project_with_source(text_pdf(2), file_name="book.pdf", kind=SourceKind.PDF, pages=2)

    result = project_normalize(project=project)

    assert result.status == ProjectStatus.CALIBRATING
    assert [default_storage.exists(page.image_key) for page in result.pages.all()] == [True, True]
