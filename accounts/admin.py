"""Operators' admin for accounts: users, API keys (with a revoke action), identities."""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.db.models import QuerySet
from django.http import HttpRequest

from accounts.models import ApiKey, ExternalIdentity, User
from accounts.services.api_keys import api_key_revoke


class ApiKeyInline(admin.TabularInline[ApiKey, User]):
    model = ApiKey
    extra = 0
    can_delete = False
    fields = readonly_fields = ("name", "prefix", "scopes", "created_at", "expires_at", "revoked_at", "last_used_at")
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class ExternalIdentityInline(admin.TabularInline[ExternalIdentity, User]):
    model = ExternalIdentity
    extra = 0
    fields = readonly_fields = ("provider", "subject", "email", "created_at", "last_sign_in_at")

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(User)
class UserAdmin(DjangoUserAdmin[User]):
    ordering = ["-date_joined"]
    list_display = ["email", "display_name", "email_verified", "is_active", "is_staff", "date_joined"]
    list_filter = ["is_active", "is_staff", "email_verified"]
    search_fields = ["email", "display_name"]
    readonly_fields = ["date_joined", "last_login", "avatar_changed_at"]
    inlines = [ApiKeyInline, ExternalIdentityInline]
    fieldsets = (
        (None, {"fields": ("email", "password")}),
        ("Profile", {"fields": ("display_name", "email_verified", "avatar_key", "avatar_changed_at")}),
        (
            "Preferences",
            {
                "fields": (
                    "default_target_language",
                    "display_currency",
                    "email_notifications",
                    "in_app_notifications",
                    "projects_page_size",
                    "time_zone",
                )
            },
        ),
        ("Permissions", {"fields": ("is_active", "is_staff", "is_superuser", "groups", "user_permissions")}),
        ("Dates", {"fields": ("date_joined", "last_login")}),
    )
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("email", "password1", "password2")}),)


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin[ApiKey]):
    list_display = ["name", "prefix", "user", "scopes", "created_at", "expires_at", "revoked_at", "last_used_at"]
    list_filter = ["revoked_at"]
    search_fields = ["name", "prefix", "user__email"]
    readonly_fields = ["id", "user", "prefix", "secret_hash", "scopes", "created_at", "last_used_at", "revoked_at"]
    fields = ["id", "user", "name", "prefix", "scopes", "created_at", "expires_at", "revoked_at", "last_used_at"]
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # keys are minted over the API, where the secret can be shown once

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # revoke instead: the row is the audit trail

    @admin.action(description="Revoke the selected API keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        count = 0
        for key in queryset:
            api_key_revoke(key=key)
            count += 1
        self.message_user(request, f"Revoked {count} API key(s).", messages.SUCCESS)


@admin.register(ExternalIdentity)
class ExternalIdentityAdmin(admin.ModelAdmin[ExternalIdentity]):
    list_display = ["provider", "subject", "user", "email", "created_at", "last_sign_in_at"]
    list_filter = ["provider"]
    search_fields = ["subject", "email", "user__email"]
    readonly_fields = ["user", "provider", "subject", "email", "created_at", "last_sign_in_at"]
