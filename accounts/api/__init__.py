"""HTTP for accounts: sign-up, sign-in, tokens, the profile and preferences, API keys
(accounts.py), the avatar (avatar.py), external identity sign-in (identity.py), and their
serializers."""
