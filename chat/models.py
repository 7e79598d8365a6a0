"""The chat app's models, gathered from its feature packages: one app label (`chat`), so the tables,
the user model (`AUTH_USER_MODEL = "chat.ChatUser"`) and the admin's URLs stay where they are."""

from chat.approvals.models import ApprovalStatus, PausedTurn, ToolApproval
from chat.chat_apps.models import ApplyRulesAs, ChatApp, ChatAppMode
from chat.feedback.models import (
    ChatSessionFeedback,
    CommentStatus,
    CommentType,
    FeedbackComment,
    FeedbackSeverity,
    FeedbackStatus,
    FeedbackType,
    _feedback_id,  # migrations 0004 and 0009 name it as chat.models._feedback_id
)
from chat.files.models import ChatFile
from chat.governance.models import UsageCounter, UsagePeriod
from chat.insights.models import AnalysisStatus, SessionInsight
from chat.sessions.models import ChatMessage, ChatSession, InvocationMode, MessageSource, SessionStatus, TurnSource
from chat.shares.models import SessionShare
from chat.users.models import ChatUser, UserType
from chat.webhooks.models import DeliveryState, WebhookAttempt, WebhookDelivery, WebhookEvent
from chat.widgets.models import WidgetData

__all__ = [
    "AnalysisStatus",
    "ApplyRulesAs",
    "ApprovalStatus",
    "ChatApp",
    "ChatAppMode",
    "ChatFile",
    "ChatMessage",
    "ChatSession",
    "ChatSessionFeedback",
    "ChatUser",
    "CommentStatus",
    "CommentType",
    "DeliveryState",
    "FeedbackComment",
    "FeedbackSeverity",
    "FeedbackStatus",
    "FeedbackType",
    "InvocationMode",
    "MessageSource",
    "PausedTurn",
    "SessionInsight",
    "SessionShare",
    "SessionStatus",
    "ToolApproval",
    "TurnSource",
    "UsageCounter",
    "UsagePeriod",
    "UserType",
    "WebhookAttempt",
    "WebhookDelivery",
    "WebhookEvent",
    "WidgetData",
    "_feedback_id",
]
