"""The price table and the batch quote.

A book's first batch (one page) is calibration: it runs without a dollar estimate, needs a
positive spendable balance, and holds at most CALIBRATION_HOLD_USD. Once pages are
measured, the book's cost per page (measured cost / measured pages) picks a tier of the
price table; the batch's estimate is pages x the tier's ceiling rate — the never-exceed
figure the gate checks and the hold reserves — and its expected cost pages x the tier's
expected rate. The charge is the measured cost, never more than the hold.

This module knows nothing about projects: the caller says how many pages the batch has and
what the book's pages measured so far (projects/selectors/billing.py does).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from accounts.models import User
from core.money import MONEY_QUANTUM, round_cap_down, round_estimate_up
from wallet.errors import InsufficientCredit, NothingToProcess, SpendingCeilingReached
from wallet.models import ZERO, Wallet
from wallet.selectors.wallet import spent_this_month, wallet_settings_of


@dataclass(frozen=True)
class PriceTier:
    """Books whose measured cost per page is at most `up_to` (None: any) pay these rates
    per page."""

    up_to: Decimal | None
    expected: Decimal
    ceiling: Decimal


def _rate(text: str) -> Decimal:
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise ImproperlyConfigured(f"PRICE_TIERS: {text!r} is not a number") from None
    if not value.is_finite() or value <= 0:
        raise ImproperlyConfigured(f"PRICE_TIERS: {text!r} must be positive")
    return value


@functools.cache
def _tiers_parse(spec: str) -> tuple[PriceTier, ...]:
    tiers: list[PriceTier] = []
    for item in filter(None, (part.strip() for part in spec.split(","))):
        fields = item.split(":")
        if len(fields) != 3:
            raise ImproperlyConfigured(f"PRICE_TIERS: {item!r} is not upTo:expected:ceiling")
        up_to = None if fields[0].strip() == "-" else _rate(fields[0])
        tier = PriceTier(up_to=up_to, expected=_rate(fields[1]), ceiling=_rate(fields[2]))
        if tier.ceiling < tier.expected or (up_to is not None and tier.ceiling < up_to):
            raise ImproperlyConfigured(f"PRICE_TIERS: in {item!r} the ceiling is below the expected rate or upTo")
        if tiers and (tiers[-1].up_to is None or (up_to is not None and up_to <= tiers[-1].up_to)):
            raise ImproperlyConfigured("PRICE_TIERS: tiers must go up, and only the last may be unbounded ('-')")
        tiers.append(tier)
    if tiers and tiers[-1].up_to is not None:
        raise ImproperlyConfigured("PRICE_TIERS: the last tier must be unbounded ('-')")
    return tuple(tiers)


def price_tiers() -> tuple[PriceTier, ...]:
    """The configured table (empty when PRICE_TIERS is empty)."""
    return _tiers_parse(settings.PRICE_TIERS)


def tier_for(cost_per_page: Decimal) -> tuple[int, PriceTier] | None:
    """The 1-based number and the tier a measured cost per page falls in; None without a table."""
    for number, tier in enumerate(price_tiers(), start=1):
        if tier.up_to is None or cost_per_page <= tier.up_to:
            return number, tier
    return None


@dataclass(frozen=True)
class BookCost:
    """What a whole book will cost: about `expected`, never more than `maximum`.

    expected: pages x the expected rate of the price tier the book's cost per page falls in
    (measured once a page is; before that, predicted from its words per page).
    maximum: the most billing can ever charge for these pages (see `book_cost`); None with
    no price table, where nothing bounds a page's charge in advance.
    """

    expected: Decimal
    maximum: Decimal | None
    estimated: bool  # true until a page of the book has been measured (calibration)
    basis: str  # "price_table" (predicted cost per page) or "measured"
    currency: str = "USD"


def top_ceiling_rate() -> Decimal | None:
    """The highest ceiling rate of the price table: no page is ever charged more (None
    without a table)."""
    tiers = price_tiers()
    return max(tier.ceiling for tier in tiers) if tiers else None


def book_cost(*, page_count: int, cost_per_page: Decimal, measured: bool) -> BookCost:
    """The cost of a book of `page_count` pages whose cost per page is `cost_per_page`
    (`measured`, or predicted before calibration).

    The maximum is a bound billing keeps whatever the pages turn out to cost: a batch is
    charged at most its hold pro rata of the pages it translated (projects/services/runner.py), a
    hold is at most its pages x a tier's ceiling rate, except the calibration batch's, at
    most CALIBRATION_HOLD_USD, and once a page is measured the book never calibrates
    again; a page is charged once, when it is translated. Hence at most
    CALIBRATION_HOLD_USD + (pages - 1) x the top ceiling rate — or, for a book measured
    above the top ceiling (an engine costlier than the table; operators are alerted, see
    projects.services.jobs.batch_charge_settle), x its measured cost per page, at which its batches
    are then held.
    """
    found = tier_for(cost_per_page)
    expected_rate = max(found[1].expected, cost_per_page) if found else cost_per_page
    top = top_ceiling_rate()
    maximum = None
    if top is not None:
        calibration = Decimal(settings.CALIBRATION_HOLD_USD)
        rate = max(top, cost_per_page) if measured else top  # measured above the table: its own cost
        maximum = round_estimate_up(calibration + max(page_count - 1, 0) * rate) if page_count else ZERO
    expected = round_estimate_up(page_count * expected_rate)
    return BookCost(
        expected=expected if maximum is None else min(expected, maximum),
        maximum=maximum,
        estimated=not measured,
        basis="measured" if measured else "price_table",
    )


def batch_charge_cap(*, measured: Decimal, hold: Decimal, batch_pages: int, translated_pages: int) -> Decimal:
    """What a batch may be charged: its measured cost, at most its hold pro rata of the pages
    it translated (so the pages that failed or were never run leave their share of the hold
    unused, and no page is charged more than the rate its hold was placed at)."""
    share = round_cap_down(hold * translated_pages / max(batch_pages, 1))
    return min(measured, share)


@dataclass(frozen=True)
class BatchQuote:
    """The contract's Batch quote, plus what the gate needs (hold, blocked_by, shortfall)."""

    can_start: bool
    balance: Decimal
    spendable: Decimal
    estimated: Decimal
    expected: Decimal
    estimable: bool
    page_count: int
    explanation: str
    cost_per_page: Decimal
    target_language: str
    unlimited: bool
    hold: Decimal
    blocked_by: str | None = None  # "credit", "spending_ceiling" or "nothing_pending"
    shortfall: Decimal = ZERO
    ceiling: Decimal | None = None
    spent_this_month: Decimal = ZERO
    book_cost: BookCost | None = None  # the whole book's, where the caller knows the book


def batch_quote(
    *, owner: User, page_count: int, measured_pages: int, measured_cost: Decimal, target_language: str
) -> BatchQuote:
    """Prices a batch of `page_count` pages of a book whose `measured_pages` pages cost
    `measured_cost` so far, against the owner's wallet as it now is."""
    wallet = Wallet.objects.filter(user=owner).first() or Wallet(user=owner)
    estimable = measured_pages > 0
    cost_per_page = round_estimate_up(measured_cost / measured_pages) if estimable else ZERO
    estimated = expected = ZERO
    tier_text = ""
    if estimable:
        found = tier_for(cost_per_page)
        ceiling_rate, expected_rate = (found[1].ceiling, found[1].expected) if found else (cost_per_page,) * 2
        if found and cost_per_page > expected_rate:
            # Measured above its tier's expected rate (only the unbounded top tier can be: an
            # engine costlier than the table): expected at what it measured, held with the
            # tier's own headroom above that (its ceiling over its expected rate).
            ceiling_rate = max(ceiling_rate, cost_per_page * found[1].ceiling / found[1].expected)
            expected_rate = cost_per_page
        estimated = round_estimate_up(page_count * ceiling_rate)
        expected = round_estimate_up(page_count * expected_rate)
        tier_text = f" (price tier {found[0]})" if found else ""
    quote = BatchQuote(
        can_start=True,
        balance=wallet.balance,
        spendable=wallet.spendable,
        estimated=estimated,
        expected=expected,
        estimable=estimable,
        page_count=page_count,
        explanation="",
        cost_per_page=cost_per_page,
        target_language=target_language,
        unlimited=wallet.unlimited,
        hold=ZERO,
    )
    if page_count == 0:
        return replace(
            quote, can_start=False, blocked_by="nothing_pending", explanation="No pages are waiting to be translated."
        )
    if wallet.unlimited:
        return replace(quote, explanation="Unlimited account: work is included; nothing is held or charged.")

    prefs = wallet_settings_of(wallet=wallet)
    spent = spent_this_month(wallet=wallet) if wallet.pk else ZERO
    ceiling = prefs.monthly_spending_ceiling
    room = None if ceiling is None else ceiling - spent - wallet.reserved
    if estimable:
        quote = replace(
            quote,
            hold=estimated,
            explanation=f"{page_count} pages at {cost_per_page} USD a page measured{tier_text}: at most "
            f"{estimated} USD (held while the batch runs), about {expected} USD expected.",
        )
    else:
        hold = min(Decimal(settings.CALIBRATION_HOLD_USD), wallet.spendable)
        hold = max(min(hold, room) if room is not None else hold, ZERO)
        quote = replace(
            quote,
            hold=hold,
            explanation="Calibration: the first page runs without a dollar estimate, to measure this book's cost "
            f"per page; up to {hold} USD is held and only the measured cost is charged.",
        )
    if room is not None and (room <= 0 or estimated > room):
        return replace(
            quote,
            can_start=False,
            blocked_by="spending_ceiling",
            ceiling=ceiling,
            spent_this_month=spent,
            explanation=f"Blocked by your monthly spending ceiling of {ceiling} USD: {spent} USD spent and "
            f"{wallet.reserved} USD held this month leave {max(room, ZERO)} USD.",
        )
    needed = estimated if estimable else MONEY_QUANTUM
    if wallet.spendable < needed:
        shortfall = needed - wallet.spendable
        return replace(
            quote,
            can_start=False,
            blocked_by="credit",
            shortfall=shortfall,
            explanation=f"Blocked on credit: the batch needs {estimated} USD and {wallet.spendable} USD is "
            f"spendable; add at least {shortfall} USD."
            if estimable
            else "Blocked on credit: calibration needs a positive spendable balance.",
        )
    return quote


def batch_gate(quote: BatchQuote) -> BatchQuote:
    """The affordability gate of process, process-next-batch and retry: the quote when the
    batch may start; otherwise 402 insufficient_credit (with the shortfall), 402
    spending_ceiling_reached, or 409 nothing_to_process."""
    if quote.can_start:
        return quote
    if quote.blocked_by == "credit":
        raise InsufficientCredit(shortfall=quote.shortfall)
    if quote.blocked_by == "spending_ceiling":
        raise SpendingCeilingReached(
            quote.explanation,
            ceiling_usd=float(quote.ceiling or ZERO),
            spent_this_month_usd=float(quote.spent_this_month),
            estimated_usd=float(quote.estimated),
        )
    raise NothingToProcess(quote.explanation)
