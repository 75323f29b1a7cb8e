# Shared shell helpers for make run / make test: find or install and start the local
# Redis and PostgreSQL servers on loopback. Sourced, not executed.

VAR_DIR="${VAR_DIR:-$PWD/var}"
mkdir -p "$VAR_DIR"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_install() {
  echo ">> installing $* with apt-get"
  if [ ! -f "$VAR_DIR/.apt-updated" ]; then
    as_root apt-get update -qq && touch "$VAR_DIR/.apt-updated"
  fi
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

redis_binary() { command -v redis-server || true; }

# The programs the service runs, installed where missing: poppler renders and reads PDFs;
# the local translation engine reads page images with Tesseract and translates with
# Apertium (English <-> Spanish; more pairs are other apertium-* packages).
system_tools_ensure() {
  local missing=()
  command -v pdftoppm >/dev/null || missing+=(poppler-utils)
  command -v tesseract >/dev/null || missing+=(tesseract-ocr)
  command -v apertium >/dev/null || missing+=(apertium)
  [ -e /usr/share/apertium/modes/eng-spa.mode ] || missing+=(apertium-eng-spa)
  command -v epubcheck >/dev/null || missing+=(epubcheck)
  # Headless Chromium and its driver for the browser tests (tests/browser, Selenium).
  command -v chromium >/dev/null || missing+=(chromium)
  command -v chromedriver >/dev/null || missing+=(chromium-driver)
  # Node.js runs the webhook receiver example of docs/events.md (tests/webhooks/test_events_doc.py).
  command -v node >/dev/null || missing+=(nodejs)
  # The corpus of real books (tests/support/corpus.py, bench/bench_fidelity.py): PDFs of Debian's doc packages.
  [ -e /usr/share/doc/debian/FAQ/debian-faq.en.pdf.gz ] || missing+=(debian-faq)
  [ -e /usr/share/doc/bzip2/manual.pdf.gz ] || missing+=(bzip2-doc)
  [ -e /usr/share/doc/valgrind/valgrind_manual.pdf.gz ] || missing+=(valgrind)
  [ -e /usr/share/doc/libtasn1-doc/libtasn1.pdf ] || missing+=(libtasn1-doc)
  [ -e /usr/share/doc/nettle-dev/nettle.pdf.gz ] || missing+=(nettle-dev)
  [ -e /usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf ] || missing+=(shared-mime-info)
  [ -e /usr/share/doc/zlib1g-dev/crc-doc.1.0.pdf.gz ] || missing+=(zlib1g-dev)  # ruled tables (crc-doc)
  # Multi-column papers of publishers' LaTeX templates (tests/support/corpus.py PAPERS).
  [ -e /usr/share/doc/texlive-doc/latex/asmejour/asmejour-template.pdf ] || missing+=(texlive-publishers-doc)
  [ -e /usr/share/dict/words ] || missing+=(wamerican)
  # The fonts the Pdf export embeds (docs/exports-pdf-fonts.md).
  [ -e /usr/share/fonts/truetype/noto/NotoSerif-Regular.ttf ] || missing+=(fonts-noto-core)
  [ -e /usr/share/fonts/opentype/ipafont-mincho/ipam.ttf ] || missing+=(fonts-ipafont-mincho)
  [ -e /usr/share/fonts/truetype/nanum/NanumMyeongjo.ttf ] || missing+=(fonts-nanum)
  [ -e /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ] || missing+=(fonts-wqy-microhei)
  [ -e /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf ] || missing+=(fonts-dejavu-core)
  [ -e /usr/share/fonts/truetype/liberation2/LiberationSerif-Regular.ttf ] || missing+=(fonts-liberation2)
  if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}"; fi
}

# redis_ensure PORT: a Redis answering on 127.0.0.1:PORT, started in the background if none.
redis_ensure() {
  local port="$1"
  if redis_ping "$port"; then return 0; fi
  [ -n "$(redis_binary)" ] || apt_install redis-server
  mkdir -p "$VAR_DIR/redis-$port"
  redis-server --port "$port" --bind 127.0.0.1 --dir "$VAR_DIR/redis-$port" --save "" \
    --appendonly no --daemonize yes --pidfile "$VAR_DIR/redis-$port/redis.pid" \
    --logfile "$VAR_DIR/redis-$port/redis.log"
  for _ in $(seq 50); do redis_ping "$port" && return 0; sleep 0.1; done
  echo "Redis did not start on port $port; see $VAR_DIR/redis-$port/redis.log" >&2
  return 1
}

redis_ping() {
  python3 - "$1" <<'PY' 2>/dev/null
import socket, sys
try:
    with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=0.5) as s:
        s.sendall(b"PING\r\n")
        sys.exit(0 if s.recv(16).startswith(b"+PONG") else 1)
except OSError:
    sys.exit(1)
PY
}

pg_bindir() {
  local dir
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [ -x "$dir/initdb" ] && { echo "$dir"; return 0; }
  done
  return 1
}

# pg_data_dir PORT: where the PostgreSQL of pg_ensure keeps its data and its log
# (server.log). Under $VAR_DIR, except as root: the server then runs as the postgres user,
# who may not enter the clone's folder (/root is mode 700 on Debian), so the data lives in
# /var/lib/postgresql, one folder per port and clone (a short hash of $VAR_DIR).
pg_data_dir() {
  local port="$1" var_dir
  if [ "$(id -u)" = 0 ]; then
    var_dir="$(cd "$VAR_DIR" && pwd -P)"
    echo "/var/lib/postgresql/booktranslate-$port-$(printf %s "$var_dir" | sha256sum | cut -c1-10)"
  else
    echo "$VAR_DIR/postgres-$port"
  fi
}

# pg_ensure PORT: a PostgreSQL with trust auth for user postgres on 127.0.0.1:PORT (its
# data and log in `pg_data_dir PORT`, its socket in /tmp).
pg_ensure() {
  local port="$1" bindir data run
  bindir="$(pg_bindir)" || { apt_install postgresql; bindir="$(pg_bindir)"; }
  if "$bindir/pg_isready" -q -h 127.0.0.1 -p "$port"; then return 0; fi
  data="$(pg_data_dir "$port")"
  run=()
  if [ "$(id -u)" = 0 ]; then
    # PostgreSQL refuses to run as root: run it as the postgres system user.
    id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql postgres
    run=(runuser -u postgres --)
    mkdir -p "$data"; chown postgres "$data"; chmod 700 "$data"
  else
    mkdir -p "$data"; chmod 700 "$data"
  fi
  # From the data folder: the postgres user may not be able to enter the current one.
  (
    cd "$data"
    if [ ! -f PG_VERSION ]; then
      "${run[@]}" "$bindir/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
    fi
    "${run[@]}" "$bindir/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 \
      -o "-p $port -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
      start >/dev/null
  )
}
