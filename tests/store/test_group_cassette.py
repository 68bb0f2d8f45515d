"""A session spanning connections as a cassette keeps it (issue 44 item 2): the interaction's
``group`` (its id, the order of its parts on the group's one timeline) saved and loaded back; a
malformed group refused on load naming the file, the interaction and the field; a cassette
without groups loads as it did."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ssemock import Cassette
from ssemock.store.group import Group
from ssemock.store.model import CassetteError, Interaction, Request, Response
from ssemock.store.websocket import Message, WebSocket


def _cassette() -> Cassette:
    body = b'{"session":{"id":"sess_1"}}'
    create = Interaction(
        Request("POST", "https://api.openai.com/v1/live/sessions"),
        Response(200, [("content-type", "application/json")], body, [len(body)], [0.1]),
        group=Group("sess_1", [0]),
    )
    ws = WebSocket([Message("recv", 0.1, "text", '{"type":"session.updated"}')])
    attach = Interaction(
        Request("GET", "wss://api.openai.com/v1/live/sessions/sess_1/attach"),
        Response(101),
        ws,
        Group("sess_1", [1, 2]),
    )
    return Cassette([create, attach])


def test_a_group_is_saved_and_loaded_back(tmp_path: Path) -> None:
    path = _cassette().save(tmp_path / "g.json")
    doc = json.loads(path.read_text())
    assert [item["group"] for item in doc["interactions"]] == [
        {"id": "sess_1", "order": [0]},
        {"id": "sess_1", "order": [1, 2]},
    ]
    assert [x.group for x in Cassette.load(path).interactions] == [
        Group("sess_1", [0]),
        Group("sess_1", [1, 2]),
    ]


def test_a_cassette_without_groups_loads_as_before(tmp_path: Path) -> None:
    path = _cassette().save(tmp_path / "g.json")
    doc = json.loads(path.read_text())
    for item in doc["interactions"]:
        del item["group"]
    path.write_text(json.dumps(doc))
    assert [x.group for x in Cassette.load(path).interactions] == [None, None]


@pytest.mark.parametrize(
    ("index", "group", "says"),
    [
        (1, {"id": "sess_1", "order": [1]}, r"group\.order has 1 numbers, but the interaction needs 2"),
        (
            1,
            {"id": "sess_1", "order": [2, 2]},
            r"group\.order\[1\] \(2\) is not after group\.order\[0\] \(2\)",
        ),
        (0, {"id": "sess_1", "order": [-1]}, r"group\.order must be a list of non-negative integers"),
        (0, {"id": "", "order": [0]}, r"group\.id must be a non-empty string"),
        (0, {"id": "a\nb", "order": [0]}, r"group\.id must be a non-empty string on one line"),
        (0, ["sess_1"], r"group must be an object"),
    ],
)
def test_a_malformed_group_is_refused_naming_the_file_the_interaction_and_the_field(
    tmp_path: Path, index: int, group: object, says: str
) -> None:
    path = _cassette().save(tmp_path / "g.json")
    doc = json.loads(path.read_text())
    doc["interactions"][index]["group"] = group
    path.write_text(json.dumps(doc))
    with pytest.raises(CassetteError, match=rf"g\.json: interaction {index}: {says}"):
        Cassette.load(path)


def test_a_group_that_would_not_load_is_never_saved(tmp_path: Path) -> None:
    cassette = _cassette()
    cassette.interactions[1].group = Group("sess_1", [1])
    with pytest.raises(CassetteError, match=r"refusing to save: group\.order has 1 numbers"):
        cassette.save(tmp_path / "g.json")
    assert not (tmp_path / "g.json").exists()
