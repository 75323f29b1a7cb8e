from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"
    verbose_name = "Webhooks"

    def ready(self) -> None:
        from accounts.signals import account_closing, api_key_revoked, password_changed
        from core.metrics_collectors import scrape_source_register
        from webhooks import (
            problems,  # noqa: F401  (registers the app's problem codes)
            tasks,  # noqa: F401  (registers its Celery tasks, which deliveries enqueue by name)
        )
        from webhooks.metrics import webhook_metrics
        from webhooks.receivers import end_on_account_closing, end_on_api_key_revoked, end_on_password_changed

        account_closing.connect(end_on_account_closing, dispatch_uid="webhooks.end_on_account_closing")
        api_key_revoked.connect(end_on_api_key_revoked, dispatch_uid="webhooks.end_on_api_key_revoked")
        password_changed.connect(end_on_password_changed, dispatch_uid="webhooks.end_on_password_changed")
        scrape_source_register("webhooks", webhook_metrics)
