"""Languages: names for prompts, ISO 639-3 codes (Apertium, Tesseract), how dense each
language's writing is, and a light detector for the language of a page of text.

The detector is deliberately small: the writing system settles most languages (Greek,
Hebrew, Arabic, Devanagari, Hangul, kana, Han; Cyrillic split into Russian and Ukrainian by
the letters only Ukrainian has), and common function words settle the Latin-script ones.
It answers None rather than guess on too little text.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

LANGUAGE_NAMES = {
    "en": "English",
    "es": "Spanish",
    "fr": "French",
    "de": "German",
    "it": "Italian",
    "pt": "Portuguese",
    "nl": "Dutch",
    "pl": "Polish",
    "ru": "Russian",
    "uk": "Ukrainian",
    "tr": "Turkish",
    "ar": "Arabic",
    "he": "Hebrew",
    "hi": "Hindi",
    "ja": "Japanese",
    "ko": "Korean",
    "zh": "Chinese",
    "la": "Latin",
    "el": "Greek",
    "sv": "Swedish",
    "ca": "Catalan",
    "gl": "Galician",
    "eu": "Basque",
    "ro": "Romanian",
    "da": "Danish",
    "nb": "Norwegian Bokmål",
    "nn": "Norwegian Nynorsk",
    "no": "Norwegian",
    "is": "Icelandic",
    "be": "Belarusian",
    "bg": "Bulgarian",
    "mk": "Macedonian",
    "af": "Afrikaans",
    "eo": "Esperanto",
    "oc": "Occitan",
    "ur": "Urdu",
}

# ISO 639-1 <-> 639-3 (Apertium's newer pairs and Tesseract's traineddata use 639-3).
ISO_639_3 = {
    "en": "eng",
    "es": "spa",
    "fr": "fra",
    "de": "deu",
    "it": "ita",
    "pt": "por",
    "nl": "nld",
    "pl": "pol",
    "ru": "rus",
    "uk": "ukr",
    "tr": "tur",
    "ar": "ara",
    "he": "heb",
    "hi": "hin",
    "ja": "jpn",
    "ko": "kor",
    "zh": "chi_sim",
    "la": "lat",
    "el": "ell",
    "sv": "swe",
    "ca": "cat",
    "gl": "glg",
    "eu": "eus",
    "ro": "ron",
    "da": "dan",
    "nb": "nob",
    "nn": "nno",
    "no": "nor",
    "is": "isl",
    "be": "bel",
    "bg": "bul",
    "mk": "mkd",
    "af": "afr",
    "eo": "epo",
    "oc": "oci",
    "ur": "urd",
}
ISO_639_1 = {three: two for two, three in ISO_639_3.items()} | {"zho": "zh", "fre": "fr", "ger": "de", "gre": "el"}

# Characters a language needs to say what English says in 1 (rough, from parallel texts);
# the completeness check compares lengths on this scale.
DENSITY = {
    "en": 1.0,
    "es": 1.15,
    "fr": 1.2,
    "de": 1.2,
    "it": 1.15,
    "pt": 1.15,
    "nl": 1.15,
    "pl": 1.1,
    "ru": 1.1,
    "uk": 1.1,
    "tr": 1.05,
    "ar": 0.9,
    "he": 0.8,
    "hi": 1.05,
    "ja": 0.5,
    "ko": 0.5,
    "zh": 0.33,
    "la": 0.95,
    "el": 1.15,
    "sv": 1.05,
}

STOPWORDS = {
    "en": "the and of to is in that it was for with he she his her you not this be are have had which but they from "
    "at by on were would there their what",
    "es": "el la los las de que y en un una es por con no para se lo del al como más pero su sus fue era muy también "
    "hay está esta",
    "fr": "le la les de des et est un une que qui dans pour pas ne sur au aux du il elle je vous nous ce cette avec "
    "mais était sont",
    "de": "der die das und ist nicht ein eine zu den dem mit sich des auf für im von auch es ich sie er war wir aber "
    "wie noch nach",
    "it": "il lo gli di che è un una per non con del della sono si ma ho nel anche come era alla dei delle questo sua",
    "pt": "o os as de que do da dos das em um uma não para com por se na no mais mas ele ela foi são também muito "
    "seu sua",
    "nl": "de het een en van is dat niet ik je op te zijn met voor hij zij maar ook er aan om was wat bij naar",
    "pl": "i w nie na się z że do to jest jak ale co tak po od za przez jego jej był była już tylko dla",
    "tr": "ve bir bu da de için ile ne çok olarak daha gibi ama ben sen değil var yok kadar sonra şey olan",
    "sv": "och att det som en ett är på av för med till den inte jag har om han hon men var så kan sig",
    "la": "et est in non ad cum sed quod ut qui quae enim esse sunt ex autem etiam nec per atque quam hoc eius ab",
}
_STOPWORDS = {language: frozenset(words.split()) for language, words in STOPWORDS.items()}
# Letters that belong to one Latin-script language (or few): each occurrence is a vote.
_LETTER_HINTS = {
    "ñ": "es",
    "¿": "es",
    "¡": "es",
    "ã": "pt",
    "õ": "pt",
    "ç": "pt",
    "ß": "de",
    "ü": "de",
    "å": "sv",
    "ł": "pl",
    "ą": "pl",
    "ę": "pl",
    "ś": "pl",
    "ż": "pl",
    "ź": "pl",
    "ń": "pl",
    "ğ": "tr",
    "ş": "tr",
    "\u0131": "tr",  # dotless i
    "œ": "fr",
    "ê": "fr",
    "è": "fr",
}
# Each stopword with the languages it belongs to (a word is looked up once, not per language).
_STOPWORD_LANGUAGES: dict[str, tuple[str, ...]] = {
    word: tuple(language for language, stopwords in _STOPWORDS.items() if word in stopwords)
    for word in set().union(*_STOPWORDS.values())
}
_UKRAINIAN_LETTERS = set("іїєґІЇЄҐ")
_RUSSIAN_LETTERS = set("ыэъёЫЭЪЁ")
_WORD = re.compile(r"[^\W\d_]+(?:['\u2019][^\W\d_]+)?", re.UNICODE)

MIN_LETTERS = 12


def language_name(code: str) -> str:
    return LANGUAGE_NAMES.get(code, code)


def _script(char: str) -> str | None:
    point = ord(char)
    if 0x0370 <= point <= 0x03FF or 0x1F00 <= point <= 0x1FFF:
        return "greek"
    if 0x0400 <= point <= 0x052F:
        return "cyrillic"
    if 0x0590 <= point <= 0x05FF:
        return "hebrew"
    if 0x0600 <= point <= 0x06FF or 0x0750 <= point <= 0x077F:
        return "arabic"
    if 0x0900 <= point <= 0x097F:
        return "devanagari"
    if 0xAC00 <= point <= 0xD7AF or 0x1100 <= point <= 0x11FF:
        return "hangul"
    if 0x3040 <= point <= 0x30FF:
        return "kana"
    if 0x4E00 <= point <= 0x9FFF or 0x3400 <= point <= 0x4DBF:
        return "han"
    if char.isalpha() and unicodedata.name(char, "").startswith("LATIN"):
        return "latin"
    return None


def language_detect(text: str) -> str | None:
    """The ISO 639-1 code of the text's language, or None when it cannot tell."""
    scripts: Counter[str] = Counter()
    for char, count in Counter(text).items():  # each distinct character looked up once
        if (script := _script(char)) is not None:
            scripts[script] += count
    letters = sum(scripts.values())
    if letters < MIN_LETTERS:
        return None
    if scripts["hangul"] > 0.3 * letters:
        return "ko"
    if scripts["kana"] > 0.05 * letters and scripts["kana"] + scripts["han"] > 0.3 * letters:
        return "ja"
    if scripts["han"] > 0.3 * letters:
        return "zh"
    dominant, _ = scripts.most_common(1)[0]
    if dominant == "cyrillic":
        ukrainian = sum(char in _UKRAINIAN_LETTERS for char in text)
        russian = sum(char in _RUSSIAN_LETTERS for char in text)
        return "uk" if ukrainian > russian else "ru"
    simple = {"greek": "el", "hebrew": "he", "arabic": "ar", "devanagari": "hi"}
    if dominant in simple:
        return simple[dominant]
    if dominant == "latin":
        return _latin_language(text)
    return None


def _latin_language(text: str) -> str | None:
    words = [word.lower() for word in _WORD.findall(text)]
    votes: dict[str, float] = dict.fromkeys(_STOPWORDS, 0.0)
    for word, count in Counter(words).items():
        for language in _STOPWORD_LANGUAGES.get(word, ()):
            votes[language] += count
    for char, count in Counter(text.lower()).items():
        if char in _LETTER_HINTS:
            votes[_LETTER_HINTS[char]] += 0.5 * count
    ranked = sorted(votes.items(), key=lambda item: item[1], reverse=True)
    (best, best_votes), (_, runner_up) = ranked[0], ranked[1]
    if best_votes < 2 or best_votes < 0.05 * len(words) or best_votes == runner_up:
        return None
    return best
