from django.urls import path

from wallet.api import btcpay as api_btcpay
from wallet.api import redeem as api_redeem
from wallet.api import stripe as api_stripe
from wallet.api import wallet as api

urlpatterns = [
    path("wallet", api.WalletView.as_view(), name="wallet"),
    path("wallet/ledger", api.LedgerView.as_view(), name="wallet-ledger"),
    path("wallet/top-up", api.TopUpView.as_view(), name="wallet-top-up"),
    path("wallet/top-up/<str:reference>", api.TopUpDetailView.as_view(), name="wallet-top-up-detail"),
    path("wallet/auto-top-up", api.AutoTopUpView.as_view(), name="wallet-auto-top-up"),
    path("wallet/low-balance-alert", api.LowBalanceAlertView.as_view(), name="wallet-low-balance-alert"),
    path("wallet/spending-ceiling", api.SpendingCeilingView.as_view(), name="wallet-spending-ceiling"),
    path("wallet/redeem", api_redeem.RedeemView.as_view(), name="wallet-redeem"),
    path("wallet/cards", api_stripe.SavedCardListView.as_view(), name="wallet-cards"),
    path("wallet/cards/<uuid:card_id>", api_stripe.SavedCardDetailView.as_view(), name="wallet-card-detail"),
    path("wallet/cards/<uuid:card_id>/primary", api_stripe.SavedCardPrimaryView.as_view(), name="wallet-card-primary"),
    path("payments/stripe/webhook", api_stripe.StripeWebhookView.as_view(), name="payments-stripe-webhook"),
    path("payments/btcpay/webhook", api_btcpay.BtcpayWebhookView.as_view(), name="payments-btcpay-webhook"),
]
