"""Parsing rules on small hand-made vaults."""

from __future__ import annotations

import os
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from layersearch.corpora.vault import (
    matches,
    parse_date,
    parse_note,
    plan_sync,
    resolve_slug,
    scan_vault,
    slug_for,
    validate_filters,
)
from layersearch.corpora.vault.config import VaultConfig
from layersearch.corpora.vault.notes import iter_notes
from layersearch.errors import ConfigError, NotFound


def write(root: Path, rel: str, data: bytes | str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def note_of(tmp_path: Path, text: str | bytes, rel: str = "n.md"):
    return parse_note(tmp_path, write(tmp_path, rel, text))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("a", ("a",)),
        ("#Finance", ("finance",)),
        ("metric, revenue", ("metric", "revenue")),
        ("#a #b/c", ("a", "b/c")),
        ("longtagname", ("longtagname",)),
        ("[x, 'Y', 2024]", ("2024", "x", "y")),
    ],
)
def test_frontmatter_tags(tmp_path: Path, value: str, expected: tuple) -> None:
    assert note_of(tmp_path, f"---\ntags: {value}\n---\nbody\n").tags == expected


def test_inline_tags_ignore_code_links_headings_and_numbers(tmp_path: Path) -> None:
    body = (
        "# Heading\n#real and #Nested/Tag/ here; #1984 is not a tag, #y1984 is.\n"
        "`#code` [[Note#Section]] [x](#anchor) http://x.org/#frag &#123;\n"
        "```\n#incode\n```\n"
    )
    assert note_of(tmp_path, body).tags == ("nested/tag", "real", "y1984")


def test_title_rules(tmp_path: Path) -> None:
    assert note_of(tmp_path, "---\ntitle: T\n---\n# H\n").title == "T"
    assert note_of(tmp_path, "text\n## Second level ##\n").title == "Second level"
    assert note_of(tmp_path, "```\n# not a heading\n```\nplain\n", "my note.md").title == "my note"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-03-05", date(2024, 3, 5)),
        ("2024/03/05", date(2024, 3, 5)),
        ("2024.03.05", date(2024, 3, 5)),
        ("March 5, 2024", date(2024, 3, 5)),
        ("Mar 5th, 2024", date(2024, 3, 5)),
        ("5 March 2024", date(2024, 3, 5)),
        ("2024-03-05T10:00", date(2024, 3, 5)),
        ("2024-03-05 10:00:00", date(2024, 3, 5)),
        ("2024-03-05T23:30:00Z", date(2024, 3, 5)),
        (datetime(2024, 3, 5, 9), date(2024, 3, 5)),
        ("next week", None),
        ("2024-02-30", None),
        (20240305, None),
    ],
)
def test_parse_date(text: object, expected: date | None) -> None:
    assert parse_date(text) == expected


def test_yaml_dates_and_invalid_yaml_date(tmp_path: Path) -> None:
    note = note_of(tmp_path, "---\ncreated: 2024-03-05\nupdated: 2024-03-06 10:00:00\n---\nx\n")
    assert (note.created, note.updated) == (date(2024, 3, 5), date(2024, 3, 6))
    assert note.frontmatter["created"] == "2024-03-05"  # JSON-safe
    bad = note_of(tmp_path, "---\ncreated: 2024-02-30\nstatus: Draft\n---\nx\n")
    assert bad.status == "draft" and bad.created is None
    assert any("not valid YAML" in p for p in bad.problems)


def test_updated_falls_back_to_mtime(tmp_path: Path) -> None:
    path = write(tmp_path, "n.md", "---\nupdated: whenever\n---\nx\n")
    stamp = datetime(2023, 7, 14, 12, tzinfo=UTC).timestamp()
    os.utime(path, (stamp, stamp))
    note = parse_note(tmp_path, path)
    assert note.updated == date(2023, 7, 14)
    assert any("whenever" in p for p in note.problems)


def test_bad_content_becomes_problems(tmp_path: Path) -> None:
    note = note_of(tmp_path, b"---\ntitle: ok\n---\nbad \xff\xfe bytes\x00 here\n")
    assert note.title == "ok" and "\x00" not in note.body and "\ufffd" in note.body
    assert any("UTF-8" in p for p in note.problems) and any("NUL" in p for p in note.problems)
    unclosed = note_of(tmp_path, "---\ntitle: x\nbody without end\n")
    assert unclosed.title == "n" and any("never closed" in p for p in unclosed.problems)
    listy = note_of(tmp_path, "---\n- a\n- b\n---\n# T\n")
    assert listy.title == "T" and any("not a mapping" in p for p in listy.problems)
    both = note_of(tmp_path, "---\ntype: Meeting\nnote_type: decision\n---\nx\n")
    assert both.note_type == "decision" and any("using note_type" in p for p in both.problems)
    utf16 = note_of(tmp_path, "---\ntitle: wide\n---\nx\n".encode("utf-16"))
    assert utf16.title == "wide" and utf16.problems == ()


def test_alias_bomb_is_refused(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 6)]
    note = note_of(tmp_path, "---\n" + "\n".join(lines) + "\ntitle: t\n---\nx\n")
    assert note.frontmatter == {} and any("values" in p for p in note.problems)


def test_content_hash_is_of_raw_bytes(tmp_path: Path) -> None:
    import hashlib

    raw = b"\xef\xbb\xbf# T\r\n"
    assert note_of(tmp_path, raw).content_hash == hashlib.sha256(raw).hexdigest()


def test_slugs(tmp_path: Path) -> None:
    assert slug_for("A/b c/Note.md") == "A/b c/Note"
    assert slug_for("x\\y.md") == "x/y"
    note = note_of(tmp_path, "x", "Sub Dir/My Note.md")
    assert (note.slug, note.path) == ("Sub Dir/My Note", "Sub Dir/My Note.md")


@pytest.mark.parametrize("slug", ["../etc/passwd", "a/../../x", "./a", "a/./b", "..\\x"])
def test_resolve_slug_rejects_traversal(tmp_path: Path, slug: str) -> None:
    write(tmp_path, "a.md", "x")
    with pytest.raises(ConfigError, match="leave the vault"):
        resolve_slug(tmp_path, slug)


@pytest.mark.parametrize("slug", ["/etc/passwd", "C:/x", "", "  "])
def test_resolve_slug_rejects_absolute_and_empty(tmp_path: Path, slug: str) -> None:
    with pytest.raises(ConfigError):
        resolve_slug(tmp_path, slug)


def test_resolve_slug_missing_suggests(tmp_path: Path) -> None:
    write(tmp_path, "Metrics/Net revenue.md", "x")
    write(tmp_path, ".obsidian/secret.md", "x")
    assert resolve_slug(tmp_path, "Metrics/Net revenue.md").name == "Net revenue.md"
    with pytest.raises(NotFound, match="did you mean: 'Metrics/Net revenue'"):
        resolve_slug(tmp_path, "Metrics/Net revenu")
    with pytest.raises(NotFound):
        resolve_slug(tmp_path, ".obsidian/secret")


def test_symlinks_leaving_the_vault_are_skipped_and_refused(tmp_path: Path) -> None:
    vault, outside = tmp_path / "vault", tmp_path / "outside"
    write(outside, "secret.md", "secret")
    write(vault, "in.md", "in")
    (vault / "link.md").symlink_to(outside / "secret.md")
    (vault / "dir").symlink_to(outside, target_is_directory=True)
    (vault / "loop").symlink_to(vault, target_is_directory=True)
    assert [p.name for p in scan_vault(vault)] == ["in.md"]
    with pytest.raises(ConfigError, match="outside"):
        resolve_slug(vault, "link")
    with pytest.raises(ConfigError, match="outside"):
        parse_note(vault, outside / "secret.md")
    with pytest.raises(ConfigError, match="outside"):
        parse_note(vault, Path("../outside/secret.md"))
    with pytest.raises(NotFound):
        parse_note(vault, Path("missing.md"))


def test_config_exclude_and_missing_root(tmp_path: Path) -> None:
    write(tmp_path, "keep.md", "x")
    write(tmp_path, "Archive/old.md", "x")
    write(tmp_path, "drafts/a.tmp.md", "x")
    config = VaultConfig(exclude=("Archive/", "**/*.tmp.md"))
    assert [p.name for p in scan_vault(tmp_path, config=config)] == ["keep.md"]
    with pytest.raises(NotFound):
        list(scan_vault(tmp_path / "nope"))
    with pytest.raises(ConfigError):
        list(scan_vault(tmp_path / "keep.md"))


def test_iter_notes_reports_progress(tmp_path: Path) -> None:
    write(tmp_path, "a.md", "x")
    write(tmp_path, "b/c.md", "y")
    seen: list[tuple[int, int, str]] = []
    slugs = [n.slug for n in iter_notes(tmp_path, progress=lambda *a: seen.append(a))]
    assert slugs == ["a", "b/c"]
    assert seen == [(1, 2, "a"), (2, 2, "b/c")]


def test_plan_sync_handles_change_delete_and_rename() -> None:
    plan = plan_sync({"a": "1", "b": "2", "old": "3"}, {"a": "1", "b": "9", "new": "3"})
    assert plan.unchanged == ("a",) and plan.changed == ("b",)
    assert plan.added == ("new",) and plan.deleted == ("old",)


def test_matches_filters(tmp_path: Path) -> None:
    note = note_of(
        tmp_path,
        "---\ndomain: Finance\ntype: metric\nstatus: active\ntags: [project/alpha]\n"
        "created: 2024-01-10\nupdated: 2024-03-01\n---\nx\n",
    )
    config = VaultConfig()
    assert matches(note, validate_filters(config, domain="finance", tags=["project"]))
    assert matches(note, validate_filters(config, date_range=("2024-02-01", None)))
    assert not matches(
        note, validate_filters(config, date_range="2024-02-01..", date_field="created")
    )
    assert not matches(note, validate_filters(config, tags="proj"))
    assert not matches(note, validate_filters(config, note_type="howto"))
