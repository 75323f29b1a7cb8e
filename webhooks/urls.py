from rest_framework.routers import SimpleRouter

from webhooks import api

router = SimpleRouter(trailing_slash=False)
router.register("webhooks", api.WebhookViewSet, basename="webhooks")

urlpatterns = [*router.urls]
