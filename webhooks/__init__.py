"""webhooks: the event types and their fan-out — signed webhook deliveries to the
subscriptions an owner registers (with retries, address pinning against private networks,
and the delivery log) and the real-time hub at /v1/hub (websocket consumers and their
authentication). See docs/webhooks.md, docs/events.md and docs/hub.md.

Layers: webhooks is at the top: it imports core, accounts, wallet, projects and exports
(their events, and the views a message carries), and nothing imports it. It subscribes to
their events on core's event bus in its `ready()` (webhooks/subscribers.py).
"""
