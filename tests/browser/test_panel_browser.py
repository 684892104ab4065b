"""The Soul panel and card in Chromium against a running Home Assistant (conftest.py).

The tests assert on the DOM (Playwright's locators pierce shadow roots), never
on pixels, and save screenshots on the way (``SOUL_SCREENSHOT_DIR``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
import contextlib
import re
import time

from playwright.async_api import Error as PlaywrightError, Locator, Page, Route, expect
import pytest

from .conftest import BODY, SoulHA

pytestmark = pytest.mark.timeout(900)

SAD = "I feel so sad and lonely, my best friend moved away."
CARD_DASHBOARD = "soul-cards"


async def open_panel(page: Page, soul_ha: SoulHA, tab: str = "") -> None:
    await page.goto(f"{soul_ha.url}/soul/{tab}" if tab else f"{soul_ha.url}/soul")
    await expect(page.locator("soul-panel [role=tablist]")).to_be_visible(
        timeout=60_000
    )


def soul_card(page: Page, name: str) -> object:
    return page.locator("soul-panel article.soul").filter(
        has=page.locator("h2", has_text=re.compile(f"^{re.escape(name)}$"))
    )


async def shot(page: Page, soul_ha: SoulHA, name: str) -> None:
    await page.wait_for_timeout(600)  # transitions settle
    await page.screenshot(path=str(soul_ha.shots / name))


async def test_panel_lists_the_souls(
    soul_ha: SoulHA, page_as: Callable[..., Awaitable[Page]]
) -> None:
    page = await page_as("admin")
    await open_panel(page, soul_ha)
    for name in ("Aria", "Dad's soul", "Kid's soul"):
        await expect(soul_card(page, name)).to_have_count(1)
    aria = soul_card(page, "Aria")
    form = aria.locator("soul-emotion-form")
    await expect(form).to_have_attribute("role", "img")
    await expect(form).to_have_attribute("aria-label", re.compile("Aria feels"))
    await expect(aria.locator(f'[data-body="{BODY}"]')).to_have_attribute(
        "data-connected", "true"
    )
    await expect(aria.locator("[role=meter]")).to_have_attribute(
        "aria-valuenow", re.compile(r"\d+")
    )
    # Keyboard: the tabs move with the arrow keys.
    await page.locator("soul-panel [role=tab][data-tab=souls]").focus()
    await page.keyboard.press("ArrowRight")
    await expect(page.locator("soul-panel #tab-history")).to_have_attribute(
        "aria-selected", "true"
    )
    await expect(page.locator("soul-panel #section-history")).to_be_visible()
    await page.keyboard.press("ArrowLeft")
    await expect(page.locator("soul-panel #section-souls")).to_be_visible()
    await shot(page, soul_ha, "panel-light.png")


async def test_a_sad_chat_moves_the_form_and_leaves_a_trace(
    soul_ha: SoulHA, page_as: Callable[..., Awaitable[Page]]
) -> None:
    page = await page_as("admin")
    await open_panel(page, soul_ha)
    form = soul_card(page, "Aria").locator("soul-emotion-form")
    await expect(form).to_have_attribute("data-p", re.compile(r"-?\d"))
    before_p = float(await form.get_attribute("data-p") or "nan")
    before_hue = int(await form.get_attribute("data-hue") or "0")
    # Talk: the chat box, to Aria through the simulated body.
    await page.locator("soul-panel [role=tab][data-tab=talk]").click()
    talk = page.locator("soul-panel #section-talk")
    await talk.get_by_label("Soul", exact=True).select_option(label="Aria")
    await talk.get_by_label("Body", exact=True).select_option(BODY)
    await talk.get_by_label("Message", exact=True).fill(SAD)
    await talk.get_by_role("button", name="Send").click()
    await expect(talk.locator(".bubble.user")).to_contain_text(SAD)
    reply = talk.locator(".bubble.soul[data-from=soul]")
    await expect(reply).to_have_count(1, timeout=60_000)
    assert "You said" in await reply.inner_text()  # the fake LLM echoes
    await shot(page, soul_ha, "panel-talk.png")
    # Souls: the form moved within a second of the emotion_update.
    await page.locator("soul-panel [role=tab][data-tab=souls]").click()
    await expect(form).not_to_have_attribute("data-p", f"{before_p:.3f}", timeout=5_000)
    after_p = float(await form.get_attribute("data-p") or "nan")
    assert after_p < before_p
    assert (
        int(await form.get_attribute("data-hue") or "0") >= before_hue
    )  # towards blue
    await expect(
        soul_card(page, "Aria").locator(".user-emotion [data-emotion]")
    ).to_be_visible()
    # Timeline: that chat's trace, opened.
    await page.locator("soul-panel [role=tab][data-tab=timeline]").click()
    trace = page.locator("soul-panel li.trace").filter(has_text=SAD)
    await expect(trace).to_have_count(1, timeout=10_000)
    await expect(trace.locator(".event[data-type=user_input]")).to_have_count(1)
    await expect(trace.locator(".event[data-type=driver_response]")).to_have_count(1)
    await expect(trace.locator(".event[data-type=psyche_update]").first).to_be_visible()
    await (
        page.locator("soul-panel #section-timeline")
        .get_by_label("Soul", exact=True)
        .select_option(label="Aria")
    )
    await expect(trace).to_have_count(1)
    await shot(page, soul_ha, "panel-timeline.png")
    await trace.locator("button.open").click()
    dialog = page.locator("soul-panel dialog#trace")
    await expect(dialog).to_be_visible()
    await expect(dialog.locator(".event[data-type=driver_response]")).to_have_count(1)
    await page.keyboard.press("Escape")
    await expect(dialog).to_be_hidden()
    # History: the user turn is marked on the PAD chart.
    await page.locator("soul-panel [role=tab][data-tab=history]").click()
    history = page.locator("soul-panel #section-history")
    await history.get_by_label("Soul", exact=True).select_option(label="Aria")
    chart = history.locator("svg.chart")
    await expect(chart).to_have_attribute(
        "data-turns", re.compile(r"[1-9]"), timeout=10_000
    )
    await shot(page, soul_ha, "panel-history.png")
    # Bodies: the simulated body's skills and the decision of that turn.
    await page.locator("soul-panel [role=tab][data-tab=bodies]").click()
    body = page.locator(f'soul-panel article.body[data-body="{BODY}"]')
    await expect(body).to_be_visible()
    await expect(body.locator(".chip").first).to_be_visible()
    await shot(page, soul_ha, "panel-bodies.png")


async def test_an_override_in_a_chat_line_ends_with_it(
    soul_ha: SoulHA, page_as: Callable[..., Awaitable[Page]]
) -> None:
    """A right-to-left override in what a user said reversed the labels beside it.

    A black-box run (2026-11-28) saw the channel label "panel" after such a
    line read "lenap"; the trace's JSON carried the override too.
    """
    page = await page_as("admin")
    await open_panel(page, soul_ha, "talk")
    talk = page.locator("soul-panel #section-talk")
    await talk.get_by_label("Soul", exact=True).select_option(label="Aria")
    await talk.get_by_label("Body", exact=True).select_option(BODY)
    await talk.get_by_label("Message", exact=True).fill("bidi-probe \u202eleft alone")
    await talk.get_by_role("button", name="Send").click()
    await expect(talk.locator(".bubble.soul[data-from=soul]")).to_have_count(
        1, timeout=60_000
    )
    await page.locator("soul-panel [role=tab][data-tab=timeline]").click()
    trace = page.locator("soul-panel li.trace").filter(has_text="bidi-probe")
    said = trace.locator(".event[data-type=user_input]")
    await expect(said).to_have_count(1, timeout=10_000)
    label = said.locator("span.muted")
    await expect(label).to_have_text("panel")
    # Where the label's first and last letters are drawn: left to right.
    first, last = await label.evaluate(
        """(el) => {
          const text = el.firstChild, range = document.createRange();
          const left = (i) => { range.setStart(text, i); range.setEnd(text, i + 1);
            return range.getBoundingClientRect().left; };
          return [left(0), left(text.length - 1)];
        }"""
    )
    assert first < last, (first, last)
    await trace.locator("button.open").click()
    dialog = page.locator("soul-panel dialog#trace")
    await dialog.locator("summary").click()
    await expect(dialog.locator("pre")).to_contain_text("bidi-probe \\u202eleft alone")
    await page.keyboard.press("Escape")


async def test_a_read_only_user_is_told_before_sending(
    soul_ha: SoulHA, page_as: Callable[..., Awaitable[Page]]
) -> None:
    """The Talk tab offered Send to a read-only user, whom the server refuses."""
    page = await page_as("read_only")
    await open_panel(page, soul_ha, "talk")
    talk = page.locator("soul-panel #section-talk")
    # (the shared soul the body's hint made; Aria is the owner's)
    await talk.get_by_label("Soul", exact=True).select_option(label="friendly")
    await expect(talk.get_by_role("note")).to_be_visible()
    await expect(talk.get_by_role("note")).to_contain_text("read-only")
    await expect(talk.get_by_role("button", name="Send")).to_be_disabled()
    await expect(talk.get_by_label("Message", exact=True)).to_be_disabled()


async def test_a_user_sees_only_their_souls(
    soul_ha: SoulHA, page_as: Callable[..., Awaitable[Page]]
) -> None:
    page = await page_as("user")
    await open_panel(page, soul_ha)
    await expect(soul_card(page, "Kid's soul")).to_have_count(1)
    # The body's soul_hint made a shared soul; Aria and Dad's are the owner's.
    await expect(soul_card(page, "friendly")).to_have_count(1)
    await expect(soul_card(page, "Aria")).to_have_count(0)
    await expect(soul_card(page, "Dad's soul")).to_have_count(0)
    await page.locator("soul-panel [role=tab][data-tab=talk]").click()
    options = await page.locator("soul-panel #talk-soul option").all_inner_texts()
    assert sorted(options) == ["Kid's soul", "friendly"]


@pytest.mark.parametrize(
    ("dark", "narrow"), [(False, True), (True, False), (True, True)]
)
async def test_panel_themes_and_widths(
    soul_ha: SoulHA, page_as: Callable[..., Awaitable[Page]], dark: bool, narrow: bool
) -> None:
    page = await page_as("admin", dark=dark, narrow=narrow)
    await open_panel(page, soul_ha)
    await expect(soul_card(page, "Aria")).to_have_count(1)
    panel = page.locator("soul-panel")
    if narrow:
        await expect(panel).to_have_attribute("narrow", "")
        await expect(page.locator("soul-panel button.menu")).to_be_visible()
        box = await soul_card(page, "Aria").bounding_box()
        assert box is not None and box["width"] <= 390
    background = await page.evaluate(
        "() => getComputedStyle(document.querySelector('home-assistant')"
        ".shadowRoot.querySelector('home-assistant-main').shadowRoot"
        ".querySelector('partial-panel-resolver').querySelector('ha-panel-custom')"
        ".querySelector('soul-panel')).backgroundColor"
    )
    channels = [int(c) for c in re.findall(r"\d+", background)[:3]]
    assert (sum(channels) / 3 < 100) == dark, background
    name = f"panel-{'dark' if dark else 'light'}{'-narrow' if narrow else ''}.png"
    await shot(page, soul_ha, name)


async def _dashboard(soul_ha: SoulHA) -> None:
    (dashboards,) = await soul_ha.async_ws(
        "admin", {"type": "lovelace/dashboards/list"}
    )
    if not any(d["url_path"] == CARD_DASHBOARD for d in dashboards):
        await soul_ha.async_ws(
            "admin",
            {
                "type": "lovelace/dashboards/create",
                "url_path": CARD_DASHBOARD,
                "title": "Soul cards",
                "mode": "storage",
                "show_in_sidebar": True,
            },
        )
    card = {"type": "custom:soul-emotion-card", "soul_id": soul_ha.souls["Aria"]}
    await soul_ha.async_ws(
        "admin",
        {
            "type": "lovelace/config/save",
            "url_path": CARD_DASHBOARD,
            "config": {
                "views": [
                    {
                        "title": "Soul",
                        "type": "sections",
                        "sections": [{"type": "grid", "cards": [card]}],
                    }
                ]
            },
        },
    )


async def open_card(page: Page, soul_ha: SoulHA) -> Locator:
    """Open the card's dashboard; return the card (a screenshot if it never came).

    No reload: Home Assistant shows "Configuration error" for a card whose
    element is not defined when the view is built and brings the card back
    only when it gets defined, so a card that needs a reload is a bug
    (test_the_card_comes_on_a_slow_first_load).
    """
    card = page.locator("soul-emotion-card")
    await page.goto(f"{soul_ha.url}/{CARD_DASHBOARD}/0")
    try:
        await expect(card.locator("h2")).to_have_count(1, timeout=60_000)
    except AssertionError:
        await page.screenshot(path=str(soul_ha.shots / "card-missing.png"))
        raise
    return card


# Whether Home Assistant's error card ("Configuration error") is on show.
SHOWS_ERROR_CARD = """() => {
  const found = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll("*")) {
      if (el.localName === "hui-error-card" && el.isConnected && getComputedStyle(el).display !== "none") found.push(el);
      if (el.shadowRoot) walk(el.shadowRoot);
    }
  };
  walk(document);
  return found.length > 0;
}"""


@pytest.mark.parametrize("slow", ["app", "card", "parts", "hung part"])
async def test_the_card_comes_on_a_slow_first_load(
    soul_ha: SoulHA, page_as: Callable[..., Awaitable[Page]], slow: str
) -> None:
    """A slow first load never leaves "Configuration error" behind, no reload.

    ``app``: Home Assistant's app.js comes 6 s late, so the card's module runs
    before the app swaps ``window.customElements`` for its scoped-registry
    polyfill (what a busy machine's first run met twice: an element defined
    in the browser's registry, which Lovelace never asks, so the error card
    stayed until a reload); the card waits for the app and comes.
    ``card``: soul-card.js itself comes 6 s late; Home Assistant shows its
    error card meanwhile, then rebuilds the card when the element is defined.
    ``parts``: soul-common.js and emotion-form.js come 6 s late; the element
    is defined before the view is built, so no error card shows at all.
    ``hung part``: the first request for soul-common.js never gets an answer;
    the card asks again under a fresh URL and comes.
    """
    await _dashboard(soul_ha)
    page = await page_as("admin")
    release = asyncio.Event()

    def late(name: str, *, first_only: bool = False) -> Callable[[str], bool]:
        return lambda url: (
            url.endswith(f"/{name}") or (not first_only and f"/{name}?" in url)
        )

    async def delayed(route: Route) -> None:
        await asyncio.sleep(6)
        with contextlib.suppress(PlaywrightError):
            await route.continue_()

    async def held(route: Route) -> None:
        await release.wait()
        with contextlib.suppress(PlaywrightError):
            await route.continue_()

    if slow == "app":
        await page.route(re.compile(r"/frontend_latest/app\.\w+\.js$"), delayed)
    elif slow == "card":
        await page.route(late("soul-card.js"), delayed)
    elif slow == "parts":
        await page.route(late("soul-common.js"), delayed)
        await page.route(late("emotion-form.js"), delayed)
    else:
        await page.route(late("soul-common.js", first_only=True), held)
    try:
        started = time.monotonic()
        await page.goto(f"{soul_ha.url}/{CARD_DASHBOARD}/0")
        card = page.locator("soul-emotion-card")
        error_seen = False
        while time.monotonic() - started < 45:
            error_seen = error_seen or await page.evaluate(SHOWS_ERROR_CARD)
            if await card.locator("h2").count():
                break
            await page.wait_for_timeout(200)
        await page.screenshot(
            path=str(soul_ha.shots / f"card-slow-{slow.replace(' ', '-')}.png")
        )
        await expect(card.locator("h2")).to_have_text("Aria", timeout=1_000)
        await expect(card.locator("soul-emotion-form")).to_have_attribute(
            "aria-label", re.compile("Aria feels")
        )
        assert not await page.evaluate(SHOWS_ERROR_CARD)
        if slow != "card":  # the element was defined before the view was built
            assert not error_seen
    finally:
        release.set()


@pytest.mark.parametrize("dark", [False, True])
async def test_the_card_renders_on_a_dashboard(
    soul_ha: SoulHA, page_as: Callable[..., Awaitable[Page]], dark: bool
) -> None:
    await _dashboard(soul_ha)
    page = await page_as("admin", dark=dark)
    card = await open_card(page, soul_ha)
    await expect(card.locator("h2")).to_have_text("Aria")
    await expect(card.locator("soul-emotion-form")).to_have_attribute(
        "aria-label", re.compile("Aria feels")
    )
    await expect(card.locator(".mood")).not_to_have_text("–")
    await expect(card.locator("[role=meter]")).to_be_visible()
    await shot(page, soul_ha, f"card-{'dark' if dark else 'light'}.png")


async def test_the_card_editor_picks_a_soul(
    soul_ha: SoulHA, page_as: Callable[..., Awaitable[Page]]
) -> None:
    page = await page_as("admin")
    await open_card(page, soul_ha)
    # The editor as the dashboard's card editor creates it.
    options = await page.evaluate(
        """async () => {
          const Card = customElements.get("soul-emotion-card");
          const editor = Card.getConfigElement();
          editor.hass = document.querySelector("home-assistant").hass;
          editor.setConfig({ type: "custom:soul-emotion-card" });
          document.body.append(editor);
          await new Promise((r) => setTimeout(r, 500));
          const changed = new Promise((r) => editor.addEventListener("config-changed", (e) => r(e.detail.config)));
          const select = editor.shadowRoot.getElementById("soul");
          const names = [...select.options].map((o) => o.textContent);
          select.value = [...select.options].find((o) => o.textContent === "Kid's soul").value;
          select.dispatchEvent(new Event("change"));
          return { names, config: await changed, labelled: !!select.closest("label") };
        }"""
    )
    assert {"Aria", "Dad's soul", "Kid's soul"} <= set(options["names"])
    assert options["config"]["soul_id"] == soul_ha.souls["Kid's soul"]
    assert options["labelled"]
    assert any(
        c["type"] == "soul-emotion-card"
        for c in await page.evaluate("() => window.customCards || []")
    )
