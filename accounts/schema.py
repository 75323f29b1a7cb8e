"""How drf-spectacular describes our two authentication classes."""

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.ApiKeyAuthentication"
    name = "apiKeyHeader"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "X-Api-Key",
            "description": "A scoped API key (svc_sk_live_...). It may also be sent as Authorization: Bearer.",
        }


class BearerScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.JwtAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A JWT from login, register or external sign-in (12 hours), or an API key.",
        }
