"""run.json is the typed scenario: any Scenario, written as the runner writes it and read
back through RunJson, is the same Scenario (issue 34).

Scenarios are generated from the model's own field types (as ``rundir.fromjson`` reads
them), small: at most two items per list or mapping, numbers within the ranges the
fields allow."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kchaos.harness.rundir.files import jsonable
from kchaos.harness.rundir.loglines import LogLine
from kchaos.harness.rundir.runjson import FORMAT, RunJson
from kchaos.harness.rundir.scenario_model import Scenario

_TEXT = st.text(alphabet="abcxyz.-_ 09", max_size=6)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | _TEXT,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(_TEXT, inner, max_size=2),
    max_leaves=4,
)
# expect.log_lines are checked as the loader checks them: text of 3 characters or more
_LOG_LINE = st.builds(
    LogLine,
    contains=st.text(alphabet="abcxyz", min_size=3, max_size=8),
    node=st.none() | st.integers(0, 9),
    why=_TEXT,
    regex=st.booleans(),
)


def strategy(hint: Any) -> st.SearchStrategy[Any]:
    """Values of a model field's type."""
    if hint is Any:
        return _JSON
    if hint is LogLine:
        return _LOG_LINE
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return st.one_of([st.none() if a is type(None) else strategy(a) for a in args])
    if origin is typing.Literal:
        return st.sampled_from(args)
    if origin is tuple:
        return st.lists(strategy(args[0]), max_size=2).map(tuple)
    if origin is Mapping:
        return st.dictionaries(strategy(args[0]), strategy(args[1]), max_size=2)
    if dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        fields = {
            f.name: strategy(hints[f.name])
            for f in dataclasses.fields(hint)
            if f.init and f.name != "plan"
        }
        return st.builds(hint, **fields)
    simple = {
        str: _TEXT,
        # numbers within what every field allows (counts, ids, seconds: none negative,
        # a transaction's timeout above 0)
        int: st.integers(0, 2**40),
        float: st.floats(0.001, 1e7),
        bool: st.booleans(),
    }
    return simple[hint]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategy(Scenario))
def test_a_scenario_written_to_run_json_reads_back_equal(sc: Scenario) -> None:
    data = json.loads(json.dumps(jsonable({"format": FORMAT, "scenario": sc.to_dict()})))
    run = RunJson.from_mapping(data, "run.json")
    assert run.scenario == sc
    assert run.scenario is not None and run.scenario.to_dict() == sc.to_dict()
    assert run.described and run.scenario_name == sc.name
