"""Cross-cutting pieces every app uses: problem+json errors, discovery, rate limits."""
