"""A page's Markdown split into the prose an engine translates and the literal text it
keeps (translation/engines/markup.py): every literal comes back as it was, whatever the
translation does to the prose around it."""

from __future__ import annotations

import pytest

from bookstructure.words import word_list
from translation.engines import PageInput, PageResult, completeness_problem
from translation.engines.markup import literals_restored, page_language, prose_of, segments_join, segments_split

PAGE = """## 2.5. MEMORY MANAGEMENT

Use `--leak-check=yes` with bz\\_stream and see /usr/share/doc/x.txt or https://example.org/a.

- a list item calling BZ2\\_bzRead()

```
int main(void)
  return 0;
```

| Flag | Usage |
| --- | --- |
| -1 | the small one |

3\\. not a list"""


def test_the_prose_is_split_out_and_every_literal_is_a_placeholder() -> None:
    segments = segments_split(PAGE)

    assert segments.texts == [
        "2.5. MEMORY MANAGEMENT",
        "Use \u27e60\u27e7 with \u27e61\u27e7 and see \u27e62\u27e7 or \u27e63\u27e7.",
        "a list item calling \u27e64\u27e7",
        "Flag",
        "Usage",
        "-1",
        "the small one",
        "3. not a list",
    ]
    assert segments.literals == [
        "`--leak-check=yes`",
        "bz\\_stream",
        "/usr/share/doc/x.txt",
        "https://example.org/a",
        "BZ2\\_bzRead()",
    ]
    assert segments_join(segments, segments.texts) == PAGE  # nothing changed, nothing lost


def test_translated_prose_comes_back_escaped_around_the_literals_and_code() -> None:
    segments = segments_split(PAGE)
    translated = [text.replace("Use", "Usa").replace("the small one", "el *pequeño*") for text in segments.texts]

    page = segments_join(segments, translated)

    assert "Usa `--leak-check=yes` with bz\\_stream and see /usr/share/doc/x.txt" in page
    assert "| -1 | el \\*pequeño\\* |" in page
    assert "```\nint main(void)\n  return 0;\n```" in page
    assert page.endswith("3\\. not a list")  # still no list


def test_a_literal_the_translation_dropped_is_put_back_not_lost() -> None:
    segments = segments_split("Run `make` now.")

    assert segments_join(segments, ["Ejecuta ahora."]) == "Ejecuta ahora. `make`"


def test_a_models_reply_gets_the_sources_code_back_and_a_lost_literal_is_reported() -> None:
    source = "Call `bz_open` first.\n\n```\nint main(void)\n```\n\nThen `bz_read`."
    touched = "Llama `bz_abrir` primero.\n\n```\nint principal(void)\n```\n\nLuego `bz_read`."

    assert literals_restored(source, touched) == (
        "Llama `bz_open` primero.\n\n```\nint main(void)\n```\n\nLuego `bz_read`.",
        [],
    )
    dropped = "Llama bz_abrir primero.\n\n```\nint main(void)\n```\n\nLuego `bz_read`."
    assert literals_restored(source, dropped)[1] == ["`bz_open`"]


def _page(text: str, *, book_language: str | None = "en", structured: bool = True) -> PageInput:
    return PageInput(
        page_id="p",
        index=1,
        text=text,
        image=None,
        source_language=None,
        target_language="es",
        structured=structured,
        book_language=book_language,
    )


@pytest.mark.parametrize(
    "text",
    [
        "# bzip2 and libbzip2\n\nversion 1.0.8",  # a title page
        "```\nint main(int argc, char **argv) {\n  return bz_stream_init(argv);\n}\n```",  # code
        "3.1. Top-level structure \u2026 8\n\n3.2. Error handling \u2026 10",  # contents
    ],
)
def test_a_short_code_or_contents_page_is_read_in_the_books_language(text: str) -> None:
    assert page_language(_page(text), text) == "en"


def test_a_long_page_in_another_language_is_read_in_its_own() -> None:
    french = "Le chat est sur la table et le chien est dans le jardin, mais la maison est grande. " * 3

    assert page_language(_page(french), french) == "fr"


def test_a_page_of_code_kept_verbatim_is_a_complete_translation() -> None:
    source = (
        "Example:\n\n```\n" + "\n".join(f"static int value_{n} = compute(value_{n - 1});" for n in range(40)) + "\n```"
    )
    translated = source.replace("Example:", "Ejemplo:")
    result = PageResult(
        translation=translated,
        source_text=source,
        detected_source_language="en",
        engine="local",
        model="apertium",
        prompt_tokens=1,
        completion_tokens=1,
        cost_usd=0,  # type: ignore[arg-type]
    )

    assert prose_of(source) == "Example:"
    assert completeness_problem(_page(source), result) is None


# The Debian FAQ's 7.14 as its scan reads: commands in listings, the same names in its prose.
FAQ_PAGE = """Now, first get the source package:

```
apt-get source foo
```

and change to the source tree, then run debuild (see debuild(1) and apt-get(8)) to make the package:

```
$ debuild -us -uc
```

If you prefer to do things manually, and don't want to use apt-get, see `https://www.debian.org/doc/`devel-manuals#maint-guide."""


def test_the_names_a_pages_code_uses_are_kept_in_its_prose_and_its_words_are_not() -> None:
    segments = segments_split(FAQ_PAGE, words=word_list("en"))

    assert {"debuild", "apt-get", "debuild(1)", "apt-get(8)"} <= set(segments.literals)  # and manual pages
    # The commands' plain words are still prose: `source`, `make` and `package` are words.
    prose = " ".join(segments.texts)
    assert "first get the source package" in prose
    assert "to make the package" in prose
    assert "don't want to use \u27e6" in prose
    # A URL broken at a line's end, its rest not read as code, is one literal.
    url = "`https://www.debian.org/doc/`devel-manuals#maint-guide"
    assert prose.endswith(f"\u27e6{segments.literals.index(url)}\u27e7.")
    assert segments_join(segments, segments.texts) == FAQ_PAGE


def test_without_the_pages_language_only_its_literal_forms_are_kept() -> None:
    segments = segments_split(FAQ_PAGE)

    assert "apt-get(8)" in segments.literals  # a manual page is a literal in any language
    assert "debuild" not in segments.literals
    assert "run debuild" in " ".join(segments.texts)


def test_footnote_references_and_definitions_come_back_as_they_went_their_text_translated() -> None:
    source = "A mode (WGM)[^4] of a sphere[^1],[^star].\n\n[^4]: The modes occur at wavelengths.\n\n[^star]: A note."
    segments = segments_split(source)

    assert segments.texts == ["A mode (WGM)⟦0⟧ of a sphere⟦1⟧,⟦2⟧.", "The modes occur at wavelengths.", "A note."]
    translated = ["Un modo (WGM)⟦0⟧ de una esfera⟦1⟧,⟦2⟧.", "Los modos ocurren.", "Una nota."]
    assert segments_join(segments, translated) == (
        "Un modo (WGM)[^4] de una esfera[^1],[^star].\n\n[^4]: Los modos ocurren.\n\n[^star]: Una nota."
    )
