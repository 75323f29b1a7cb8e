#!/usr/bin/env bash
# make run: the whole service on embedded defaults, in the foreground; Ctrl-C stops it all.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
scripts/bootstrap.sh
system_tools_ensure

HOST="${HOST:-127.0.0.1}"
WEB_PORT="${WEB_PORT:-8000}"
REDIS_PORT="${REDIS_PORT:-6379}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:$REDIS_PORT/0}"
export PATH="$PWD/.venv/bin:$PATH"

processes=(web worker batches beat)
if [[ "$REDIS_URL" == "redis://127.0.0.1:$REDIS_PORT/"* ]] && ! redis_ping "$REDIS_PORT"; then
  [ -n "$(redis_binary)" ] || apt_install redis-server
  processes=(redis "${processes[@]}")
fi
export REDIS_PORT HOST WEB_PORT
export PUBLIC_BASE_URL="${PUBLIC_BASE_URL:-http://$HOST:$WEB_PORT}"

python manage.py migrate --no-input -v 0
python manage.py collectstatic --no-input -v 0

cat <<BANNER

  Book translation service on http://$HOST:$WEB_PORT
    API discovery   http://$HOST:$WEB_PORT/v1/meta
    API docs        http://$HOST:$WEB_PORT/v1/docs   (OpenAPI: /v1/schema)
    Admin           http://$HOST:$WEB_PORT/admin/     (python manage.py createsuperuser)
    A first credential (a JWT, an API key and \$100 of development credit):
                    .venv/bin/python manage.py create_dev_user
  Ctrl-C stops everything.

BANNER
exec honcho -f Procfile start "${processes[@]}"
