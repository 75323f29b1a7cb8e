"""Every write to an account: registration, sign-in, the profile, preferences, password,
deletion."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.contrib.auth import password_validation
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework_simplejwt.tokens import AccessToken

from accounts.errors import EmailTaken, InvalidCredentials, PasswordNotSet, RecentSignInRequired
from accounts.events import AccountClosing, PasswordChanged
from accounts.models import ApiKey, ExternalIdentity, User, email_normalize
from core.errors import Forbidden, ValidationFailed
from core.events import publish
from core.models import IdempotencyRecord
from core.storage import storage_delete_on_commit


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
    with transaction.atomic():
        user.save(update_fields=["password"])
        publish(PasswordChanged(user_id=user.pk))
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
        raise Forbidden("Development users exist only on development deployments.")
    user = User.objects.filter(email=email_normalize(email)).first()
    if user is None:
        user = User(email=email_normalize(email), display_name="Developer", email_verified=True)
    user.set_password(password)
    user.is_staff = user.is_superuser = staff or user.is_staff
    user.save()
    return user


def _deletion_proof_check(*, user: User, password: str | None, signed_in_at: datetime | None) -> None:
    """The password of a password account; for an account without one (an identity
    provider's), a sign-in within ACCOUNT_DELETE_SIGN_IN_MAX_AGE_MINUTES."""
    if user.has_usable_password():
        if not password or not user.check_password(password):
            raise ValidationFailed({"password": ["The password is wrong or missing."]})
        return
    minutes = settings.ACCOUNT_DELETE_SIGN_IN_MAX_AGE_MINUTES
    if signed_in_at is None or timezone.now() - signed_in_at > timedelta(minutes=minutes):
        raise RecentSignInRequired(maxAgeMinutes=minutes)


def tombstone_email(user: User) -> str:
    """The address a deleted account keeps: unique, unreachable (.invalid), no one's."""
    return f"deleted-{user.pk.hex}@deleted.invalid"


def account_delete(*, user: User, password: str | None = None, signed_in_at: datetime | None = None) -> None:
    """Delete the account, all or nothing, after checking the proof (see
    `_deletion_proof_check`; a wrong one changes nothing).

    Every app ends what it holds for the account first (accounts.events.AccountClosing:
    books and files, batches and their holds, webhooks, hub connections; a pending top-up
    refuses the whole deletion with 409). Then the API keys are revoked, the identity
    provider links, idempotency records and the avatar removed, and the user row becomes
    a tombstone: no email (a placeholder), no name, no password, inactive, so every JWT
    stops working and the address can register again. The row itself stays because the
    wallet's ledger, holds and top-ups, kept as financial records, point at it."""
    _deletion_proof_check(user=user, password=password, signed_in_at=signed_in_at)
    with transaction.atomic():
        locked = User.objects.select_for_update().get(pk=user.pk)
        if not locked.is_active:
            return
        publish(AccountClosing(user=locked))
        ApiKey.objects.filter(user=locked, revoked_at__isnull=True).update(revoked_at=timezone.now())
        ExternalIdentity.objects.filter(user=locked).delete()
        IdempotencyRecord.objects.filter(owner=locked).delete()
        storage_delete_on_commit([locked.avatar_key])
        locked.email = tombstone_email(locked)
        locked.display_name = locked.avatar_key = locked.default_target_language = ""
        locked.avatar_changed_at = None
        locked.email_verified = locked.is_active = locked.is_staff = locked.is_superuser = False
        locked.email_notifications = locked.in_app_notifications = False
        locked.set_unusable_password()
        locked.save()
        locked.groups.clear()
        locked.user_permissions.clear()
