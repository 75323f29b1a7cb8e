"""Accounts: users and sign-in (password, JWT, external identity tokens), the profile and
preferences, avatars, scoped API keys, and the authentication classes every view uses."""
