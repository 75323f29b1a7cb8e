"""Books in several scripts for the renderer tests: built in memory (no database), the
same shape exports.book.book_for gives the renderers."""

from __future__ import annotations

import io
import random
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from exports.book import ExportBook, ExportOptions, ExportPage
from exports.renderers import renderer_for

# Each sample: a chapter heading, a paragraph with emphasis, a list, and a second paragraph.
SAMPLES = {
    "en": (
        "# Chapter {n}\n\nThe *old* house stood at the end of the **long** road.\n\n"
        "- bread\n- water\n\nEvery morning the children walked to the river."
    ),
    "ar": (
        "# الفصل {n}\n\nكان البيت *القديم* في نهاية الطريق **الطويل**.\n\n"
        "- خبز\n- ماء\n\nكل صباح كان الأطفال يمشون إلى النهر."
    ),
    "he": ("# פרק {n}\n\nהבית *הישן* עמד בסוף הדרך **הארוכה**.\n\n- לחם\n- מים\n\nבכל בוקר הלכו הילדים אל הנהר."),
    "hi": ("# अध्याय {n}\n\nपुराना *घर* लंबी **सड़क** के अंत में खड़ा था।\n\n- रोटी\n- पानी\n\nहर सुबह बच्चे नदी तक चलते थे।"),
    "ja": "# 第{n}章\n\n*古い*家は**長い**道の終わりに立っていた。\n\n- パン\n- 水\n\n毎朝、子供たちは川まで歩いた。",
    "zh": "# 第{n}章\n\n*老*房子立在**长**路的尽头。\n\n- 面包\n- 水\n\n每天早上孩子们走到河边。",
    "ko": "# 제{n}장\n\n*오래된* 집은 **긴** 길의 끝에 서 있었다.\n\n- 빵\n- 물\n\n매일 아침 아이들은 강까지 걸었다.",
    "ru": (
        "# Глава {n}\n\n*Старый* дом стоял в конце **длинной** дороги.\n\n"
        "- хлеб\n- вода\n\nКаждое утро дети ходили к реке."
    ),
    "el": (
        "# Κεφάλαιο {n}\n\nΤο *παλιό* σπίτι ήταν στο τέλος του **μακριού** δρόμου.\n\n"
        "- ψωμί\n- νερό\n\nΚάθε πρωί τα παιδιά περπατούσαν στο ποτάμι."
    ),
}
# Words for fuller pages of prose (`dense`): each page's paragraphs are drawn from them with
# the page number as the seed, so pages differ and compress like a real book's text.
VOCABULARY = (
    "the road ran along river for a mile before it turned towards hills and children knew every stone of it "
    "flat one where they sat to rest white that marked half way point sharp had cut more than bare foot in "
    "summer mother called from door while father mended nets by boat old dog slept under bench near window "
    "evening came slowly over fields village bells rang twice someone laughed far away wind carried smell of "
    "bread smoke rain grass letters arrived each week with news city uncle wrote about trains markets bridges "
    "lamps streets winter was long snow covered roofs until spring returned birds sang again"
)


def prose(seed: int, paragraphs: int = 6, words: int = 48) -> str:
    """`paragraphs` paragraphs of `words` words each, the same for the same seed."""
    pick = random.Random(seed)
    vocabulary = VOCABULARY.split()
    return "\n\n".join(
        " ".join(pick.choice(vocabulary) for _ in range(words)).capitalize() + "." for _ in range(paragraphs)
    )


SOURCE = "The old house stood at the end of the long road. Every morning the children walked to the river."


def sample_book(
    language: str = "en",
    *,
    pages: int = 6,
    failed: frozenset[int] = frozenset(),
    untranslated: frozenset[int] = frozenset(),
    title: str | None = None,
    source_language: str = "en",
    dense: bool = False,
) -> ExportBook:
    """A book of `pages` pages in `language`; `failed` pages failed every attempt and
    `untranslated` ones are not done yet (a partial export). `dense`: each page also has
    six paragraphs of English prose (`prose`; about 1,800 characters a page, like a real book's)."""

    def page_iter() -> Iterator[ExportPage]:
        for index in range(1, pages + 1):
            translated = index not in failed and index not in untranslated
            yield ExportPage(
                index=index,
                translated=translated,
                translation=(SAMPLES[language].format(n=index) + (f"\n\n{prose(index)}" if dense else ""))
                if translated
                else "",
                source_text=SOURCE,
                failed=index in failed,
                failure_reason="the engine timed out" if index in failed else "",
                image_key=f"projects/sample/pages/{index}.png",
            )

    return ExportBook(
        identifier="3f2b1c4e-8d9a-4b7e-9c1d-2e3f4a5b6c7d",
        title=title or f"Sample book ({language})",
        language=language,
        source_language=source_language,
        created_at=datetime(2026, 11, 22, 12, 0, tzinfo=UTC),
        page_count=pages,
        status="CompletedWithErrors" if failed else "Complete",
        pages=page_iter,
    )


# A table as the engines write one (GFM: a header row, the delimiter row with alignment, body
# rows; a code cell kept verbatim), in three scripts: left to right, right to left, CJK.
TABLES = {
    "es": (
        "| Opción | Significado | Valor |\n|:--|:--|--:|\n"
        "| `--leak-check=yes` | Busca fugas de memoria al terminar el programa y las muestra | no |\n"
        "| `-v` | Salida **detallada** | apagado |\n"
        "| `--num-callers` | Profundidad de la pila | 12 |"
    ),
    "ar": (
        "| الخيار | المعنى | القيمة |\n|:--|:--|--:|\n"
        "| `--leak-check=yes` | البحث عن تسربات الذاكرة عند انتهاء البرنامج | لا |\n"
        "| `-v` | إخراج **مفصل** | معطل |\n"
        "| `--num-callers` | عمق المكدس | 12 |"
    ),
    "ja": (
        "| オプション | 意味 | 既定値 |\n|:--|:--|--:|\n"
        "| `--leak-check=yes` | プログラム終了時にメモリリークを検索して表示する | いいえ |\n"
        "| `-v` | **詳細**に出力する | オフ |\n"
        "| `--num-callers` | スタックの深さ | 12 |"
    ),
}
# What a reader sees in each table's cells, row by row.
TABLE_CELLS = {
    "es": [
        ["Opción", "Significado", "Valor"],
        ["--leak-check=yes", "Busca fugas de memoria al terminar el programa y las muestra", "no"],
        ["-v", "Salida detallada", "apagado"],
        ["--num-callers", "Profundidad de la pila", "12"],
    ],
    "ar": [
        ["الخيار", "المعنى", "القيمة"],
        ["--leak-check=yes", "البحث عن تسربات الذاكرة عند انتهاء البرنامج", "لا"],
        ["-v", "إخراج مفصل", "معطل"],
        ["--num-callers", "عمق المكدس", "12"],
    ],
    "ja": [
        ["オプション", "意味", "既定値"],
        ["--leak-check=yes", "プログラム終了時にメモリリークを検索して表示する", "いいえ"],
        ["-v", "詳細に出力する", "オフ"],
        ["--num-callers", "スタックの深さ", "12"],
    ],
}
BEFORE_TABLE = {"es": "Antes de la tabla.", "ar": "قبل الجدول.", "ja": "表の前の段落。"}
AFTER_TABLE = {"es": "Después de la tabla.", "ar": "بعد الجدول.", "ja": "表の後の段落。"}


def table_book(language: str, *, table: str | None = None, pages: int = 3, **kwargs: Any) -> ExportBook:
    """`sample_book` in `language` (es, ar or ja) whose page 2 is a paragraph, a table
    (`TABLES[language]` unless given) and another paragraph, without a heading."""
    book = sample_book("en" if language == "es" else language, pages=pages, **kwargs)
    body = f"{BEFORE_TABLE[language]}\n\n{table or TABLES[language]}\n\n{AFTER_TABLE[language]}"

    def page_iter() -> Iterator[ExportPage]:
        for page in book.pages():
            yield replace(page, translation=body) if page.index == 2 and page.translated else page

    return replace(book, language=language, title=f"Sample book ({language})", pages=page_iter)


def render_bytes(export_format: str, book: ExportBook, options: ExportOptions | None = None) -> bytes:
    """The file a single format's renderer writes for the book."""
    out = io.BytesIO()
    renderer_for(export_format).render(book, options or ExportOptions(), out)
    return out.getvalue()
