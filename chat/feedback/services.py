"""Writes on feedback: created with its feedback.created webhook, updated by operators."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from chat.feedback.models import ChatSessionFeedback, FeedbackComment
from chat.sessions.models import ChatMessage, ChatSession
from chat.webhooks import delivery as webhooks
from chat.webhooks.models import WebhookEvent
from chatplatform.api.errors import InvalidRequest, NotFound

# --- Feedback (docs/api.md, "Feedback") -----------------------------------------------------------

# The author of the feedback the insights analysis creates (docs/api.md, "Session insights").
AI_FEEDBACK_USER = "ai-feedback-user"


def _write_comments(feedback: ChatSessionFeedback, comments: list[dict[str, Any]], *, acting_user_id: str) -> None:
    """Make `comments` the feedback's internal comments, in order. A comment naming the commentId of
    one it has keeps its id, author and date; any other is new, by `acting_user_id`, now (authors
    and dates are the service's stamps, not the client's)."""
    existing = {comment.comment_id: comment for comment in feedback.internal_comments.all()}
    now = timezone.now()
    rows = []
    for position, item in enumerate(comments):
        kept = existing.get(item.get("comment_id") or "")
        rows.append(
            FeedbackComment(
                comment_id=kept.comment_id if kept else str(uuid.uuid4()),
                feedback=feedback,
                position=position,
                user_id=kept.user_id if kept else acting_user_id,
                comment=item["comment"],
                created_on=kept.created_on if kept else now,
                type=item.get("type") or (kept.type if kept else "comment"),
                status=item.get("status") or (kept.status if kept else "open"),
            )
        )
    FeedbackComment.objects.filter(feedback=feedback).delete()
    FeedbackComment.objects.bulk_create(rows)


def feedback_create(
    *,
    session: ChatSession,
    feedback_id: str | None,
    message_id: str | None,
    type: str,
    user_comment: str,
    severity: str | None,
    status: str,
    internal_comments: list[dict[str, Any]],
    created_by_customer: bool,
    reported_by_human: bool = True,
    user_id: str | None = None,
    acting_user_id: str = "",
) -> ChatSessionFeedback:
    """A new feedback record (by the session's user unless `user_id` says otherwise) and its
    feedback.created event, in one transaction; a client-chosen `feedback_id` already taken is 400."""
    fields: dict[str, Any] = {
        "session": session,
        "user_id": user_id or session.user_id,
        "message_id": message_id,
        "type": type,
        "user_comment": user_comment,
        "severity": severity,
        "status": status,
        "created_by_customer": created_by_customer,
        "reported_by_human": reported_by_human,
    }
    if feedback_id:
        fields["feedback_id"] = feedback_id
    if message_id is not None and not ChatMessage.objects.filter(session=session, message_id=message_id).exists():
        raise InvalidRequest(f"must name a message of session {session.pk}", field="feedback.messageId")
    feedback = ChatSessionFeedback(**fields)
    try:
        with transaction.atomic():
            feedback.save(force_insert=True)
            if internal_comments:
                _write_comments(feedback, internal_comments, acting_user_id=acting_user_id)
            webhooks.record(WebhookEvent.FEEDBACK_CREATED, session_id=session.pk, user_id=session.user_id, chat_app_id=session.chat_app_id)
    except IntegrityError:
        raise InvalidRequest("must be unique; leave it out and the service chooses one", field="feedback.feedbackId")
    return feedback


# What an update may change (docs/api.md, "Feedback").
FEEDBACK_UPDATABLE = frozenset({"status", "severity", "type", "user_comment"})


def feedback_update(
    *, feedback_id: str, changes: dict[str, Any], internal_comments: list[dict[str, Any]] | None = None, acting_user_id: str = ""
) -> ChatSessionFeedback:
    """Change status, severity, type, user comment and (given) the internal comments of a feedback
    record, nothing else (docs/api.md, "Feedback"); 404 NOT_FOUND when absent."""
    unknown = set(changes) - FEEDBACK_UPDATABLE
    if unknown:
        raise ValueError(f"not updatable: {sorted(unknown)}")
    with transaction.atomic():
        feedback = ChatSessionFeedback.objects.select_for_update().filter(pk=feedback_id).first()
        if feedback is None:
            raise NotFound(f"feedback {feedback_id} not found")
        for name, value in changes.items():
            setattr(feedback, name, value)
        if internal_comments is not None:
            _write_comments(feedback, internal_comments, acting_user_id=acting_user_id)
        feedback.updated_on = timezone.now()
        feedback.save()
    return feedback
