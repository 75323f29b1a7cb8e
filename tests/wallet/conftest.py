"""Fixtures of the wallet tests: the Stripe stand-in, configured as the service's Stripe."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pytest_django.fixtures import Settings

from tests.wallet.stripe_stand_in import API_KEY, WEBHOOK_SECRET, StripeStandIn


@pytest.fixture
def stripe_stand_in(settings: Settings) -> Iterator[StripeStandIn]:
    """A running Stripe stand-in, and the settings that send the service's Stripe calls to it."""
    with StripeStandIn.running(api_key=API_KEY) as stand_in:
        settings.STRIPE_SECRET_KEY = API_KEY
        settings.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET
        settings.STRIPE_API_BASE = stand_in.base_url
        yield stand_in
