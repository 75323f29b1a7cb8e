"""exports: a translated book as a downloadable file — EPUB, DOCX, HTML, Markdown, plain
text, PDF — built in the background from the approved pages (the book's blocks, table of
contents and labels), stored, and served until the book changes. See docs/exports.md.

Layers: exports imports core, accounts and projects (its models, selectors and services).
It announces a ready export by publishing `exports.events.ExportReady` on core's event
bus, which webhooks subscribes to.
"""
