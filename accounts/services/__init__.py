"""Every write of accounts: users, passwords, preferences and account deletion (users.py),
scoped API keys (api_keys.py), avatars (avatars.py), and external identity tokens checked
against the provider's keys (oidc.py)."""
