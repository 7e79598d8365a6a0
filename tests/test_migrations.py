"""The migrations describe the models: a model change without its migration fails here, not on an operator's `migrate`."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_every_model_change_has_its_migration() -> None:
    out = io.StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)  # exits 1 when a migration is missing
    assert "No changes detected" in out.getvalue()
