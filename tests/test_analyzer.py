from hypothesis import given
from hypothesis import strategies as st

from layersearch.ranking.analyzer import (
    analyze,
    analyze_query,
    normalize,
    query_words,
    split_identifier,
)


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
    # a comparison's "than" is a stop word like "that": no query token of its own
    assert analyze_query("stadiums with more than 100 seats") == ["stadium", "more", "100", "seat"]
    assert [w for w, _ in query_words("older than 20")] == ["older"]


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


def test_abbreviations_add_their_word_on_both_sides() -> None:
    from layersearch.ranking.analyzer import ABBREVIATIONS

    # the abbreviation stays (an older index still matches it) and its word is added
    assert analyze("order_qty") == ["order_qty", "order", "qti", "quantiti"]
    assert set(analyze("quantity")) <= set(analyze("qty"))
    assert "quantiti" in analyze_query("total qty")
    assert "number" in analyze("num_of_staff") and "number" in analyze_query("staff number")
    # ambiguous short words are not in the table
    assert not {"no", "min", "id", "cat"} & ABBREVIATIONS.keys()


def test_query_compounds_close_open_compounds() -> None:
    from layersearch.ranking.analyzer import query_compounds

    assert query_compounds("How many high schoolers are there?") == ["highschool"]
    assert analyze("Highschooler") == ["highschool"]
    assert query_compounds("first name and zip code") == ["firstnam", "zipcod"]
    # stop words and identifiers break pairs; nothing from one word
    assert query_compounds("the orders of order_id") == []
    assert query_compounds("revenue") == []


def test_counting_phrases_ask_how_many() -> None:
    # "the number of X" and "count the X" say "how many X": no `number` or `count` column meant
    assert analyze_query("Count the number of countries in Asia.") == ["countri", "asia"]
    assert analyze_query("What is the number of employees?") == ["employe"]
    assert analyze_query("a count of orders") == ["order"]
    assert analyze_query("Find the total number of players.") == ["player"]
    assert analyze_query("total revenue") == ["total", "revenu"]
    # elsewhere the words name columns, and documents keep them always
    assert analyze_query("flight number of Jetblue") == ["flight", "jetblu"]
    assert "number" in analyze_query("flight number")
    assert analyze_query("count") == ["count"] and analyze_query("number of") == ["number"]
    assert "count" in analyze_query("stations by dock count")
    assert "number" in analyze("number of products")
    assert analyze_query("number_of_orders") == ["number_of_orders", "number", "order"]


def test_aggregate_words_before_what_they_aggregate_are_not_schema_words() -> None:
    # AVG, MAX and MIN named before a noun say which aggregate, as "the number of" does
    def schema(text: str) -> list[str]:
        return analyze_query(text, sql_words=False)

    assert schema("What is the average age?") == ["age"]
    assert schema("the minimum, average, and maximum weight") == ["weight"]
    assert schema("the mean of the prices") == ["price"]
    assert schema("max speed") == ["speed"]
    assert query_words("the average age", sql_words=False) == [("age", "age")]
    # alone, last, or in a document (a column named Average) they stay
    assert schema("average") == ["averag"] and schema("which maximum") == ["maximum"]
    assert schema("highest average attendance") == ["highest", "attend"]
    assert "averag" in analyze("average attendance")
    # text matched against text (a saved example) keeps them: they tell examples apart
    assert analyze_query("What is the average age?") == ["averag", "age"]


def test_order_by_phrases_are_not_schema_words() -> None:
    def schema(text: str) -> list[str]:
        return analyze_query(text, sql_words=False)

    assert schema("List the names in descending order of age.") == ["name", "age"]
    assert schema("Sort the services in alphabetical order.") == ["servic"]
    assert schema("names sorted alphabetically") == ["name"]
    assert schema("customers ordered by date") == ["custom", "date"]
    # "order" that is not ORDER BY stays: a schema's orders
    assert schema("the total of each order") == ["total", "order"]
    assert schema("How many orders are there?") == ["order"]
    assert schema("increasing population") == ["increas", "popul"]
    # a question of nothing but the phrase keeps its words rather than none
    assert schema("in descending order") == ["descend", "order"]
    assert query_words("in descending order", sql_words=False) == [
        ("descending", "descend"),
        ("order", "order"),
    ]
    assert analyze_query("in descending order of age") == ["descend", "order", "age"]
