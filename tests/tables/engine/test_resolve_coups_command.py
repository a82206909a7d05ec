"""The resolve_coups command: the 13 worked examples (RULES.md §3.3) and every line error.

No database: call_command skips the system checks and the command only reads stdin."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tables.management.commands.resolve_coups import Command
from tests.tables.engine.helpers import is_subset

EXAMPLES = [
    json.loads(line) for line in (Path(__file__).parent / "data" / "coups.jsonl").read_text().splitlines()
]


def run(lines: list[str] | str, *args: str) -> list[dict]:
    text = lines if isinstance(lines, str) else "\n".join(lines) + "\n"
    out = io.StringIO()
    call_command("resolve_coups", *args, stdin=io.StringIO(text), stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_there_are_thirteen_examples():
    assert len(EXAMPLES) == 13


@pytest.mark.parametrize("example", EXAMPLES, ids=[str(e["input"]["id"]) for e in EXAMPLES])
def test_each_example_alone(example):
    (out,) = run([json.dumps(example["input"])])
    assert is_subset(example["expected"], out), (example["why"], out)


def test_all_examples_in_one_stream_keep_their_order():
    outs = run([json.dumps(e["input"]) for e in EXAMPLES])
    assert [o["id"] for o in outs] == list(range(1, 14))
    for example, out in zip(EXAMPLES, outs, strict=True):
        assert is_subset(example["expected"], out), example["why"]


def test_full_output_of_a_reconstructed_coup():
    (out,) = run([json.dumps(EXAMPLES[3]["input"])])
    assert out == {
        "id": 4,
        "as_played": {
            "punta": {"cards": ["4H", "3C"], "total": 7},
            "banker": {"cards": ["3S", "3D", "9C"], "total": 5},
            "winner": "punta",
            "natural": False,
        },
        "conforming": False,
        "violations": [
            {
                "side": "banker",
                "rule": "banker_regola",
                "punta_total": 7,
                "banker_total": 6,
                "punta_third_card": None,
                "punta_third_value": None,
                "required": "stand",
                "done": "draw",
            }
        ],
        "settled": {
            "punta": {"cards": ["4H", "3C"], "total": 7},
            "banker": {"cards": ["3S", "3D"], "total": 6},
            "winner": "punta",
            "natural": False,
            "status": "final",
            "needs": None,
            "void_cards": ["9C"],
        },
    }


def test_pending_output_carries_only_status_and_needs():
    (out,) = run([json.dumps(EXAMPLES[2]["input"])])
    assert out["settled"] == {"status": "pending", "needs": {"cards": 1}}


def test_cards_echo_canonical():
    (out,) = run(['{"id": "x", "cards": ["2h", "a♠", "T♣", "2d"], "punta_draws": false}'])
    assert out["as_played"]["punta"]["cards"] == ["2H", "10C"]
    assert out["as_played"]["banker"]["cards"] == ["AS", "2D"]


BAD = [
    ("not json", None, "bad_json"),
    ('{"id": 1, "cards": [NaN]}', None, "bad_json"),
    ("[1, 2]", None, "bad_input"),
    ('"a string"', None, "bad_input"),
    ('{"id": 2, "cards": "2H 3S"}', 2, "bad_input"),
    ('{"id": 3, "cards": ["2H", 3, "4C", "3D"], "punta_draws": false}', 3, "bad_input"),
    ('{"id": 4, "cards": ["2H", "3S", "4C", "3D"], "punta_draws": "yes"}', 4, "bad_input"),
    ('{"id": 5, "cards": ["2H", "3S", "4C", "3D"], "punta_draws": false, "regola": true}', 5, "bad_input"),
    (
        '{"id": 6, "cards": ["2H", "3S", "4C", "3D"], "punta_draws": false, "regola": {"bank": true}}',
        6,
        "bad_input",
    ),
    ('{"id": 7, "cards": ["2H", "3S", "4C", "3D"], "punta_draws": false, "banco_solo": 1}', 7, "bad_input"),
    ('{"id": 8, "cards": ["2H", "3S", "4C", "3D"], "punta_draw": false}', 8, "bad_input"),
    ('{"id": 9, "punta_draws": false}', 9, "bad_input"),
    ('{"id": 10, "cards": ["2H", "3S", "4C", "3D"], "profile": "baccarat"}', 10, "unknown_profile"),
    ('{"id": 11, "cards": ["2H", "3S", "4C", "3D"], "profile": 3}', 11, "bad_input"),
    (
        '{"id": 12, "cards": ["2H", "3S", "4C", "3D"], "punta_draws": false, "reconstruction": {"banker_draws": 1}}',
        12,
        "bad_input",
    ),
    (
        '{"id": 13, "cards": ["2H", "3S", "4C", "3D"], "punta_draws": false, "next_cards": "5H"}',
        13,
        "bad_input",
    ),
    ('{"id": 14, "cards": ["2H", "3S", "ZZ", "3D"], "punta_draws": false}', 14, "bad_card"),
    ('{"id": 15, "cards": ["2H", "3S", "4C"], "punta_draws": false}', 15, "too_few_cards"),
    ('{"id": 16, "cards": ["2H", "3S", "4C", "3D", "5C", "6C"], "punta_draws": false}', 16, "too_many_cards"),
    ('{"id": 17, "cards": ["9H", "KS", "KC", "5D"], "punta_draws": true}', 17, "decision_contradicts_cards"),
    (
        '{"id": 18, "cards": ["2H", "3S", "4C", "3D"], "punta_draws": false, "banker_draws": true}',
        18,
        "decision_contradicts_cards",
    ),
    (
        '{"id": 19, "cards": ["KS","KS","KS","KS","KS","KS"], "punta_draws": true, "next_cards": ["KS"]}',
        19,
        "card_exhausted",
    ),
    ('{"id": 20, "cards": ["2H", "8S", "KC", "KD", "3C"], "punta_draws": true}', 20, "card_after_natural"),
    ('{"id": 21, "cards": ["2H", "8S", "KC", "KD"]}', 21, "decision_missing"),
    (  # the Regola is venezia's (RULES.md §3.2): elsewhere it would change nothing, silently
        '{"id": 22, "profile": "classic", "cards": ["2H", "AS", "3C", "2D", "2S"], "punta_draws": true, '
        '"regola": {"banker": true}}',
        22,
        "regola_not_allowed",
    ),
    ('{"id": 23, "profile": "chemmy-fi", "cards": ["2H", "3S", "4C", "3D"], "punta_draws": false, '
     '"regola": {"punta": true}}', 23, "regola_not_allowed"),
]


@pytest.mark.parametrize(("line", "id_", "code"), BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_line_gives_an_error_object(line, id_, code):
    (out,) = run([line])
    assert out["id"] == id_
    assert out["error"]["code"] == code
    assert isinstance(out["error"]["message"], str) and out["error"]["message"]
    assert set(out) == {"id", "error"}


def test_a_bad_line_never_stops_the_others_and_blank_lines_are_skipped():
    good = json.dumps(EXAMPLES[0]["input"])
    outs = run("\n".join(["", good, "garbage", "   ", BAD[12][0], "\t", good]) + "\n")
    assert [o.get("error", {}).get("code") for o in outs] == [None, "bad_json", "unknown_profile", None]
    assert [o["id"] for o in outs] == [1, None, 10, 1]


def test_a_line_that_is_not_utf8_is_one_error():
    class Binary(io.StringIO):
        buffer = io.BytesIO(b'\xff\xfe\n{"id": 1, "cards": ["9H", "KS", "KC", "5D"]}\n')

    out = io.StringIO()
    call_command("resolve_coups", stdin=Binary(), stdout=out)
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["error"]["code"] == "bad_json" and first["id"] is None
    assert second["as_played"]["winner"] == "punta"


def test_profile_option_and_line_override():
    line = {"id": 1, "cards": ["2H", "4S", "AC", "2D"], "punta_draws": False, "banco_solo": True}
    # venezia (default): punta banco solo 3 must draw; domestic: free.
    assert run([json.dumps(line)])[0]["conforming"] is False
    assert run([json.dumps(line)], "--profile", "domestic")[0]["conforming"] is True
    assert run([json.dumps({**line, "profile": "domestic"})])[0]["conforming"] is True
    assert (
        run([json.dumps({**line, "profile": "venezia"})], "--profile", "domestic")[0]["conforming"] is False
    )


def test_unknown_profile_option_is_a_usage_error():
    with pytest.raises(CommandError):
        run(["{}"], "--profile", "nope")


def test_help_documents_blank_lines():
    assert "Blank lines are skipped" in Command.help
