"""bookstructure: the book-structure library — pure functions that read stored page
layouts into a book's body (furniture, paragraphs, headings, code, tables;
docs/book-structure.md).

Layers: no models and no Django; it imports only core's Markdown helpers (core.markdown).
normalize (projects) and the OCR reader (translation) both build on it.
"""
