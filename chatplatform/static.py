"""The static files storage: hashed and compressed names once `collectstatic` has run, plain names before.

After `collectstatic` (a deployment), every asset has a content-hashed name that ServeStatic serves
with immutable caching and gzip/brotli variants, so a repeat visit of the chat page fetches no asset
again. Without it (`make run`, the tests, a checkout), pages still work: they name the plain files
the finders serve. Django's manifest storage alone would fail on the first `{% static %}` there.
"""

from __future__ import annotations

from servestatic.storage import CompressedManifestStaticFilesStorage


class CollectedOrPlainStorage(CompressedManifestStaticFilesStorage):
    def stored_name(self, name: str) -> str:
        if not self.hashed_files:  # no manifest: nothing was collected
            return name
        return super().stored_name(name)
