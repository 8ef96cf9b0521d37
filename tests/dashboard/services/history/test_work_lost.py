"""Work lost to preemption: completed applications' ``resourceHistory.preemptedResource``
(quantity times seconds, yunikorn-core's ``dao.ResourceHistory``) read from an uploaded
REST folder, stored once, summed per queue and per day or week with the observed
preemptions, and shown by the API (raw), the CSV (hours) and the page."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from dashboard import models, services
from dashboard.importers.errors import ImportFailure
from dashboard.importers.snapshot import parse_snapshot
from dashboard.importers.snapshot.completed import read_completed
from dashboard.services.history import work_lost as wl

pytestmark = pytest.mark.django_db

DATA = Path(__file__).parents[2] / "data" / "work-lost"
COMPLETED = "partition_applications_completed.json"
GI = 2**30
T0 = datetime(2026, 9, 8, 12, 0, tzinfo=UTC)
REST = ("partitions.json", "partition_queues.json", "partition_nodes.json")


def folder(fixtures_dir: Path, *, events: bool = True) -> dict[str, bytes]:
    """The acme-ml REST folder (with its events) and this test's completed applications."""
    names = [*REST, "partition_applications_active.json"]
    if events:
        names.append("events_batch.json")
    files = {n: (fixtures_dir / "rest" / n).read_bytes() for n in names}
    files[COMPLETED] = (DATA / COMPLETED).read_bytes()
    return files


def completed_doc() -> list[dict[str, Any]]:
    doc: list[dict[str, Any]] = json.loads((DATA / COMPLETED).read_text())
    return doc


def test_the_importer_reads_each_history_as_the_scheduler_reports_it(fixtures_dir: Path) -> None:
    parsed = parse_snapshot(folder(fixtures_dir))
    assert parsed.completed is not None
    apps = {a.app_id: a for a in parsed.completed.applications}
    assert sorted(apps) == [
        "etl-nightly-20260901",
        "nlp-notebook-bob-0831",
        "spark-0a1b2c3d4e5f60718293a4b5c6d7e8f9",
        "spark-retry-7e6d5c4b",
    ]
    notebook = apps["nlp-notebook-bob-0831"]
    assert notebook.queue == "root.research.nlp"
    assert notebook.state == "Completed"
    # instance type -> type -> quantity times seconds, kept per instance type
    assert notebook.preempted == {
        "p3.8xlarge": {
            "memory": 16 * GI * 3600,
            "nvidia.com/gpu": 3600,
            "pods": 3600,
            "vcore": 2000 * 3600,
        }
    }
    assert notebook.finished == pytest.approx(
        datetime(2026, 9, 2, 8, 0, tzinfo=UTC).timestamp(), abs=0.01
    )
    assert apps["etl-nightly-20260901"].preempted == {}  # omitted when empty
    assert apps["spark-retry-7e6d5c4b"].state == "Failed"
    assert apps["spark-retry-7e6d5c4b"].preempted == {
        "UNKNOWN": {"vcore": 1000 * 1800},
        "m5.2xlarge": {"vcore": 500 * 3600},
    }
    # the active answer's applications are not completed ones
    assert "llm-serving-7f9c" not in apps


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (
            {"resourceHistory": {"preemptedResource": {"UNKNOWN": {"vcore": "1000"}}}},
            "[0].resourceHistory.preemptedResource.UNKNOWN.vcore",
        ),
        (
            {"resourceHistory": {"preemptedResource": {"UNKNOWN": {"vcore": -5}}}},
            "[0].resourceHistory.preemptedResource.UNKNOWN.vcore",
        ),
        ({"resourceHistory": {"preemptedResource": []}}, "[0].resourceHistory.preemptedResource"),
        ({"finishedTime": "yesterday"}, "[0].finishedTime"),
        ({"queueName": ""}, "[0].queueName"),
    ],
)
def test_a_malformed_history_is_refused_naming_its_field(
    change: dict[str, Any], where: str
) -> None:
    doc = completed_doc()[:1]
    doc[0].update(change)
    with pytest.raises(ImportFailure) as err:
        read_completed([(COMPLETED, doc)], "default")
    assert err.value.location == f"{COMPLETED}: {where}"


def test_a_completed_application_without_a_finish_time_is_left_out_saying_so() -> None:
    doc = completed_doc()[:2]
    del doc[0]["finishedTime"]
    read = read_completed([(COMPLETED, doc)], "default")
    assert [a.app_id for a in read.applications] == ["etl-nightly-20260901"]
    assert read.skipped == (
        "spark-0a1b2c3d4e5f60718293a4b5c6d7e8f9: Completed without a finishedTime",
    )


def test_an_uploaded_folder_stores_each_completed_application_once(fixtures_dir: Path) -> None:
    first = services.import_snapshot(folder(fixtures_dir), now=T0)
    services.import_snapshot(folder(fixtures_dir), now=T0)  # the same folder again
    rows = models.CompletedApplication.objects.filter(partition=first.partition)
    assert rows.count() == 4
    spark = rows.get(app_id="spark-0a1b2c3d4e5f60718293a4b5c6d7e8f9")
    assert spark.queue == "root.batch"
    assert spark.user == "analyst-dave"
    assert spark.finished_at.replace(microsecond=0) == datetime(2026, 9, 1, 10, 20, tzinfo=UTC)
    assert spark.preempted == {"UNKNOWN": {"memory": 8 * GI * 1800, "pods": 3600, "vcore": 3600000}}


@pytest.fixture
def partition(fixtures_dir: Path) -> models.Partition:
    return services.import_snapshot(folder(fixtures_dir), now=T0).partition


def _by_key(answer: wl.WorkLost) -> dict[tuple[date, str], wl.WorkLostRow]:
    return {(r.period_start, r.queue): r for r in answer.rows}


def test_per_day_each_queue_sums_its_applications_over_instance_types(
    partition: models.Partition,
) -> None:
    answer = wl.work_lost(partition, period="day")
    rows = _by_key(answer)
    batch = rows[(date(2026, 9, 1), "root.batch")]
    assert (batch.applications, batch.applications_with_loss) == (2, 1)
    assert batch.lost == {"memory": 8 * GI * 1800, "pods": 3600, "vcore": 3_600_000}
    # resourceUsage of both: 1 core for 30 min, 2.5 cores for 2 h
    assert batch.used["vcore"] == 1000 * 1800 + 2500 * 7200
    nlp = rows[(date(2026, 9, 2), "root.research.nlp")]
    assert nlp.lost == {
        "memory": 16 * GI * 3600,
        "nvidia.com/gpu": 3600,
        "pods": 3600,
        "vcore": 7_200_000,
    }
    retry = rows[(date(2026, 9, 8), "root.batch")]
    # the two instance types summed: 1 core for 30 min + 0.5 core for an hour
    assert retry.lost == {"vcore": 3_600_000}
    assert answer.types == ("memory", "nvidia.com/gpu", "pods", "vcore")
    assert answer.totals()["vcore"] == 3_600_000 + 7_200_000 + 3_600_000


def test_the_observed_preemptions_count_in_their_victims_queue_and_day(
    partition: models.Partition,
) -> None:
    """The fixture's events: the quota preemption of root.batch took two executors, the
    training ask one notebook allocation of root.research.nlp, all on 2026-09-01."""
    rows = _by_key(wl.work_lost(partition, period="day"))
    victims = models.RunVictim.objects.filter(
        run__partition=partition, run__trigger=models.PreemptionRun.Trigger.OBSERVED
    )
    batch = rows[(date(2026, 9, 1), "root.batch")]
    assert batch.observed_victims == victims.filter(queue="root.batch").count() == 2
    held = [v.resources for v in victims.filter(queue="root.batch")]
    assert batch.observed_resources["vcore"] == sum(r["vcore"] for r in held)
    nlp_day = rows[(date(2026, 9, 1), "root.research.nlp")]
    assert nlp_day.observed_victims == victims.filter(queue="root.research.nlp").count() == 1
    assert nlp_day.lost == {}  # its application had not completed that day


def test_per_week_from_monday_and_a_queue_with_the_queues_below_it(
    partition: models.Partition,
) -> None:
    weeks = _by_key(wl.work_lost(partition, period="week"))
    # 2026-09-01 is a Tuesday: its week starts on Monday 2026-08-31; 09-08 is the next
    assert weeks[(date(2026, 8, 31), "root.batch")].lost["vcore"] == 3_600_000
    assert weeks[(date(2026, 9, 7), "root.batch")].lost["vcore"] == 3_600_000
    research = wl.work_lost(partition, period="week", queue="root.research")
    assert {r.queue for r in research.rows} == {"root.research.nlp"}
    assert research.totals() == {
        "memory": 16 * GI * 3600,
        "nvidia.com/gpu": 3600,
        "pods": 3600,
        "vcore": 7_200_000,
    }
    # "root.re" is not a queue above root.research.nlp
    assert wl.work_lost(partition, queue="root.re").rows == ()


def test_the_window_is_by_day_both_ends_included(partition: models.Partition) -> None:
    answer = wl.work_lost(partition, since=date(2026, 9, 2), until=date(2026, 9, 2))
    assert [(r.period_start, r.queue) for r in answer.rows] == [
        (date(2026, 9, 2), "root.research.nlp")
    ]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"period": "month"}, "period"),
        ({"since": date(2026, 9, 3), "until": date(2026, 9, 1)}, "since"),
        ({"since": date(2025, 1, 1), "until": date(2026, 9, 1)}, "until"),
    ],
)
def test_a_bad_window_names_its_field(
    partition: models.Partition, kwargs: dict[str, Any], field: str
) -> None:
    with pytest.raises(services.ServiceError) as err:
        wl.work_lost(partition, **kwargs)
    assert err.value.field == field


def test_the_api_answers_raw_quantity_seconds(
    partition: models.Partition, viewer_client: APIClient
) -> None:
    answer = viewer_client.get("/api/work-lost/", {"partition": "default", "period": "week"})
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert (body["period"], body["partition"]) == ("week", "default")
    assert body["cluster"] == partition.cluster.name
    rows = {(r["period_start"], r["queue"]): r for r in body["rows"]}
    batch = rows[("2026-08-31", "root.batch")]
    assert batch["lost"] == {"memory": 8 * GI * 1800, "pods": 3600, "vcore": 3_600_000}
    assert batch["completed_applications"] == 2
    assert batch["applications_with_lost_work"] == 1
    assert batch["observed_victims"] == 2
    assert body["totals"]["vcore"] == 14_400_000


def test_the_api_refuses_a_bad_query_naming_it(
    partition: models.Partition, viewer_client: APIClient, anon_client: APIClient
) -> None:
    bad = viewer_client.get("/api/work-lost/", {"period": "month"})
    assert bad.status_code == 400
    assert "period" in bad.json()
    late = viewer_client.get("/api/work-lost/", {"since": "2026-09-03", "until": "2026-09-01"})
    assert late.status_code == 400
    assert "since" in late.json()
    nowhere = viewer_client.get("/api/work-lost/", {"partition": "nowhere"})
    assert nowhere.status_code == 400
    assert "partition" in nowhere.json()
    assert anon_client.get("/api/work-lost/").status_code in (401, 403)


def test_the_schema_documents_the_endpoint(viewer_client: APIClient) -> None:
    schema = viewer_client.get("/api/schema/", {"format": "json"}).json()
    operation = schema["paths"]["/api/work-lost/"]["get"]
    assert {p["name"] for p in operation["parameters"]} >= {
        "partition",
        "cluster",
        "period",
        "since",
        "until",
        "queue",
    }
    assert "WorkLost" in json.dumps(operation["responses"]["200"])


def test_the_csv_gives_each_type_its_own_column_in_hours(
    partition: models.Partition, viewer: Any
) -> None:
    client = Client()
    client.force_login(viewer)
    response = client.get("/work-lost.csv", {"partition": "default", "period": "day"})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    text = b"".join(response.streaming_content).decode()  # type: ignore[attr-defined]
    rows = list(csv.DictReader(io.StringIO(text)))
    batch = next(r for r in rows if (r["period_start"], r["queue"]) == ("2026-09-01", "root.batch"))
    assert batch["lost vcore (core-hours)"] == "1"
    assert batch["lost memory (GiB-hours)"] == "4"
    assert batch["lost pods (hours)"] == "1"
    assert batch["lost nvidia.com/gpu (hours)"] == "0"
    assert batch["observed_victims"] == "2"
    assert batch["cluster"] == partition.cluster.name
    nlp = next(
        r for r in rows if r["queue"] == "root.research.nlp" and r["period_start"] == "2026-09-02"
    )
    assert (nlp["lost vcore (core-hours)"], nlp["lost memory (GiB-hours)"]) == ("2", "16")
    assert client.get("/work-lost.csv", {"period": "month"}).status_code == 400


def test_a_formula_in_a_queue_name_is_defused_in_the_csv(
    partition: models.Partition, viewer: Any
) -> None:
    models.CompletedApplication.objects.create(
        partition=partition,
        app_id="x",
        queue="=HYPERLINK(1)",
        finished_at=datetime(2026, 9, 3, tzinfo=UTC),
        preempted={"UNKNOWN": {"vcore": 1000}},
        read_at=T0,
    )
    client = Client()
    client.force_login(viewer)
    text = b"".join(client.get("/work-lost.csv").streaming_content).decode()  # type: ignore[attr-defined]
    assert "'=HYPERLINK(1)" in text


def test_the_page_shows_the_table_and_escapes_queue_names_in_the_chart(
    partition: models.Partition, viewer: Any
) -> None:
    models.CompletedApplication.objects.create(
        partition=partition,
        app_id="evil",
        queue="root.<b>evil</b>",
        finished_at=datetime(2026, 9, 3, tzinfo=UTC),
        preempted={"UNKNOWN": {"vcore": 7_200_000}},
        read_at=T0,
    )
    client = Client()
    client.force_login(viewer)
    page = client.get("/work-lost/", {"partition": "default"})
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-testid="work-lost-table"' in html
    assert "<b>evil</b>" not in html
    figure = json.loads(
        html.split('id="work-lost-figure" type="application/json">', 1)[1].split("</script>", 1)[0]
    )
    traces = {t["name"]: t for t in figure["data"]}
    evil = traces["root.&lt;b&gt;evil&lt;/b&gt;"]
    assert evil["type"] == "bar"
    assert any("root.&lt;b&gt;evil&lt;/b&gt;" in h for h in evil["hovertext"])
    assert "lost 2.000 core-hours of vcore" in evil["hovertext"][evil["x"].index("2026-09-03")]
    # the chart of another type, chosen in the query
    gpu = client.get("/work-lost/", {"partition": "default", "type": "nvidia.com/gpu"})
    assert "Lost nvidia.com/gpu per day" in gpu.content.decode()


def test_the_page_names_a_bad_filter(partition: models.Partition, viewer: Any) -> None:
    client = Client()
    client.force_login(viewer)
    page = client.get("/work-lost/", {"since": "2026-09-03", "until": "2026-09-01"})
    assert page.status_code == 200
    assert "since: 2026-09-03 is after until (2026-09-01)" in page.content.decode()


def test_the_total_row_sums_every_column(partition: models.Partition, viewer: Any) -> None:
    """Issue 38: the total row was empty but for the lost work; it sums the applications,
    those with lost work and the observed victims of the rows above it too."""
    for i, (queue, lost) in enumerate((("root.a", 3_600_000), ("root.b", 0))):
        models.CompletedApplication.objects.create(
            partition=partition,
            app_id=f"app-{i}",
            queue=queue,
            finished_at=datetime(2026, 9, 3, tzinfo=UTC),
            preempted={"UNKNOWN": {"vcore": lost}} if lost else {},
            read_at=T0,
        )
    client = Client()
    client.force_login(viewer)
    html = client.get("/work-lost/", {"partition": "default"}).content.decode()
    table = html.split('data-testid="work-lost-table"', 1)[1].split("</table>", 1)[0]
    body = table.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    rows = [
        [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)]
        for r in re.findall(r"<tr>(.*?)</tr>", body, re.S)
    ]
    assert len(rows) >= 2
    row = table.split('data-testid="work-lost-totals"', 1)[1].split("</tr>", 1)[0]
    total = [c.strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)]
    assert total[0] == "total"
    assert int(total[1]) == sum(int(r[2]) for r in rows)
    assert int(total[2]) == sum(int(r[3]) for r in rows)
    assert int(total[-2]) == sum(int(r[-2]) for r in rows)
    assert all(cell for cell in total)
