"""projects: uploads and anonymous estimates, projects (books) and their pages, normalize
(a source file becomes ordered pages), the batch ladder and its jobs (the runner that
translates a batch's pages and settles its hold), page review, languages, retention and
the project status view.

Layers: projects imports core, accounts, wallet (holds, quotes, settlements), translation
(the engines) and bookstructure. Where it does not hold yet: `projects/events.py` publishes
through `webhooks.events`, an app above it, which is to go through core's event bus
(issue 16).
"""
