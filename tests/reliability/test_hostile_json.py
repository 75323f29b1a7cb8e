"""Hostile JSON: every operation that reads a JSON body, sent bodies no client should send
(malformed JSON, the wrong top-level type, nesting deep enough to break a recursive parser,
fields it does not have) and, field by field, values of the wrong type, NaN and Infinity,
numbers too large for anything, negative amounts and counts, amounts in other digits than
ASCII's, very long strings, huge arrays, unknown enum values, and the field's name in upper
case, in snake_case or twice. Each must get a clear 4xx problem+json, and change nothing:
every row of the service's tables is the same afterwards (no project, job, hold, ledger
entry, top-up, key, webhook or idempotency record half-written).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from django.apps import apps
from djangorestframework_camel_case.util import camel_to_underscore

from tests.reliability.world import call, schema, world_build

pytestmark = pytest.mark.django_db

# Bodies that are wrong whatever the operation.
WHOLE_BODIES = {
    "malformed": "{",
    "array": "[]",
    "string": '"text"',
    "null": "null",
    "deep": "[" * 100_000 + "]" * 100_000,
    "nan-literal": '{"x": NaN}',
    "unknown-field": '{"surelyNotAField": 1}',
}

LONG = "x" * 100_000
# Values that break each kind of field: (name, JSON text).
BY_TYPE: dict[str, list[tuple[str, str]]] = {
    "string": [("object", "{}"), ("array", "[]"), ("boolean", "true"), ("long", json.dumps(LONG))],
    "number": [
        ("text", '"abc"'),
        ("object", "{}"),
        ("nan", "NaN"),
        ("infinity", "Infinity"),
        ("overflow", "1e400"),
        ("huge", "1" + "0" * 40),
        ("negative", "-5"),
    ],
    "integer": [("text", '"abc"'), ("fraction", "1.5"), ("huge", "1" + "0" * 40), ("negative", "-5")],
    "boolean": [("text", '"maybe"'), ("object", "{}"), ("number", "2")],
    "array": [("text", '"abc"'), ("object", "{}"), ("huge", json.dumps(["x"] * 20_000))],
    "uuid": [("text", '"not-a-uuid"'), ("number", "5")],
    "enum": [("unknown", '"Klingon"'), ("number", "5"), ("array", "[]")],
}
# Amounts that Python's Decimal() reads as numbers although no client means them so:
# another script's digits (once credited as 12 USD), full-width digits, an exponent.
BY_TYPE["number"] += [("arabic-indic-digits", '"١٢"'), ("fullwidth-digits", '"１２"'), ("exponent-text", '"1e1"')]
# Operations whose body is the provider's signed event, not ours: anything hostile is
# refused by the signature check first (tests/wallet covers them field by field).
SIGNED = {"POST /v1/payments/btcpay/webhook", "POST /v1/payments/stripe/webhook"}


def json_operations() -> list[tuple[str, dict[str, Any]]]:
    """(operation, the JSON body's properties) of every operation that reads JSON."""
    document = schema()
    components = document["components"]["schemas"]
    found = []
    for path, entries in document["paths"].items():
        for method, operation in entries.items():
            content = operation.get("requestBody", {}).get("content", {})
            if "application/json" not in content:
                continue
            reference = content["application/json"]["schema"].get("$ref", "")
            properties = components.get(reference.rsplit("/", 1)[-1], {}).get("properties", {})
            found.append((f"{method.upper()} {path}", properties))
    return sorted(found, key=lambda item: item[0])


def kind_of(field: dict[str, Any]) -> str:
    if field.get("format") == "uuid":
        return "uuid"
    if "type" not in field:
        return "enum"  # a $ref or oneOf to an enum component
    return {"string": "string", "number": "number", "integer": "integer", "boolean": "boolean"}.get(
        field["type"], "array" if field["type"] == "array" else "string"
    )


def cases() -> list[Any]:
    found = []
    for operation, properties in json_operations():
        for name, body in WHOLE_BODIES.items():
            found.append(pytest.param(operation, body, id=f"{operation} {name}"))
        if operation in SIGNED:
            continue
        for field, description in properties.items():
            if description.get("readOnly"):
                continue
            for value_name, value in BY_TYPE[kind_of(description)]:
                if value_name == "negative" and "minimum" in description and description["minimum"] < 0:
                    continue
                found.append(pytest.param(operation, f'{{"{field}": {value}}}', id=f"{operation} {field}={value_name}"))
            for spelling_name, body in spellings(field).items():
                found.append(pytest.param(operation, body, id=f"{operation} {field} {spelling_name}"))
    return found


def spellings(field: str) -> dict[str, str]:
    """Bodies naming the field as no client should: in upper case or snake_case (the camelCase
    conversion once mapped both onto the field), or twice (which one counts is a guess)."""
    found = {"repeated": f'{{"{field}": null, "{field}": null}}'}
    for name, spelt in (("upper-case", field.upper()), ("snake_case", camel_to_underscore(field))):
        if spelt != field:
            found[name] = f'{{"{spelt}": null}}'
    return found


# Rows that change on a read and say nothing about a write.
VOLATILE = {"last_used_at", "last_login"}


def fingerprint() -> str:
    """A digest of every row of the service's own tables."""
    digest = hashlib.sha256()
    for label in ("accounts", "projects", "wallet", "exports", "webhooks", "core"):
        for model in apps.get_app_config(label).get_models():
            for row in model.objects.order_by("pk").values():
                kept = {key: value for key, value in row.items() if key not in VOLATILE}
                digest.update(repr(sorted(kept.items())).encode())
    return digest.hexdigest()


def test_there_are_json_operations_and_cases_for_each():
    assert len(json_operations()) >= 20
    assert len(cases()) > 200


@pytest.mark.parametrize(("operation", "body"), cases())
def test_a_hostile_body_gets_a_clear_4xx_and_changes_nothing(operation, body, settings, local_storage):
    settings.TRANSLATION_ENGINE = "echo"
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    settings.DEVELOPMENT_DEPLOYMENT = True
    world = world_build()
    world.owner.is_staff = True  # so that staff-only operations read their body too
    world.owner.save(update_fields=["is_staff"])
    before = fingerprint()

    response = call(operation, world, "jwt", body=body)

    assert 400 <= response.status_code < 500, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/problem+json")
    assert response.json()["code"]
    assert fingerprint() == before
