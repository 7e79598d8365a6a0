"""`make run PORT=…` (README.md, "Two commands"): what it prints names the port it serves on."""

from __future__ import annotations

import subprocess

from tests.servers import ROOT


def test_make_run_prints_the_chat_page_and_admin_urls_of_the_port_it_is_given():
    # Dry run: the recipe as make expands it; its printf and seed_demo lines are what a person reads.
    recipe = subprocess.run(["make", "--dry-run", "run", "PORT=8100"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert recipe.returncode == 0, recipe.stderr
    banner = next(line for line in recipe.stdout.splitlines() if line.startswith("printf"))
    printed = subprocess.run(["bash", "-c", banner], capture_output=True, text=True, timeout=10).stdout
    assert "http://127.0.0.1:8100/" in printed
    assert "http://127.0.0.1:8100/admin/" in printed
    assert "8000" not in printed
    assert any("seed_demo" in line and "--url http://127.0.0.1:8100" in line for line in recipe.stdout.splitlines())


def test_make_run_prints_a_line_per_door_with_its_url():
    recipe = subprocess.run(["make", "--dry-run", "run", "PORT=8100"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    banners = [line for line in recipe.stdout.splitlines() if line.startswith("printf")]
    printed = "".join(subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=10).stdout for line in banners)
    assert "OpenAI Chat Completions: http://127.0.0.1:8100/v1/chat/completions" in printed
    assert "OpenAI Responses:        http://127.0.0.1:8100/v1/responses" in printed
    assert "AG-UI (HttpAgent url):   http://127.0.0.1:8100/api/ag-ui/demo" in printed
    assert "issue_token demo" in printed
