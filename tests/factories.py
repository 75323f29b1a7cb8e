"""factory_boy factories for the models the tests need."""

from __future__ import annotations

from pathlib import Path

import factory

from accounts.models import User
from projects.models import NormalizeState, Page, Project, ProjectStatus, SourceKind

DEFAULT_PASSWORD = "correct-horse-battery-staple"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        skip_postgeneration_save = True

    email = factory.Sequence(lambda n: f"reader{n}@example.com")
    display_name = factory.Faker("name")
    password = factory.PostGenerationMethodCall("set_password", DEFAULT_PASSWORD)

    @factory.post_generation
    def _save(obj: User, create: bool, extracted: object, **kwargs: object) -> None:  # noqa: N805
        if create:
            obj.save()


class ProjectFactory(factory.django.DjangoModelFactory):
    """A normalized book (Calibrating) with no pages; add them with `pages_add`."""

    class Meta:
        model = Project

    owner = factory.SubFactory(UserFactory)
    name = factory.Sequence(lambda n: f"Book {n}")
    target_language_code = "fr"
    status = ProjectStatus.CALIBRATING
    source_kind = SourceKind.PDF
    source_file_name = "book.pdf"
    source_object_key = factory.LazyAttribute(lambda project: f"uploads/{project.owner.pk}/book.pdf")
    normalize_state = NormalizeState.DONE


def project_from_path(
    path: Path, *, kind: SourceKind, file_name: str, pages: int, owner: User | None = None
) -> Project:
    """A book just created, not yet normalized, whose source is a file or folder on this machine."""
    return Project.objects.create(
        owner=owner or UserFactory(),
        name="Book",
        target_language_code="fr",
        source_kind=kind,
        source_path=str(path),
        source_file_name=file_name,
        source_page_count=pages,
    )


def pages_add(project: Project, count: int, **fields: object) -> list[Page]:
    """`count` more pages at the end of the book (rows only: no image files)."""
    start = project.pages.count() + 1
    pages = [
        Page(
            project=project,
            index=index,
            source_name=f"book.pdf#page={index}",
            image_key=f"projects/{project.pk}/pages/{index}.png",
            thumbnail_key=f"projects/{project.pk}/thumbs/{index}.png",
            width=1240,
            height=1754,
            **fields,
        )
        for index in range(start, start + count)
    ]
    created = Page.objects.bulk_create(pages)
    Project.objects.filter(pk=project.pk).update(source_page_count=start + count - 1)
    return created
