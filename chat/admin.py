"""The Django admin of chat records: each feature package registers its own (Django imports this module)."""

from chat.chat_apps import admin as chat_apps_admin
from chat.feedback import admin as feedback_admin
from chat.files import admin as files_admin
from chat.governance import admin as governance_admin  # extends the users' admin (it imports it first)
from chat.search import admin as search_admin
from chat.shares import admin as shares_admin
from chat.users import admin as users_admin
from chat.webhooks import admin as webhooks_admin
from chat.widgets import admin as widgets_admin

__all__ = [
    "chat_apps_admin",
    "feedback_admin",
    "files_admin",
    "governance_admin",
    "search_admin",
    "shares_admin",
    "users_admin",
    "webhooks_admin",
    "widgets_admin",
]
