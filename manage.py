#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys
from importlib import import_module


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chatplatform.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    # A malformed or unsafe setting is the operator's to fix: one line naming it, no traceback.
    # `check` runs anyway, to report it beside Django's own (deploy) checks (chatplatform.checks).
    try:
        settings = import_module(os.environ["DJANGO_SETTINGS_MODULE"])
        if sys.argv[1:2] != ["check"] and getattr(settings, "UNSAFE_SETTING", None):
            raise ImproperlyConfigured(settings.UNSAFE_SETTING)
        import django

        django.setup()  # the apps check what only they understand (the site's features)
    except ImproperlyConfigured as exc:
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(2)
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
