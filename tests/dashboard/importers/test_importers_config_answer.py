"""dashboard.importers.config.answer: the scheduler's own config (GET /ws/v1/config)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from shared_fixtures import FIXTURES

from dashboard.importers import ImportFailure, parse_config
from dashboard.importers.config.answer import config_from_json, parse_config_answer

SHARED_ANSWER = FIXTURES / "rest" / "config.json"
LAB_WEST = Path(__file__).parents[1] / "data" / "cluster-b" / "config"


def shared_doc() -> dict[str, Any]:
    doc = json.loads(SHARED_ANSWER.read_text())
    assert isinstance(doc, dict)
    return doc


def test_shared_answer_reads_as_the_config_it_was_loaded_from() -> None:
    """The shared config.json is queues-nested-gpu.yaml as the scheduler serves it: same
    checksum, no difference, the ConfigMap's other settings kept."""
    answer = parse_config_answer(SHARED_ANSWER.read_bytes())
    upload = parse_config((FIXTURES / "config" / "queues-nested-gpu.yaml").read_bytes())
    assert answer.checksum == upload.checksum
    assert answer.checksum == shared_doc()["Checksum"]
    assert upload.diff(answer) == []
    assert answer.source_format == "scheduler"
    assert answer.extra["log.level"] == "INFO"
    assert answer.warnings == ()
    assert answer.partition("default").quota_preemption_enabled is True
    training = answer.queue("root.production.training")
    assert training is not None
    assert training.quota_preemption_delay == 1800.0
    assert training.max == {"memory": 128 * 2**30, "nvidia.com/gpu": 4, "vcore": 32000}
    # the stored text is a queues.yaml the importer reads again to the same config
    again = parse_config(answer.text)
    assert again.diff(answer) == []


def test_lab_west_answer_matches_its_live_queues_yaml() -> None:
    """lab-west's /ws/v1/config (written by generate.py from config/queues.yaml) reads to
    the live config, with the max-equals-guaranteed warning naming the answer's key."""
    answer = parse_config_answer((LAB_WEST / "config.json").read_bytes())
    upload = parse_config((LAB_WEST / "queues.yaml").read_bytes())
    assert answer.checksum == upload.checksum
    assert upload.diff(answer) == []
    assert len(answer.warnings) == 1
    assert answer.warnings[0].startswith(
        "config.json: Partitions[0].Queues[0].Queues[0].Resources.Max: queue root.etl: max vcore"
    )
    etl = answer.queue("root.etl")
    assert etl is not None
    assert etl.max_applications == 3
    assert answer.partition("default").root.children[-1].child_template is not None


def test_yaml_form_reads_the_same_config() -> None:
    """The endpoint's YAML form (yaml.v2: lower-case keys, checksum and extra) gives the
    same config and the scheduler's checksum; the wrapper keys never reach the text."""
    text = (FIXTURES / "config" / "queues-nested-gpu.yaml").read_text()
    answer_text = (
        text.rstrip()
        + "\nchecksum: ABC123\nextra:\n  log.level: DEBUG\ndeadlockdetectionenabled: false\n"
    )
    answer = parse_config_answer(answer_text, filename="config.yaml")
    assert answer.checksum == "ABC123"
    assert answer.extra == {"log.level": "DEBUG"}
    assert parse_config(text).diff(answer) == []
    assert "checksum" not in answer.text
    assert "deadlock" not in answer.text


def test_without_checksum_the_text_gives_one() -> None:
    doc = shared_doc()
    del doc["Checksum"]
    answer = config_from_json(doc)
    assert answer.checksum == parse_config(answer.text).checksum


def _answer_with(change: Any) -> bytes:
    doc = shared_doc()
    change(doc)
    return json.dumps(doc).encode()


def _refusal(data: bytes) -> str:
    with pytest.raises(ImportFailure) as info:
        parse_config_answer(data)
    return str(info.value)


def test_max_below_a_childs_max_is_refused_naming_the_key() -> None:
    """yunikorn-core's rule (a child's max inside its parent's) applies to the answer."""

    def shrink(doc: dict[str, Any]) -> None:
        production = doc["Partitions"][0]["Queues"][0]["Queues"][0]
        production["Resources"]["Max"]["vcore"] = "10"

    message = _refusal(_answer_with(shrink))
    assert message.startswith("config.json: Partitions[0].Queues[0].Queues[0]")
    assert "root.production" in message


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: d["Partitions"][0]["Queues"][0].update(Colour="red"),
            "config.json: Partitions[0].Queues[0].Colour: field Colour not found in type "
            "configs.QueueConfig",
        ),
        (
            lambda d: d["Partitions"][0]["Queues"][0].update(Parent="yes"),
            "config.json: Partitions[0].Queues[0].Parent: expected true or false, got a string",
        ),
        (
            lambda d: d["Partitions"][0]["Queues"][0]["Queues"][2].update(MaxApplications=-1),
            "config.json: Partitions[0].Queues[0].Queues[2].MaxApplications: expected a whole "
            "number >= 0",
        ),
        (
            lambda d: d["Partitions"][0]["Queues"][0]["Queues"][0]["Resources"]["Max"].update(
                vcore=40
            ),
            "config.json: Partitions[0].Queues[0].Queues[0].Resources.Max.vcore: expected a "
            "string, got a number",
        ),
        (
            lambda d: d["Partitions"][0]["Queues"][0]["Queues"][0]["Resources"]["Max"].update(
                vcore="forty"
            ),
            "config.json: Partitions[0].Queues[0].Queues[0].Resources.Max",
        ),
        (lambda d: d.pop("Partitions"), "config.json: Partitions: missing"),
        (
            lambda d: d.update(Partitions={"Name": "default"}),
            "config.json: Partitions: expected a list, got an object",
        ),
        (
            lambda d: d["Partitions"][0]["Queues"][0]["Queues"][1].update(Name="research!"),
            "config.json: Partitions[0].Queues[0].Queues[1].Name",
        ),
    ],
)
def test_malformed_answers_are_refused_naming_where(change: Any, expected: str) -> None:
    assert _refusal(_answer_with(change)).startswith(expected)


def test_not_json_nor_a_config_is_refused() -> None:
    assert _refusal(b'{"Partitions": [}').startswith("config.json: line 1")
    assert "not a /ws/v1/config answer" in _refusal(b'{"queues": []}')
    with pytest.raises(ImportFailure) as info:
        parse_config_answer(b"[1, 2]\n", filename="config.yaml")
    assert "configs.SchedulerConfig" in str(info.value)


def test_unknown_top_level_field_is_a_warning() -> None:
    """Newer schedulers wrap the config with more settings: kept out, said so."""
    answer = parse_config_answer(_answer_with(lambda d: d.update(Future=1)))
    assert answer.warnings == (
        "config.json: Future: not a field of the scheduler's config; ignored",
    )


def test_an_answer_above_the_limit_is_refused_before_parsing() -> None:
    from dashboard.importers.config.answer import MAX_ANSWER_BYTES

    message = _refusal(b"{" + b" " * MAX_ANSWER_BYTES + b"}")
    assert message.startswith("config.json: the answer is")
    assert "MiB limit of a /ws/v1/config answer" in message
