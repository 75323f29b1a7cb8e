"""HTTP for the wallet: the wallet, top-ups, saved cards and preferences (wallet.py), credit
codes (redeem.py), the Stripe and BTCPay webhooks (stripe.py, btcpay.py), and their
serializers."""
