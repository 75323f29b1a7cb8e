"""The book-structure layer: pure functions over stored page layouts (docs/book-structure.md)."""
