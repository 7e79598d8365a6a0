"""SPEC.md paths of this app, written out literally."""

chat_urlpatterns: list = []
admin_urlpatterns: list = []
