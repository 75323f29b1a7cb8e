from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Core"

    def ready(self) -> None:
        # Each app declares its problem codes in its `errors` module; importing them all
        # completes the catalogue (GET /v1/problems) before the first request.
        autodiscover_modules("errors")
