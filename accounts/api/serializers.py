"""Input and output shapes of the accounts endpoints (snake_case here, camelCase on the wire)."""

from __future__ import annotations

import zoneinfo
from functools import cache
from typing import Any

import pycountry
from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.models import ApiKey, User
from accounts.services.api_keys import ALL_SCOPES


@cache
def _time_zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


@cache
def _currency_codes() -> frozenset[str]:
    return frozenset(currency.alpha_3 for currency in pycountry.currencies)


# --- Profile --------------------------------------------------------------------------


class PreferencesSerializer(serializers.Serializer[Any]):
    default_target_language = serializers.SerializerMethodField()
    display_currency = serializers.CharField()
    email_notifications = serializers.BooleanField()
    in_app_notifications = serializers.BooleanField()
    projects_page_size = serializers.IntegerField()
    time_zone = serializers.CharField()

    def get_default_target_language(self, user: User) -> str | None:
        return user.default_target_language or None


class ProfileSerializer(serializers.Serializer[Any]):
    """The MeView of the contract, read from the account record."""

    id = serializers.UUIDField()
    email = serializers.EmailField()
    display_name = serializers.CharField()
    name = serializers.CharField(source="display_name", help_text="Same as displayName; kept for older callers.")
    email_verified = serializers.BooleanField()
    has_avatar = serializers.SerializerMethodField()
    avatar_changed_utc = serializers.DateTimeField(source="avatar_changed_at", allow_null=True)
    created_utc = serializers.DateTimeField(source="date_joined", allow_null=True)
    has_password = serializers.BooleanField()
    preferences = serializers.SerializerMethodField()

    def get_has_avatar(self, user: User) -> bool:
        return bool(user.avatar_key)

    @extend_schema_field(PreferencesSerializer)
    def get_preferences(self, user: User) -> dict[str, Any]:
        return PreferencesSerializer(user).data

    class Meta:
        ref_name = "Profile"


class SessionSerializer(serializers.Serializer[Any]):
    """What sign-in returns: a bearer token and the profile."""

    token = serializers.CharField()
    token_type = serializers.CharField(default="Bearer")
    expires_utc = serializers.DateTimeField()
    user = ProfileSerializer()


class RegisterInputSerializer(serializers.Serializer[Any]):
    email = serializers.EmailField(max_length=254)
    password = serializers.CharField(max_length=128, trim_whitespace=False, write_only=True)
    display_name = serializers.CharField(max_length=150)


class LoginInputSerializer(serializers.Serializer[Any]):
    email = serializers.CharField(max_length=254)
    password = serializers.CharField(max_length=128, trim_whitespace=False, write_only=True)


class ProfileUpdateInputSerializer(serializers.Serializer[Any]):
    display_name = serializers.CharField(max_length=150, required=False, allow_null=True)
    email = serializers.EmailField(max_length=254, required=False, allow_null=True)
    current_password = serializers.CharField(
        max_length=128,
        required=False,
        allow_null=True,
        trim_whitespace=False,
        write_only=True,
        help_text="Required to change the email address.",
    )


class PasswordChangeInputSerializer(serializers.Serializer[Any]):
    current_password = serializers.CharField(max_length=128, trim_whitespace=False, write_only=True)
    new_password = serializers.CharField(max_length=128, trim_whitespace=False, write_only=True)


class AccountDeleteInputSerializer(serializers.Serializer[Any]):
    """The proof for DELETE /v1/me: the password of a password account. An account without
    one (an identity provider's) sends nothing and needs a recent sign-in instead."""

    password = serializers.CharField(
        max_length=128, trim_whitespace=False, write_only=True, required=False, allow_blank=True
    )


class PreferencesUpdateInputSerializer(serializers.Serializer[Any]):
    """Every field optional; null or omitted leaves the value unchanged."""

    default_target_language = serializers.ChoiceField(
        choices=settings.TARGET_LANGUAGES, required=False, allow_null=True
    )
    display_currency = serializers.CharField(
        min_length=3, max_length=3, required=False, allow_null=True, help_text="ISO 4217 code, for example USD or EUR."
    )
    email_notifications = serializers.BooleanField(required=False, allow_null=True)
    in_app_notifications = serializers.BooleanField(required=False, allow_null=True)
    projects_page_size = serializers.IntegerField(
        min_value=1, max_value=settings.PROJECTS_PAGE_SIZE_MAX, required=False, allow_null=True
    )
    time_zone = serializers.CharField(
        max_length=64, required=False, allow_null=True, help_text="IANA time zone id, for example Europe/Paris."
    )

    def validate_display_currency(self, value: str | None) -> str | None:
        if value is None:
            return None
        code = value.upper()
        if code not in _currency_codes():
            raise serializers.ValidationError("Not an ISO 4217 currency code.")
        return code

    def validate_time_zone(self, value: str | None) -> str | None:
        if value is not None and value not in _time_zones():
            raise serializers.ValidationError("Not an IANA time zone id.")
        return value


class AvatarUploadInputSerializer(serializers.Serializer[Any]):
    # An empty file reaches the content check, which answers avatar_invalid.
    file = serializers.FileField(
        allow_empty_file=True,
        help_text="A PNG, JPEG or WebP image; stored as a square PNG of AVATAR_SIZE pixels without metadata.",
    )


# --- API keys -------------------------------------------------------------------------


class ApiKeyCreateInputSerializer(serializers.Serializer[Any]):
    name = serializers.CharField(max_length=100)
    scopes = serializers.ListField(
        child=serializers.ChoiceField(choices=sorted(ALL_SCOPES)),
        required=False,
        max_length=len(ALL_SCOPES) * 2,
        help_text='Default: ["projects:write"].',
    )
    expires_in_days = serializers.IntegerField(
        min_value=1, max_value=settings.API_KEY_MAX_EXPIRY_DAYS, required=False, allow_null=True
    )


class ApiKeyListItemSerializer(serializers.ModelSerializer[ApiKey]):
    scopes = serializers.ListField(child=serializers.CharField())
    created_utc = serializers.DateTimeField(source="created_at")
    last_used_utc = serializers.DateTimeField(source="last_used_at", allow_null=True)
    expires_utc = serializers.DateTimeField(source="expires_at", allow_null=True)
    revoked_utc = serializers.DateTimeField(source="revoked_at", allow_null=True)

    class Meta:
        model = ApiKey
        fields = ["id", "name", "prefix", "scopes", "created_utc", "last_used_utc", "expires_utc", "revoked_utc"]


class ApiKeyCreatedSerializer(serializers.ModelSerializer[ApiKey]):
    scopes = serializers.ListField(child=serializers.CharField())
    created_utc = serializers.DateTimeField(source="created_at")
    expires_utc = serializers.DateTimeField(source="expires_at", allow_null=True)
    secret = serializers.SerializerMethodField(help_text="The raw key. Shown only here, once.")

    class Meta:
        model = ApiKey
        fields = ["id", "name", "prefix", "scopes", "created_utc", "expires_utc", "secret"]

    def get_secret(self, key: ApiKey) -> str:
        secret: str = self.context["secret"]
        return secret
