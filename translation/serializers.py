from typing import Any

from django.conf import settings
from rest_framework import serializers

from translation.engines import ModelState


class ModelStatusSerializer(serializers.Serializer[Any]):
    state = serializers.ChoiceField(
        choices=ModelState.choices,
        help_text="ready: translating; starting: the GPU server is booting or loading the model, or cannot "
        "be reached yet (books wait and resume by themselves); throttled: the server recently answered 429; "
        "unconfigured: no engine is set up (see detail).",
    )
    engine = serializers.CharField(help_text="The configured engine: vllm, local or echo.")
    model = serializers.CharField(help_text="The model (vllm: the served model's name).")
    detail = serializers.CharField(help_text="Why the engine is in this state, for people.")

    class Meta:
        ref_name = "ModelStatus"


class LanguageSerializer(serializers.Serializer[Any]):
    code = serializers.ChoiceField(choices=settings.TARGET_LANGUAGES, help_text="ISO 639-1.")
    name = serializers.CharField(help_text="The language's English name.")

    class Meta:
        ref_name = "Language"


class LanguagePairsSerializer(serializers.Serializer[Any]):
    # Named as in language_pair_unsupported's supportedPairs. The metaclass takes declared
    # fields off the class, so Field.source is not shadowed at run time; only mypy sees it.
    source = serializers.CharField(  # type: ignore[assignment]
        allow_null=True,
        help_text="ISO 639-1 code of the source language; null: any source language (the engine reads "
        "whatever it is given).",
    )
    targets = serializers.ListField(
        child=serializers.ChoiceField(choices=settings.TARGET_LANGUAGES),
        help_text="The target languages the engine translates this source into.",
    )

    class Meta:
        ref_name = "LanguagePairs"


class EngineLanguagesSerializer(serializers.Serializer[Any]):
    name = serializers.CharField(help_text="The configured engine: vllm, local or echo.")
    targets = serializers.ListField(
        child=serializers.ChoiceField(choices=settings.TARGET_LANGUAGES),
        help_text="The target languages this engine can produce from some source: a project's "
        "targetLanguageCode must be one of them.",
    )
    pairs = LanguagePairsSerializer(
        many=True,
        help_text="Source -> targets it translates. A book with a source language override must use a listed "
        "source (or one listed as null: any); a book without one is detected page by page. A page already in "
        "the target language passes through on every engine.",
    )
    ocr_languages = serializers.ListField(
        child=serializers.CharField(),
        help_text="ISO 639-1 codes of the languages it reads from page images (pages without a text layer); "
        "empty when it reads none.",
    )

    class Meta:
        ref_name = "EngineLanguages"


class LanguagesSerializer(serializers.Serializer[Any]):
    targets = LanguageSerializer(many=True, help_text="The 20 target languages of the service.")
    engine = EngineLanguagesSerializer(help_text="What the configured translation engine can do with them.")

    class Meta:
        ref_name = "Languages"
