from django.apps import AppConfig


class WalletConfig(AppConfig):
    name = "wallet"
    verbose_name = "Wallet"

    def ready(self) -> None:
        from accounts.events import AccountClosing
        from core.events import Phase, subscribe
        from core.metrics_collectors import scrape_source_register
        from wallet import tasks  # noqa: F401  (registers its Celery tasks, which alerts enqueue by name)
        from wallet.events import BalanceFell
        from wallet.metrics import hold_metrics
        from wallet.services.alerts import balance_watch_on_event
        from wallet.subscribers import close_on_account_closing

        subscribe(AccountClosing, close_on_account_closing, phase=Phase.IN_TRANSACTION)
        subscribe(BalanceFell, balance_watch_on_event)
        scrape_source_register("holds", hold_metrics)
