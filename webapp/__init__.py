"""The web app for people: its page shells, served by the service itself at its own
address. It is presentation only: the server renders each page's empty shell, and the
page's ES module (static/webapp/) does everything else in the browser through the public
API under /v1 and the hub, as any other client would (docs/webapp.md)."""
