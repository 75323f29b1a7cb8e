from django.urls import path

from wallet import api, api_btcpay, api_redeem

urlpatterns = [
    path("wallet", api.WalletView.as_view(), name="wallet"),
    path("wallet/ledger", api.LedgerView.as_view(), name="wallet-ledger"),
    path("wallet/top-up", api.TopUpView.as_view(), name="wallet-top-up"),
    path("wallet/top-up/<str:reference>", api.TopUpDetailView.as_view(), name="wallet-top-up-detail"),
    path("wallet/auto-top-up", api.AutoTopUpView.as_view(), name="wallet-auto-top-up"),
    path("wallet/low-balance-alert", api.LowBalanceAlertView.as_view(), name="wallet-low-balance-alert"),
    path("wallet/spending-ceiling", api.SpendingCeilingView.as_view(), name="wallet-spending-ceiling"),
    path("wallet/redeem", api_redeem.RedeemView.as_view(), name="wallet-redeem"),
    # Stripe: saved cards and the webhook (wallet/api_stripe.py):
    path("payments/btcpay/webhook", api_btcpay.BtcpayWebhookView.as_view(), name="payments-btcpay-webhook"),
]
