"""The spotlight and the hero (docs/decisions.md, "Widget runtime: spotlight and hero"),
rule by rule, with the events of docs/widgets.md "Events" in order; spotlight options, pinning and
ordering kept in the user's prefs; manual registration merged with stored definitions.

The widgets are one test web component, `<shelf-probe>` (widget_assets/shelf-probe.js), kept in
the widget store and named by every definition's `customElementName`.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.conftest import bearer_token
from tests.pages.conftest import Person, Site, shot, start_site
from tests.servers import ROOT

PROBE = Path(__file__).parent / "widget_assets" / "shelf-probe.js"
PROBE_LOCATION = {"storeBucket": "widgets", "storeKey": "shelf-probe.js", "customElementName": "shelf-probe"}

EVENTS = [
    "widgetOpen", "widgetClose", "heroWillShow", "heroDidShow", "heroWillHide", "heroDidHide",
    "heroCollapse", "heroExpand", "spotlightShow", "spotlightHide",
]  # fmt: skip

# Each event with the flags as they were when its handlers ran (heroWillShow before the hero shows).
RECORD = """(names) => {
  window.__events = [];
  const runtime = window.chatRuntime;
  for (const name of names) {
    runtime.addEventListener(name, (payload) => window.__events.push({
      name, payload, heroVisible: runtime.heroVisible, heroCollapsed: runtime.heroCollapsed, spotlightVisible: runtime.spotlightVisible,
    }));
  }
}"""


def definition(tag: str, title: str, **contexts: Any) -> dict[str, Any]:
    return {
        "scope": "shelf",
        "tag": tag,
        "usageMode": "chat-app",
        "status": "enabled",
        "widget": {"type": "web-component", "webComponent": PROBE_LOCATION},
        "renderingContexts": contexts,
        "canBeGeneratedByLlm": False,
        "canBeGeneratedByTool": False,
        "description": title,
    }


DEFINITIONS = [
    definition("alpha", "Alpha", spotlight={"enabled": True, "displayOrder": 2}, canvas=True),
    definition("beta", "Beta", spotlight={"enabled": True, "displayOrder": 1, "startCollapsed": True}),
    definition("gamma", "Gamma", spotlight={"enabled": True, "displayOrder": 5, "isDefault": True}),
    definition("later", "Later", spotlight={"enabled": True, "autoCreateInstance": False}),
    definition("quiet", "Quiet", spotlight={"enabled": True, "autoCreateInstance": False, "showInUnpinnedMenu": False}),
    definition("multi", "Multi", spotlight={"enabled": True, "singleton": False, "autoCreateInstance": False, "showInUnpinnedMenu": False}),
    definition("banner", "Banner", hero={"enabled": True, "sizing": {"width": "5000px", "minHeight": 120, "maxHeight": 300}}),
    definition("plain-hero", "Plain hero", hero={"enabled": True, "sizing": {"width": "50px"}}),
    definition("auto-hero", "Auto hero", hero={"enabled": True, "autoCreateInstance": True, "startCollapsed": True}),
]


def tags(*names: str, others: list[dict[str, str]]) -> dict[str, Any]:
    """The `tags` feature of a test chat app: these tags of ours, and none of the global ones
    (the demo's spotlight and hero widgets would join the carousel otherwise)."""
    return {"tags": {"enabled": True, "tagsEnabled": [{"scope": "shelf", "tag": name} for name in names], "tagsDisabled": others}}


@pytest.fixture(scope="module")
def shelf_site(site: Site) -> Iterator[Site]:
    """A server of its own on the same database, with tags on site-wide (docs/api.md, "Features")."""
    features = json.dumps({"promptInputFieldLabel": "Ask a question", "tags": {"enabled": True}})
    with contextlib.ExitStack() as stack:
        env = {**site.env, "CHAT_SITE_FEATURES": features}
        put = [sys.executable, "manage.py", "store_put", "widgets", "shelf-probe.js", str(PROBE), "--encode", "none"]
        subprocess.run(put, cwd=ROOT, env=env, check=True, capture_output=True)
        shelf = start_site(env, site.model, stack, seed=False)
        for body in DEFINITIONS:
            response = shelf.api("POST", "/api/chat-admin/tagdef", json={"tagDefinition": body})
            assert response.status_code == 200, response.text
        found = shelf.api("POST", "/api/chat-admin/tagdef/search", json={}).json()["tagDefinitions"]
        others = [{"scope": d["scope"], "tag": d["tag"]} for d in found if d["usageMode"] == "global" and d["scope"] != "shelf"]
        shelf.chat_app("shelf-main", features=tags("alpha", "beta", "gamma", "later", "quiet", "multi", "banner", others=others))
        shelf.chat_app("shelf-plain-hero", features=tags("plain-hero", others=others))
        shelf.chat_app("shelf-auto-hero", features=tags("auto-hero", others=others))
        yield shelf


@pytest.fixture
def visitor(person_factory: Callable[..., Person], shelf_site: Site) -> Person:
    person = person_factory()
    person.site = shelf_site
    return person


def open_chat(person: Person, chat_app_id: str, *, cards: int | None = None) -> Any:
    page = person.open(f"/chat/{chat_app_id}/")
    page.wait_for_function("() => window.chatRuntime && typeof window.chatRuntime.showHero === 'function'")
    if cards is not None:
        expect(page.locator(".spotlight-card")).to_have_count(cards)
        expect(page.locator(".spotlight-card shelf-probe")).to_have_count(cards)
    page.evaluate(RECORD, EVENTS)
    return page


def event(name: str, payload: dict[str, Any] | None = None, *, hero: bool = False, collapsed: bool = False, spotlight: bool = True) -> dict:
    """One recorded event, with the flags as its handlers saw them."""
    return {"name": name, "payload": payload or {}, "heroVisible": hero, "heroCollapsed": collapsed, "spotlightVisible": spotlight}


def events(page: Any) -> list[dict[str, Any]]:
    return page.evaluate("() => window.__events.splice(0)")


def names(recorded: list[dict[str, Any]]) -> list[str]:
    return [event["name"] for event in recorded]


def card_titles(page: Any) -> list[str]:
    return page.locator(".spotlight-card").evaluate_all("cards => cards.map((card) => card.getAttribute('aria-label'))")


# --- spotlight ---------------------------------------------------------------------------------


def test_spotlight_orders_by_is_default_then_display_order_and_honours_start_collapsed(visitor: Person):
    page = open_chat(visitor, "shelf-main", cards=3)
    # Gamma isDefault (first whatever its displayOrder), then Beta (1), Alpha (2); Later waits in
    # the menu (autoCreateInstance false); Quiet and Multi are not offered (showInUnpinnedMenu false).
    assert card_titles(page) == ["Gamma", "Beta", "Alpha"]
    spotlight = page.get_by_role("region", name="Spotlight")
    expect(spotlight.get_by_role("listitem", name="Alpha")).to_contain_text("shelf.alpha in spotlight")
    beta = spotlight.get_by_role("listitem", name="Beta")
    expect(beta.get_by_role("button", name="Expand Beta")).to_have_attribute("aria-expanded", "false")
    expect(beta.locator("shelf-probe")).to_be_hidden()
    assert beta.locator("shelf-probe").evaluate("node => node.isConnected")  # collapsed, still mounted
    more = spotlight.get_by_role("button", name="More widgets")
    more.click()
    menu = spotlight.get_by_role("list", name="Unpinned widgets")
    expect(menu.get_by_role("button")).to_have_text(["Pin Later"])
    page.keyboard.press("Escape")
    expect(menu).to_be_hidden()
    expect(more).to_be_focused()
    shot(page, "widgets-spotlight")

    # Keyboard: the expand button is a button like any other.
    beta.get_by_role("button", name="Expand Beta").focus()
    page.keyboard.press("Enter")
    expect(beta.get_by_role("button", name="Collapse Beta")).to_have_attribute("aria-expanded", "true")
    expect(beta.locator("shelf-probe")).to_be_visible()
    # Card collapse is the card's own, not the spotlight's: no spotlight or hero event.
    assert names(events(page)) == []


def test_spotlight_visibility_table_with_its_events(visitor: Person):
    page = open_chat(visitor, "shelf-main", cards=3)
    runtime = "window.chatRuntime"
    toggle = page.get_by_role("button", name="Spotlight", exact=True)
    track = page.get_by_role("list", name="Spotlight widgets")
    assert page.evaluate(f"{runtime}.spotlightVisible") is True
    expect(toggle).to_have_attribute("aria-expanded", "true")

    # visible --hideSpotlight()--> hidden (header only), spotlightHide
    page.get_by_role("button", name="Unpin Alpha").focus()
    assert page.evaluate(f"{runtime}.hideSpotlight()") is True
    assert events(page) == [event("spotlightHide", spotlight=False)]
    expect(toggle).to_be_focused()  # not lost with the hidden cards
    expect(track).to_be_hidden()
    expect(toggle).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    shot(page, "widgets-spotlight-hidden")
    assert page.evaluate(f"{runtime}.hideSpotlight()") is False  # already hidden: no move, no event
    assert events(page) == []

    # hidden --showSpotlight()--> visible, spotlightShow
    page.evaluate(f"{runtime}.showSpotlight()")
    assert events(page) == [event("spotlightShow")]
    expect(track).to_be_visible()
    page.evaluate(f"{runtime}.showSpotlight()")
    assert events(page) == []

    # toggleSpotlight() both ways, then the person with the header button (mouse and keyboard)
    page.evaluate(f"{runtime}.toggleSpotlight()")
    page.evaluate(f"{runtime}.toggleSpotlight()")
    toggle.click()
    toggle.focus()
    page.keyboard.press("Enter")
    recorded = events(page)
    assert names(recorded) == ["spotlightHide", "spotlightShow", "spotlightHide", "spotlightShow"]
    assert [event["spotlightVisible"] for event in recorded] == [False, True, False, True]
    assert all(event["payload"] == {} for event in recorded)
    with pytest.raises(Exception, match="only a getter"):
        page.evaluate("() => { 'use strict'; window.chatRuntime.spotlightVisible = false; }")
    assert page.evaluate(f"{runtime}.spotlightVisible") is True


def test_pinning_and_ordering_are_kept_in_the_users_prefs_across_reloads(visitor: Person):
    page = open_chat(visitor, "shelf-main", cards=3)
    spotlight = page.get_by_role("region", name="Spotlight")
    spotlight.get_by_role("button", name="Move Alpha earlier").click()
    assert card_titles(page) == ["Gamma", "Alpha", "Beta"]
    expect(spotlight.get_by_role("button", name="Move Alpha earlier")).to_be_focused()
    page.keyboard.press("Enter")  # again, from the keyboard
    assert card_titles(page) == ["Alpha", "Gamma", "Beta"]
    expect(spotlight.get_by_role("button", name="Move Alpha earlier")).to_be_disabled()
    # Reordered with Element.moveBefore: a widget with connectedMoveCallback is moved, never reconnected.
    moved = page.locator('.spotlight-card[data-tag-id="shelf.alpha"] shelf-probe').evaluate("node => [node.connections, node.moves]")
    assert moved == [1, 2]

    spotlight.get_by_role("button", name="Unpin Gamma").click()
    expect(page.locator(".spotlight-card")).to_have_count(2)
    recorded = events(page)
    assert recorded[-1]["name"] == "widgetClose" and recorded[-1]["payload"]["tagId"] == "shelf.gamma"
    assert recorded[-1]["payload"]["renderingContext"] == "spotlight"
    spotlight.get_by_role("button", name="More widgets").click()
    expect(spotlight.get_by_role("list", name="Unpinned widgets").get_by_role("button")).to_have_text(["Pin Gamma", "Pin Later"])
    spotlight.get_by_role("button", name="Pin Later").click()
    expect(page.locator(".spotlight-card")).to_have_count(3)
    assert card_titles(page) == ["Alpha", "Beta", "Later"]
    opened = events(page)
    later = {"tagId": "shelf.later", "instanceId": opened[0]["payload"]["instanceId"], "renderingContext": "spotlight"}
    assert opened == [event("widgetOpen", later)]
    page.wait_for_function(
        "async () => { const answer = await fetch('/api/chat/user/prefs').then((r) => r.json());"
        " const s = answer.prefs.spotlight || {};"
        " return (s.pinned || []).includes('shelf.later') && (s.unpinned || []).includes('shelf.gamma'); }"
    )
    prefs = visitor.api("GET", "/api/chat/user/prefs").json()["prefs"]["spotlight"]
    assert prefs["unpinned"] == ["shelf.gamma"] and prefs["pinned"] == ["shelf.later"]
    assert [tag for tag in prefs["order"] if tag in ("shelf.alpha", "shelf.beta", "shelf.gamma", "shelf.later")] == [
        "shelf.alpha", "shelf.gamma", "shelf.beta", "shelf.later",
    ]  # fmt: skip

    page.reload()
    expect(page.locator(".spotlight-card")).to_have_count(3)
    assert card_titles(page) == ["Alpha", "Beta", "Later"]
    shot(page, "widgets-spotlight-reordered")

    # Another person has their own prefs: the definitions' order.
    other = open_chat(_another(visitor), "shelf-main", cards=3)
    assert card_titles(other) == ["Gamma", "Beta", "Alpha"]


def _another(person: Person) -> Person:
    context = person.context.browser.new_context(viewport={"width": 1200, "height": 820})
    token_user = f"{person.user_id}-other"
    headers = {"Authorization": f"Bearer {bearer_token(token_user)}"}
    answer = context.request.post(f"{person.site.url}/api/chat/auth/session", headers=headers)
    assert answer.ok, answer.text()
    return Person(token_user, context, context.new_page(), person.site)


REGISTER = "(registration) => window.chatRuntime.manuallyRegisterSpotlightWidget(registration)"
CLOCK = {
    "scope": "host", "tag": "clock", "tagTitle": "Clock", "customElementName": "shelf-probe", "displayOrder": 3,
    "sizing": {"width": "260px", "minHeight": 90},
}  # fmt: skip


def test_manual_registration_merges_with_stored_definitions_and_respects_unpinning(visitor: Person):
    page = open_chat(visitor, "shelf-main", cards=3)
    # A registration of a stored tag: its own fields win (displayOrder, title); still one card.
    page.evaluate(REGISTER, {"scope": "shelf", "tag": "alpha", "tagTitle": "Alpha by the host", "displayOrder": -1})
    assert card_titles(page) == ["Gamma", "Alpha by the host", "Beta"]
    assert events(page) == []  # the same instance, not a new one
    # A tag with no stored definition: the host's own element, placed by its displayOrder.
    page.evaluate(REGISTER, CLOCK)
    expect(page.locator(".spotlight-card")).to_have_count(4)
    assert card_titles(page) == ["Gamma", "Alpha by the host", "Beta", "Clock"]
    clock = page.get_by_role("listitem", name="Clock")
    expect(clock).to_contain_text("host.clock in spotlight")
    assert abs(clock.bounding_box()["width"] - 260) <= 1  # the registration's sizing
    assert abs(clock.locator(".widget-body").bounding_box()["height"] - 90) <= 1
    assert names(events(page)) == ["widgetOpen"]
    with pytest.raises(Exception, match="tagTitle"):
        page.evaluate("() => window.chatRuntime.manuallyRegisterSpotlightWidget({scope: 'host', tag: 'x'})")
    shot(page, "widgets-spotlight-registered")

    page.get_by_role("button", name="Unpin Clock").click()
    expect(page.locator(".spotlight-card")).to_have_count(3)
    # The registered stored tag unpins like any other, and stays unpinned when the row is redrawn.
    page.get_by_role("button", name="Unpin Alpha by the host").click()
    page.evaluate(REGISTER, {**CLOCK, "tag": "other", "tagTitle": "Other", "autoCreateInstance": False})
    assert card_titles(page) == ["Gamma", "Beta"]
    page.wait_for_function(
        "async () => { const answer = await fetch('/api/chat/user/prefs').then((r) => r.json());"
        " return ['host.clock', 'shelf.alpha'].every((tag) => (answer.prefs.spotlight?.unpinned || []).includes(tag)); }"
    )

    # Registration is not persisted: after a reload there is no clock until the host registers it,
    # and then the person's unpinning holds (offered in the menu, not shown).
    page.reload()
    expect(page.locator(".spotlight-card")).to_have_count(2)
    assert card_titles(page) == ["Gamma", "Beta"]
    page.evaluate(REGISTER, CLOCK)
    page.get_by_role("button", name="More widgets").click()
    expect(page.get_by_role("list", name="Unpinned widgets").get_by_role("button")).to_have_text(["Pin Later", "Pin Alpha", "Pin Clock"])
    expect(page.locator(".spotlight-card")).to_have_count(2)


def test_singleton_replaces_its_instance_and_a_non_singleton_adds_cards(visitor: Person):
    page = open_chat(visitor, "shelf-main", cards=3)
    runtime = "window.chatRuntime"
    before = page.locator('.spotlight-card[data-tag-id="shelf.alpha"]').get_attribute("data-instance-id")
    after = page.evaluate(f"{runtime}.renderTag('shelf.alpha', 'spotlight', {{label: 'fresh'}})")
    assert after != before
    alpha = page.locator('.spotlight-card[data-tag-id="shelf.alpha"]')
    expect(alpha).to_have_count(1)
    expect(alpha).to_contain_text("shelf.alpha in spotlight: fresh")
    assert card_titles(page) == ["Gamma", "Beta", "Alpha"]  # in its place
    recorded = events(page)
    assert [(event["name"], event["payload"]["instanceId"]) for event in recorded] == [("widgetOpen", after), ("widgetClose", before)]

    # autoCreateInstance false and not in the menu: rendered on request only; not a singleton: twice.
    first = page.evaluate(f"{runtime}.renderTag('shelf.multi', 'spotlight', {{label: 'one'}})")
    second = page.evaluate(f"{runtime}.renderTag('shelf.multi', 'spotlight', {{label: 'two'}})")
    assert first != second
    expect(page.locator('.spotlight-card[data-tag-id="shelf.multi"]')).to_have_text([re.compile("one"), re.compile("two")])
    page.evaluate(f"{runtime}.renderTag('shelf.quiet', 'spotlight')")
    expect(page.locator('.spotlight-card[data-tag-id="shelf.quiet"]')).to_have_count(1)
    with pytest.raises(Exception, match="does not render in spotlight"):
        page.evaluate(f"{runtime}.renderTag('shelf.banner', 'spotlight')")


# --- hero ------------------------------------------------------------------------------------------


def test_hero_state_table_row_by_row_with_events_in_order(visitor: Person):
    page = open_chat(visitor, "shelf-main", cards=3)
    runtime = "window.chatRuntime"
    hero = page.locator("section.hero")
    assert page.evaluate(f"[{runtime}.heroVisible, {runtime}.heroCollapsed]") == [False, False]
    expect(hero).to_be_hidden()

    instance_id = page.evaluate(f"{runtime}.renderTag('shelf.banner', 'hero', {{label: 'hello'}})")
    page.wait_for_function("() => document.querySelector('section.hero shelf-probe')")
    page.evaluate("() => { window.__hero = document.querySelector('section.hero shelf-probe'); }")
    recorded = events(page)
    opened = {"tagId": "shelf.banner", "instanceId": instance_id, "renderingContext": "hero"}
    assert recorded == [event("widgetOpen", opened), event("heroWillShow"), event("heroDidShow", hero=True)]
    expect(page.get_by_role("region", name="Banner")).to_contain_text("shelf.banner in hero: hello")
    shot(page, "widgets-hero")

    def flags() -> list[bool]:
        return page.evaluate(f"[{runtime}.heroVisible, {runtime}.heroCollapsed]")

    def same_element_connected() -> bool:
        return page.evaluate("() => window.__hero === document.querySelector('section.hero shelf-probe') && window.__hero.isConnected")

    # visible --hideHero()--> hidden: stays mounted; heroWillHide then heroDidHide
    page.evaluate(f"{runtime}.hideHero()")
    recorded = events(page)
    assert [(e["name"], e["payload"], e["heroVisible"]) for e in recorded] == [("heroWillHide", {}, True), ("heroDidHide", {}, False)]
    expect(hero).to_be_hidden()
    assert flags() == [False, False]
    assert same_element_connected()
    assert page.evaluate("() => window.__hero.connections") == 1  # never disconnected
    assert page.evaluate(f"{runtime}.hideHero()") is False  # hidden already: no move
    assert events(page) == []

    # hidden --showHero()--> visible (expanded per heroCollapsed); heroWillShow then heroDidShow
    page.evaluate(f"{runtime}.showHero()")
    recorded = events(page)
    assert [(e["name"], e["payload"], e["heroVisible"]) for e in recorded] == [("heroWillShow", {}, False), ("heroDidShow", {}, True)]
    assert flags() == [True, False]
    assert same_element_connected()
    assert page.evaluate(f"{runtime}.showHero()") is False
    assert events(page) == []
    # The widget heard them too: its element was defined already, so it was there for the first show.
    assert page.evaluate("() => window.__hero.heard") == {"heroDidHide": 1, "heroDidShow": 2}

    # expanded --collapseHero()--> collapsed (header bar), heroCollapse; again: nothing
    page.evaluate(f"{runtime}.collapseHero()")
    page.evaluate(f"{runtime}.collapseHero()")
    assert [(e["name"], e["payload"], e["heroCollapsed"]) for e in events(page)] == [("heroCollapse", {}, True)]
    expect(hero.get_by_role("button", name="Expand Banner")).to_have_attribute("aria-expanded", "false")
    expect(hero.locator("shelf-probe")).to_be_hidden()
    assert same_element_connected()
    shot(page, "widgets-hero-collapsed")

    # collapsed --expandHero()--> expanded, heroExpand; again: nothing
    page.evaluate(f"{runtime}.expandHero()")
    page.evaluate(f"{runtime}.expandHero()")
    assert [(e["name"], e["heroCollapsed"]) for e in events(page)] == [("heroExpand", False)]
    expect(hero.locator("shelf-probe")).to_be_visible()

    # toggleHeroCollapsed() both ways, then the person: mouse, then keyboard
    page.evaluate(f"{runtime}.toggleHeroCollapsed()")
    page.evaluate(f"{runtime}.toggleHeroCollapsed()")
    hero.get_by_role("button", name="Collapse Banner").click()
    expect(hero.get_by_role("button", name="Expand Banner")).to_be_focused()
    hero.get_by_role("button", name="Expand Banner").focus()
    page.keyboard.press("Enter")
    recorded = events(page)
    assert names(recorded) == ["heroCollapse", "heroExpand", "heroCollapse", "heroExpand"]
    assert [e["heroCollapsed"] for e in recorded] == [True, False, True, False]
    assert flags() == [True, False]

    # Collapsed while hidden: showHero shows it collapsed, as heroCollapsed says.
    page.evaluate(f"() => {{ {runtime}.hideHero(); {runtime}.collapseHero(); {runtime}.showHero(); }}")
    assert names(events(page)) == ["heroWillHide", "heroDidHide", "heroCollapse", "heroWillShow", "heroDidShow"]
    assert flags() == [True, True]
    expect(hero.locator("shelf-probe")).to_be_hidden()
    assert same_element_connected()

    # The hero is read-only from outside.
    with pytest.raises(Exception, match="only a getter"):
        page.evaluate("() => { 'use strict'; window.chatRuntime.heroVisible = false; }")

    # any --closeHero()--> destroyed: instance removed (widgetClose), no hero events
    page.evaluate(f"{runtime}.closeHero()")
    recorded = events(page)
    assert recorded == [event("widgetClose", opened)]
    assert page.evaluate("() => window.__hero.isConnected") is False
    expect(hero).to_be_hidden()
    expect(page.locator("section.hero shelf-probe")).to_have_count(0)
    assert flags() == [False, False]
    for operation in ("hideHero", "collapseHero", "expandHero", "toggleHeroCollapsed", "closeHero"):
        page.evaluate(f"{runtime}.{operation}()")
    assert events(page) == []  # nothing to move without a hero
    # The closed widget's listeners went with it (subscribed with its instance id).
    page.evaluate(f"() => {{ {runtime}.renderTag('shelf.banner', 'hero'); {runtime}.hideHero(); {runtime}.showHero(); }}")
    assert page.evaluate("() => window.__hero.heard") == {"heroDidHide": 2, "heroDidShow": 3}  # as when it was closed
    assert page.evaluate("() => document.querySelector('section.hero shelf-probe').heard") == {"heroDidHide": 1, "heroDidShow": 2}


def test_a_new_hero_replaces_the_old_one_singleton(visitor: Person):
    page = open_chat(visitor, "shelf-main", cards=3)
    first = page.evaluate("window.chatRuntime.renderTag('shelf.banner', 'hero', {label: 'one'})")
    second = page.evaluate("window.chatRuntime.renderTag('shelf.banner', 'hero', {label: 'two'})")
    expect(page.locator("section.hero shelf-probe")).to_have_count(1)
    expect(page.locator("section.hero")).to_contain_text("two")
    recorded = events(page)
    # The first shows; the second replaces it while visible, so no new show events.
    assert [(e["name"], e["payload"].get("instanceId")) for e in recorded] == [
        ("widgetOpen", first), ("heroWillShow", None), ("heroDidShow", None), ("widgetClose", first), ("widgetOpen", second),
    ]  # fmt: skip


def test_hero_sizing_clamps_and_centres(visitor: Person):
    page = open_chat(visitor, "shelf-main", cards=3)
    page.evaluate("window.chatRuntime.renderTag('shelf.banner', 'hero', {lines: 1})")
    frame = page.locator(".hero-frame")
    body = page.locator(".hero-frame .widget-body")
    expect(body.locator("shelf-probe")).to_be_visible()
    shelf = page.locator(".shelf").bounding_box()
    box = frame.bounding_box()
    # width 5000px is clamped by maxWidth (default 90%); centred.
    assert abs(box["width"] - 0.9 * shelf["width"]) <= 2
    assert abs((box["x"] + box["width"] / 2) - (shelf["x"] + shelf["width"] / 2)) <= 2
    assert abs(body.bounding_box()["height"] - 120) <= 1  # minHeight 120 (one short line of content)
    page.evaluate("window.chatRuntime.renderTag('shelf.banner', 'hero', {lines: 40})")
    expect(body.locator("shelf-probe")).to_contain_text("line 40")
    assert abs(body.bounding_box()["height"] - 300) <= 1  # maxHeight 300
    shot(page, "widgets-hero-sized")


def test_hero_default_bounds_clamp_a_small_size_and_show_hero_creates_it_on_demand(visitor: Person):
    page = open_chat(visitor, "shelf-plain-hero")
    runtime = "window.chatRuntime"
    assert page.evaluate(f"{runtime}.heroVisible") is False  # autoCreateInstance false: nothing yet
    expect(page.locator("section.hero shelf-probe")).to_have_count(0)
    assert page.evaluate(f"{runtime}.showHero()") is True
    assert names(events(page)) == ["widgetOpen", "heroWillShow", "heroDidShow"]
    body = page.locator(".hero-frame .widget-body")
    expect(body.locator("shelf-probe")).to_be_visible()
    assert abs(page.locator(".hero-frame").bounding_box()["width"] - 200) <= 1  # width 50px, clamped by minWidth 200px
    assert abs(body.bounding_box()["height"] - 100) <= 1  # minHeight 100


def test_auto_created_hero_starts_visible_and_collapsed(visitor: Person):
    page = visitor.open("/chat/shelf-auto-hero/")
    page.wait_for_function("() => window.chatRuntime && window.chatRuntime.heroVisible")
    assert page.evaluate("[window.chatRuntime.heroVisible, window.chatRuntime.heroCollapsed]") == [True, True]
    hero = page.get_by_role("region", name="Auto hero")
    expect(hero.get_by_role("button", name="Expand Auto hero")).to_be_visible()
    expect(hero.locator("shelf-probe")).to_be_hidden()
    expect(page.get_by_role("region", name="Spotlight")).to_be_hidden()  # no spotlight widgets here
    shot(page, "widgets-hero-auto-collapsed")
    page.evaluate(RECORD, EVENTS)
    hero.get_by_role("button", name="Expand Auto hero").click()
    assert names(events(page)) == ["heroExpand"]
    expect(hero.locator("shelf-probe")).to_be_visible()


def test_spotlight_and_hero_fit_a_phone(person_factory: Callable[..., Person], shelf_site: Site):
    person = person_factory(viewport={"width": 390, "height": 800})
    person.site = shelf_site
    page = open_chat(person, "shelf-main", cards=3)
    page.evaluate("window.chatRuntime.renderTag('shelf.banner', 'hero', {label: 'on a phone'})")
    expect(page.locator("section.hero shelf-probe")).to_be_visible()
    width = page.evaluate("document.documentElement.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # the carousel scrolls, not the page
    assert page.locator(".hero-frame").bounding_box()["width"] <= 0.9 * page.locator(".shelf").bounding_box()["width"] + 1
    next_widgets = page.get_by_role("button", name="Next widgets")
    expect(next_widgets).to_be_visible()
    next_widgets.click()
    page.wait_for_function("() => document.querySelector('.spotlight-track').scrollLeft > 0")
    shot(page, "widgets-shelf-phone")


def test_companion_mode_hides_the_spotlight_and_the_hero(visitor: Person):
    page = open_chat(visitor, "shelf-main", cards=3)
    page.evaluate("window.chatRuntime.renderTag('shelf.banner', 'hero')")
    shelf = page.locator(".shelf")
    expect(shelf).to_be_visible()
    page.evaluate("window.chatRuntime.renderTag('shelf.alpha', 'canvas', {companionMode: true, data: {label: 'beside'}})")
    expect(shelf).to_be_hidden()
    # Hidden by the page's layout, not by the state tables: the flags and the widgets stay.
    assert page.evaluate("[window.chatRuntime.heroVisible, window.chatRuntime.spotlightVisible]") == [True, True]
    assert page.evaluate("document.querySelector('section.hero shelf-probe').isConnected")
    assert page.evaluate("window.chatRuntime.requestCanvasClose()") is True
    expect(shelf).to_be_visible()
