#!/usr/bin/env bash
# kchaos: runs a broker in the foreground from a properties file with the broker's JVM
# settings (heap, metrics agent, stdout logging). The container's entry point
# (kchaos-kafka-run) configures from the environment and then does the same.
set -euo pipefail
. "$(dirname "$0")/kchaos-common.sh"
if [[ ${1-} == -daemon ]]; then shift; fi
if [[ $# -lt 1 ]]; then
  echo "usage: $0 server.properties [--override name=value ...]" >&2
  exit 2
fi
mapfile -t jvm < <(kchaos_java_args broker kafka.Kafka)
exec java "${jvm[@]}" kafka.Kafka "$@"
