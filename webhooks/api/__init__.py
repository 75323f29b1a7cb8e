"""HTTP and websockets for webhooks: subscriptions, deliveries and the test ping
(subscriptions.py, serializers.py), and the real-time hub at /v1/hub (hub.py, the consumer;
hub_auth.py, who may connect)."""
