"""§2 and §4.2 as written, point by point.

The session so far, idle summaries once, inputs beyond text, a soul without a
body, the parts of a command not run, a yes re-checked.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest

from custom_components.soul.core.chat_phrases import phrase
from custom_components.soul.core.chat_request import ChatError
from custom_components.soul.core.llm import OpenAICompatibleLLM
from custom_components.soul.core.session import Session
from custom_components.soul.core.turn import media_url
from devtools.fake_llm import FakeOpenAI, Reply

from .test_chat import Env, T, llm  # noqa: F401  # fixture

IMAGE = "https://oss.example.com/frames/cat.jpg"


def _has_image(body: dict[str, Any]) -> bool:
    return any(
        isinstance(m.get("content"), list)
        and any(p.get("type") == "image_url" for p in m["content"])
        for m in body["messages"]
    )


def _text_only(body: dict[str, Any]) -> Reply | None:
    """A model that takes no images: the request itself is refused (HTTP 400)."""
    if _has_image(body):
        return Reply(status=400, error="image input is not supported by this model")
    return None


async def _say(env: Env, *inputs: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return await env.pipeline.chat(
        {"session_id": "s1", "terminal_id": T, "inputs": list(inputs), **extra}
    )


def _text(text: str) -> dict[str, Any]:
    return {"type": "keyboard_text", "text": text}


class Archive:
    """Long-term memory that records the sessions archived to it."""

    ready = False

    def __init__(self) -> None:
        self.archived: list[dict[str, Any]] = []

    async def archive_session(self, **session: Any) -> None:
        self.archived.append(session)


async def test_context_summary_is_the_session_so_far(
    fake_llm: FakeOpenAI,
    llm: OpenAICompatibleLLM,  # noqa: F811
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    fake_llm.reply("你好小明！")
    response = await env.say("我叫小明")
    assert response["context_summary"] == "我叫小明"  # not empty before idle
    fake_llm.reply("绿色很好看。")
    response = await env.say("我喜欢绿色")
    assert response["context_summary"] == "我叫小明 / 我喜欢绿色"
    assert len(fake_llm.chat_requests) == 2  # no model call for the summary
    # The idle summary replaces what it covers; later turns follow it.
    fake_llm.reply("用户小明喜欢绿色。")
    env.now += 180
    (session,) = await env.pipeline.summarize_idle()
    fake_llm.reply("在呢。")
    response = await env.say("你还在吗")
    assert response["context_summary"] == "用户小明喜欢绿色。 / 你还在吗"
    # It survives a restart.
    restored = Session.from_dict(session.as_dict(), time.time())
    assert restored is not None
    assert restored.rolling_summary() == session.rolling_summary()


def test_a_rolling_summary_stays_within_its_limit() -> None:
    session = Session("s", T, "s1", None)
    session.summarized("旧" * 1000, 0, 1.0)
    for _ in range(20):
        session.add_turn("user", "新" * 400)
    text = session.rolling_summary()
    assert len(text) <= 600
    assert text.startswith("旧") and text.endswith("新")


async def test_an_idle_session_is_summarised_once_however_slow(
    fake_llm: FakeOpenAI,
    llm: OpenAICompatibleLLM,  # noqa: F811
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    fake_llm.reply("你好。")
    await env.say("我叫小明")
    archive = Archive()
    env.pipeline.memory = archive  # type: ignore[assignment]
    env.now += 180
    fake_llm.responders.append(
        lambda body: (
            Reply(content="用户叫小明。", delay=0.3)
            if body["messages"][0]["content"].startswith("Summarise")
            else None
        )
    )
    # The 15 s check fires again while the slow summary still runs.
    first = asyncio.create_task(env.pipeline.summarize_idle())
    await asyncio.sleep(0.1)
    second = await env.pipeline.summarize_idle()
    assert second == []
    assert [s.summary for s in await first] == ["用户叫小明。"]
    summaries = [
        r
        for r in fake_llm.chat_requests
        if r["messages"][0]["content"].startswith("Summarise")
    ]
    assert len(summaries) == 1
    assert [a["summary"] for a in archive.archived] == ["用户叫小明。"]
    assert await env.pipeline.summarize_idle() == []  # and not again later


async def test_sensor_inputs_join_the_turn_for_the_model(
    fake_llm: FakeOpenAI,
    llm: OpenAICompatibleLLM,  # noqa: F811
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    fake_llm.reply("有人回来了，欢迎！")
    await _say(
        env,
        {"type": "event_note", "text": "门铃响了"},
        {"type": "presence", "present": True, "person": "小明"},
        {
            "type": "sensor_state",
            "entity_id": "sensor.room",
            "state": "28",
            "unit": "°C",
        },
        _text("现在怎么样？"),
    )
    prompt = fake_llm.chat_requests[-1]["messages"][0]["content"]
    assert "- event_note: " in prompt and "门铃响了" in prompt
    assert "- presence: " in prompt and '"present": true' in prompt
    assert "- sensor_state: " in prompt and '"state": "28"' in prompt
    # Phase 1's rule stays: text is required.
    with pytest.raises(ChatError, match="keyboard_text"):
        await _say(env, {"type": "event_note", "text": "门铃响了"})


async def test_an_image_goes_to_a_model_that_takes_images(
    fake_llm: FakeOpenAI,
    llm: OpenAICompatibleLLM,  # noqa: F811
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    fake_llm.reply("是一只猫。")
    response = await _say(
        env, {"type": "image", "media": {"url": IMAGE}}, _text("这是什么？")
    )
    assert response["reply"] == "是一只猫。"
    user = fake_llm.chat_requests[-1]["messages"][-1]
    assert user["role"] == "user"
    assert user["content"] == [
        {"type": "text", "text": "这是什么？"},
        {"type": "image_url", "image_url": {"url": IMAGE}},
    ]
    assert (
        "attached to the user's message"
        in fake_llm.chat_requests[-1]["messages"][0]["content"]
    )
    assert env.pipeline.reasoner.sees_images is True
    # A URL that is not http(s) is never given to the model.
    fake_llm.reply("看不到。")
    await _say(env, {"type": "image", "url": "file:///etc/passwd"}, _text("这个呢？"))
    assert not _has_image(fake_llm.chat_requests[-1])


async def test_an_image_is_described_to_a_model_that_takes_none(
    fake_llm: FakeOpenAI,
    llm: OpenAICompatibleLLM,  # noqa: F811
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    fake_llm.responders.append(_text_only)
    fake_llm.reply("我看不到图片，能描述一下吗？")
    response = await _say(env, {"type": "image", "url": IMAGE}, _text("这是什么？"))
    assert response["reply"] == "我看不到图片，能描述一下吗？"
    first, second = fake_llm.chat_requests
    assert _has_image(first) and not _has_image(second)
    assert "you cannot see it" in second["messages"][0]["content"]
    # Detected once: the next image is described straight away.
    fake_llm.reply("还是看不到。")
    await _say(env, {"type": "image", "url": IMAGE}, _text("那这张呢？"))
    assert len(fake_llm.chat_requests) == 3
    assert not _has_image(fake_llm.chat_requests[-1])


async def test_audio_and_video_are_acknowledged(
    fake_llm: FakeOpenAI,
    llm: OpenAICompatibleLLM,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    fake_llm.reply("我还听不了录音。")
    with caplog.at_level(logging.INFO, "custom_components.soul.core.chat"):
        await _say(
            env,
            {"type": "audio", "media": {"url": "https://oss.example.com/a.wav"}},
            {"type": "video", "media": {"url": "https://oss.example.com/v.mp4"}},
            _text("听听这个"),
        )
    prompt = fake_llm.chat_requests[-1]["messages"][0]["content"]
    assert (
        "audio recording (https://oss.example.com/a.wav); you cannot hear it" in prompt
    )
    assert "a video (https://oss.example.com/v.mp4); you cannot watch it" in prompt
    assert "Soul s1 received an input of type audio in session s1" in caplog.text
    assert "Soul s1 received an input of type video in session s1" in caplog.text


async def test_a_soul_without_a_body_talks(
    fake_llm: FakeOpenAI,
    llm: OpenAICompatibleLLM,  # noqa: F811
) -> None:
    env = Env(llm)  # T is online, but not bound to s1
    fake_llm.reply("你好，我是 Aria。")
    body = {"session_id": "a1", "soul_id": "s1", "inputs": [_text("你好")]}
    response = await env.pipeline.chat(body, soul_only=True)
    assert response["reply"] == "你好，我是 Aria。"
    assert response["soul_id"] == "s1" and response["terminal_id"] == ""
    request = fake_llm.chat_requests[-1]
    assert "tools" not in request  # no body skills, no memory
    assert "You have no body yet" in request["messages"][0]["content"]
    assert env.body.published == []  # no emotion_update to anyone
    assert env.souls.soul_of(T) is None  # and nothing was bound
    # A model that calls a skill anyway gets an error, nothing is sent.
    fake_llm.reply(
        tool_calls=[
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "control_light", "arguments": "{}"},
            }
        ]
    )
    response = await env.pipeline.chat(body, soul_only=True)
    assert response["executed_skills"] == []
    assert env.body.published == []
    # The §4.2.1 HTTP request still needs its terminal, and the soul must exist.
    with pytest.raises(ChatError, match="terminal_id is required"):
        await env.pipeline.chat(body)
    with pytest.raises(ChatError, match="unknown soul_id"):
        await env.pipeline.chat({**body, "soul_id": "nobody"}, soul_only=True)


async def test_the_parts_of_a_command_not_run_are_said() -> None:
    env = Env(None)
    env.souls.bind(T, "s1")
    response = await env.say("把灯调成绿色然后帮我订一张机票")
    assert response["executed_skills"] == ["control_light"]
    zh = "开灯"  # any Chinese text: the phrases' language
    assert response["reply"] == phrase(zh, "done") + phrase(
        zh, "undone", "帮我订一张机票"
    )
    english = await env.say("turn the light green and then book me a flight")
    assert english["reply"].endswith(phrase("en", "undone", "book me a flight"))
    # A remark is not a command left undone.
    response = await env.say("把灯调成绿色，再给我讲个笑话")
    assert response["reply"] == phrase("开灯", "done")


async def test_a_yes_after_the_mood_turned_runs_nothing() -> None:
    env = Env(None)
    env.souls.bind(T, "s1")
    state = env.souls._states["s1"]
    env.souls._states["s1"] = state.__class__(
        p=-0.5, a=0.0, d=0.0, at=state.at, last_input_at=state.at
    )
    response = await env.say("开灯")
    assert response["exec_mode"] == "confirm"
    env.souls._states["s1"] = state.__class__(
        p=-1.0, a=1.0, d=-1.0, at=state.at, last_input_at=state.at
    )
    response = await env.say("好的")
    assert response["exec_mode"] == "blocked"
    assert response["executed_skills"] == []
    assert not env.body.on("intent_action")
    assert response["reply"] == phrase("好的", "blocked", "控制灯")


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",  # cloud metadata
        "http://[fe80::1]/x.png",
        "http://0.0.0.0/x.png",
        "https://user:secret@example.com/x.png",
        "https://example.com:99999/x.png",
        "https://[::1",
        " https://example.com/x.png",
        "https://example.com/x\r\nX-Injected: 1",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "https://" + "a" * 3000 + ".com/x.png",
    ],
)
def test_a_media_url_the_model_may_not_fetch_is_dropped(url: str) -> None:
    assert media_url({"type": "image", "url": url}) is None
    assert media_url({"type": "image", "media": {"url": url}}) is None


def test_media_urls_the_model_may_fetch() -> None:
    for url in (
        "https://oss.example.com/frames/cat.jpg?sig=a%20b",
        "http://192.168.1.10:8123/api/camera_proxy/camera.door",
        "http://[2001:db8::1]/x.png",
    ):
        assert media_url({"type": "image", "url": url}) == url


async def test_every_input_of_the_turn_reaches_the_model(
    fake_llm: FakeOpenAI,
    llm: OpenAICompatibleLLM,  # noqa: F811
) -> None:
    env = Env(llm)
    env.souls.bind(T, "s1")
    fake_llm.reply("收到。")
    notes = [{"type": "event_note", "text": f"事件{i}"} for i in range(8)]
    images = [
        {"type": "image", "url": f"https://example.com/i{i}.png"} for i in range(6)
    ]
    await _say(env, *notes, *images, _text("看看这些"))
    request = fake_llm.chat_requests[-1]
    prompt = request["messages"][0]["content"]
    assert all(f"事件{i}" in prompt for i in range(8))
    parts = request["messages"][-1]["content"]
    attached = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
    assert attached == [f"https://example.com/i{i}.png" for i in range(4)]
    for i in (4, 5):
        assert f"(https://example.com/i{i}.png), not attached: at most 4" in prompt
    # The next turn shows the latest five of the earlier ones.
    fake_llm.reply("好。")
    await env.say("还有吗")
    prompt = fake_llm.chat_requests[-1]["messages"][0]["content"]
    assert "事件7" not in prompt and "i5.png) shown earlier" in prompt


async def test_a_long_text_goes_to_the_model_quietly(
    fake_llm: FakeOpenAI,
    llm: OpenAICompatibleLLM,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Texts up to 4,096 characters are allowed; commands stop at 2,000."""
    env = Env(llm)
    env.souls.bind(T, "s1")
    fake_llm.reply("好长的一段话。")
    response = await env.say("把灯调成绿色。" + "今天过得怎么样" * 400)
    assert response["intent_decision"] == "fallback_reasoning"
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_no_emotion_update_for_an_absent_body() -> None:
    env = Env(None)
    env.souls.bind(T, "s1")
    online = {T}
    env.souls._is_online = lambda terminal_id: terminal_id in online
    await env.say("你好")
    assert len(env.body.on("emotion_update")) == 1
    online.clear()
    await env.say("你好")
    assert len(env.body.on("emotion_update")) == 1


def test_a_users_own_turn_keeps_its_bidi_controls_across_a_restart() -> None:
    """Shown text loses them (a model's "\u202egnp.exe"); a user's own words do not."""
    session = Session("s", T, "s1", None)
    session.add_turn("user", "quote: \u2067שלום\u2069")
    session.add_turn("assistant", "see \u202egnp.exe")
    restored = Session.from_dict(session.as_dict(), time.time())
    assert restored is not None
    assert [turn["content"] for turn in restored.turns] == [
        "quote: \u2067שלום\u2069",
        "see \ufffdgnp.exe",
    ]
