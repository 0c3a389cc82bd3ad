#!/usr/bin/env bash
# The whole test suite on a fresh Debian machine with Node 20: installs what it needs (Debian's
# packages when run as root, the npm dependencies), starts dockerd and a PostgreSQL cluster if
# they are not running, builds, and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi; }

# Debian's packages the suites need, installed in one go (one `apt-get update`) when any is
# missing: Docker and OpenSSL (confinement, TSA), PostgreSQL (fleet store), SoftHSM2 with what
# the pkcs11js binding builds with (token key), Chromium (approval inbox browser tests).
missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
[ -n "${CLOAKPIPE_TEST_PG:-}" ] || ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1 || missing+=(postgresql)
command -v softhsm2-util >/dev/null 2>&1 || missing+=(softhsm2)
for tool in python3 make g++; do command -v $tool >/dev/null 2>&1 || missing+=($tool); done
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
  as_root apt-get update -qq || true
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null \
    || echo "note: could not install ${missing[*]}; the suites that need them skip (or fail under CI=true)"
fi
if command -v dockerd >/dev/null 2>&1 && ! docker info >/dev/null 2>&1; then
  as_root sh -c 'nohup dockerd >/tmp/cloakpipe-dockerd.log 2>&1 &' || true
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || echo "note: dockerd did not start; the Docker suite will skip"
fi

# SoftHSM2 for the PKCS#11 token suites (a fresh token per test, SOFTHSM2_CONF in a temp dir).
# In CI (CI=true) a missing SoftHSM fails the run; elsewhere the token suites skip, loudly.
if ! command -v softhsm2-util >/dev/null 2>&1 && [ "${CI:-}" = true ]; then
  echo "SoftHSM2 is not installed (CI=true: failing, not skipping)" >&2
  exit 1
fi

# PostgreSQL for the fleet store's suites: a throwaway loopback cluster (scripts/postgres.sh).
# In CI (CI=true) a PostgreSQL that does not start fails the run; elsewhere the PostgreSQL
# suites skip, loudly.
if [ -z "${CLOAKPIPE_TEST_PG:-}" ]; then
  if url=$(bash scripts/postgres.sh start); then
    export CLOAKPIPE_TEST_PG=$url
  elif [ "${CI:-}" = true ]; then
    echo "PostgreSQL did not start (CI=true: failing, not skipping)" >&2
    exit 1
  else
    echo "################################################################################" >&2
    echo "# WARNING: PostgreSQL did not start: the PostgreSQL store suites will SKIP.     #" >&2
    echo "################################################################################" >&2
  fi
fi

# Chromium for the approval inbox's browser tests (driven by puppeteer-core, which never
# downloads a browser). In CI a missing chromium fails the run; elsewhere those tests skip, loudly.
if ! command -v chromium >/dev/null 2>&1; then
  if [ "${CI:-}" = true ]; then
    echo "chromium is not installed (CI=true: failing, not skipping)" >&2
    exit 1
  fi
  echo "################################################################################" >&2
  echo "# WARNING: chromium is not installed: the approval inbox browser tests will SKIP. #" >&2
  echo "################################################################################" >&2
fi

export PUPPETEER_SKIP_DOWNLOAD=1
[ "${CLOAKPIPE_DEPS_INSTALLED:-}" = 1 ] || npm ci --no-audit --no-fund
npm test
