"""The web app's addresses, included last at "/" (after /v1, the admin and the health
checks). The payment docs and the contract send people to /wallet, /wallet/top-up/<ref>
and /settings/developer: those addresses are part of the contract."""

from django.urls import URLPattern, path, re_path

from webapp import views

urlpatterns: list[URLPattern] = [
    path("", views.page, {"template": "home.html"}, name="webapp-home"),
    path("signup", views.page, {"template": "signup.html"}, name="webapp-signup"),
    path("signin", views.page, {"template": "signin.html"}, name="webapp-signin"),
    path("books", views.page, {"template": "books.html"}, name="webapp-books"),
    path("books/<uuid:project_id>", views.page, {"template": "book.html"}, name="webapp-book"),
    path(
        "books/<uuid:project_id>/pages/<int:number>",
        views.page,
        {"template": "book_page.html"},
        name="webapp-book-page",
    ),
    path("wallet", views.page, {"template": "wallet.html"}, name="webapp-wallet"),
    path("wallet/top-up/<str:reference>", views.page, {"template": "top_up.html"}, name="webapp-top-up"),
    path("settings", views.page, {"template": "settings.html"}, name="webapp-settings"),
    path("settings/developer", views.page, {"template": "developer.html"}, name="webapp-developer"),
    path("settings/spending", views.page, {"template": "spending.html"}, name="webapp-spending"),
    re_path(r"^(?P<unknown>[\s\S]*)$", views.not_found, name="webapp-not-found"),
]
