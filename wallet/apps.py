from django.apps import AppConfig


class WalletConfig(AppConfig):
    name = "wallet"
    verbose_name = "Wallet"

    def ready(self) -> None:
        from accounts.signals import account_closing
        from core.metrics_collectors import scrape_source_register
        from wallet import problems  # noqa: F401  (registers the app's problem codes)
        from wallet.metrics import hold_metrics
        from wallet.receivers import close_on_account_closing

        account_closing.connect(close_on_account_closing, dispatch_uid="wallet.close_on_account_closing")
        scrape_source_register("holds", hold_metrics)
