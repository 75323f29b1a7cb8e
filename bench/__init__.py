"""Benchmarks. Each prints its figure next to a baseline measured in the same run, and the
ratio between them, so that results compare across machines (see DESIGN.md, Performance)."""
