"""Admin session search (`POST /api/chat-admin/sessions/search`): every filter of the reference's
search, alone and combined, against an expectation computed here from the data; pages that stitch
to the full result; sorts; bad input."""

# ruff: noqa: E501  (the table of filter cases reads best one case a line)
from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chat.feedback.models import ChatSessionFeedback, FeedbackComment
from chat.insights import analysis as insights
from chat.insights.models import SessionInsight
from chat.sessions.models import ChatSession
from chat.users.models import ChatUser
from tests.conftest import assert_error

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def scoring(goal: float, satisfaction: float, overall: float, accuracy: float, efficiency: float, quality: float, **facets: Any) -> dict:
    def score(value: float) -> dict[str, Any]:
        return {"score": value, "description": "why"}

    return {
        "scores": {
            "goalAchievement": score(goal),
            "userSatisfaction": score(satisfaction),
            "aiPerformance": {
                "accuracy": score(accuracy),
                "helpfulness": score(5),
                "communication": score(5),
                "efficiency": score(efficiency),
                "overall": score(overall),
            },
            "interactionQuality": score(quality),
        },
        "assessments": {
            "userSentiment": facets["sentiment"],
            "goalCompletionStatus": facets["goal_status"],
            "satisfactionLevel": facets["satisfaction_level"],
            "requiresFollowup": False,
            "criticalIssuesPresent": False,
            "escalationNeeded": False,
        },
        "metrics": {
            "sessionDurationEstimate": facets["duration"],
            "complexityLevel": facets["complexity"],
            "userEffortRequired": facets["effort"],
            "aiConfidenceLevel": facets["confidence"],
        },
    }


def insight(
    goal, satisfaction, overall, accuracy, efficiency, quality, sentiment, goal_status, level, duration, complexity, effort, confidence
):
    return scoring(
        goal,
        satisfaction,
        overall,
        accuracy,
        efficiency,
        quality,
        sentiment=sentiment,
        goal_status=goal_status,
        satisfaction_level=level,
        duration=duration,
        complexity=complexity,
        effort=effort,
        confidence=confidence,
    )


def fb(status, type_, severity, user="alice", human=True, customer=True, day=0, comments=()):
    return {
        "status": status,
        "type": type_,
        "severity": severity,
        "user": user,
        "human": human,
        "customer": customer,
        "day": day,
        "comments": comments,
    }


# Twelve sessions: (key, user, app, mode, status, hours after T0 created, hours updated, tokens in/out, cost, insight, feedback)
SESSIONS = [
    ("s01", "alice", "support", "chat-app", "active", 1, 2, (100, 10), 0.010,
     insight(8, 9, 8, 9, 7, 8, "positive", "completed", "satisfied", "short", "low", "low", "high"), []),
    ("s02", "alice", "support", "chat-app", "completed", 2, 30, (500, 50), 0.050,
     insight(3, 2, 4, 5, 3, 4, "negative", "not_completed", "dissatisfied", "long", "high", "high", "low"),
     [fb("open", "user_thumbs_down", "high", comments=[("comment", "open", "op1")])]),
    ("s03", "bob", "support", "direct-agent-invoke", "completed", 3, 4, (50, 5), 0.002, None,
     [fb("resolved", "system_error", "critical", user="ops", human=True, customer=False, day=2,
         comments=[("technical_action_required", "closed", "op2"), ("comment", "open", "op1")])]),
    ("s04", "bob", "sales", "chat-app", "active", 4, 5, (900, 300), 0.200,
     insight(5, 5, 5, 5, 5, 5, "neutral", "partially_completed", "neutral", "medium", "medium", "medium", "medium"),
     [fb("in_review", "low_ai_confidence_level", "medium", user="ai-feedback-user", human=False, customer=False, day=1)]),
    ("s05", "carol", "sales", "chat-app", "completed", 5, 6, (10, 1), 0.001,
     insight(10, 10, 9, 10, 9, 10, "positive", "completed", "satisfied", "short", "low", "low", "high"),
     [fb("closed", "user_thumbs_up", "low", user="carol")]),
    ("s06", "carol", "support", "chat-app-component", "active", 6, 7, (300, 30), 0.030, None, []),
    ("s07", "alice", "sales", "chat-app", "completed", 7, 8, (250, 25), 0.025,
     insight(7, 6, 7, 8, 6, 7, "neutral", "completed", "neutral", "medium", "high", "medium", "medium"),
     [fb("open", "hallucination", "high", user="ops", customer=False, day=3, comments=[("customer_outreach_recommended", "open", "op2")])]),
    ("s08", "dave", "support", "chat-app", "active", 8, 9, (75, 8), 0.008, None,
     [fb("closed", "other", None, user="dave", day=4)]),
    ("s09", "dave", "sales", "chat-app", "completed", 9, 10, (600, 60), 0.060,
     insight(3, 4, 5, 4, 8, 5, "negative", "partially_completed", "dissatisfied", "long", "medium", "high", "low"), []),
    ("s10", "erin", "support", "chat-app", "completed", 10, 12, (120, 12), 0.012,
     insight(6, 7, 6, 6, 6, 6, "positive", "partially_completed", "satisfied", "short", "low", "medium", "high"),
     [fb("open", "user_thumbs_up", "low", user="erin", comments=[("customer_outreach_made", "closed", "op1")])]),
    ("s11", "erin", "sales", "direct-agent-invoke", "active", 11, 11, (40, 4), 0.004, None, []),
    ("s12", "alice", "support", "chat-app", "completed", 12, 20, (800, 90), 0.090,
     insight(9, 8, 9, 9, 9, 9, "positive", "completed", "satisfied", "medium", "medium", "low", "high"),
     [fb("resolved", "incorrect_information", "medium", day=5)]),
]  # fmt: skip
USERS = {
    "alice": ("external-user", {"account": "acme", "tier": "gold"}),
    "bob": ("internal-user", {"account": "acme", "tier": "silver"}),
    "carol": ("external-user", {"account": "globex", "tier": "gold"}),
    "dave": ("external-user", {"account": "initech"}),
    "erin": ("internal-user", {"account": "globex", "tier": "silver"}),
}


@pytest.fixture
def data() -> dict[str, dict[str, Any]]:
    """The sessions in the database, and the same facts as plain dicts for the expectations (by key)."""
    for user_id, (user_type, custom) in USERS.items():
        ChatUser.objects.create(user_id=user_id, password="!", user_type=user_type, custom_data=custom)
    facts = {}
    for key, user, app, mode, status, created, updated, (tokens_in, tokens_out), cost, analysis, feedback in SESSIONS:
        session = ChatSession.objects.create(
            session_id=uuid.uuid5(uuid.NAMESPACE_URL, key),
            user_id=user,
            chat_app_id=app,
            agent_id="helper",
            invocation_mode=mode,
            status=status,
            create_date=T0 + timedelta(hours=created),
            last_update=T0 + timedelta(hours=updated),
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            total_tokens=tokens_in + tokens_out,
            total_cost=cost,
        )
        if analysis is not None:
            SessionInsight.objects.create(
                session=session,
                generated_at=T0,
                scoring=analysis,
                detail_markdown="report",
                analysis_status="done",
                **insights.facets(analysis),
            )
        for number, item in enumerate(feedback):
            record = ChatSessionFeedback.objects.create(
                feedback_id=f"{key}-{number}",
                session=session,
                user_id=item["user"],
                type=item["type"],
                status=item["status"],
                severity=item["severity"],
                reported_by_human=item["human"],
                created_by_customer=item["customer"],
                created_on=T0 + timedelta(days=item["day"]),
            )
            for position, (kind, state, author) in enumerate(item["comments"]):
                FeedbackComment.objects.create(feedback=record, position=position, user_id=author, comment="note", type=kind, status=state)
        facts[key] = {
            "id": str(session.session_id),
            "user": user,
            "app": app,
            "mode": mode,
            "status": status,
            "created": session.create_date,
            "updated": session.last_update,
            "in": tokens_in,
            "out": tokens_out,
            "cost": cost,
            "insight": analysis,
            "feedback": feedback,
            "user_type": USERS[user][0],
            "custom": USERS[user][1],
        }
    return facts


def search(client, size=100, **filters):
    response = client.post("/api/chat-admin/sessions/search", {"command": "sessionSearch", "search": filters, "size": size}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def found(client, data, **filters) -> set[str]:
    body = search(client, **filters)
    keys = {fact["id"]: key for key, fact in data.items()}
    result = [keys[session["sessionId"]] for session in body["sessions"]]
    assert body["total"] == len(result) and len(set(result)) == len(result)
    return set(result)


def score(fact, path):
    value = fact["insight"]["scores"]
    for step in path:
        value = value[step]
    return value["score"]


def assessment(fact, section, name):
    return fact["insight"][section][name]


def any_feedback(fact, test):
    return any(test(item) for item in fact["feedback"])


# (filters, what a session must be to match)
CASES = {
    "userId": ({"userId": "alice"}, lambda f: f["user"] == "alice"),
    "chatAppId": ({"chatAppId": "sales"}, lambda f: f["app"] == "sales"),
    "sessionId": ({"sessionId": str(uuid.uuid5(uuid.NAMESPACE_URL, "s07"))}, lambda f: f["id"] == str(uuid.uuid5(uuid.NAMESPACE_URL, "s07"))),
    "customUserData": ({"customUserData": {"account": "acme", "tier": "gold"}}, lambda f: f["custom"].get("account") == "acme" and f["custom"].get("tier") == "gold"),
    "userType": ({"userType": ["internal-user"]}, lambda f: f["user_type"] == "internal-user"),
    "invocationMode": ({"invocationMode": ["direct-agent-invoke", "chat-app-component"]}, lambda f: f["mode"] != "chat-app"),
    "status": ({"status": ["completed"]}, lambda f: f["status"] == "completed"),
    "created": (
        {"dateFilter": {"dateType": "created", "startDate": "2026-03-01T15:00:00Z", "endDate": "2026-03-01T19:00:00Z"}},
        lambda f: T0 + timedelta(hours=3) <= f["created"] <= T0 + timedelta(hours=7),
    ),
    "updated": ({"dateFilter": {"dateType": "updated", "startDate": "2026-03-01T22:00:00Z"}}, lambda f: f["updated"] >= T0 + timedelta(hours=10)),
    "feedbackDate": (
        {"dateFilter": {"dateType": "feedback", "startDate": "2026-03-02T12:00:00Z", "endDate": "2026-03-04T12:00:00Z"}},
        lambda f: any_feedback(f, lambda i: 1 <= i["day"] <= 3),
    ),
    "flagged": ({"flagged": True}, lambda f: any_feedback(f, lambda i: i["status"] in ("open", "in_review"))),
    "notFlagged": ({"flagged": False}, lambda f: not any_feedback(f, lambda i: i["status"] in ("open", "in_review"))),
    "hasInsights": ({"insights": {"hasInsights": True}}, lambda f: f["insight"] is not None),
    "hasNoInsights": ({"insights": {"hasInsights": False}}, lambda f: f["insight"] is None),
    "goalEq": ({"insights": {"hasInsights": True, "goalAchievementScore": {"score": 3, "operator": "eq"}}}, lambda f: f["insight"] and score(f, ["goalAchievement"]) == 3),
    "satisfactionGte": ({"insights": {"hasInsights": True, "userSatisfactionScore": {"score": 8, "operator": "gte"}}}, lambda f: f["insight"] and score(f, ["userSatisfaction"]) >= 8),
    "overallLte": ({"insights": {"hasInsights": True, "aiPerformanceOverallScore": {"score": 5, "operator": "lte"}}}, lambda f: f["insight"] and score(f, ["aiPerformance", "overall"]) <= 5),
    "accuracyGte": ({"insights": {"hasInsights": True, "aiPerformanceAccuracyScore": {"score": 9, "operator": "gte"}}}, lambda f: f["insight"] and score(f, ["aiPerformance", "accuracy"]) >= 9),
    "efficiencyLte": ({"insights": {"hasInsights": True, "aiPerformanceEfficiencyScore": {"score": 6, "operator": "lte"}}}, lambda f: f["insight"] and score(f, ["aiPerformance", "efficiency"]) <= 6),
    "qualityEq": ({"insights": {"hasInsights": True, "interactionQualityScore": {"score": 5, "operator": "eq"}}}, lambda f: f["insight"] and score(f, ["interactionQuality"]) == 5),
    "sentiment": ({"insights": {"hasInsights": True, "userSentiment": ["negative", "neutral"]}}, lambda f: f["insight"] and assessment(f, "assessments", "userSentiment") != "positive"),
    "goalStatus": ({"insights": {"hasInsights": True, "goalCompletionStatus": ["partially_completed"]}}, lambda f: f["insight"] and assessment(f, "assessments", "goalCompletionStatus") == "partially_completed"),
    "satisfactionLevel": ({"insights": {"hasInsights": True, "satisfactionLevel": ["dissatisfied"]}}, lambda f: f["insight"] and assessment(f, "assessments", "satisfactionLevel") == "dissatisfied"),
    "duration": ({"insights": {"hasInsights": True, "sessionDurationEstimate": ["short", "long"]}}, lambda f: f["insight"] and assessment(f, "metrics", "sessionDurationEstimate") != "medium"),
    "complexity": ({"insights": {"hasInsights": True, "complexityLevel": ["high"]}}, lambda f: f["insight"] and assessment(f, "metrics", "complexityLevel") == "high"),
    "effort": ({"insights": {"hasInsights": True, "userEffortRequired": ["low"]}}, lambda f: f["insight"] and assessment(f, "metrics", "userEffortRequired") == "low"),
    "confidence": ({"insights": {"hasInsights": True, "aiConfidenceLevel": ["low", "medium"]}}, lambda f: f["insight"] and assessment(f, "metrics", "aiConfidenceLevel") != "high"),
    "feedbackInStatus": ({"feedbackInStatus": ["resolved", "closed"]}, lambda f: any_feedback(f, lambda i: i["status"] in ("resolved", "closed"))),
    "feedbackReportedByHuman": ({"feedbackReportedByHuman": False}, lambda f: any_feedback(f, lambda i: not i["human"])),
    "feedbackCreatedByCustomer": ({"feedbackCreatedByCustomer": False}, lambda f: any_feedback(f, lambda i: not i["customer"])),
    "feedbackSeverity": ({"feedbackSeverity": ["high", "critical"]}, lambda f: any_feedback(f, lambda i: i["severity"] in ("high", "critical"))),
    "feedbackType": ({"feedbackType": ["user_thumbs_up", "hallucination"]}, lambda f: any_feedback(f, lambda i: i["type"] in ("user_thumbs_up", "hallucination"))),
    "feedbackUserId": ({"feedbackUserId": "ops"}, lambda f: any_feedback(f, lambda i: i["user"] == "ops")),
    "commentType": ({"feedbackInternalCommentType": ["comment"]}, lambda f: any_feedback(f, lambda i: any(c[0] == "comment" for c in i["comments"]))),
    "commentStatus": ({"feedbackInternalCommentStatus": ["closed"]}, lambda f: any_feedback(f, lambda i: any(c[1] == "closed" for c in i["comments"]))),
    "commentUserId": ({"feedbackInternalCommentUserId": "op2"}, lambda f: any_feedback(f, lambda i: any(c[2] == "op2" for c in i["comments"]))),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_each_filter_alone_matches_exactly_the_expected_sessions(admin_client, data, case):
    filters, matches = CASES[case]
    expected = {key for key, fact in data.items() if matches(fact)}
    assert expected and expected != set(data), f"{case}: the data must make this filter discriminate"
    assert found(admin_client, data, **filters) == expected


COMBINATIONS = [
    ("userId", "status"),
    ("chatAppId", "hasInsights", "sentiment"),
    ("flagged", "feedbackSeverity"),
    ("hasInsights", "goalEq"),
    ("satisfactionGte", "complexity", "effort"),
    ("userType", "invocationMode", "feedbackInStatus"),
    ("customUserData", "created"),
    ("notFlagged", "hasNoInsights", "userType"),
    ("feedbackType", "feedbackUserId", "commentType"),
]


def merged(*cases: str) -> dict[str, Any]:
    filters: dict[str, Any] = {}
    for case in cases:
        for name, value in CASES[case][0].items():
            filters[name] = {**filters[name], **value} if name == "insights" and name in filters else value
    return filters


@pytest.mark.parametrize("cases", COMBINATIONS, ids=["+".join(c) for c in COMBINATIONS])
def test_filters_combine_as_and(admin_client, data, cases):
    expected = {key for key, fact in data.items() if all(CASES[case][1](fact) for case in cases)}
    assert found(admin_client, data, **merged(*cases)) == expected


def test_feedback_filters_hold_for_one_same_feedback_record(admin_client, data):
    # s03's feedback is by ops and resolved; s07's is by ops and open: only s07 has one record that is both.
    assert found(admin_client, data, feedbackUserId="ops", feedbackInStatus=["open"]) == {"s07"}
    # s03 has a closed technical comment and an open plain one, never one comment that is both closed and plain.
    assert found(admin_client, data, feedbackInternalCommentType=["comment"], feedbackInternalCommentStatus=["closed"]) == set()


SORTS = {
    "createDate": lambda f: f["created"],
    "lastUpdate": lambda f: f["updated"],
    "sessionId": lambda f: f["id"],
    "inputTokens": lambda f: f["in"],
    "outputTokens": lambda f: f["out"],
    "totalCost": lambda f: f["cost"],
}


@pytest.mark.parametrize(
    ("field", "order", "size"), [(f, o, s) for f in [*SORTS, "insightGoalAchievementScore"] for o in ("asc", "desc") for s in (1, 5)]
)
def test_pages_stitch_to_the_whole_sorted_result_with_no_duplicates(admin_client, data, field, order, size):
    filters = {"sortBy": [{"field": field, "order": order}]}
    pages, scroll = [], None
    while True:
        # The first page names the search; a continuation sends its scrollId alone.
        request = {"command": "sessionSearch", "size": size, **({"search": filters} if scroll is None else {"scrollId": scroll})}
        body = admin_client.post("/api/chat-admin/sessions/search", request, format="json").json()
        assert body["total"] == len(data) and body["pageSize"] == size
        pages.append([session["sessionId"] for session in body["sessions"]])
        scroll = body.get("scrollId")
        if scroll is None:
            break
    stitched = list(itertools.chain.from_iterable(pages))
    assert all(len(page) == size for page in pages[:-1]) and len(stitched) == len(set(stitched)) == len(data)
    by_id = {fact["id"]: fact for fact in data.values()}
    if field == "insightGoalAchievementScore":
        scored = [by_id[i]["insight"]["scores"]["goalAchievement"]["score"] for i in stitched if by_id[i]["insight"]]
        assert scored == sorted(scored, reverse=order == "desc")
        assert all(by_id[i]["insight"] is None for i in stitched[len(scored) :])  # unanalysed sessions last, whichever the order
    else:
        keys = [SORTS[field](by_id[i]) for i in stitched]
        assert keys == sorted(keys, reverse=order == "desc")


def test_a_filtered_search_pages_through_its_own_results_and_returns_insights_and_feedback_when_asked(admin_client, data):
    filters = {"chatAppId": "support", "includeInsights": True, "includeFeedback": True}
    first = search(admin_client, size=3, **filters)
    second = admin_client.post(
        "/api/chat-admin/sessions/search",
        {"command": "sessionSearch", "search": filters, "size": 3, "scrollId": first["scrollId"]},
        format="json",
    ).json()
    ids = [s["sessionId"] for s in first["sessions"] + second["sessions"]]
    assert first["total"] == 7 and len(set(ids)) == 6
    by_id = {fact["id"]: fact for fact in data.values()}
    for session in first["sessions"] + second["sessions"]:
        fact = by_id[session["sessionId"]]
        assert (session["insights"] or {}).get("scoring") == fact["insight"]
        assert sorted(f["type"] for f in session["feedback"]) == sorted(f["type"] for f in fact["feedback"])
        assert session["status"] == fact["status"]
    plain = search(admin_client, size=3, chatAppId="support")["sessions"][0]
    assert "insights" not in plain and "feedback" not in plain


@pytest.mark.parametrize(
    ("filters", "mentions"),
    [
        ({"insights": {"userSentiment": ["positive"]}}, "search.insights.hasInsights"),
        (
            {"insights": {"hasInsights": True, "goalAchievementScore": {"score": 11, "operator": "eq"}}},
            "search.insights.goalAchievementScore.score",
        ),
        (
            {"insights": {"hasInsights": True, "goalAchievementScore": {"score": 5, "operator": "gt"}}},
            "search.insights.goalAchievementScore.operator",
        ),
        ({"insights": {"hasInsights": True, "userSentiment": ["ecstatic"]}}, "search.insights.userSentiment"),
        ({"insights": {"hasInsights": True, "mood": ["x"]}}, "search.insights.mood"),
        ({"feedbackInStatus": ["pending"]}, "search.feedbackInStatus"),
        ({"feedbackType": ["bug"]}, "search.feedbackType"),
        ({"feedbackSeverity": "high"}, "search.feedbackSeverity"),
        ({"feedbackInternalCommentType": ["note"]}, "search.feedbackInternalCommentType"),
        ({"flagged": "perhaps"}, "search.flagged"),
        ({"dateFilter": {"dateType": "deleted", "startDate": "2026-01-01T00:00:00Z"}}, "search.dateFilter.dateType"),
        ({"dateFilter": {"startDate": "yesterday"}}, "search.dateFilter.startDate"),
        ({"dateFilter": {"startDate": "2026-03-02T00:00:00Z", "endDate": "2026-03-01T00:00:00Z"}}, "search.dateFilter.endDate"),
        ({"sortBy": [{"field": "title", "order": "asc"}]}, "search.sortBy"),
        ({"sortBy": [{"field": "totalCost", "order": "up"}]}, "search.sortBy"),
        ({"sortBy": "cheapest"}, "search.sortBy"),
        ({"userType": ["robot"]}, "search.userType"),
        ({"sessionId": "not-a-uuid"}, "search.sessionId"),
        ({"customUserData": {"account": {"nested": True}}}, "search.customUserData"),
        ({"colour": "blue"}, "search.colour"),
    ],
)
def test_bad_search_input_is_a_400_naming_the_field(admin_client, filters, mentions):
    response = admin_client.post("/api/chat-admin/sessions/search", {"command": "sessionSearch", "search": filters}, format="json")
    assert_error(response, 400, "INVALID_REQUEST", mentions=mentions)


def test_a_scroll_id_sent_with_other_filters_is_refused(admin_client, data):
    first = search(admin_client, size=2, userId="alice")
    replayed = {"command": "sessionSearch", "search": {"userId": "bob"}, "size": 2, "scrollId": first["scrollId"]}
    assert_error(admin_client.post("/api/chat-admin/sessions/search", replayed, format="json"), 400, mentions="scrollId")
