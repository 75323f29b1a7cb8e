"""accounts: users and sign-in (password, JWT, external identity tokens), the profile and
preferences, avatars, scoped API keys, and the authentication classes every view uses.

Layers: accounts imports only core. Every other app may import it (its models, selectors,
services and authentication); it tells the apps above of an account closing, a password
changed or a key revoked by publishing `accounts.events` on core's event bus, which they
subscribe to in their `ready()`.
"""
