#!/usr/bin/env bash
# kchaos: runs a Kafka main class with the image's jars (tools settings: small heap,
# warnings only on stderr). Usage: kafka-run-class.sh [-daemon] [-name N] CLASS [ARGS...]
set -euo pipefail
. "$(dirname "$0")/kchaos-common.sh"
while [[ $# -gt 0 ]]; do
  case $1 in
    -daemon) shift ;;
    -name) shift 2 ;;
    -loggc) shift ;;
    *) break ;;
  esac
done
if [[ $# -lt 1 ]]; then
  echo "usage: $0 CLASS [ARGS...]" >&2
  exit 2
fi
mapfile -t jvm < <(kchaos_java_args tool "$1")
exec java "${jvm[@]}" "$@"
