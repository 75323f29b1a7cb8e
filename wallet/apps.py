from django.apps import AppConfig


class WalletConfig(AppConfig):
    name = "wallet"
    verbose_name = "Wallet"

    def ready(self) -> None:
        from accounts.signals import account_closing
        from wallet import problems  # noqa: F401  (registers the app's problem codes)
        from wallet.receivers import close_on_account_closing

        account_closing.connect(close_on_account_closing, dispatch_uid="wallet.close_on_account_closing")
