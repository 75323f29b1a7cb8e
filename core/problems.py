"""Transitional (issue 16): `register` for the apps whose problem codes are not yet
declared as classes in their `errors` module; it declares the class for them."""

from __future__ import annotations

from core.errors import ServiceError


def register(code: str, status: int, title: str, description: str) -> type[ServiceError]:
    """Declare a problem code as a ServiceError subclass named after it."""
    name = "".join(part.capitalize() for part in code.split("_"))
    attributes = {"code": code, "status": status, "title": title, "description": description, "__module__": __name__}
    return type(name, (ServiceError,), attributes)
