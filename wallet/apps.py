from django.apps import AppConfig


class WalletConfig(AppConfig):
    name = "wallet"
    verbose_name = "Wallet"

    def ready(self) -> None:
        from wallet import problems  # noqa: F401  (registers the app's problem codes)
