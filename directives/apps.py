from django.apps import AppConfig


class DirectivesConfig(AppConfig):
    name = "directives"
