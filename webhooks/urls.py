from rest_framework.routers import SimpleRouter

from webhooks.api import subscriptions as api

router = SimpleRouter(trailing_slash=False)
router.register("webhooks", api.WebhookViewSet, basename="webhooks")

urlpatterns = [*router.urls]
