"""Every write of webhooks: subscriptions (subscriptions.py), deliveries and their signed
attempts (deliveries.py), the hub's sending side (hub.py), and an event fanned out to both
once committed (fanout.py)."""
