from __future__ import annotations

import uuid
from typing import Any, ClassVar

from django.contrib.auth.base_user import AbstractBaseUser, BaseUserManager
from django.contrib.auth.models import PermissionsMixin
from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone


def email_normalize(email: str) -> str:
    """The one spelling of an address we store and compare: trimmed and lower-case."""
    return email.strip().lower()


class UserManager(BaseUserManager["User"]):
    use_in_migrations = True

    def get_by_natural_key(self, username: str | None) -> User:
        return self.get(email=email_normalize(username or ""))

    def create_user(self, email: str, password: str | None = None, **fields: Any) -> User:
        user = self.model(email=email_normalize(email), **fields)
        if password:
            user.set_password(password)
        else:
            user.set_unusable_password()
        user.save(using=self._db)
        return user

    def create_superuser(self, email: str, password: str | None = None, **fields: Any) -> User:
        fields.setdefault("is_staff", True)
        fields.setdefault("is_superuser", True)
        return self.create_user(email, password, **fields)


class User(AbstractBaseUser, PermissionsMixin):
    """An account. The email is stored normalised and is unique without regard to case."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    email = models.EmailField(max_length=254, unique=True)
    display_name = models.CharField(max_length=150, blank=True)
    email_verified = models.BooleanField(default=False)
    is_active = models.BooleanField(default=True)
    is_staff = models.BooleanField(default=False)
    date_joined = models.DateTimeField(default=timezone.now)

    avatar_key = models.CharField(max_length=255, blank=True, help_text="storage key of the avatar")
    avatar_changed_at = models.DateTimeField(null=True, blank=True)

    # Preferences.
    default_target_language = models.CharField(max_length=8, blank=True)
    display_currency = models.CharField(max_length=3, default="USD")
    email_notifications = models.BooleanField(default=True)
    in_app_notifications = models.BooleanField(default=True)
    projects_page_size = models.PositiveSmallIntegerField(default=25)
    time_zone = models.CharField(max_length=64, default="UTC")

    objects: ClassVar[UserManager] = UserManager()

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS: ClassVar[list[str]] = []

    class Meta:
        constraints = [
            models.UniqueConstraint(Lower("email"), name="accounts_user_email_ci_unique"),
        ]

    def __str__(self) -> str:
        return self.email

    @property
    def has_password(self) -> bool:
        return self.has_usable_password()


class ExternalIdentity(models.Model):
    """A link from an identity provider's subject to an account."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="external_identities")
    provider = models.CharField(max_length=32)
    subject = models.CharField(max_length=255)
    email = models.EmailField(max_length=254, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_sign_in_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["provider", "subject"], name="accounts_identity_unique_subject"),
        ]
        verbose_name_plural = "external identities"

    def __str__(self) -> str:
        return f"{self.provider}:{self.subject}"


class Scope(models.TextChoices):
    PROJECTS_WRITE = "projects:write", "projects:write"
    PROJECTS_READ = "projects:read", "projects:read"
    APPROVE = "approve", "approve"


class ApiKey(models.Model):
    """A scoped, revocable credential. Only the SHA-256 of the secret is stored."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=32, db_index=True)
    secret_hash = models.CharField(max_length=64, unique=True)
    scopes = models.JSONField(default=list)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def is_expired(self, *, now: Any = None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or timezone.now())
