from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"
    verbose_name = "Webhooks"

    def ready(self) -> None:
        from accounts.signals import account_closing
        from webhooks import problems  # noqa: F401  (registers the app's problem codes)
        from webhooks.receivers import end_on_account_closing

        account_closing.connect(end_on_account_closing, dispatch_uid="webhooks.end_on_account_closing")
