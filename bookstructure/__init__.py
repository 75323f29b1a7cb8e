"""The book-structure library: pure functions that read stored page layouts into a book's
body (furniture, paragraphs, headings, code, tables; docs/book-structure.md). No models
and no Django: normalize (projects) and the OCR reader (translation) both build on it.
"""
