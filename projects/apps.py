from django.apps import AppConfig


class ProjectsConfig(AppConfig):
    name = "projects"
    verbose_name = "Projects"

    def ready(self) -> None:
        from accounts.events import AccountClosing
        from core.events import Phase, subscribe
        from core.metrics_collectors import scrape_source_register
        from projects import tasks  # noqa: F401  (registers its Celery tasks, which services enqueue by name)
        from projects.metrics import job_metrics, page_metrics
        from projects.subscribers import delete_on_account_closing, resume_on_credit
        from wallet.events import CreditLanded, SpendingRoomGrew

        subscribe(CreditLanded, resume_on_credit)
        subscribe(SpendingRoomGrew, resume_on_credit)
        subscribe(AccountClosing, delete_on_account_closing, phase=Phase.IN_TRANSACTION)
        scrape_source_register("jobs", job_metrics)
        scrape_source_register("pages", page_metrics)
