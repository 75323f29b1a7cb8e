"""factory_boy factories for the models the tests need."""

from __future__ import annotations

import factory

from accounts.models import User

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
