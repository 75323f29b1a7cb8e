"""The words the exports write themselves, in the book's language: "Contents", "Skip to the
text", a chapter named by its pages, the notice of a page without a translation and the
reason it failed. One table for every target language (settings.TARGET_LANGUAGES); English
for any other language.

A failed page's reason comes from its failure code (`Page.failure_code`), never from the
engine's own message: that message is English and written for operators (it stays in the
page's review package and in the Archive's manifest), while the reader gets a sentence in
the language of the book. Page numbers stay in Western digits, as the page markers and
the PDF footer have them.
"""

# Text in twenty languages: their letters and punctuation are meant (Greek, Cyrillic,
# Turkish dotless i, full-width CJK punctuation, typographic apostrophes and dashes).
# ruff: noqa: RUF001, RUF002, RUF003

from __future__ import annotations

from dataclasses import dataclass, field

ENGINE_ERROR = "engine_error"
LANGUAGE_UNSUPPORTED = "language_unsupported"
TRANSLATION_INCOMPLETE = "translation_incomplete"
INTERNAL_ERROR = "internal_error"
FAILURE_CODES = (ENGINE_ERROR, LANGUAGE_UNSUPPORTED, TRANSLATION_INCOMPLETE, INTERNAL_ERROR)


@dataclass(frozen=True)
class Labels:
    """One language's words. Templates take `{n}` (a page), `{first}`/`{last}` (a range)
    or `{index}` and `{reason}` (a notice)."""

    language: str
    contents: str  # the table of contents' title
    skip_to_text: str  # the HTML skip link
    page: str  # a chapter of one page, a page marker's accessible name: "Page {n}"
    pages: str  # a chapter of several pages: "Pages {first}–{last}"
    page_list: str  # the EPUB's list of print pages
    table: str  # the accessible name of a scrollable table
    back_to_text: str  # a note's link back to where the text refers to it (Html, Epub)
    translation: str  # the PDF's subject
    failed: str  # "Page {index} could not be translated: {reason}"
    kept: str  # said after `failed` when the page's original text follows
    pending: str  # "Page {index} is not translated yet."
    reasons: dict[str, str] = field(default_factory=dict)  # failure code -> why, as a sentence's end
    sentence_gap: str = " "  # between two sentences ("" in Chinese and Japanese)

    def page_label(self, first: int, last: int) -> str:
        """The title of a chapter that starts without a heading: "Page 3", "Pages 1–20"."""
        if first == last:
            return self.page.format(n=first)
        return self.pages.format(first=first, last=last)

    def reason(self, failure_code: str) -> str:
        """Why a page failed, from its code (an unknown or missing code: the engine failed)."""
        return self.reasons.get(failure_code) or self.reasons[ENGINE_ERROR]


def _labels(language: str, **words: str) -> Labels:
    reasons = {code: words.pop(code) for code in FAILURE_CODES}
    return Labels(language=language, reasons=reasons, **words)


_TABLE: dict[str, Labels] = {
    labels.language: labels
    for labels in (
        _labels(
            "en",
            contents="Contents",
            skip_to_text="Skip to the text",
            page="Page {n}",
            pages="Pages {first}\u2013{last}",
            page_list="Pages",
            table="Table",
            back_to_text="Back to the text",
            translation="Translation",
            failed="Page {index} could not be translated: {reason}",
            kept="Its original text follows, untranslated.",
            pending="Page {index} is not translated yet.",
            engine_error="the translation engine failed on it.",
            language_unsupported="it is written in a language that cannot be translated into the language of "
            "this book.",
            translation_incomplete="the translation came back incomplete.",
            internal_error="an internal error stopped its translation.",
        ),
        _labels(
            "es",
            contents="Índice",
            skip_to_text="Saltar al texto",
            page="Página {n}",
            pages="Páginas {first}\u2013{last}",
            page_list="Páginas",
            table="Tabla",
            back_to_text="Volver al texto",
            translation="Traducción",
            failed="No se pudo traducir la página {index}: {reason}",
            kept="A continuación figura su texto original, sin traducir.",
            pending="La página {index} aún no está traducida.",
            engine_error="el motor de traducción falló.",
            language_unsupported="está escrita en un idioma que no se puede traducir al idioma de este libro.",
            translation_incomplete="la traducción llegó incompleta.",
            internal_error="un error interno detuvo su traducción.",
        ),
        _labels(
            "fr",
            contents="Table des matières",
            skip_to_text="Aller au texte",
            page="Page {n}",
            pages="Pages {first}\u2013{last}",
            page_list="Pages",
            table="Tableau",
            back_to_text="Retour au texte",
            translation="Traduction",
            failed="La page {index} n’a pas pu être traduite\u00a0: {reason}",
            kept="Son texte original suit, non traduit.",
            pending="La page {index} n’est pas encore traduite.",
            engine_error="le moteur de traduction a échoué.",
            language_unsupported="elle est écrite dans une langue qui ne peut pas être traduite dans la langue "
            "de ce livre.",
            translation_incomplete="la traduction est revenue incomplète.",
            internal_error="une erreur interne a interrompu sa traduction.",
        ),
        _labels(
            "de",
            contents="Inhalt",
            skip_to_text="Zum Text springen",
            page="Seite {n}",
            pages="Seiten {first}\u2013{last}",
            page_list="Seiten",
            table="Tabelle",
            back_to_text="Zurück zum Text",
            translation="Übersetzung",
            failed="Seite {index} konnte nicht übersetzt werden: {reason}",
            kept="Der Originaltext folgt unübersetzt.",
            pending="Seite {index} ist noch nicht übersetzt.",
            engine_error="Das Übersetzungssystem ist daran gescheitert.",
            language_unsupported="Sie ist in einer Sprache geschrieben, die nicht in die Sprache dieses Buches "
            "übersetzt werden kann.",
            translation_incomplete="Die Übersetzung kam unvollständig zurück.",
            internal_error="Ein interner Fehler hat ihre Übersetzung abgebrochen.",
        ),
        _labels(
            "it",
            contents="Indice",
            skip_to_text="Vai al testo",
            page="Pagina {n}",
            pages="Pagine {first}\u2013{last}",
            page_list="Pagine",
            table="Tabella",
            back_to_text="Torna al testo",
            translation="Traduzione",
            failed="Non è stato possibile tradurre la pagina {index}: {reason}",
            kept="Segue il testo originale, non tradotto.",
            pending="La pagina {index} non è ancora tradotta.",
            engine_error="il motore di traduzione non è riuscito a tradurla.",
            language_unsupported="è scritta in una lingua che non può essere tradotta nella lingua di questo libro.",
            translation_incomplete="la traduzione è risultata incompleta.",
            internal_error="un errore interno ne ha interrotto la traduzione.",
        ),
        _labels(
            "pt",
            contents="Índice",
            skip_to_text="Saltar para o texto",
            page="Página {n}",
            pages="Páginas {first}\u2013{last}",
            page_list="Páginas",
            table="Tabela",
            back_to_text="Voltar ao texto",
            translation="Tradução",
            failed="Não foi possível traduzir a página {index}: {reason}",
            kept="O texto original vem a seguir, sem tradução.",
            pending="A página {index} ainda não foi traduzida.",
            engine_error="o motor de tradução falhou.",
            language_unsupported="está escrita numa língua que não pode ser traduzida para a língua deste livro.",
            translation_incomplete="a tradução veio incompleta.",
            internal_error="um erro interno interrompeu a tradução.",
        ),
        _labels(
            "nl",
            contents="Inhoud",
            skip_to_text="Naar de tekst",
            page="Pagina {n}",
            pages="Pagina’s {first}\u2013{last}",
            page_list="Pagina’s",
            table="Tabel",
            back_to_text="Terug naar de tekst",
            translation="Vertaling",
            failed="Pagina {index} kon niet worden vertaald: {reason}",
            kept="De oorspronkelijke tekst volgt, onvertaald.",
            pending="Pagina {index} is nog niet vertaald.",
            engine_error="de vertaalmachine heeft gefaald.",
            language_unsupported="ze is geschreven in een taal die niet naar de taal van dit boek kan worden vertaald.",
            translation_incomplete="de vertaling kwam onvolledig terug.",
            internal_error="een interne fout heeft de vertaling onderbroken.",
        ),
        _labels(
            "pl",
            contents="Spis treści",
            skip_to_text="Przejdź do tekstu",
            page="Strona {n}",
            pages="Strony {first}\u2013{last}",
            page_list="Strony",
            table="Tabela",
            back_to_text="Powrót do tekstu",
            translation="Tłumaczenie",
            failed="Nie udało się przetłumaczyć strony {index}: {reason}",
            kept="Poniżej jej oryginalny tekst, nieprzetłumaczony.",
            pending="Strona {index} nie jest jeszcze przetłumaczona.",
            engine_error="silnik tłumaczenia zawiódł.",
            language_unsupported="jest napisana w języku, którego nie można przetłumaczyć na język tej książki.",
            translation_incomplete="tłumaczenie wróciło niekompletne.",
            internal_error="błąd wewnętrzny przerwał tłumaczenie.",
        ),
        _labels(
            "ru",
            contents="Содержание",
            skip_to_text="Перейти к тексту",
            page="Страница {n}",
            pages="Страницы {first}\u2013{last}",
            page_list="Страницы",
            table="Таблица",
            back_to_text="Вернуться к тексту",
            translation="Перевод",
            failed="Страницу {index} не удалось перевести: {reason}",
            kept="Ниже следует её исходный текст без перевода.",
            pending="Страница {index} ещё не переведена.",
            engine_error="сбой системы перевода.",
            language_unsupported="она написана на языке, который нельзя перевести на язык этой книги.",
            translation_incomplete="перевод получен не полностью.",
            internal_error="перевод прерван внутренней ошибкой.",
        ),
        _labels(
            "uk",
            contents="Зміст",
            skip_to_text="Перейти до тексту",
            page="Сторінка {n}",
            pages="Сторінки {first}\u2013{last}",
            page_list="Сторінки",
            table="Таблиця",
            back_to_text="Повернутися до тексту",
            translation="Переклад",
            failed="Сторінку {index} не вдалося перекласти: {reason}",
            kept="Нижче подано її оригінальний текст без перекладу.",
            pending="Сторінку {index} ще не перекладено.",
            engine_error="збій системи перекладу.",
            language_unsupported="її написано мовою, яку не можна перекласти мовою цієї книжки.",
            translation_incomplete="переклад отримано не повністю.",
            internal_error="переклад перервала внутрішня помилка.",
        ),
        _labels(
            "tr",
            contents="İçindekiler",
            skip_to_text="Metne geç",
            page="Sayfa {n}",
            pages="Sayfa {first}\u2013{last}",
            page_list="Sayfalar",
            table="Tablo",
            back_to_text="Metne dön",
            translation="Çeviri",
            failed="Sayfa {index} çevrilemedi: {reason}",
            kept="Özgün metni aşağıda, çevrilmeden yer alıyor.",
            pending="Sayfa {index} henüz çevrilmedi.",
            engine_error="çeviri motoru başarısız oldu.",
            language_unsupported="bu kitabın diline çevrilemeyen bir dilde yazılmış.",
            translation_incomplete="çeviri eksik geldi.",
            internal_error="bir iç hata çeviriyi durdurdu.",
        ),
        _labels(
            "ar",
            contents="المحتويات",
            skip_to_text="انتقل إلى النص",
            page="الصفحة {n}",
            pages="الصفحات {first}\u2013{last}",
            page_list="الصفحات",
            table="جدول",
            back_to_text="العودة إلى النص",
            translation="ترجمة",
            failed="تعذرت ترجمة الصفحة {index}: {reason}",
            kept="يلي ذلك نصها الأصلي دون ترجمة.",
            pending="لم تترجم الصفحة {index} بعد.",
            engine_error="أخفق محرك الترجمة.",
            language_unsupported="إنها مكتوبة بلغة لا يمكن ترجمتها إلى لغة هذا الكتاب.",
            translation_incomplete="وصلت الترجمة ناقصة.",
            internal_error="أوقف خطأ داخلي ترجمتها.",
        ),
        _labels(
            "he",
            contents="תוכן העניינים",
            skip_to_text="דילוג לטקסט",
            page="עמוד {n}",
            pages="עמודים {first}\u2013{last}",
            page_list="עמודים",
            table="טבלה",
            back_to_text="חזרה לטקסט",
            translation="תרגום",
            failed="לא ניתן היה לתרגם את עמוד {index}: {reason}",
            kept="הטקסט המקורי שלו מופיע להלן, ללא תרגום.",
            pending="עמוד {index} עדיין לא תורגם.",
            engine_error="מנוע התרגום נכשל.",
            language_unsupported="הוא כתוב בשפה שלא ניתן לתרגם לשפת הספר הזה.",
            translation_incomplete="התרגום התקבל חלקי.",
            internal_error="שגיאה פנימית עצרה את התרגום.",
        ),
        _labels(
            "hi",
            contents="विषय-सूची",
            skip_to_text="पाठ पर जाएँ",
            page="पृष्ठ {n}",
            pages="पृष्ठ {first}\u2013{last}",
            page_list="पृष्ठ",
            table="तालिका",
            back_to_text="पाठ पर वापस जाएँ",
            translation="अनुवाद",
            failed="पृष्ठ {index} का अनुवाद नहीं हो सका: {reason}",
            kept="इसका मूल पाठ नीचे बिना अनुवाद के दिया गया है।",
            pending="पृष्ठ {index} का अनुवाद अभी नहीं हुआ है।",
            engine_error="अनुवाद इंजन विफल रहा।",
            language_unsupported="यह ऐसी भाषा में लिखा है जिसका इस पुस्तक की भाषा में अनुवाद नहीं हो सकता।",
            translation_incomplete="अनुवाद अधूरा मिला।",
            internal_error="एक आंतरिक त्रुटि ने अनुवाद रोक दिया।",
        ),
        _labels(
            "ja",
            contents="目次",
            skip_to_text="本文へ移動",
            page="{n}ページ",
            pages="{first}\u2013{last}ページ",
            page_list="ページ",
            table="表",
            back_to_text="本文に戻る",
            translation="翻訳",
            failed="{index}ページは翻訳できませんでした：{reason}",
            kept="以下に原文を翻訳せずに掲載します。",
            pending="{index}ページはまだ翻訳されていません。",
            engine_error="翻訳エンジンでエラーが発生しました。",
            language_unsupported="この本の言語に翻訳できない言語で書かれています。",
            translation_incomplete="翻訳が不完全なまま返されました。",
            internal_error="内部エラーにより翻訳が中断されました。",
            sentence_gap="",
        ),
        _labels(
            "ko",
            contents="목차",
            skip_to_text="본문으로 건너뛰기",
            page="{n}페이지",
            pages="{first}\u2013{last}페이지",
            page_list="페이지",
            table="표",
            back_to_text="본문으로 돌아가기",
            translation="번역",
            failed="{index}페이지를 번역하지 못했습니다: {reason}",
            kept="원문을 번역하지 않은 채 아래에 싣습니다.",
            pending="{index}페이지는 아직 번역되지 않았습니다.",
            engine_error="번역 엔진에 오류가 발생했습니다.",
            language_unsupported="이 책의 언어로 번역할 수 없는 언어로 쓰여 있습니다.",
            translation_incomplete="번역이 불완전하게 돌아왔습니다.",
            internal_error="내부 오류로 번역이 중단되었습니다.",
        ),
        _labels(
            "zh",
            contents="目录",
            skip_to_text="跳到正文",
            page="第{n}页",
            pages="第{first}\u2013{last}页",
            page_list="页码",
            table="表格",
            back_to_text="返回正文",
            translation="翻译",
            failed="第{index}页无法翻译：{reason}",
            kept="其原文附后，未经翻译。",
            pending="第{index}页尚未翻译。",
            engine_error="翻译引擎出错。",
            language_unsupported="该页所用的语言无法译成本书的语言。",
            translation_incomplete="返回的译文不完整。",
            internal_error="内部错误中断了翻译。",
            sentence_gap="",
        ),
        _labels(
            "la",
            contents="Index capitum",
            skip_to_text="Ad textum transi",
            page="Pagina {n}",
            pages="Paginae {first}\u2013{last}",
            page_list="Paginae",
            table="Tabula",
            back_to_text="Ad textum redi",
            translation="Versio",
            failed="Pagina {index} converti non potuit: {reason}",
            kept="Sequitur textus eius originalis, non conversus.",
            pending="Pagina {index} nondum conversa est.",
            engine_error="machina convertendi defecit.",
            language_unsupported="lingua scripta est quae in linguam huius libri converti non potest.",
            translation_incomplete="versio imperfecta rediit.",
            internal_error="error internus conversionem interrupit.",
        ),
        _labels(
            "el",
            contents="Περιεχόμενα",
            skip_to_text="Μετάβαση στο κείμενο",
            page="Σελίδα {n}",
            pages="Σελίδες {first}\u2013{last}",
            page_list="Σελίδες",
            table="Πίνακας",
            back_to_text="Επιστροφή στο κείμενο",
            translation="Μετάφραση",
            failed="Η σελίδα {index} δεν ήταν δυνατό να μεταφραστεί: {reason}",
            kept="Ακολουθεί το πρωτότυπο κείμενό της, αμετάφραστο.",
            pending="Η σελίδα {index} δεν έχει μεταφραστεί ακόμη.",
            engine_error="η μηχανή μετάφρασης απέτυχε.",
            language_unsupported="είναι γραμμένη σε γλώσσα που δεν μπορεί να μεταφραστεί στη γλώσσα αυτού του βιβλίου.",
            translation_incomplete="η μετάφραση επέστρεψε ελλιπής.",
            internal_error="ένα εσωτερικό σφάλμα διέκοψε τη μετάφραση.",
        ),
        _labels(
            "sv",
            contents="Innehåll",
            skip_to_text="Hoppa till texten",
            page="Sida {n}",
            pages="Sidorna {first}\u2013{last}",
            page_list="Sidor",
            table="Tabell",
            back_to_text="Tillbaka till texten",
            translation="Översättning",
            failed="Sidan {index} kunde inte översättas: {reason}",
            kept="Originaltexten följer, oöversatt.",
            pending="Sidan {index} är inte översatt än.",
            engine_error="översättningsmotorn misslyckades.",
            language_unsupported="den är skriven på ett språk som inte kan översättas till bokens språk.",
            translation_incomplete="översättningen kom tillbaka ofullständig.",
            internal_error="ett internt fel avbröt översättningen.",
        ),
    )
}
LANGUAGES = frozenset(_TABLE)


def base_language(language: str | None) -> str:
    """ "zh-Hant" -> "zh"; "" when unknown."""
    return (language or "").split("-")[0].split("_")[0].lower()


def labels_for(language: str | None) -> Labels:
    """The words of the exports in `language` ("pt-BR" -> Portuguese); English when the
    language has none."""
    return _TABLE.get(base_language(language), _TABLE["en"])
