"""How a failed send is recorded: ``fail`` (certainly not written) or ``info`` (unknown).

The rule is one-sided on purpose: ``fail`` is a promise to the checkers that the value can
never be read, so it is used only where Kafka guarantees that the record did not reach any
log. Everything else, including every error we do not know, is ``info``.

Names are canonical Kafka protocol error names (``NOT_ENOUGH_REPLICAS``) or librdkafka local
error names without the leading underscore (``MSG_TIMED_OUT``); :func:`canonical_name`
folds the spellings of both client libraries into one.

Error by error (the reason in brackets):

Always ``fail`` -- the broker (or the client, before sending) rejects the record on a
property of the record or of the request that is the same on every attempt, so no attempt
can have been appended:

* ``MSG_SIZE_TOO_LARGE`` / ``RECORD_LIST_TOO_LARGE`` [size checked before append]
* ``INVALID_RECORD``, ``INVALID_TIMESTAMP`` [record validation runs before append]
* ``TOPIC_AUTHORIZATION_FAILED``, ``CLUSTER_AUTHORIZATION_FAILED``,
  ``TRANSACTIONAL_ID_AUTHORIZATION_FAILED`` [authorisation precedes append; kchaos never
  changes ACLs during a run]
* ``INVALID_REQUIRED_ACKS``, ``UNSUPPORTED_VERSION``, ``UNSUPPORTED_FOR_MESSAGE_FORMAT``,
  ``UNSUPPORTED_COMPRESSION_TYPE``, ``INVALID_TOPIC_EXCEPTION`` [request rejected whole]
* client-local: ``QUEUE_FULL``, ``UNKNOWN_PARTITION``, ``UNKNOWN_TOPIC``, ``INVALID_ARG``,
  ``KEY_SERIALIZATION``, ``VALUE_SERIALIZATION``, ``SEND_REFUSED`` [the record never left
  the client: refused by ``produce()``/``send()``, or failed while waiting for metadata of
  a partition that does not exist; kchaos never deletes topics during a run]

``fail`` only when the client makes a single attempt (``retries=0``), else ``info`` -- the
broker rejects before append, but with retries an EARLIER attempt of the same batch may
have timed out after being appended, and the last attempt's error says nothing about it:

* ``NOT_ENOUGH_REPLICAS`` [ISR below min.insync.replicas is checked before append; a retry
  of an already appended batch gets this error too, before the idempotence check]
* ``CORRUPT_MESSAGE`` [CRC checked before append; retriable]
* ``UNKNOWN_TOPIC_OR_PARTITION`` [this broker does not host the partition]
* ``PURGE_QUEUE`` [purged from the client's queue; but librdkafka puts a batch whose
  request timed out back on that queue for its retry, so it may already be in the log]

Always ``info`` -- the record may be in the log:

* ``MSG_TIMED_OUT``, ``TIMED_OUT``, ``REQUEST_TIMED_OUT`` [the request may have been
  appended and replicated after the client gave up]
* ``NOT_ENOUGH_REPLICAS_AFTER_APPEND`` [by name: appended, then the ISR shrank]
* ``NOT_LEADER_OR_FOLLOWER``, ``FENCED_LEADER_EPOCH``, ``LEADER_NOT_AVAILABLE`` [an acks=all
  produce waiting in purgatory completes with this error when leadership moves, after the
  old leader appended it; the new leader may hold the record]
* ``TRANSPORT``, ``NETWORK_EXCEPTION``, ``ALL_BROKERS_DOWN``, ``KafkaConnectionError``
  [connection lost with the request in flight]
* ``KAFKA_STORAGE_ERROR`` [the append may have reached the page cache before the I/O error]
* ``OUT_OF_ORDER_SEQUENCE_NUMBER``, ``UNKNOWN_PRODUCER_ID``, ``INVALID_PRODUCER_EPOCH``,
  ``PRODUCER_FENCED``, ``DUPLICATE_SEQUENCE_NUMBER``, ``FATAL``, ``GAPLESS_GUARANTEE``
  [idempotence state errors: earlier attempts of the batch may have been appended]
* ``PURGE_INFLIGHT``, ``DESTROY``, ``closed-in-flight`` [the client was closed with the send
  on the wire]
* ``UNKNOWN`` and every name not listed [unknown means unknown]
"""

from __future__ import annotations

from typing import Literal

Outcome = Literal["fail", "info"]

ALWAYS_FAIL: frozenset[str] = frozenset(
    {
        "MSG_SIZE_TOO_LARGE",
        "RECORD_LIST_TOO_LARGE",
        "INVALID_RECORD",
        "INVALID_TIMESTAMP",
        "TOPIC_AUTHORIZATION_FAILED",
        "CLUSTER_AUTHORIZATION_FAILED",
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
        "INVALID_REQUIRED_ACKS",
        "UNSUPPORTED_VERSION",
        "UNSUPPORTED_FOR_MESSAGE_FORMAT",
        "UNSUPPORTED_COMPRESSION_TYPE",
        "INVALID_TOPIC_EXCEPTION",
        # client-local: the record never left the client
        "QUEUE_FULL",
        "UNKNOWN_PARTITION",
        "UNKNOWN_TOPIC",
        "INVALID_ARG",
        "KEY_SERIALIZATION",
        "VALUE_SERIALIZATION",
        "SEND_REFUSED",
    }
)

FAIL_IF_SINGLE_ATTEMPT: frozenset[str] = frozenset(
    {"NOT_ENOUGH_REPLICAS", "CORRUPT_MESSAGE", "UNKNOWN_TOPIC_OR_PARTITION", "PURGE_QUEUE"}
)

# Spellings of the same error across librdkafka, kafka-python and the Java names.
_ALIASES: dict[str, str] = {
    "MESSAGE_TOO_LARGE": "MSG_SIZE_TOO_LARGE",
    "MESSAGE_SIZE_TOO_LARGE": "MSG_SIZE_TOO_LARGE",
    "MESSAGESIZETOOLARGEERROR": "MSG_SIZE_TOO_LARGE",
    "NOT_LEADER_FOR_PARTITION": "NOT_LEADER_OR_FOLLOWER",
    "INVALID_TOPIC": "INVALID_TOPIC_EXCEPTION",
    "TOPIC_EXCEPTION": "INVALID_TOPIC_EXCEPTION",
    "INVALID_MSG": "CORRUPT_MESSAGE",
    "KAFKATIMEOUTERROR": "TIMED_OUT",
    "KAFKACONNECTIONERROR": "TRANSPORT",
    "NODENOTREADYERROR": "TRANSPORT",
    "UNKNOWNERROR": "UNKNOWN",
    # Java exception classes, as kchaos.workloads.java_events names them
    "RECORD_TOO_LARGE": "MSG_SIZE_TOO_LARGE",
    "RECORD_BATCH_TOO_LARGE": "RECORD_LIST_TOO_LARGE",
    "CORRUPT_RECORD": "CORRUPT_MESSAGE",
    "TOPIC_AUTHORIZATION": "TOPIC_AUTHORIZATION_FAILED",
    "CLUSTER_AUTHORIZATION": "CLUSTER_AUTHORIZATION_FAILED",
    "TRANSACTIONAL_ID_AUTHORIZATION": "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    "TIMEOUT": "TIMED_OUT",
    "NETWORK": "NETWORK_EXCEPTION",
    "KAFKA_STORAGE": "KAFKA_STORAGE_ERROR",
}


def canonical_name(name: str) -> str:
    """One spelling per error: upper case, no leading underscore, aliases folded."""
    key = name.strip().lstrip("_").upper()
    return _ALIASES.get(key, key)


def classify(name: str, *, single_attempt: bool) -> Outcome:
    """``fail`` or ``info`` for a send that ended with error ``name``.

    ``single_attempt`` is true only when the client was configured to transmit each batch
    at most once (``retries=0``); it decides the :data:`FAIL_IF_SINGLE_ATTEMPT` errors.
    """
    key = canonical_name(name)
    if key in ALWAYS_FAIL:
        return "fail"
    if key in FAIL_IF_SINGLE_ATTEMPT and single_attempt:
        return "fail"
    return "info"
