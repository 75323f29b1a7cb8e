"""Every composed read of projects: owner-scoped projects, pages and jobs (projects.py),
the status view (status.py), what the next batch and the whole book cost (billing.py), and
which languages a book's pages can be translated to (languages.py). Selectors write
nothing."""
