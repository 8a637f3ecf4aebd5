from __future__ import annotations

import pytest

from kchaos.workloads.classify import canonical_name, classify


@pytest.mark.parametrize(
    "name",
    [
        "MSG_SIZE_TOO_LARGE",
        "_MSG_SIZE_TOO_LARGE",
        "MESSAGE_TOO_LARGE",
        "INVALID_RECORD",
        "TOPIC_AUTHORIZATION_FAILED",
        "RECORD_LIST_TOO_LARGE",
        "_QUEUE_FULL",
        "_UNKNOWN_PARTITION",
        "INVALID_REQUIRED_ACKS",
    ],
)
def test_certain_rejections_are_fail_even_with_retries(name: str) -> None:
    assert classify(name, single_attempt=False) == "fail"
    assert classify(name, single_attempt=True) == "fail"


@pytest.mark.parametrize("name", ["NOT_ENOUGH_REPLICAS", "CORRUPT_MESSAGE", "_PURGE_QUEUE"])
def test_rejected_before_append_is_fail_only_for_a_single_attempt(name: str) -> None:
    assert classify(name, single_attempt=True) == "fail"
    assert classify(name, single_attempt=False) == "info"


@pytest.mark.parametrize(
    "name",
    [
        "_MSG_TIMED_OUT",
        "_TIMED_OUT",
        "REQUEST_TIMED_OUT",
        "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
        "NOT_LEADER_OR_FOLLOWER",
        "NOT_LEADER_FOR_PARTITION",
        "_TRANSPORT",
        "KafkaConnectionError",
        "KafkaTimeoutError",
        "NETWORK_EXCEPTION",
        "KAFKA_STORAGE_ERROR",
        "OUT_OF_ORDER_SEQUENCE_NUMBER",
        "_PURGE_INFLIGHT",
        "closed-in-flight",
        "UNKNOWN",
        "SOMETHING_NEW_IN_KAFKA_9",
    ],
)
def test_maybe_written_is_always_info(name: str) -> None:
    assert classify(name, single_attempt=True) == "info"
    assert classify(name, single_attempt=False) == "info"


def test_canonical_names_fold_client_spellings() -> None:
    assert canonical_name("_MSG_TIMED_OUT") == "MSG_TIMED_OUT"
    assert canonical_name("MessageSizeTooLargeError") == "MSG_SIZE_TOO_LARGE"
    assert canonical_name("NOT_LEADER_FOR_PARTITION") == "NOT_LEADER_OR_FOLLOWER"


def test_confluent_errors_map_to_canonical_names() -> None:
    from confluent_kafka import KafkaError

    from kchaos.workloads.confluent_client import error_name

    assert error_name(KafkaError(KafkaError._MSG_TIMED_OUT)) == "MSG_TIMED_OUT"
    assert error_name(KafkaError(KafkaError.NOT_ENOUGH_REPLICAS)) == "NOT_ENOUGH_REPLICAS"
    assert error_name(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE)) == "MSG_SIZE_TOO_LARGE"
    assert classify(error_name(KafkaError(KafkaError._TRANSPORT)), single_attempt=True) == "info"


def test_kafka_python_errors_map_to_canonical_names() -> None:
    import kafka.errors as kerrors

    from kchaos.workloads.kafkapython_client import error_name

    assert error_name(kerrors.NotEnoughReplicasError()) == "NOT_ENOUGH_REPLICAS"
    assert error_name(kerrors.NotLeaderForPartitionError()) == "NOT_LEADER_OR_FOLLOWER"
    assert error_name(kerrors.MessageSizeTooLargeError()) == "MSG_SIZE_TOO_LARGE"
    assert error_name(kerrors.KafkaTimeoutError("batch expired")) == "TIMED_OUT"
    assert error_name(kerrors.RequestTimedOutError()) == "REQUEST_TIMED_OUT"
    assert error_name(kerrors.KafkaConnectionError()) == "TRANSPORT"
    assert error_name(kerrors.NotEnoughReplicasAfterAppendError()) == (
        "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
    )
    for exc in (kerrors.KafkaTimeoutError(), kerrors.NotEnoughReplicasAfterAppendError()):
        assert classify(error_name(exc), single_attempt=True) == "info"
    assert classify(error_name(kerrors.TopicAuthorizationFailedError()), single_attempt=False) == (
        "fail"
    )
