#!/usr/bin/env bash
# Create .venv with Python 3.11 and install the pinned requirements (once per change).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

PYTHON="${PYTHON:-}"
if [ -z "$PYTHON" ]; then
  PYTHON="$(command -v python3.11 || command -v python3)"
fi
requirements="requirements/${REQUIREMENTS:-dev}.txt"
stamp=".venv/.installed-$(cat requirements/*.txt clients/python/pyproject.toml | sha256sum | cut -c1-16)"
[ -f "$stamp" ] && exit 0

if ! "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null; then
  apt_install python3-venv
fi
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet -r "$requirements"
# The SDK and its `booktranslate` command (clients/python), editable: tests/sdk use them.
if [ "$requirements" = "requirements/dev.txt" ]; then
  .venv/bin/pip install --quiet -e ./clients/python
fi
rm -f .venv/.installed-*
touch "$stamp"
