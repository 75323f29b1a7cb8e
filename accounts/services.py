"""Every write to an account: registration, sign-in, the profile, preferences, password."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.contrib.auth import password_validation
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from rest_framework_simplejwt.tokens import AccessToken

from accounts.models import User, email_normalize
from core.errors import ServiceError, ValidationFailed


class InvalidCredentials(ServiceError):
    code = "invalid_credentials"
    status = 401


class EmailTaken(ServiceError):
    code = "email_taken"


class PasswordNotSet(ServiceError):
    code = "password_not_set"


@dataclass(frozen=True)
class IssuedToken:
    token: str
    expires_at: datetime


def token_issue(*, user: User) -> IssuedToken:
    """A 12-hour access token; a later password change revokes it."""
    token = AccessToken.for_user(user)
    return IssuedToken(token=str(token), expires_at=datetime.fromtimestamp(token["exp"], tz=UTC))


def _password_validate(password: str, *, user: User, field: str) -> None:
    try:
        password_validation.validate_password(password, user=user)
    except DjangoValidationError as error:
        raise ValidationFailed({field: list(error.messages)}) from None


def _email_ensure_free(email: str, *, except_user: User | None = None) -> None:
    taken = User.objects.filter(email=email)
    if except_user is not None:
        taken = taken.exclude(pk=except_user.pk)
    if taken.exists():
        raise EmailTaken("Another account already uses this email address.")


def user_register(*, email: str, password: str, display_name: str) -> User:
    """Create a password account. The email is normalised and unique regardless of case."""
    email = email_normalize(email)
    candidate = User(email=email, display_name=display_name.strip())
    _password_validate(password, user=candidate, field="password")
    _email_ensure_free(email)
    candidate.set_password(password)
    try:
        with transaction.atomic():
            candidate.save()
    except IntegrityError:  # a concurrent registration of the same address won the race
        raise EmailTaken("Another account already uses this email address.") from None
    return candidate


def user_authenticate(*, email: str, password: str) -> User:
    """The account for this email and password, or InvalidCredentials.

    The password hasher runs even for an unknown address, so the answer's timing does
    not tell whether an account exists.
    """
    user = User.objects.filter(email=email_normalize(email)).first()
    if user is None:
        User().set_password(password)
        raise InvalidCredentials("The email address or password is wrong.")
    if not user.check_password(password) or not user.is_active:
        raise InvalidCredentials("The email address or password is wrong.")
    return user


def profile_update(
    *,
    user: User,
    display_name: str | None = None,
    email: str | None = None,
    current_password: str | None = None,
) -> User:
    """Change the display name and/or the email. An email change needs the password."""
    fields: list[str] = []
    if display_name is not None:
        user.display_name = display_name.strip()
        fields.append("display_name")
    if email is not None and email_normalize(email) != user.email:
        if not user.has_usable_password():
            raise PasswordNotSet(
                "This account has no password (it signs in through an identity provider), "
                "so its email address cannot be changed here."
            )
        if not current_password or not user.check_password(current_password):
            raise ValidationFailed({"currentPassword": ["The current password is wrong or missing."]})
        new_email = email_normalize(email)
        _email_ensure_free(new_email, except_user=user)
        user.email = new_email
        user.email_verified = False
        fields += ["email", "email_verified"]
    if fields:
        try:
            with transaction.atomic():
                user.save(update_fields=fields)
        except IntegrityError:
            raise EmailTaken("Another account already uses this email address.") from None
    return user


def password_change(*, user: User, current_password: str, new_password: str) -> User:
    """Set a new password; every token issued before stops working."""
    if not user.has_usable_password():
        raise PasswordNotSet("This account has no password (it signs in through an identity provider).")
    if not user.check_password(current_password):
        raise ValidationFailed({"currentPassword": ["The current password is wrong."]})
    _password_validate(new_password, user=user, field="newPassword")
    user.set_password(new_password)
    user.save(update_fields=["password"])
    return user


def preferences_update(
    *,
    user: User,
    default_target_language: str | None = None,
    display_currency: str | None = None,
    email_notifications: bool | None = None,
    in_app_notifications: bool | None = None,
    projects_page_size: int | None = None,
    time_zone: str | None = None,
) -> User:
    """Partial update: a None argument leaves that preference unchanged.

    Values are validated by the input serializer; this only writes what was given.
    """
    changes = {
        "default_target_language": default_target_language,
        "display_currency": display_currency,
        "email_notifications": email_notifications,
        "in_app_notifications": in_app_notifications,
        "projects_page_size": projects_page_size,
        "time_zone": time_zone,
    }
    fields = [name for name, value in changes.items() if value is not None]
    for name in fields:
        setattr(user, name, changes[name])
    if fields:
        user.save(update_fields=fields)
    return user


def dev_user_ensure(*, email: str, password: str, staff: bool = False) -> User:
    """The development account of `manage.py create_dev_user` (development deployments only).

    Idempotent: an existing account gets the password (and staff flag) again.
    """
    if not settings.DEVELOPMENT_DEPLOYMENT:
        raise ServiceError("Development users exist only on development deployments.", code="forbidden")
    user = User.objects.filter(email=email_normalize(email)).first()
    if user is None:
        user = User(email=email_normalize(email), display_name="Developer", email_verified=True)
    user.set_password(password)
    user.is_staff = user.is_superuser = staff or user.is_staff
    user.save()
    return user
