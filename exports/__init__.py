"""exports: a translated book as a downloadable file — EPUB, DOCX, HTML, Markdown, plain
text, PDF — built in the background from the approved pages (the book's blocks, table of
contents and labels), stored, and served until the book changes. See docs/exports.md.

Layers: exports imports core, accounts and projects (its models, selectors and services).
Where it does not hold yet: `exports/services.py` announces a ready export through
`webhooks.events`, a sibling app, which is to go through core's event bus (issue 16).
"""
