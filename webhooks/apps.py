from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"
    verbose_name = "Webhooks"

    def ready(self) -> None:
        from accounts.events import AccountClosing, ApiKeyRevoked, PasswordChanged
        from core.events import Phase, subscribe
        from core.metrics_collectors import scrape_source_register
        from exports.events import ExportReady
        from projects.events import JobFinished, ProjectStatusChanged
        from wallet.events import LowBalance, TopUpConfirmed
        from webhooks import (
            subscribers,
            tasks,  # noqa: F401  (registers its Celery tasks, which deliveries enqueue by name)
        )
        from webhooks.metrics import webhook_metrics

        subscribe(ProjectStatusChanged, subscribers.status_changed_send)
        subscribe(JobFinished, subscribers.job_finished_send)
        subscribe(ExportReady, subscribers.export_ready_send)
        subscribe(TopUpConfirmed, subscribers.top_up_confirmed_send)
        subscribe(LowBalance, subscribers.low_balance_send)
        subscribe(AccountClosing, subscribers.end_on_account_closing, phase=Phase.IN_TRANSACTION)
        subscribe(ApiKeyRevoked, subscribers.end_on_api_key_revoked)
        subscribe(PasswordChanged, subscribers.end_on_password_changed)
        scrape_source_register("webhooks", webhook_metrics)
