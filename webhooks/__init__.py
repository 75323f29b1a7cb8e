"""webhooks: the event types and their fan-out — signed webhook deliveries to the
subscriptions an owner registers (with retries, address pinning against private networks,
and the delivery log) and the real-time hub at /v1/hub (websocket consumers and their
authentication). See docs/webhooks.md, docs/events.md and docs/hub.md.

Layers: webhooks imports core, accounts and projects (the hub sends a project's status
view). Where it does not hold yet: wallet, projects and exports import
`webhooks.events` to publish, so projects and webhooks import each other; the events are
to go through core's event bus, which webhooks subscribes to (issue 16).
"""
