"""The completeness check: no page is Approved with an empty, untranslated, leaked or
truncated translation."""

from __future__ import annotations

from decimal import Decimal

import pytest

from translation.engines import PageResult, completeness_problem

ENGLISH = (
    "The house stood at the end of the lane, where the old road turned towards the river. "
    "Every morning the children ran down to the water and every evening they came back tired, "
    "their shoes full of sand and their pockets full of stones that they would forget by the next day."
)
FRENCH = (
    "La maison se dressait au bout du chemin, là où la vieille route tournait vers la rivière. "
    "Chaque matin, les enfants descendaient jusqu'à l'eau et chaque soir ils revenaient fatigués, "
    "les chaussures pleines de sable et les poches pleines de cailloux qu'ils oubliaient le lendemain."
)


def result(translation: str, *, source_text: str = ENGLISH, engine: str = "vllm", language: str | None = "en"):
    return PageResult(
        translation=translation,
        source_text=source_text,
        detected_source_language=language,
        engine=engine,
        model="m",
        prompt_tokens=1,
        completion_tokens=1,
        cost_usd=Decimal("0.000001"),
    )


def assert_refused(problem: str | None, *words: str) -> None:
    assert problem is not None, "the check should have refused this translation"
    for word in words:
        assert word in problem


def test_a_complete_translation_passes(make_page):
    assert completeness_problem(make_page(text=ENGLISH), result(FRENCH)) is None


def test_an_empty_translation_of_a_page_with_text_fails(make_page):
    assert_refused(completeness_problem(make_page(text=ENGLISH), result("  \n")), "empty")


def test_a_blank_page_may_have_an_empty_translation(make_page):
    assert completeness_problem(make_page(text=""), result("", source_text="")) is None


def test_the_source_handed_back_fails_when_the_languages_differ(make_page):
    problem = completeness_problem(make_page(text=ENGLISH), result(ENGLISH))

    assert_refused(problem, "untranslated", "en -> fr")


def test_the_source_handed_back_with_a_few_changes_still_fails(make_page):
    nearly = ENGLISH.replace("house", "maison").replace("river", "rivière")

    assert_refused(completeness_problem(make_page(text=ENGLISH), result(nearly)), "untranslated")


def test_the_same_text_is_fine_when_the_target_is_the_source_language(make_page):
    page = make_page(text=ENGLISH, target_language="en", source_language="en")

    assert completeness_problem(page, result(ENGLISH)) is None


def test_a_page_already_in_the_target_language_may_come_back_as_it_is(make_page):
    page = make_page(text=FRENCH, source_language="en")  # the book is English, this page French

    assert completeness_problem(page, result(FRENCH, source_text=FRENCH)) is None


def test_a_short_title_may_read_the_same_in_both_languages(make_page):
    page = make_page(text="Chapter 12: Paris")

    assert completeness_problem(page, result("Chapter 12: Paris", source_text=page.text)) is None


def test_the_echo_engines_marked_source_passes(make_page):
    page = make_page(text=ENGLISH)

    assert completeness_problem(page, result(f"[echo → fr] {ENGLISH}", engine="echo")) is None


@pytest.mark.parametrize(
    "leak",
    [
        "Translate faithfully and completely: every sentence.",
        "<translation>\n",
        "</page>",
        "Glossary (use these translations exactly):",
        "Here is the translation:",
        "Here\u2019s the translated page.",
    ],
)
def test_prompt_text_or_commentary_in_the_translation_fails(make_page, leak):
    problem = completeness_problem(make_page(text=ENGLISH), result(f"{leak}\n\n{FRENCH}"))

    assert_refused(problem, "translation")


def test_a_phrase_the_source_itself_has_is_not_a_leak(make_page):
    source = ENGLISH + " She said: here is the translation of the letter."
    translated = FRENCH + " Elle dit : here is the translation of the letter."

    assert completeness_problem(make_page(text=source), result(translated, source_text=source)) is None


def test_repeating_the_end_of_the_previous_page_fails(make_page):
    previous = "…and that was how the summer ended, with rain on the roofs and the smell of wet dust in the streets."
    page = make_page(text=ENGLISH, previous_context=previous)

    assert_refused(completeness_problem(page, result(previous + "\n\n" + FRENCH)), "previous page")


def test_a_translation_cut_short_fails(make_page):
    first_sentence = FRENCH.split(". ")[0] + "."

    assert_refused(completeness_problem(make_page(text=ENGLISH), result(first_sentence)), "too short")


def test_a_translation_far_longer_than_its_source_fails(make_page):
    assert_refused(completeness_problem(make_page(text=ENGLISH), result(FRENCH * 4)), "too long")


def test_the_length_check_allows_for_dense_scripts(make_page):
    chinese = (
        "房子矗立在小路的尽头，那里的老路转向河边。每天早上孩子们跑到水边，每天晚上他们疲惫地回来，"
        "鞋子里满是沙子，口袋里装满了第二天就会忘记的石头。"
    )
    page = make_page(text=ENGLISH, target_language="zh")

    assert completeness_problem(page, result(chinese)) is None


def test_short_sources_skip_the_length_check(make_page):
    page = make_page(text="The end.")

    assert (
        completeness_problem(page, result("Fin de l'histoire, et de tout ce qui précède.", source_text="The end."))
        is None
    )


def test_an_image_page_is_checked_against_what_the_engine_transcribed(make_page):
    page = make_page(text="", image=lambda: b"png")

    assert completeness_problem(page, result(FRENCH, source_text=ENGLISH)) is None
    assert_refused(completeness_problem(page, result("", source_text=ENGLISH)), "empty")
