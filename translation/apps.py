from django.apps import AppConfig


class TranslationConfig(AppConfig):
    name = "translation"
    verbose_name = "Translation"

    def ready(self) -> None:
        from core.health import engine_status_provide
        from translation.engines import model_status

        engine_status_provide(model_status)
