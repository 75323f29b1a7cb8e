"""Problem codes owned by translation (the engines)."""

from core.problems import register

register(
    "language_pair_unsupported",
    400,
    "Language pair not supported",
    "The configured translation engine cannot translate from this source language into this target "
    "language; `supportedPairs` lists the pairs it can (source null: any). Nothing was held or charged.",
)
