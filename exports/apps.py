from django.apps import AppConfig


class ExportsConfig(AppConfig):
    name = "exports"
    verbose_name = "Exports"

    def ready(self) -> None:
        from exports import tasks  # noqa: F401  (registers its Celery tasks, which services enqueue by name)
