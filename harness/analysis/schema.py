"""The explicit Spark schema of history format 1.3 (only the fields the analysis reads).

No inference: every line is parsed against this schema. A line whose field does not fit
its type (an ``index`` that is a string, say) becomes a corrupt record and is reported
with its line number; fields the analysis does not use are never parsed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kchaos.harness.rundir.history import TYPES as HISTORY_TYPES

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

CORRUPT = "_corrupt"

# Fields every line has, and the Python types a line-by-line validator expects of them.
REQUIRED: dict[str, tuple[type, ...]] = {
    "index": (int,),
    "time": (int,),
    "process": (int, str),
    "type": (str,),
    "f": (str,),
}
# Optional fields the analysis reads, with their expected JSON types.
OPTIONAL: dict[str, tuple[type, ...]] = {
    "topic": (str,),
    "partition": (int,),
    "offset": (int,),
    "value": (str,),
    "error": (str,),
    "records": (list,),
    "log_start_offset": (int,),
    "high_watermark": (int,),
    "phase": (str,),
    "id": (str,),
    "fault": (str,),
    "targets": (list,),
    # version 1.2: transactions, isolation of readers, the drain's last stable offset
    "txn": (str,),
    "transactional_id": (str,),
    "sends": (list,),
    "consumed": (list,),
    # a txn line's object; a consumer's commit line has a list here, which is not read
    # (only a txn line's offsets are checked: lines.event_problem)
    "offsets": (dict, list),
    "isolation": (str,),
    "last_stable_offset": (int,),
    # version 1.3: a txn-end line's commit or abort
    "action": (str,),
}
RECORD_FIELDS: dict[str, tuple[type, ...]] = {
    "topic": (str,),
    "partition": (int,),
    "offset": (int,),
    "value": (str,),
}
# The fields of one entry of a txn's ``sends``: required, then optional.
TXN_SEND_REQUIRED: dict[str, tuple[type, ...]] = {"topic": (str,), "value": (str,)}
TXN_SEND_OPTIONAL: dict[str, tuple[type, ...]] = {
    "partition": (int,),
    "offset": (int,),
    "copy_of": (str,),
}
TYPES = HISTORY_TYPES
#: A reader's ``isolation`` (assign and drain-end lines): the history vocabulary's own.
from kchaos.harness.rundir.history import (  # noqa: E402, F401 - re-exported for the job
    ACTION_COMMIT,
    ACTIONS,
    ISOLATIONS,
    READ_COMMITTED,
    READ_UNCOMMITTED,
)


def offsets_type() -> StructType:
    """A txn line's ``offsets``: positions are [topic, partition, next offset], strings
    keeping the mixed array."""
    from pyspark.sql.types import ArrayType, StringType, StructField, StructType

    return StructType(
        [
            StructField("group", StringType()),
            StructField("positions", ArrayType(ArrayType(StringType()))),
        ]
    )


def history_schema(with_corrupt: bool = True, *, offsets_text: bool = False) -> StructType:
    """The schema history.jsonl is read with (plus the corrupt-record column).

    ``offsets_text``: ``offsets`` as the raw JSON text of either of its shapes (a txn
    line's object, a commit line's list) instead of the txn line's object."""
    from pyspark.sql.types import (
        ArrayType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    record = StructType(
        [
            StructField("topic", StringType()),
            StructField("partition", IntegerType()),
            StructField("offset", LongType()),
            StructField("value", StringType()),
        ]
    )
    txn_send = StructType(
        [
            StructField("topic", StringType()),
            StructField("partition", IntegerType()),
            StructField("offset", LongType()),
            StructField("value", StringType()),
            StructField("copy_of", StringType()),
        ]
    )
    fields = [
        StructField("index", LongType()),
        StructField("time", LongType()),
        # int or string in the file: a string column keeps both ("3", "nemesis").
        StructField("process", StringType()),
        StructField("type", StringType()),
        StructField("f", StringType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("value", StringType()),
        StructField("error", StringType()),
        StructField("records", ArrayType(record)),
        StructField("log_start_offset", LongType()),
        StructField("high_watermark", LongType()),
        StructField("phase", StringType()),
        StructField("id", StringType()),
        StructField("fault", StringType()),
        StructField("targets", ArrayType(StringType())),
        StructField("txn", StringType()),
        StructField("transactional_id", StringType()),
        StructField("sends", ArrayType(txn_send)),
        StructField("consumed", ArrayType(record)),
        StructField("offsets", StringType() if offsets_text else offsets_type()),
        StructField("isolation", StringType()),
        StructField("last_stable_offset", LongType()),
        StructField("action", StringType()),
    ]
    if with_corrupt:
        fields.append(StructField(CORRUPT, StringType()))
    return StructType(fields)


def column_names() -> list[str]:
    """The history columns, in schema order, without the corrupt-record column."""
    return [*REQUIRED, *OPTIONAL]
