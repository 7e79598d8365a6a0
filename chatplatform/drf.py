"""Django REST framework loaded without the optional extras of its compat module.

DRF's compat module imports, when they are installed, psycopg (through django.contrib.postgres,
for ModelSerializer's mapping of PostgreSQL model fields), requests (for its RequestsClient),
PyYAML (for its own schema renderer), Pygments and Markdown (for the browsable API). Other
libraries install them here, and the platform uses none of those DRF features: no PostgreSQL
model field, the JSON renderer alone, drf-spectacular for the schema. Hidden from DRF's compat
while it loads, they no longer cost every process start about 100 ms (docs/decisions.md,
"Settings and start-up"); any other importer gets them as usual.
"""

from __future__ import annotations

import sys

_EXTRAS = ("django.contrib.postgres.fields", "requests", "yaml", "pygments", "markdown")


def load() -> None:
    """Import DRF's compat module with the extras hidden: before anything else imports DRF."""
    if "rest_framework.compat" in sys.modules:
        return
    present = {name: sys.modules[name] for name in _EXTRAS if name in sys.modules}
    sys.modules.update(dict.fromkeys(_EXTRAS))  # type: ignore[arg-type]  # importing a name mapped to None raises ImportError
    try:
        import rest_framework.compat  # noqa: F401
    finally:
        for name in _EXTRAS:
            if name in present:
                sys.modules[name] = present[name]
            else:
                del sys.modules[name]
