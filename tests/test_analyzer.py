from hypothesis import given
from hypothesis import strategies as st

from layersearch.ranking.analyzer import analyze, analyze_query, normalize, split_identifier


def test_identifiers_split_and_kept_whole() -> None:
    assert analyze("order_total") == ["order_total", "order", "total"]
    assert analyze("orderTotal") == ["ordertotal", "order", "total"]
    assert analyze("orders.total") == ["orders.total", "order", "total"]
    assert split_identifier("HTTPServerError") == ["http", "server", "error"]


def test_stemming_and_case() -> None:
    assert analyze("Revenues") == analyze("revenue")
    assert analyze("ÉCOLE") == ["école"]


def test_query_drops_stop_words_and_dedupes() -> None:
    assert analyze_query("How many singers do we have? singers") == ["singer"]
    assert analyze("how many") == ["how", "mani"]


def test_hostile_strings_give_tokens_or_nothing() -> None:
    for text in [
        '"',
        "'",
        ":",
        "(",
        "*",
        "~",
        "^",
        "AND",
        "-",
        "a:b(c)*",
        "\x00",
        "🎉" * 50,
        "x" * 10_000,
    ]:
        assert isinstance(analyze_query(text), list)
    assert analyze_query("total:(revenue)*") == ["total", "revenu"]


@given(st.text())
def test_never_raises_and_normalize_is_idempotent(text: str) -> None:
    analyze(text)
    analyze_query(text)
    assert normalize(normalize(text)) == normalize(text)
