from django.apps import AppConfig


class TranslationConfig(AppConfig):
    name = "translation"
    verbose_name = "Translation"

    def ready(self) -> None:
        from django.test.signals import setting_changed

        from core.health import engine_status_provide
        from translation.engines import model_status
        from translation.engines.factory import engine_forget

        engine_status_provide(model_status)
        # Settings overridden at run time (override_settings) rebuild the engine.
        setting_changed.connect(engine_forget, dispatch_uid="translation.engine_forget")
