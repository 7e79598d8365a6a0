"""`manage.py runserver` serves the whole ASGI application, HTTP and WebSocket, through Daphne
(README.md, "Two commands"). Daphne and Twisted are imported when this command runs: listed in INSTALLED_APPS,
daphne would import them in every process that starts Django (docs/decisions.md)."""

from daphne.management.commands.runserver import Command as DaphneRunserver


class Command(DaphneRunserver):
    pass
