"""Pure parts of response collection: request bodies from generation settings, truncation."""

from __future__ import annotations

import pytest

from reform_core.judges import generation_judge as C


def test_openai_body_carries_only_set_parameters():
    s = C.GenerationSettings(temperature=0.0, top_p=1.0, max_tokens=100, reasoning_effort="high")
    body = C.openai_request("m", [{"role": "user", "content": "hi"}], s)
    assert body == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0.0,
        "top_p": 1.0,
        "max_tokens": 100,
        "reasoning_effort": "high",
    }
    body = C.openai_request("m", [], C.GenerationSettings(temperature=None, max_tokens=None))
    assert body == {"model": "m", "messages": []}


def test_gemini_config_maps_system_and_thinking_budget():
    s = C.GenerationSettings(temperature=0.0, max_tokens=64, thinking_budget=512, system="Be brief.")
    item = C.GenItem("m", "q", None, "baseline", "Why?")
    req = C.gemini_config(C.messages_for(item, s), s)
    assert req["contents"] == [{"role": "user", "parts": [{"text": "Why?"}]}]
    assert req["config"] == {
        "temperature": 0.0,
        "max_output_tokens": 64,
        "system_instruction": "Be brief.",
        "thinking_config": {"thinking_budget": 512},
    }


def test_settings_validation_and_truncation_flag():
    with pytest.raises(ValueError, match="temperature"):
        C.GenerationSettings(temperature=3.0)
    with pytest.raises(ValueError, match="max_tokens"):
        C.GenerationSettings(max_tokens=0)
    item = C.GenItem("m", "q", None, "baseline", "x")
    assert C.GenResult(item, finish_reason="length").truncated
    assert C.GenResult(item, finish_reason="MAX_TOKENS").truncated
    assert not C.GenResult(item, finish_reason="stop").truncated
    assert C.GenerationSettings(top_p=None, reasoning_effort=None).to_meta() == {"temperature": 0.0, "max_tokens": 4096}
