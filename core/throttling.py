"""Rate limits on the anonymous and sign-in endpoints, counted in the Redis cache.

Rates come from settings.THROTTLE_RATES at request time (not import time), so they are
configuration like every other knob.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

if TYPE_CHECKING:
    from rest_framework.views import APIView


class ClientAddressRateThrottle(SimpleRateThrottle):
    """Counts requests per client address for the view's `throttle_scope`."""

    scope_attr = "throttle_scope"

    def __init__(self) -> None:  # the rate is read in allow_request, once the view is known
        pass

    def get_rate(self) -> str | None:
        return settings.THROTTLE_RATES.get(self.scope) if self.scope else None

    def allow_request(self, request: Request, view: APIView) -> bool:
        self.scope = getattr(view, self.scope_attr, None)
        if not self.scope:
            return True
        self.rate = self.get_rate()
        if self.rate is None:
            return True
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request, view)

    def get_cache_key(self, request: Request, view: APIView) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


class AccountRateThrottle(ClientAddressRateThrottle):
    """Counts requests per signed-in account (DRF's UserRateThrottle's key: the user's id,
    the client address when anonymous) for the view's `throttle_scope`, so that one
    account cannot spread its attempts across addresses."""

    def get_cache_key(self, request: Request, view: APIView) -> str:
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            ident = f"user:{user.pk}"
        else:
            ident = f"address:{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}
