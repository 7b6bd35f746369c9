"""The fixture vault parses as documented, case by awkward case."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from layersearch.corpora.vault import iter_notes, load_config, load_note, parse_note, scan_vault


@pytest.fixture(scope="module")
def notes(vault: Path) -> dict:
    return {n.slug: n for n in iter_notes(vault)}


def test_scan_skips_hidden_trash_and_template_folders(vault: Path, notes: dict) -> None:
    assert len(notes) >= 60
    rels = [p.relative_to(vault).as_posix() for p in scan_vault(vault)]
    assert not [r for r in rels if r.startswith((".obsidian/", ".trash/", "Templates/"))]
    assert (vault / ".obsidian" / "snippets" / "readme.md").is_file()
    assert (vault / "Templates" / "Meeting.md").is_file()
    assert rels == sorted(rels, key=lambda r: r[:-3])


def test_list_tags_and_nested_tags(notes: dict) -> None:
    assert notes["Metrics/Net revenue"].tags == ("finance/reporting", "metric", "revenue")
    assert notes["Metrics/Monthly active users"].tags == ("engagement", "metric", "product/app")


def test_string_tags_are_split_not_iterated(notes: dict) -> None:
    assert notes["Metrics/Gross merchandise value"].tags == ("metric", "revenue")
    assert notes["Runbooks/Refresh the executive dashboard"].tags == ("exec-metrics", "runbook")
    assert notes["Personal/Career goals 2024"].tags == ("career", "goals")


def test_inline_tags_join_frontmatter_tags(notes: dict) -> None:
    churn = notes["Metrics/Churn rate"]
    assert {"subscriptions", "kpi", "churn"} <= set(churn.tags)
    idea = notes["Inbox/idea - anomaly detection on revenue"]
    assert idea.tags == ("data-quality", "idea", "monitoring")


def test_no_frontmatter_and_title_from_heading_or_file_name(notes: dict) -> None:
    journal = notes["Personal/Journal 2024-03-01"]
    assert journal.frontmatter == {} and journal.problems == ()
    assert journal.title == "Journal — 1 March"
    thought = notes["Inbox/quick thought on cohort windows"]
    assert thought.title == "quick thought on cohort windows"
    assert notes["Metrics/Net revenue"].title == "Net revenue"


def test_crlf_note_reads_like_lf(notes: dict, vault: Path) -> None:
    rel = "Incidents/2024/2024-03-12 Timezone shift in daily revenue.md"
    assert b"\r\n" in (vault / rel).read_bytes()
    note = notes[rel[:-3]]
    assert "\r" not in note.body
    assert note.title == "Timezone shift in daily revenue"
    assert note.created == date(2024, 3, 12) and note.updated == date(2024, 3, 15)
    assert note.note_type == "incident" and note.problems == ()


def test_bom_before_frontmatter(notes: dict, vault: Path) -> None:
    assert (vault / "Inbox/Vendor call notes.md").read_bytes().startswith(b"\xef\xbb\xbf---")
    note = notes["Inbox/Vendor call notes"]
    assert note.note_type == "meeting" and note.tags == ("meeting", "vendor")
    assert not note.body.startswith("\ufeff")


def test_broken_yaml_is_reported_and_salvaged(notes: dict) -> None:
    late = notes["Incidents/2024/2024-02-07 Late orders feed"]
    assert any("not valid YAML at line 2" in p for p in late.problems)
    assert late.title == "Incident: late orders feed"
    assert late.status == "resolved" and late.created == date(2024, 2, 7)
    questions = notes["Projects/Alpha/Open questions"]
    assert any("not valid YAML" in p for p in questions.problems)
    assert questions.tags == ("project/alpha", "questions")


def test_dates_in_several_formats(notes: dict) -> None:
    cases = {
        "Meetings/2024/2024-03-18 Marketing attribution workshop": (2024, 3, 18),
        "Meetings/2024/2024-04-15 Quarterly planning": (2024, 4, 15),
        "Meetings/2024/2024-06-24 Data platform roadmap review": (2024, 6, 24),
        "Incidents/2024/2024-05-20 Currency conversion nulls": (2024, 5, 15),
        "Metrics/Gross merchandise value": (2023, 11, 2),
    }
    for slug, ymd in cases.items():
        assert notes[slug].created == date(*ymd), slug


def test_unreadable_date_is_a_problem_and_updated_falls_back_to_mtime(
    notes: dict, vault: Path
) -> None:
    note = notes["Personal/Vacation planning"]
    assert note.created is None
    assert any("sometime in spring" in p for p in note.problems)
    assert note.updated is not None


def test_same_title_in_two_folders_has_two_slugs(notes: dict) -> None:
    overviews = [s for s, n in notes.items() if n.title == "Overview"]
    assert sorted(overviews) == ["Projects/Alpha/Overview", "Projects/Churn model/Overview"]


def test_type_and_note_type_both_work(notes: dict) -> None:
    assert notes["Metrics/Monthly active users"].note_type == "metric"  # note_type:
    assert notes["Metrics/Net revenue"].note_type == "metric"  # type:


def test_undeclared_domain_is_recorded_with_config(notes: dict) -> None:
    note = notes["Projects/Customer 360"]
    assert note.domain == "sales"
    assert any("not one the vault declares" in p for p in note.problems)


def test_every_fixture_value_is_declared_except_the_deliberate_one(
    notes: dict, vault: Path
) -> None:
    config = load_config(vault)
    odd = {
        s
        for s, n in notes.items()
        if (n.domain and n.domain not in config.domains)
        or (n.note_type and n.note_type not in config.note_types)
        or (n.status and n.status not in config.statuses)
    }
    assert odd == {"Projects/Customer 360"}


def test_load_note_by_slug_matches_parse(vault: Path) -> None:
    slug = "Runbooks/On-call handbook"
    assert load_note(vault, slug) == parse_note(vault, vault / f"{slug}.md")
    assert load_note(vault, "runbooks/on-call HANDBOOK").slug == slug
