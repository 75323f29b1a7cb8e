"""projects: uploads and anonymous estimates, projects (books) and their pages, normalize
(a source file becomes ordered pages), the batch ladder and its jobs (the runner that
translates a batch's pages and settles its hold), page review, languages, retention and
the project status view.

Layers: projects imports core, accounts, wallet (holds, quotes, settlements), translation
(the engines) and bookstructure. It tells webhooks and the hub of status changes and job
ends by publishing `projects.events` on core's event bus, and hears of credit and account
closings from the wallet's and accounts' events (projects/subscribers.py).
"""
