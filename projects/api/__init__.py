"""HTTP for projects: the viewsets and views (projects.py: uploads, estimates, projects,
pages, normalize, status; jobs.py: process, retry, cancel, review, jobs) and their input and
output serializers. Views parse, call one service or selector, and render."""
