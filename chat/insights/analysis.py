"""Session insights (docs/api.md, "Session insights"): the analysis of a completed session by CHAT_INSIGHTS_MODEL.

The model gets the instructions below as its system prompt and the conversation as its prompt,
and answers a JSON object inside `<json>…</json>` followed by a Markdown report. The JSON must
have exactly the record's `scoring` shape; anything else (no tag, bad JSON, a missing field, a
score out of range, an empty report) is an unparseable answer. A valid answer is stored whole,
with its insight.generated event and the automatic feedback, in one transaction; a failure
leaves the last valid record as it was and is recorded on the analysis (never half-filled).
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from datetime import datetime, timedelta
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from chat.chat_apps.features import resolve_features
from chat.chat_apps.models import ChatApp
from chat.feedback.models import ChatSessionFeedback, FeedbackSeverity, FeedbackStatus, FeedbackType
from chat.feedback.services import AI_FEEDBACK_USER, feedback_create
from chat.insights.models import AnalysisStatus, SessionInsight
from chat.sessions.models import ChatSession
from chat.sessions.selectors import branch
from chat.webhooks import delivery as webhooks
from chat.webhooks.models import WebhookEvent
from chatplatform import llm, tasks

logger = logging.getLogger("chat.insights")

VERSION = "1"
TRANSCRIPT_MESSAGES = 200  # the newest messages the model reads
MESSAGE_CHARS = 4000  # of each message

SYSTEM_PROMPT = """You review a finished conversation between a user and an AI assistant, for the team that runs the assistant.

Judge what the user wanted, whether they got it, how they felt, and how well the assistant did. Answer in two parts.

First, one JSON object inside <json> and </json>, with exactly these fields:
{
  "scores": {
    "goalAchievement": {"score": 0-10, "description": "..."},
    "userSatisfaction": {"score": 0-10, "description": "..."},
    "aiPerformance": {
      "accuracy": {"score": 0-10, "description": "..."},
      "helpfulness": {"score": 0-10, "description": "..."},
      "communication": {"score": 0-10, "description": "..."},
      "efficiency": {"score": 0-10, "description": "..."},
      "overall": {"score": 0-10, "description": "..."}
    },
    "interactionQuality": {"score": 0-10, "description": "..."}
  },
  "assessments": {
    "userSentiment": "positive" | "neutral" | "negative",
    "goalCompletionStatus": "completed" | "partially_completed" | "not_completed",
    "satisfactionLevel": "satisfied" | "neutral" | "dissatisfied",
    "requiresFollowup": true | false,
    "criticalIssuesPresent": true | false,
    "escalationNeeded": true | false
  },
  "metrics": {
    "sessionDurationEstimate": "short" | "medium" | "long",
    "complexityLevel": "low" | "medium" | "high",
    "userEffortRequired": "low" | "medium" | "high",
    "aiConfidenceLevel": "low" | "medium" | "high"
  }
}
Each score is a number from 0 (worst) to 10 (best); each description is one sentence saying why.

Second, after </json>, a report in Markdown for the team: the user's goal, what happened,
what went well, what went wrong, and what to improve. Do not repeat the JSON."""

_JSON = re.compile(r"<json>(.*?)</json>", re.DOTALL)
_SCORES = ("goalAchievement", "userSatisfaction", "interactionQuality")
_AI_SCORES = ("accuracy", "helpfulness", "communication", "efficiency", "overall")
_ASSESSMENT_CHOICES = {
    "userSentiment": ("positive", "neutral", "negative"),
    "goalCompletionStatus": ("completed", "partially_completed", "not_completed"),
    "satisfactionLevel": ("satisfied", "neutral", "dissatisfied"),
}
_ASSESSMENT_FLAGS = ("requiresFollowup", "criticalIssuesPresent", "escalationNeeded")
_METRIC_CHOICES = {
    "sessionDurationEstimate": ("short", "medium", "long"),
    "complexityLevel": ("low", "medium", "high"),
    "userEffortRequired": ("low", "medium", "high"),
    "aiConfidenceLevel": ("low", "medium", "high"),
}


class UnusableAnswer(Exception):
    """The model's answer is not a complete analysis; the message says what is wrong with it."""


def _object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise UnusableAnswer(f"{path} must be an object")
    return value


def _score(value: Any, path: str) -> dict[str, Any]:
    item = _object(value, path)
    score = item.get("score")
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 10:
        raise UnusableAnswer(f"{path}.score must be a number from 0 to 10")
    if not isinstance(item.get("description"), str):
        raise UnusableAnswer(f"{path}.description must be a string")
    return {"score": score, "description": item["description"]}


def _choice(section: dict[str, Any], name: str, choices: tuple[str, ...], path: str) -> str:
    if section.get(name) not in choices:
        raise UnusableAnswer(f"{path}.{name} must be one of {', '.join(choices)}")
    return section[name]


def validate_scoring(value: Any) -> dict[str, Any]:
    """The `scoring` record (only its known fields), or UnusableAnswer naming the first field that is wrong."""
    root = _object(value, "scoring")
    scores = _object(root.get("scores"), "scoring.scores")
    ai = _object(scores.get("aiPerformance"), "scoring.scores.aiPerformance")
    assessments = _object(root.get("assessments"), "scoring.assessments")
    metrics = _object(root.get("metrics"), "scoring.metrics")
    checked_assessments: dict[str, Any] = {
        name: _choice(assessments, name, choices, "scoring.assessments") for name, choices in _ASSESSMENT_CHOICES.items()
    }
    for name in _ASSESSMENT_FLAGS:
        if not isinstance(assessments.get(name), bool):
            raise UnusableAnswer(f"scoring.assessments.{name} must be true or false")
        checked_assessments[name] = assessments[name]
    return {
        "scores": {
            "goalAchievement": _score(scores.get("goalAchievement"), "scoring.scores.goalAchievement"),
            "userSatisfaction": _score(scores.get("userSatisfaction"), "scoring.scores.userSatisfaction"),
            "aiPerformance": {name: _score(ai.get(name), f"scoring.scores.aiPerformance.{name}") for name in _AI_SCORES},
            "interactionQuality": _score(scores.get("interactionQuality"), "scoring.scores.interactionQuality"),
        },
        "assessments": checked_assessments,
        "metrics": {name: _choice(metrics, name, choices, "scoring.metrics") for name, choices in _METRIC_CHOICES.items()},
    }


def parse_answer(text: str) -> tuple[dict[str, Any], str]:
    """(scoring, detailMarkdown) of a model's answer; UnusableAnswer when it is not a complete analysis."""
    found = _JSON.search(text or "")
    if found is None:
        raise UnusableAnswer("the answer has no <json>…</json> block")
    try:
        scoring = validate_scoring(json.loads(found.group(1)))
    except json.JSONDecodeError as exc:
        raise UnusableAnswer(f"the <json> block is not valid JSON ({exc.msg})") from None
    markdown = (text[: found.start()] + text[found.end() :]).strip()
    if not markdown:
        raise UnusableAnswer("the answer has no Markdown report beside the JSON")
    return scoring, markdown


def transcript(session: ChatSession) -> str:
    """The prompt: the newest TRANSCRIPT_MESSAGES messages of the session's current branch, oldest first
    (the other branches are versions the user moved away from: docs/api.md, "Branches")."""
    messages = [(message.source, message.message) for message in branch(session=session, limit=TRANSCRIPT_MESSAGES).messages]
    lines = [f'Conversation {session.session_id} in chat app "{session.chat_app_id}" with agent "{session.agent_id}".', "<conversation>"]
    for source, text in messages:
        clipped = text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS] + " […]"
        lines.append(f'<message role="{source}">\n{clipped}\n</message>')
    lines.append("</conversation>")
    return "\n".join(lines)


def insights_enabled(app: ChatApp | None) -> bool:
    """The chat app's `sessionInsights` feature, as resolved with the site's (docs/api.md, "Features")."""
    if app is None:
        return False
    feature = resolve_features(site=settings.CHAT_SITE_FEATURES, app=app.features or {}).get("sessionInsights")
    return isinstance(feature, dict) and feature.get("enabled") is True


# --- Marking sessions due, and the analysis ------------------------------------------------------


def mark_due(sessions: list[ChatSession], *, now: datetime) -> list[uuid.UUID]:
    """Of sessions just completed, those to analyse (their app's feature on, and not analysed at
    their last message yet) marked due; their ids. Runs inside the completion's transaction."""
    apps = {app.chat_app_id: app for app in ChatApp.objects.filter(chat_app_id__in={s.chat_app_id for s in sessions})}
    wanted = {s.pk: s for s in sessions if s.last_message_id and insights_enabled(apps.get(s.chat_app_id))}
    if not wanted:
        return []
    existing = {row.pk: row for row in SessionInsight.objects.filter(pk__in=list(wanted))}
    due = [pk for pk, s in wanted.items() if pk not in existing or existing[pk].last_analyzed_message_id != s.last_message_id]
    fresh = {
        "analysis_status": AnalysisStatus.DUE,
        "attempts": 0,
        "error": "",
        "requested_at": now,
        "lease_until": None,
        "finished_at": None,
    }
    SessionInsight.objects.bulk_create([SessionInsight(session_id=pk, **fresh) for pk in due if pk not in existing])
    SessionInsight.objects.filter(pk__in=[pk for pk in due if pk in existing]).update(**fresh)
    return due


def _lease() -> timedelta:
    """How long a claimed analysis is its worker's: the model's time limit and half again, and a second."""
    return timedelta(seconds=settings.CHAT_INSIGHTS_TIMEOUT_SECONDS * 1.5 + 1)


def stalled(*, now: datetime) -> list[uuid.UUID]:
    """Analyses nobody is working on: running past their lease (the worker died) or due for longer
    than any retry waits (its task was lost). Marked due again; their ids, to enqueue."""
    retries_wait = settings.CHAT_TASK_BACKOFF_SECONDS * 2**settings.CHAT_TASK_MAX_ATTEMPTS * 1.25
    grace = timedelta(seconds=retries_wait + 6 * settings.CHAT_WORKER_POLL_SECONDS)
    rows = SessionInsight.objects.filter(attempts__lt=settings.CHAT_TASK_MAX_ATTEMPTS).filter(
        Q(analysis_status=AnalysisStatus.RUNNING, lease_until__lt=now) | Q(analysis_status=AnalysisStatus.DUE, requested_at__lt=now - grace)
    )
    ids = list(rows.values_list("pk", flat=True)[:500])
    SessionInsight.objects.filter(pk__in=ids).update(analysis_status=AnalysisStatus.DUE, requested_at=now, lease_until=None)
    return ids


def _ask(session: ChatSession) -> tuple[dict[str, Any], str, llm.Completion]:
    completion = async_to_sync(llm.complete)(
        model=settings.CHAT_INSIGHTS_MODEL,
        system_prompt=SYSTEM_PROMPT,
        prompt=transcript(session),
        timeout=settings.CHAT_INSIGHTS_TIMEOUT_SECONDS,
    )
    scoring, markdown = parse_answer(completion.text)
    return scoring, markdown, completion


def analyze(*, session_id: uuid.UUID) -> dict[str, Any]:
    """The worker's analysis of a due session (chat.tasks.analyze_session): claimed, asked, stored.
    A failure is recorded (due again while attempts remain, failed after CHAT_TASK_MAX_ATTEMPTS,
    counted on the row so that a task run twice cannot add attempts) and raised."""
    now = timezone.now()
    claimed = (
        SessionInsight.objects.filter(pk=session_id, attempts__lt=settings.CHAT_TASK_MAX_ATTEMPTS)
        .filter(Q(analysis_status=AnalysisStatus.DUE) | Q(analysis_status=AnalysisStatus.RUNNING, lease_until__lt=now))
        .update(analysis_status=AnalysisStatus.RUNNING, lease_until=now + _lease(), attempts=F("attempts") + 1)
    )
    if not claimed:
        return {"sessionId": str(session_id), "skipped": "not due (analysed, failed, or under way elsewhere)"}
    session = ChatSession.objects.get(pk=session_id)
    try:
        scoring, markdown, completion = _ask(session)
    except Exception as exc:
        attempts = SessionInsight.objects.filter(pk=session_id).values_list("attempts", flat=True).first() or 0
        final = attempts >= settings.CHAT_TASK_MAX_ATTEMPTS or tasks.last_attempt()
        _failed(session_id, exc, final=final)
        raise tasks.GiveUp(str(exc)) if final else exc
    insight = store(session, scoring=scoring, markdown=markdown, completion=completion)
    return {"sessionId": str(session_id), "goalAchievement": insight.goal_achievement}


def regenerate(*, session: ChatSession) -> SessionInsight:
    """`POST …/insights`: analyse now, in the request; one attempt, its failure recorded and raised."""
    SessionInsight.objects.update_or_create(
        pk=session.pk,
        defaults={"analysis_status": AnalysisStatus.RUNNING, "attempts": 1, "error": "", "lease_until": timezone.now() + _lease()},
        create_defaults={"analysis_status": AnalysisStatus.RUNNING, "attempts": 1, "lease_until": timezone.now() + _lease()},
    )
    try:
        scoring, markdown, completion = _ask(session)
    except Exception as exc:
        _failed(session.pk, exc, final=True)
        raise
    return store(session, scoring=scoring, markdown=markdown, completion=completion)


def _failed(session_id: uuid.UUID, exc: Exception, *, final: bool) -> None:
    now = timezone.now()
    error = f"{exc}" if isinstance(exc, UnusableAnswer | llm.ModelError) else f"{type(exc).__name__}: {exc}"
    SessionInsight.objects.filter(pk=session_id).update(
        analysis_status=AnalysisStatus.FAILED if final else AnalysisStatus.DUE,
        error=error[:4000],
        lease_until=None,
        requested_at=now,
        finished_at=now if final else None,
    )
    log = logger.error if final else logger.warning
    log("insights of session %s: %s%s", session_id, error, " (given up)" if final else " (will retry)")


_FACETS = {
    "goal_achievement": ("scores", "goalAchievement", "score"),
    "user_satisfaction": ("scores", "userSatisfaction", "score"),
    "interaction_quality": ("scores", "interactionQuality", "score"),
    "ai_accuracy": ("scores", "aiPerformance", "accuracy", "score"),
    "ai_helpfulness": ("scores", "aiPerformance", "helpfulness", "score"),
    "ai_communication": ("scores", "aiPerformance", "communication", "score"),
    "ai_efficiency": ("scores", "aiPerformance", "efficiency", "score"),
    "ai_overall": ("scores", "aiPerformance", "overall", "score"),
    "user_sentiment": ("assessments", "userSentiment"),
    "goal_completion_status": ("assessments", "goalCompletionStatus"),
    "satisfaction_level": ("assessments", "satisfactionLevel"),
    "requires_followup": ("assessments", "requiresFollowup"),
    "critical_issues_present": ("assessments", "criticalIssuesPresent"),
    "escalation_needed": ("assessments", "escalationNeeded"),
    "session_duration_estimate": ("metrics", "sessionDurationEstimate"),
    "complexity_level": ("metrics", "complexityLevel"),
    "user_effort_required": ("metrics", "userEffortRequired"),
    "ai_confidence_level": ("metrics", "aiConfidenceLevel"),
}


def facets(scoring: dict[str, Any]) -> dict[str, Any]:
    """The SessionInsight columns a (valid) scoring fills."""
    values = {}
    for column, path in _FACETS.items():
        value: Any = scoring
        for key in path:
            value = value[key]
        values[column] = value
    return values


def store(session: ChatSession, *, scoring: dict[str, Any], markdown: str, completion: llm.Completion) -> SessionInsight:
    """The valid analysis stored whole, with insight.generated and the automatic feedback: one transaction."""
    now = timezone.now()
    record = {
        "model": settings.CHAT_INSIGHTS_MODEL,
        "version": VERSION,
        "usage": {"inputTokens": completion.usage.input_tokens, "outputTokens": completion.usage.output_tokens},
        "generated_at": now,
        "last_analyzed_message_id": session.last_message_id,
        "scoring": scoring,
        "detail_markdown": markdown,
        **facets(scoring),
        "analysis_status": AnalysisStatus.DONE,
        "error": "",
        "lease_until": None,
        "finished_at": now,
    }
    with transaction.atomic():
        insight, _ = SessionInsight.objects.update_or_create(pk=session.pk, defaults=record)
        webhooks.record(WebhookEvent.INSIGHT_GENERATED, session_id=session.pk, user_id=session.user_id, chat_app_id=session.chat_app_id)
        _automatic_feedback(session, scoring)
    return insight


# Namespace of the automatic feedback's ids: one analysis of one message never files the same type twice.
_FEEDBACK_IDS = uuid.UUID("0b0e2a4c-3f1d-5c8e-9a7b-6d5e4c3b2a19")


def _automatic_feedback(session: ChatSession, scoring: dict[str, Any]) -> None:
    """The automatic feedback (docs/api.md, "Session insights"), by `ai-feedback-user`, on the session's last message."""
    assessments, metrics = scoring["assessments"], scoring["metrics"]
    findings = []
    if assessments["criticalIssuesPresent"] or assessments["requiresFollowup"] or assessments["escalationNeeded"]:
        flags = ", ".join(name for name in _ASSESSMENT_FLAGS if assessments[name])
        findings.append((FeedbackType.CRITICAL_ISSUES_PRESENT, FeedbackSeverity.CRITICAL, f"The analysis found: {flags}."))
    if metrics["aiConfidenceLevel"] == "low":
        findings.append((FeedbackType.LOW_AI_CONFIDENCE_LEVEL, FeedbackSeverity.MEDIUM, "The assistant's confidence was low."))
    if metrics["complexityLevel"] == "high":
        findings.append(
            (FeedbackType.HIGH_COMPLEXITY_SESSION, FeedbackSeverity.LOW, "A highly complex session; a candidate training example.")
        )
    if assessments["satisfactionLevel"] == "dissatisfied" or assessments["userSentiment"] == "negative":
        findings.append(
            (
                FeedbackType.USER_DISSATISFIED,
                FeedbackSeverity.HIGH,
                f"Satisfaction {assessments['satisfactionLevel']}, sentiment {assessments['userSentiment']}.",
            )
        )
    if assessments["goalCompletionStatus"] == "not_completed":
        findings.append((FeedbackType.GOAL_MISALIGNMENT, FeedbackSeverity.HIGH, "The user could not complete their goal."))
    message_id = str(session.last_message_id) if session.last_message_id else None
    for feedback_type, severity, comment in findings:
        feedback_id = str(uuid.uuid5(_FEEDBACK_IDS, f"{session.pk}:{message_id}:{feedback_type}"))
        if ChatSessionFeedback.objects.filter(pk=feedback_id).exists():
            continue  # this analysis of this message filed it already
        feedback_create(
            session=session,
            feedback_id=feedback_id,
            message_id=message_id,
            type=feedback_type,
            user_comment=comment,
            severity=severity,
            status=FeedbackStatus.OPEN,
            internal_comments=[],
            created_by_customer=False,
            reported_by_human=False,
            user_id=AI_FEEDBACK_USER,
        )
