"""Facts an LLM extracts from each session at import (issue #22), against the local
OpenAI-compatible chat server: extraction, the cache, bad answers, API errors, the
facts field in message search, and that all of it is off by default."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from layersearch.cli import main
from layersearch.corpora.conversations.facts import FactsAnswerError, parse_answer
from layersearch.corpora.conversations.search import ConversationService
from layersearch.embed.llm import ChatModel, make_llm
from layersearch.embed.testserver import ChatServer, serve_chat
from layersearch.errors import ConfigError
from layersearch.store import migrations
from layersearch.store.duckdb import DuckDBStore

REPO = Path(__file__).resolve().parents[2]
MINI = REPO / "fixtures" / "conversations" / "locomo" / "mini.json"
#: words of no turn of the mini conversation, only of the fact the server gives
FACT = "Priya built the churn dashboard with the business intelligence tool Metabase"
_LINE = re.compile(r"^\[(\d+)\] [^:]*: (.*)$", re.MULTILINE)


def answer_facts(messages: list[dict[str, Any]]) -> str:
    """A deterministic extractor: a fact for the Metabase turn, and one per question."""
    facts = []
    for n, text in _LINE.findall(messages[-1]["content"]):
        if "Metabase" in text:
            facts.append({"fact": FACT, "turns": [int(n)]})
        elif text.endswith("?"):
            facts.append({"fact": f"Someone asked: {text}", "turns": [int(n)]})
    return json.dumps({"facts": facts})


def llm_for(server: ChatServer) -> ChatModel:
    llm = make_llm("litellm:openai/fake-chat", {"api_base": server.base_url, "api_key": "x"})
    assert llm is not None
    return llm


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ConversationService]:
    monkeypatch.setenv("LAYERSEARCH_INDEX_DIR", str(tmp_path / "indexes"))
    svc = ConversationService(DuckDBStore(tmp_path / "s.duckdb"))
    svc.import_path(MINI)
    yield svc


def turn_ids(svc: ConversationService, query: str) -> list[str | None]:
    return [h.turn_id for h in svc.search_messages(query, 5, channels=["fulltext"]).hits]


def test_facts_are_extracted_once_and_searchable(service: ConversationService) -> None:
    assert turn_ids(service, "business intelligence") == []  # no turn has these words
    with serve_chat(answer_facts) as server:
        report = service.extract_facts(llm_for(server))
        assert server.calls == report.sessions == report.extracted == 2
        assert (report.cached, report.failed, report.warnings) == (0, 0, [])
        assert report.facts == 3  # the Metabase turn, two questions
        prompt = server.requests[0].inputs[-1]
        assert prompt.startswith("[1] Priya (3 March 2024): Hi Tomás!")
        # the fact's words find its turn, and only through the facts field
        assert turn_ids(service, "business intelligence") == ["D1:3"]
        hit = service.search_messages("business intelligence", 1, channels=["fulltext"]).hits[0]
        assert hit.channels == {"fulltext": 1}
        # a second import sends nothing: every session is cached
        again = service.extract_facts(llm_for(server))
        assert server.calls == 2
        assert (again.sessions, again.cached, again.extracted) == (2, 2, 0)


def test_a_changed_session_is_sent_again_and_the_others_are_not(
    service: ConversationService, tmp_path: Path
) -> None:
    with serve_chat(answer_facts) as server:
        service.extract_facts(llm_for(server))
        data = json.loads(MINI.read_text(encoding="utf-8"))
        data[0]["conversation"]["session_2"][1]["text"] = "Great, they want weekly churn by plan."
        newer = tmp_path / "newer.json"
        newer.write_text(json.dumps(data), encoding="utf-8")
        service.import_path(newer)
        report = service.extract_facts(llm_for(server))
        assert (report.cached, report.extracted, server.calls) == (1, 1, 3)
        assert "weekly churn by plan" in server.requests[-1].inputs[-1]


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("Here are the facts: Priya likes Metabase.", "not JSON"),
        ('{"facts": [{"fact": "x", "turns": [9]}]}', "names turn 9"),
        ('{"facts": [{"fact": "x"}]}', "fact 1 must be"),
        (500, "InternalServerError"),
        (401, "authentication failed"),
    ],
)
def test_a_bad_answer_or_an_api_error_is_a_warning_naming_the_session(
    service: ConversationService, reply: str | int, reason: str
) -> None:
    def answer(messages: list[dict[str, Any]]) -> str | int:
        return reply if "exec review" in messages[-1]["content"] else answer_facts(messages)

    with serve_chat(answer) as server:
        report = service.extract_facts(llm_for(server))
        assert (report.extracted, report.failed) == (1, 1)
        (warning,) = report.warnings
        assert warning.startswith(
            "no facts for session 2 of conversation locomo:conv-mini, 2024-03-12, from turn D2:1: "
        ), warning
        assert reason in warning
        # the good session's facts are kept and searchable, the failed one is asked again
        assert turn_ids(service, "business intelligence") == ["D1:3"]
        again = service.extract_facts(llm_for(server))
        assert (again.cached, again.failed, server.calls) == (1, 1, 3)


def test_answer_format_is_strict() -> None:
    assert parse_answer('```json\n{"facts": [{"fact": " a  b ", "turns": [2, 1, 2]}]}\n```', 2) == [
        ("a b", [0, 1])
    ]
    assert parse_answer('{"facts": []}', 1) == []
    for bad in (
        "[]",
        '{"facts": [], "notes": 1}',
        '{"facts": [{"fact": "", "turns": [1]}]}',
        '{"facts": [{"fact": "x", "turns": []}]}',
        '{"facts": [{"fact": "x", "turns": [true]}]}',
        '{"facts": [{"fact": "x", "turns": ["1"]}]}',
        '{"facts": [{"fact": "x", "turns": [1], "confidence": 0.9}]}',
    ):
        with pytest.raises(FactsAnswerError):
            parse_answer(bad, 3)


def test_off_by_default_and_specs_are_checked(tmp_path: Path) -> None:
    assert make_llm(None) is None and make_llm("none") is None and make_llm(" ") is None
    with pytest.raises(ConfigError, match="litellm:<model>"):
        make_llm("openai/gpt-4o-mini")
    with pytest.raises(ConfigError, match="unknown facts LLM option"):
        make_llm("litellm:openai/x", {"api_url": "http://x"})


def test_without_facts_the_index_is_what_it_was(service: ConversationService) -> None:
    from layersearch.ranking.fulltext import FullTextIndex

    snap = service.snapshot()
    assert snap.messages_ft.boosts == service.config.boosts()  # no facts field
    where = Path(service.store.index_dir) / "messages"
    before = FullTextIndex.read_stamp(where)
    assert before == f"conversations-{snap.version}-{service.config.document_shape()}"
    with serve_chat(answer_facts) as server:
        service.extract_facts(llm_for(server))
    snap = service.snapshot()
    # facts stored: the index gets the field and a stamp of its own, so it is rebuilt
    assert snap.messages_ft.boosts == {**service.config.boosts(), "facts": 0.3}
    stamp = FullTextIndex.read_stamp(where)
    assert stamp is not None and stamp.endswith("-facts1") and stamp != before


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def test_cli_import_reports_facts_and_the_cache(tmp_path: Path) -> None:
    store = str(tmp_path / "s.duckdb")
    base = ["--store", store, "--embedder", "none"]
    code, out, _ = run(*base, "conversations", "import", str(MINI), "--json")
    assert code == 0 and "facts" not in json.loads(out)  # off by default: nothing asked
    with serve_chat(answer_facts) as server:
        config = tmp_path / "ls.toml"
        config.write_text(
            f'facts_llm = "litellm:openai/fake-chat"\n[facts_llm_options]\n'
            f'api_base = "{server.base_url}"\napi_key = "x"\n',
            encoding="utf-8",
        )
        cmd = [*base, "--config", str(config), "conversations", "import", str(MINI)]
        code, out, _ = run(*cmd, "--json")
        assert code == 0, out
        facts = json.loads(out)["facts"]
        counts = [facts[k] for k in ("sessions", "extracted", "cached", "failed")]
        assert counts == [2, 2, 0, 0]
        code, out, _ = run(*cmd)
        assert code == 0 and "2 sessions, 0 extracted (0 facts), 2 cached, 0 failed" in out
        assert server.calls == 2
        code, out, _ = run(*cmd, "--facts-llm", "none", "--json")
        assert code == 0 and "facts" not in json.loads(out) and server.calls == 2
    code, _, err = run(*base, "conversations", "import", str(MINI), "--facts-llm", "gpt-4")
    assert code == 2 and "is not a facts LLM spec" in err


def test_the_env_var_turns_it_on(tmp_path: Path) -> None:
    store = str(tmp_path / "s.duckdb")
    with serve_chat(lambda messages: 503) as server:
        env = {"LAYERSEARCH_FACTS_LLM": "litellm:openai/fake-chat"}
        config = tmp_path / "ls.toml"
        config.write_text(
            f'[facts_llm_options]\napi_base = "{server.base_url}"\napi_key = "x"\nmax_tries = 1\n',
            encoding="utf-8",
        )
        code, out, _ = run(
            "--store", store, "--embedder", "none", "--config", str(config),
            "conversations", "import", str(MINI), "--json", env=env,
        )  # fmt: skip
        assert code == 0, out
        data = json.loads(out)
        assert data["import"]["messages_added"] == 5  # the import itself is complete
        assert data["facts"]["failed"] == 2 and server.calls == 2
        first = data["facts"]["warnings"][0]
        assert first.startswith("no facts for session 1 of conversation locomo:conv-mini")
        assert "rate limited" in first


def test_a_store_from_before_facts_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    DuckDBStore(path).close()
    import duckdb

    con = duckdb.connect(str(path))
    con.execute("DROP TABLE conversation_facts")
    con.execute("DELETE FROM schema_version WHERE version >= 6")
    con.close()
    store = DuckDBStore(path)
    svc = ConversationService(store)
    svc.import_path(MINI)
    with serve_chat(answer_facts) as server:
        assert svc.extract_facts(llm_for(server)).extracted == 2
    with store.connect(write=False) as c:
        versions = [
            r[0] for r in c.execute("SELECT version FROM schema_version ORDER BY 1").fetchall()
        ]
    assert 6 in versions and versions[-1] == migrations.LATEST


def test_a_project_file_may_not_say_where_the_facts_llm_sends_keys(tmp_path: Path) -> None:
    from layersearch.config import load_settings

    (tmp_path / "layersearch.toml").write_text(
        'facts_llm = "litellm:openai/x"\n[facts_llm_options]\napi_base = "http://evil"\n',
        encoding="utf-8",
    )
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_STATE_HOME": str(tmp_path / "st")}
    with pytest.raises(ConfigError, match=r"facts_llm_options\.api_base"):
        load_settings(env=env, cwd=tmp_path)
    trusted = load_settings(env={**env, "LAYERSEARCH_TRUST_PROJECT_CONFIG": "1"}, cwd=tmp_path)
    assert trusted.facts_llm == "litellm:openai/x"
    assert trusted.facts_llm_options == {"api_base": "http://evil"}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    off = load_settings(env={**env, "LAYERSEARCH_FACTS_LLM": " none "}, cwd=elsewhere)
    assert off.facts_llm == "none" and make_llm(off.facts_llm) is None


def test_a_long_session_is_sent_in_parts_of_whole_turns(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from layersearch.corpora.conversations.facts import MAX_PROMPT_CHARS, MAX_TURN_CHARS
    from layersearch.corpora.conversations.records import MessageDraft, assemble_conversation

    when = datetime(2024, 5, 8, 9, 0, tzinfo=UTC)
    drafts = [
        MessageDraft(role="user", content=f"word{i} " + "x" * 5000, created=when) for i in range(10)
    ]
    conv = assemble_conversation(
        source="generic", native_id="long", title=None, created=None, updated=None, drafts=drafts
    )
    assert conv is not None
    svc = ConversationService(DuckDBStore(tmp_path / "s.duckdb"))
    svc.import_conversations([conv])

    def answer(messages: list[dict[str, Any]]) -> str:
        first = _LINE.findall(messages[-1]["content"])[0][1].split()[0]
        fact = "zebra crossing" if first == "word5" else "giraffe"
        return json.dumps({"facts": [{"fact": fact, "turns": [1]}]})

    with serve_chat(answer) as server:
        report = svc.extract_facts(llm_for(server))
        prompts = [r.inputs[-1] for r in server.requests]
    assert report.sessions == report.extracted == len(prompts) == 2
    assert all(len(p) <= MAX_PROMPT_CHARS for p in prompts)
    assert [p.count("\n[") + 1 for p in prompts] == [5, 5]  # whole turns, numbered per part
    assert prompts[1].startswith("[1] user (8 May 2024): word5 ")
    assert f"{'x' * (MAX_TURN_CHARS - 6)} …\n" in prompts[0]  # a long turn is cut
    ids = [h.message_id for h in svc.search_messages("zebra", 3, channels=["fulltext"]).hits]
    assert ids == [conv.messages[5].id]


def test_eval_conversations_with_facts_and_its_cache(tmp_path: Path) -> None:
    cache = str(tmp_path / "eval")
    cmd = ["--embedder", "none", "eval", "conversations", "--locomo", str(MINI)]
    cmd += ["--channels", "fulltext", "--cache", cache, "--json"]
    code, out, _ = run(*cmd)
    assert code == 0 and "facts" not in json.loads(out)  # off unless the flag is given
    with serve_chat(answer_facts) as server:
        config = tmp_path / "ls.toml"
        config.write_text(
            f'[facts_llm_options]\napi_base = "{server.base_url}"\napi_key = "x"\n',
            encoding="utf-8",
        )
        with_facts = ["--config", str(config), *cmd, "--facts-llm", "litellm:openai/fake-chat"]
        code, out, _ = run(*with_facts)
        assert code == 0, out
        assert json.loads(out)["facts"]["extracted"] == 2 and server.calls == 2
        code, out, _ = run(*with_facts)  # the cached eval store: nothing sent again
        assert code == 0 and json.loads(out)["facts"]["cached"] == 2 and server.calls == 2
