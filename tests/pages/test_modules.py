"""The chat page's modules as a deployment serves them: after `collectstatic` every asset has a
content-hashed name, and each module must be loaded once, by the name the import map gives it. A
module imported by a path instead would be fetched a second time under its plain name, and run
twice, with its own state (README, "The chat page")."""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests.conftest import bearer_token
from tests.pages.conftest import Site, _manage, start_site
from tests.servers import ROOT

HASHED = re.compile(r"^(?P<name>.+)\.[0-9a-f]{12}(?P<suffix>\.m?js)$")


def test_each_module_loads_once_by_its_hashed_name_after_collectstatic(site: Site, browser: Any, tmp_path: Path, settings: Any):
    # A deployment's own key: with DEBUG off the development key is refused (docs/deploy.md).
    settings.JWT_SIGNING_KEY = secret = "pages-deployment-" + "k" * 40
    env = {**site.env, "DEBUG": "false", "SECRET_KEY": secret, "STATIC_ROOT": str(tmp_path / "static")}
    _manage(env, "collectstatic", "--noinput")
    with contextlib.ExitStack() as stack:
        deployed = start_site(env, site.model, stack, seed=False)
        context = stack.enter_context(contextlib.closing(browser.new_context()))
        token = bearer_token("modules")
        answer = context.request.post(f"{deployed.url}/api/chat/auth/session", headers={"Authorization": f"Bearer {token}"})
        assert answer.ok, answer.text()
        page = context.new_page()
        scripts: list[str] = []
        page.on("request", lambda request: scripts.append(request.url) if request.resource_type == "script" else None)
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(f"{deployed.url}/chat/demo/")
        expect(page.locator("body[data-ready]")).to_be_attached()
        page.wait_for_load_state("networkidle")

    paths = [re.sub(r"^https?://[^/]+/static/", "", url) for url in scripts]
    assert [path for path, count in Counter(paths).items() if count > 1] == [], "a module was fetched twice"
    plain = [path for path in paths if not HASHED.match(path)]
    assert plain == [], "a module was fetched by its plain name beside its hashed one"
    loaded = sorted(HASHED.sub(r"\g<name>\g<suffix>", path) for path in paths if path.startswith("chat/"))
    modules = sorted(str(path.relative_to(ROOT / "static")) for path in (ROOT / "static" / "chat").rglob("*.js"))
    modules.remove("chat/shared.js")  # the shared conversation's page runs it (tests/pages/test_conversations.py)
    modules.remove("chat/highlight-worker.js")  # started with the first code block (tests/pages/test_comforts.py)
    assert loaded == modules, "every module of the page is loaded once at its start"
    assert errors == []
