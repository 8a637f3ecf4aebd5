# kchaos: shared functions of the offline Kafka image's scripts (sourced, not run).
#
# The image follows the official apache/kafka image's configuration contract:
#   * every environment variable KAFKA_X_Y becomes the server property x.y
#     (`___` -> `-`, `__` -> `_`, `_` -> `.`, lower case), except the JVM/launcher ones below;
#   * CLUSTER_ID names the cluster (default: a fixed id); storage is formatted on first start;
#   * with no KAFKA_* settings and no mounted file, a single-node default configuration;
#   * KAFKA_LISTENERS defaults to KAFKA_ADVERTISED_LISTENERS with every host made 0.0.0.0;
#   * /mnt/shared/config/* (if mounted) is copied into the config directory and the
#     KAFKA_* properties are appended to a provided server.properties.
# Locations can be moved for tests through KAFKA_HOME and KCHAOS_SHARED_CONFIG.

KAFKA_HOME=${KAFKA_HOME:-/opt/kafka}
KCHAOS_CONFIG_DIR=${KCHAOS_CONFIG_DIR:-$KAFKA_HOME/config}
KCHAOS_SHARED_CONFIG=${KCHAOS_SHARED_CONFIG:-/mnt/shared/config}

# Environment variables that tune the JVM or this launcher, never server properties.
KCHAOS_NOT_PROPERTIES=" KAFKA_VERSION KAFKA_HOME KAFKA_HEAP_OPTS KAFKA_HEAP_OPT KAFKA_OPTS
  KAFKA_JVM_PERFORMANCE_OPTS KAFKA_LOG4J_OPTS KAFKA_GC_LOG_OPTS KAFKA_JMX_OPTS KAFKA_DEBUG
  KAFKA_JMX_PORT KAFKA_JMX_HOSTNAME KAFKA_LOG4J_ROOT_LOGLEVEL KAFKA_LOG4J_LOGGERS
  KAFKA_TOOLS_LOG4J_LOGLEVEL "

# kchaos_property_name ENV_NAME: prints the server property an env variable stands for.
kchaos_property_name() {
  local key=${1#KAFKA_}
  # Mark the runs of three and two underscores first, so single ones can become dots.
  key=${key//___/$'\x01'}
  key=${key//__/$'\x02'}
  key=${key//_/.}
  key=${key//$'\x01'/-}
  key=${key//$'\x02'/_}
  printf '%s\n' "${key,,}"
}

# kchaos_env_properties: prints `name=value` for every KAFKA_* variable, sorted by name.
kchaos_env_properties() {
  local var
  while IFS= read -r var; do
    [[ $var == KAFKA_* ]] || continue
    [[ " ${KCHAOS_NOT_PROPERTIES//$'\n'/ } " == *" $var "* ]] && continue
    printf '%s=%s\n' "$(kchaos_property_name "$var")" "${!var}"
  done < <(compgen -e) | LC_ALL=C sort
}

# kchaos_apply_defaults: like the official image, only CLUSTER_ID has a default (the
# image's own, fixed id); everything else comes from KAFKA_* or a mounted file.
kchaos_apply_defaults() {
  if [[ -z ${CLUSTER_ID:-} ]]; then
    echo "[kchaos] CLUSTER_ID not set, using 5L6g3nShT-eMCtK--X86sw"
    export CLUSTER_ID=5L6g3nShT-eMCtK--X86sw
  fi
}

# kchaos_derive_listeners: controller-only nodes advertise nothing; other nodes listen on
# every interface at the advertised ports unless KAFKA_LISTENERS is given.
kchaos_derive_listeners() {
  if [[ ${KAFKA_PROCESS_ROLES-} == controller ]]; then
    if [[ -n ${KAFKA_ADVERTISED_LISTENERS-} ]]; then
      echo "[kchaos] KAFKA_ADVERTISED_LISTENERS is not supported on a KRaft controller" >&2
      return 1
    fi
    unset KAFKA_ADVERTISED_LISTENERS
  elif [[ -z ${KAFKA_LISTENERS-} && -n ${KAFKA_ADVERTISED_LISTENERS-} ]]; then
    export KAFKA_LISTENERS
    KAFKA_LISTENERS=$(sed -e 's|://[^:]*:|://0.0.0.0:|g' <<<"$KAFKA_ADVERTISED_LISTENERS")
  fi
}

# kchaos_write_config FILE: writes the broker's properties: a mounted server.properties
# with the KAFKA_* properties appended, or the KAFKA_* properties alone, or, when neither
# gives anything, the image's single-node default configuration.
kchaos_write_config() {
  local out=$1
  mkdir -p "$(dirname "$out")"
  if [[ -d $KCHAOS_SHARED_CONFIG ]] && [[ -n $(ls -A "$KCHAOS_SHARED_CONFIG" 2>/dev/null) ]]; then
    cp -R "$KCHAOS_SHARED_CONFIG/." "$KCHAOS_CONFIG_DIR/"
  fi
  if [[ -f $KCHAOS_SHARED_CONFIG/server.properties ]]; then
    echo "[kchaos] using $KCHAOS_SHARED_CONFIG/server.properties, KAFKA_* appended"
    printf '\n' >>"$out"
    kchaos_env_properties >>"$out"
  else
    kchaos_env_properties >"$out"
  fi
  if ! grep -q '[^[:space:]]' "$out"; then
    echo "[kchaos] no KAFKA_* settings and no mounted server.properties: single-node defaults"
    cp "$KCHAOS_CONFIG_DIR/default-server.properties" "$out"
  fi
}

# kchaos_property FILE NAME: the last value of NAME in a properties file (empty if absent).
kchaos_property() {
  sed -n -e "s/^[[:space:]]*${2//./\\.}[[:space:]]*[=:][[:space:]]*//p" "$1" | tail -n 1
}

# kchaos_classpath CLASS: the broker's jars, or the tools' own jars (tools-libs/, present
# only when Maven Central lacks kafka-tools at the broker's release) for a tools class.
kchaos_classpath() {
  if [[ -d $KAFKA_HOME/tools-libs && ${1-} == org.apache.kafka.tools.* ]]; then
    echo "$KAFKA_HOME/tools-libs/*"
  else
    echo "$KAFKA_HOME/libs/*"
  fi
}

# kchaos_java_args ROLE [CLASS]: prints (one per line) the JVM options for "broker" or
# "tool" (the class chooses the tool's classpath).
kchaos_java_args() {
  local role=$1 class=${2-} heap perf log4j
  if [[ $role == broker ]]; then
    heap=${KAFKA_HEAP_OPTS:-${KCHAOS_DEFAULT_HEAP:--Xmx512m -Xms512m}}
    log4j=${KAFKA_LOG4J_OPTS:-$(kchaos_log4j_opts broker)}
  else
    heap=${KAFKA_HEAP_OPTS:--Xmx256m}
    log4j=${KAFKA_LOG4J_OPTS:-$(kchaos_log4j_opts tools)}
  fi
  perf=${KAFKA_JVM_PERFORMANCE_OPTS:--server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true}
  local -a parts
  read -ra parts <<<"$heap $perf ${KAFKA_GC_LOG_OPTS-} ${KAFKA_JMX_OPTS-} $log4j"
  printf '%s\n' "${parts[@]}"
  if [[ -n ${KAFKA_DEBUG-} ]]; then
    printf '%s\n' "-agentlib:jdwp=transport=dt_socket,server=y,suspend=${DEBUG_SUSPEND_FLAG:-n},address=*:${JAVA_DEBUG_PORT:-5005}"
  fi
  # Remote JMX (KAFKA_JMX_PORT as in the official image, or Kafka scripts' JMX_PORT).
  local jmx_port=${KAFKA_JMX_PORT:-${JMX_PORT-}}
  if [[ -n $jmx_port && $role == broker ]]; then
    local jmx_host=${KAFKA_JMX_HOSTNAME:-$(hostname -i 2>/dev/null | cut -d' ' -f1)}
    printf '%s\n' -Dcom.sun.management.jmxremote -Dcom.sun.management.jmxremote.authenticate=false \
      -Dcom.sun.management.jmxremote.ssl=false -Dcom.sun.management.jmxremote.local.only=false \
      "-Dcom.sun.management.jmxremote.port=$jmx_port" \
      "-Dcom.sun.management.jmxremote.rmi.port=$jmx_port" \
      "-Djava.rmi.server.hostname=${jmx_host:-localhost}"
  fi
  printf '%s\n' -cp "$(kchaos_classpath "$class")"
  # The class-data archive made at image build (kchaos-cds-dump); KCHAOS_CDS=0 disables it.
  if [[ $role == broker && ${KCHAOS_CDS:-1} != 0 && -f $KAFKA_HOME/kafka.jsa ]]; then
    printf '%s\n' "-XX:SharedArchiveFile=$KAFKA_HOME/kafka.jsa"
  fi
  if [[ $role == broker && -n ${KCHAOS_METRICS_PORT-} && -f $KAFKA_HOME/agent/jmx_prometheus_javaagent.jar ]]; then
    printf '%s\n' "-javaagent:$KAFKA_HOME/agent/jmx_prometheus_javaagent.jar=$KCHAOS_METRICS_PORT:$KCHAOS_CONFIG_DIR/jmx-exporter.yaml"
  fi
  if [[ -n ${KAFKA_OPTS-} ]]; then
    read -ra parts <<<"$KAFKA_OPTS"
    printf '%s\n' "${parts[@]}"
  fi
}

# kchaos_ensure_hostname: some loggers resolve the local host name; on a network without
# an /etc/hosts entry for it (e.g. --network none) make it resolve to loopback.
kchaos_ensure_hostname() {
  local name hosts=${KCHAOS_HOSTS_FILE:-/etc/hosts}
  name=$(hostname 2>/dev/null) || return 0
  if ! getent hosts "$name" >/dev/null 2>&1 && [[ -w $hosts ]]; then
    printf '127.0.1.1\t%s\n' "$name" >>"$hosts" 2>/dev/null || true
  fi
}

# kchaos_log4j_file broker|tools: the logging configuration file of the release's back-end
# (log4j 2 for Kafka 4.x, reload4j/log4j 1 for Kafka 3.x). For the broker, the one written
# by kchaos_write_log4j (with KAFKA_LOG4J_* applied) when present.
kchaos_log4j_file() {
  local suffix=log4j2.properties
  [[ ${KCHAOS_LOG4J:-2} != 1 ]] || suffix=log4j.properties
  if [[ $1 == broker && -f $KCHAOS_CONFIG_DIR/effective-broker-$suffix ]]; then
    echo "$KCHAOS_CONFIG_DIR/effective-broker-$suffix"
  else
    echo "$KCHAOS_CONFIG_DIR/$1-$suffix"
  fi
}

# kchaos_log4j_opts broker|tools: the system property naming that file.
kchaos_log4j_opts() {
  if [[ ${KCHAOS_LOG4J:-2} == 1 ]]; then
    echo "-Dlog4j.configuration=file:$(kchaos_log4j_file "$1")"
  else
    echo "-Dlog4j2.configurationFile=$(kchaos_log4j_file "$1")"
  fi
}

# kchaos_write_log4j: the broker's logging configuration with the official image's
# KAFKA_LOG4J_ROOT_LOGLEVEL (e.g. WARN) and KAFKA_LOG4J_LOGGERS
# (e.g. "kafka.controller=DEBUG,kafka.log.LogCleaner=WARN") applied.
kchaos_write_log4j() {
  local template out entry name level id n=0
  if [[ ${KCHAOS_LOG4J:-2} == 1 ]]; then
    template=$KCHAOS_CONFIG_DIR/broker-log4j.properties
    out=$KCHAOS_CONFIG_DIR/effective-broker-log4j.properties
  else
    template=$KCHAOS_CONFIG_DIR/broker-log4j2.properties
    out=$KCHAOS_CONFIG_DIR/effective-broker-log4j2.properties
  fi
  rm -f "$out"
  [[ -n ${KAFKA_LOG4J_ROOT_LOGLEVEL-}${KAFKA_LOG4J_LOGGERS-} ]] || return 0
  cp "$template" "$out"
  if [[ ${KCHAOS_LOG4J:-2} == 1 && -n ${KAFKA_LOG4J_ROOT_LOGLEVEL-} ]]; then
    printf 'log4j.rootLogger=%s, stdout\n' "$KAFKA_LOG4J_ROOT_LOGLEVEL" >>"$out"
  fi  # (the log4j 2 file reads KAFKA_LOG4J_ROOT_LOGLEVEL from the environment itself)
  IFS=, read -ra entries <<<"${KAFKA_LOG4J_LOGGERS-}"
  for entry in "${entries[@]}"; do
    [[ $entry == *=* ]] || continue
    name=${entry%%=*} level=${entry#*=}
    name=${name//[[:space:]]/} level=${level//[[:space:]]/}
    if [[ ${KCHAOS_LOG4J:-2} == 1 ]]; then
      printf 'log4j.logger.%s=%s\n' "$name" "$level" >>"$out"
    else
      # log4j 2 refuses two loggers of one name: change the level of a configured one.
      id=$(sed -n -e "s/^logger\.\([^.]*\)\.name[[:space:]]*=[[:space:]]*${name//./\\.}[[:space:]]*$/\1/p" \
        "$out" | head -n 1)
      if [[ -n $id ]]; then
        sed -i -e "s/^logger\.$id\.level[[:space:]]*=.*/logger.$id.level = $level/" "$out"
      else
        n=$((n + 1))
        printf 'logger.kchaos%d.name = %s\nlogger.kchaos%d.level = %s\n' \
          "$n" "$name" "$n" "$level" >>"$out"
      fi
    fi
  done
}
