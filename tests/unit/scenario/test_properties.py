from pathlib import Path

import pytest

from kchaos.harness.errors import ConfigError
from kchaos.harness.scenario.properties import load_properties, parse_properties


def test_separators_comments_and_whitespace():
    text = "\n".join(
        [
            "# a comment",
            "! another comment",
            "   ",
            "a=1",
            "b : 2",
            "c 3",
            "d\t=\t4",
            "  e=  five and more  ",
            "f=",
            "g",
        ]
    )
    assert parse_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "4",
        "e": "five and more  ",
        "f": "",
        "g": "",
    }


def test_line_continuations():
    text = "listeners=PLAINTEXT://a:9092,\\\n    CONTROLLER://b:9093\nnext=1\n"
    assert parse_properties(text) == {
        "listeners": "PLAINTEXT://a:9092,CONTROLLER://b:9093",
        "next": "1",
    }


def test_even_backslashes_do_not_continue():
    text = "path=C:\\\\\nother=2\n"
    assert parse_properties(text) == {"path": "C:\\", "other": "2"}


def test_escapes_in_keys_and_values():
    text = "key\\=with\\:seps\\ x=tab\\there\\u00e9\\n\nplain\\q=v\n"
    result = parse_properties(text)
    assert result["key=with:seps x"] == "tab\there\u00e9\n"
    assert result["plainq"] == "v"


def test_later_keys_win_and_comment_mid_value_is_kept():
    assert parse_properties("a=1\na=2 # not a comment\n") == {"a": "2 # not a comment"}


def test_continuation_into_comment_like_line_is_value():
    assert parse_properties("a=x\\\n# y\n") == {"a": "x# y"}


def test_bad_unicode_escape_names_file_and_line():
    with pytest.raises(ConfigError) as err:
        parse_properties("a=1\nb=\\u12\n", file="server.properties")
    assert str(err.value).startswith("server.properties:2:")


def test_load_properties_file(tmp_path: Path):
    f = tmp_path / "server.properties"
    f.write_text("log.flush.interval.messages=1\nunclean.leader.election.enable = true\n")
    assert load_properties(f) == {
        "log.flush.interval.messages": "1",
        "unclean.leader.election.enable": "true",
    }


def test_missing_file_is_a_config_error(tmp_path: Path):
    with pytest.raises(ConfigError, match="cannot read broker config"):
        load_properties(tmp_path / "nope.properties")
