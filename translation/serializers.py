from rest_framework import serializers

from translation.engines import ModelState


class ModelStatusSerializer(serializers.Serializer):
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
