from django.urls import path
from rest_framework.routers import SimpleRouter

from accounts.api import accounts as api
from accounts.api import avatar as api_avatar
from accounts.api import identity as api_identity

router = SimpleRouter(trailing_slash=False)
router.register("api-keys", api.ApiKeyViewSet, basename="api-keys")

urlpatterns = [
    path("auth/register", api.RegisterView.as_view(), name="auth-register"),
    path("auth/login", api.LoginView.as_view(), name="auth-login"),
    path("auth/oauth/<str:provider>", api_identity.OAuthSignInView.as_view(), name="auth-oauth"),
    path("me", api.MeView.as_view(), name="me"),
    path("me/avatar/limits", api_avatar.AvatarLimitsView.as_view(), name="me-avatar-limits"),
    path("me/avatar", api_avatar.AvatarView.as_view(), name="me-avatar"),
    path("me/password", api.PasswordView.as_view(), name="me-password"),
    path("me/preferences", api.PreferencesView.as_view(), name="me-preferences"),
    *router.urls,
]
