#!/usr/bin/env bash
# Start a local PostgreSQL server for the catalog tests and print the test database URL on stdout.
#
#   export HWEXPLORER_TEST_PG_URL=$(bash .ci/start_postgres.sh)
#
# Idempotent; run as root (CI). Uses Debian's packages and cluster tools. The test role is named after
# the user who runs the tests ($HWEXPLORER_TEST_PG_ROLE, else $SUDO_USER, else the current user) and
# logs in through the Unix socket with peer authentication, so the URL carries no password.
# Progress goes to stderr; stdout receives only the URL.
set -euo pipefail

DB_NAME="${HWEXPLORER_TEST_PG_DB:-hwexplorer_test}"
ROLE="${HWEXPLORER_TEST_PG_ROLE:-${SUDO_USER:-$(id -un)}}"
SOCKET_DIR=/var/run/postgresql

log() { echo "start_postgres: $*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
    log "must run as root (it installs packages and starts the cluster)"
    exit 1
fi

if ! command -v pg_lsclusters >/dev/null 2>&1 || ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
    log "installing postgresql from the Debian packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq postgresql >&2
fi

VERSION="$(ls /usr/lib/postgresql | sort -V | tail -n 1)"
if ! pg_lsclusters -h | awk -v v="$VERSION" '$1 == v && $2 == "main"' | grep -q .; then
    log "creating cluster $VERSION/main"
    pg_createcluster "$VERSION" main >&2
fi
if ! pg_lsclusters -h | awk -v v="$VERSION" '$1 == v && $2 == "main" && $4 == "online"' | grep -q .; then
    log "starting cluster $VERSION/main"
    pg_ctlcluster "$VERSION" main start >&2
fi

PORT="$(pg_lsclusters -h | awk -v v="$VERSION" '$1 == v && $2 == "main" {print $3}')"
for _ in $(seq 1 30); do
    if pg_isready -q -h "$SOCKET_DIR" -p "$PORT"; then break; fi
    sleep 1
done
pg_isready -q -h "$SOCKET_DIR" -p "$PORT" || { log "server did not come up on port $PORT"; exit 1; }

as_postgres() { runuser -u postgres -- "$@"; }
psql_admin() { as_postgres psql -X -q -v ON_ERROR_STOP=1 -h "$SOCKET_DIR" -p "$PORT" -d postgres "$@"; }

# Identifiers go through psql's :"var" quoting, values through :'var' (psql interpolates variables only
# in scripts read from stdin, not in -c commands).
if [ -z "$(psql_admin -tA -v role="$ROLE" <<<"SELECT 1 FROM pg_roles WHERE rolname = :'role'")" ]; then
    log "creating role $ROLE"
    psql_admin -v role="$ROLE" <<'SQL' >&2
CREATE ROLE :"role" LOGIN;
SQL
fi
if [ -z "$(psql_admin -tA -v db="$DB_NAME" <<<"SELECT 1 FROM pg_database WHERE datname = :'db'")" ]; then
    log "creating database $DB_NAME owned by $ROLE"
    as_postgres createdb -h "$SOCKET_DIR" -p "$PORT" -O "$ROLE" "$DB_NAME" >&2
fi

echo "postgresql://${ROLE}@/${DB_NAME}?host=${SOCKET_DIR}&port=${PORT}"
