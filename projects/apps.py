from django.apps import AppConfig


class ProjectsConfig(AppConfig):
    name = "projects"
    verbose_name = "Projects"

    def ready(self) -> None:
        from accounts.signals import account_closing
        from core.metrics_collectors import scrape_source_register
        from projects import problems  # noqa: F401  (registers the app's problem codes)
        from projects.metrics import job_metrics, page_metrics
        from projects.receivers import delete_on_account_closing, resume_on_credit
        from wallet.signals import credit_landed, spending_room_grew

        credit_landed.connect(resume_on_credit, dispatch_uid="projects.resume_on_credit")
        spending_room_grew.connect(resume_on_credit, dispatch_uid="projects.resume_on_spending_room")
        account_closing.connect(delete_on_account_closing, dispatch_uid="projects.delete_on_account_closing")
        scrape_source_register("jobs", job_metrics)
        scrape_source_register("pages", page_metrics)
