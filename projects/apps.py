from django.apps import AppConfig


class ProjectsConfig(AppConfig):
    name = "projects"
    verbose_name = "Projects"

    def ready(self) -> None:
        from django.conf import settings
        from PIL import Image

        from projects import problems  # noqa: F401  (registers the app's problem codes)

        # Pillow warns past this many pixels (and we refuse on its warning); one limit for all.
        Image.MAX_IMAGE_PIXELS = settings.IMAGE_MAX_PIXELS
