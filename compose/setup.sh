#!/usr/bin/env bash
# kchaos set-up: installs what is missing, skips what is there, times every step.
#   Docker engine (Debian docker.io, dockerd started off the host firewall), host tools
#   (Debian's prometheus among them), the project's .venv, and the broker/Toxiproxy
#   images (`kchaos images build`).
# Safe to run again: a second run only checks and takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-python3}
VENV=$ROOT/.venv
LOG_DIR=${KCHAOS_LOG_DIR:-/var/log/kchaos}

step_start=0
now() { date +%s.%N; }
# Elapsed time with awk (always there), so the timing needs no extra package.
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
step() { step_start=$(now); printf '[setup] %s ... ' "$1"; }
done_() { printf '%s (%ss)\n' "${1:-ok}" "$(since "$step_start")"; }

need_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "kchaos set-up needs root (Docker engine, loop devices, mounts); run it as root" >&2
    exit 1
  fi
}

# 1. Host packages. One apt transaction for everything missing.
step "host packages"
missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v docker >/dev/null || missing+=(docker.io)
command -v debootstrap >/dev/null || missing+=(debootstrap)
# Partitions run the host's iptables and ss in each node's network namespace (nsenter).
command -v iptables >/dev/null || missing+=(iptables)
command -v ss >/dev/null || missing+=(iproute2)
command -v nsenter >/dev/null || missing+=(util-linux)
command -v docker-compose >/dev/null || missing+=(docker-compose)
command -v mkfs.ext4 >/dev/null || missing+=(e2fsprogs)
command -v fsfreeze >/dev/null || missing+=(util-linux)
command -v mvn >/dev/null || missing+=(maven)
command -v go >/dev/null || [ -x /usr/local/go/bin/go ] || missing+=(golang-go)
# `kchaos run --prometheus` starts its own server per run (the package's service is unused).
command -v prometheus >/dev/null || missing+=(prometheus)
# actionlint runs shellcheck over the workflows' `run:` scripts when it finds it.
command -v shellcheck >/dev/null || missing+=(shellcheck)
# The progress display's docker test captures a terminal with tmux.
command -v tmux >/dev/null || missing+=(tmux)
if [ "${KCHAOS_WITH_BROWSER:-1}" = 1 ]; then
  command -v chromium >/dev/null || missing+=(chromium)
fi
if [ ${#missing[@]} -gt 0 ]; then
  need_root
  echo "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends $(printf '%s\n' "${missing[@]}" | sort -u) >/dev/null
  step "host packages"
fi
done_ "present"

# 2. Docker engine: use the one that answers, else start Debian's dockerd.
step "docker engine"
if timeout 10 docker info >/dev/null 2>&1; then
  done_ "answering"
else
  need_root
  mkdir -p "$LOG_DIR"
  # Off the host firewall, no default bridge, no masquerading: containers get no route
  # off the machine; kchaos makes its own networks with explicit subnets.
  nohup dockerd --iptables=false --ip-masq=false --bridge=none \
    >"$LOG_DIR/dockerd.log" 2>&1 &
  for _ in $(seq 1 60); do
    timeout 5 docker info >/dev/null 2>&1 && break
    sleep 1
  done
  if ! timeout 10 docker info >/dev/null 2>&1; then
    echo "dockerd did not answer within 60 s; last lines of $LOG_DIR/dockerd.log:" >&2
    tail -20 "$LOG_DIR/dockerd.log" >&2
    exit 1
  fi
  done_ "started dockerd"
fi

# 3. The project's virtualenv, reinstalled only when pyproject.toml changed.
step ".venv"
stamp=$VENV/.kchaos-pyproject.sha
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ -x "$VENV/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  done_ "up to date"
else
  [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip >/dev/null
  "$VENV/bin/pip" install -q -e ".[dev]"
  echo "$want" >"$stamp"
  done_ "installed"
fi

# 4. actionlint (checks .github/workflows in `make test`): built once with Go from the
#    module proxy into the build cache, next to the Toxiproxy server; the link without a
#    version is what tests/unit/test_workflows.py runs. Go 1.21+ fetches the toolchain that
#    actionlint's go.mod asks for (GOTOOLCHAIN=auto).
ACTIONLINT_VERSION=1.7.12
step "actionlint $ACTIONLINT_VERSION"
CACHE=${KCHAOS_CACHE_DIR:-/var/cache/kchaos}
actionlint_bin=$CACHE/go/bin/actionlint-$ACTIONLINT_VERSION
if [ -x "$actionlint_bin" ]; then
  ln -sfn "actionlint-$ACTIONLINT_VERSION" "$CACHE/go/bin/actionlint"
  done_ "cached"
else
  go_bin=go
  [ -x /usr/local/go/bin/go ] && go_bin=/usr/local/go/bin/go
  mkdir -p "$CACHE/go/bin" "$CACHE/logs"
  tmp_bin=$(mktemp -d "$CACHE/go/bin/actionlint.XXXXXX")
  if env CGO_ENABLED=0 GOTOOLCHAIN=auto GOFLAGS=-trimpath GOBIN="$tmp_bin" \
    GOPATH="$CACHE/go/path" GOMODCACHE="$CACHE/go/modcache" GOCACHE="$CACHE/go/cache" \
    "$go_bin" install "github.com/rhysd/actionlint/cmd/actionlint@v$ACTIONLINT_VERSION" \
    >"$CACHE/logs/go-actionlint.log" 2>&1; then
    mv "$tmp_bin/actionlint" "$actionlint_bin"
    ln -sfn "actionlint-$ACTIONLINT_VERSION" "$CACHE/go/bin/actionlint"
    rm -rf "$tmp_bin"
    done_ "built"
  else
    rm -rf "$tmp_bin"
    # Not fatal for set-up: the workflow test then fails and names this log.
    done_ "FAILED (see $CACHE/logs/go-actionlint.log; needs Go 1.21+)"
  fi
fi

# 5. Images: built offline (debootstrap, Maven Central, Go module proxy) unless
#    KCHAOS_IMAGE_SOURCE=registry pulls the official ones; KCHAOS_KAFKA_VERSION picks the
#    release. Each step prints its own timing; an up-to-date set takes a fraction of a second.
if [ "${KCHAOS_SKIP_IMAGES:-0}" != 1 ]; then
  images_start=$(now)
  "$VENV/bin/kchaos" images build --source "${KCHAOS_IMAGE_SOURCE:-offline}" \
    ${KCHAOS_KAFKA_VERSION:+--kafka-version "$KCHAOS_KAFKA_VERSION"}
  printf '[setup] images ... done (%ss)\n' "$(since "$images_start")"
fi
