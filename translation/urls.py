from django.urls import path

from translation import api

urlpatterns = [
    path("model-status", api.ModelStatusView.as_view(), name="model-status"),
    path("languages", api.LanguagesView.as_view(), name="languages"),
]
