"""Every write of projects: projects and uploads (projects.py, uploads.py), normalize
(normalize.py), the batch ladder and its jobs (jobs.py), the runner that translates a
batch and settles its hold (runner.py), page review (review.py). Services lock in the
order wallet, project, job; they never import the API or tasks (a task is queued by its
name)."""
