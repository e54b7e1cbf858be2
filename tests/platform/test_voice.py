"""Which speech-to-text endpoint the ``stt`` section and the environment choose, as Hermes reads its keys."""

from __future__ import annotations

from config.stt import SttConfig, SttEndpointConfig
from actors.platform.gateway.voice import speech_endpoint


class TestSpeechEndpoint:
    """auto takes OpenAI, then Groq, by the keys set; a named service needs its key; off and local transcribe nothing."""

    def test_auto_prefers_openai_and_its_voice_key(self) -> None:
        env = {"OPENAI_API_KEY": "sk-chat", "VOICE_TOOLS_OPENAI_KEY": "sk-voice", "GROQ_API_KEY": "gsk"}
        endpoint, said = speech_endpoint(SttConfig(), env)
        assert endpoint is not None and endpoint.name == "openai" and endpoint.api_key == "sk-voice"
        assert endpoint.base_url == "https://api.openai.com/v1" and endpoint.model == "whisper-1"
        assert "sk-" not in said and "sk-" not in repr(endpoint)

    def test_auto_falls_back_to_groq(self) -> None:
        endpoint, _ = speech_endpoint(SttConfig(), {"GROQ_API_KEY": "gsk", "GROQ_BASE_URL": "http://groq.test/v1/"})
        assert endpoint is not None and (endpoint.name, endpoint.base_url) == ("groq", "http://groq.test/v1")
        assert endpoint.model == "whisper-large-v3-turbo"

    def test_a_named_service_without_its_key(self) -> None:
        endpoint, said = speech_endpoint(SttConfig(provider="openai"), {"GROQ_API_KEY": "gsk"})
        assert endpoint is None and "VOICE_TOOLS_OPENAI_KEY or OPENAI_API_KEY" in said

    def test_the_key_in_the_file_and_its_own_root(self) -> None:
        config = SttConfig(provider="openai", openai=SttEndpointConfig("gpt-4o-transcribe", "http://stt.test/v1", "sk-file"))
        endpoint, _ = speech_endpoint(config, {"STT_OPENAI_BASE_URL": "http://ignored.test"})
        assert endpoint is not None and (endpoint.base_url, endpoint.api_key, endpoint.model) == ("http://stt.test/v1", "sk-file", "gpt-4o-transcribe")

    def test_off_and_local(self) -> None:
        env = {"OPENAI_API_KEY": "sk"}
        assert speech_endpoint(SttConfig(enabled=False), env)[0] is None
        assert speech_endpoint(SttConfig(provider="none"), env)[0] is None
        endpoint, said = speech_endpoint(SttConfig(provider="local"), env)
        assert endpoint is None and "set it to openai or groq" in said
