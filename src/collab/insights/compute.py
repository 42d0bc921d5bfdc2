"""What the insights job computes from one key's judgments: reviewer profiles, recurring reasons (patterns) and the
alerts a shift raises. Pure functions of the rows and the time; docs/adr/0058-memory-insights.md has the rules."""

import hashlib
import heapq
import re
import time
from collections import Counter, defaultdict
from itertools import islice
from typing import Any, Iterable

APPROVALS = frozenset({"approved", "agree", "endorse", "document_approved"})
REJECTIONS = frozenset({"rejected", "disagree", "document_rejected"})
# Judgments that raise an issue: the flags of a profile, the material of patterns (with approvals).
FLAGS = REJECTIONS | {"comment"}

DAY_MS = 86_400_000
TWIN_MIN = 50  # judgments that make a reviewer twin-eligible (and able to show evolved standards)
MAX_PATTERNS = 100
PATTERN_MIN_SOURCES = 3  # judgments that make a recurring reason
MAX_TERMS_PER_JUDGMENT = 64  # distinct terms of one reasoning that count (its first ones)
MAX_TERMS_PER_RUN = 20_000  # distinct terms one computation indexes (the newest judgments' first)
MAX_PROFILES = 500
TOP_FLAGS, TOP_CONTENT_TYPES, TOP_ORGS, TOP_SOURCES, PEAK_HOURS = 5, 10, 20, 5, 3
SHIFT = 0.25  # an evolved standard or a pattern's drift: 25 percentage points
EVOLVED_MIN = 5  # judgments of a content type in each window for an evolved standard
ALERT_RATE_DELTA = 0.20
ALERT_RATE_MIN_7D, ALERT_RATE_MIN_30D = 10, 20
ALERT_VOLUME_MIN_7D, ALERT_VOLUME_MIN_30D = 20, 30
ALERTS_PER_WEEK = 3  # Velt's documented cap per rolling 7 days
PATTERN_ALERT_MIN_SOURCES = 5
_SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2}

_WORD = re.compile(r"[^\W\d_]+")
STOPWORDS = frozenset("""
the and for are but not you all any can had her was one our out day get has him his how man new now old see two way
who boy did its let put say she too use that with have this will your from they know want been good much some time
very when come here just like long make many more only over such take than them well were what into also should
would could there their then these those which while about after again before being below between both during each
few further other same most off once own under until very why where because does doing don isn aren wasn weren
please need needs needed must still even really quite rather thing things something make made makes done see seen
looks look looking per via yes okay approve approved approval reject rejected comment comments review reviewed
""".split())


class Overrun(TimeoutError):
    """The computation went past its time budget (COLLAB_INSIGHTS_COMPUTE_BUDGET_S)."""


def check_time(deadline: float | None) -> None:
    """`Overrun` once time.monotonic() is past `deadline` (None: no budget)."""
    if deadline is not None and time.monotonic() > deadline:
        raise Overrun("the insights computation went past its time budget")


def terms(text: str) -> set[str]:
    """The normalised words of a reasoning: lower case, letters only, 3 to 40 letters, no stop words, a plural's `s`
    dropped (so "claims" and "claim" meet); the first MAX_TERMS_PER_JUDGMENT distinct ones."""
    out: dict[str, None] = {}
    for word in _WORD.findall(text[:2000].lower()):
        if not 3 <= len(word) <= 40 or word in STOPWORDS:
            continue
        if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out[word] = None
        if len(out) >= MAX_TERMS_PER_JUDGMENT:
            break
    return set(out)


def _rate(part: int, whole: int) -> float:
    return round(part / whole, 2) if whole else 0.0


def _is_reason(j: dict[str, Any]) -> bool:
    """A judgment whose reasoning says something: an approval, rejection or comment with its own text (derive
    falls back to the decision's name when the activity carried none)."""
    decision = j["decision"]
    return (decision in APPROVALS or decision in FLAGS) and j["reasoning"].strip().lower() != decision


# --- patterns -------------------------------------------------------------------------------------


def termsets(judgments: list[dict[str, Any]], *, deadline: float | None = None) -> dict[str, set[str]]:
    """The terms of each judgment that gives a reason (by id), at most MAX_TERMS_PER_RUN distinct terms in all (the
    newest judgments' first: a term first seen past the cap is left out)."""
    out: dict[str, set[str]] = {}
    known: set[str] = set()
    for n, j in enumerate(judgments):
        if n % 256 == 0:
            check_time(deadline)
        if not _is_reason(j):
            continue
        found = terms(j["reasoning"])
        if len(known) < MAX_TERMS_PER_RUN:
            known |= set(islice(found - known, MAX_TERMS_PER_RUN - len(known)))
        out[j["id"]] = found & known
    return out


def group_reasons(judgments: list[dict[str, Any]], *, sets: dict[str, set[str]] | None = None,
                  deadline: float | None = None) -> list[tuple[str, list[dict[str, Any]]]]:
    """Recurring reasons, deterministically: repeatedly take the term found in most of the judgments not yet
    grouped (ties: alphabetical), with at least PATTERN_MIN_SOURCES of them; each judgment joins one group.
    The most frequent term comes off a heap whose stale entries (a count that has gone down since) are pushed back
    with their count, so each pick costs a logarithm, not a pass over every term."""
    sets = sets if sets is not None else termsets(judgments, deadline=deadline)
    index: dict[str, set[str]] = defaultdict(set)
    by_id = {j["id"]: j for j in judgments if j["id"] in sets}
    for jid, found in sets.items():
        for term in found:
            index[term].add(jid)
    counts = {term: len(ids) for term, ids in index.items()}
    heap = [(-n, term) for term, n in counts.items() if n >= PATTERN_MIN_SOURCES]
    heapq.heapify(heap)
    remaining = set(by_id)
    groups: list[tuple[str, list[dict[str, Any]]]] = []
    while len(groups) < MAX_PATTERNS and heap:
        check_time(deadline)
        negative, term = heapq.heappop(heap)
        count = counts.get(term, 0)
        if count != -negative:  # stale: its judgments were grouped under another term since it was pushed
            if count >= PATTERN_MIN_SOURCES:
                heapq.heappush(heap, (-count, term))
            continue
        members = index[term] & remaining
        remaining -= members
        for member in members:
            for other in sets[member]:
                counts[other] -= 1
        rows = sorted((by_id[m] for m in members), key=lambda j: (-j["created_at"], j["id"]))
        groups.append((term, rows))
    return groups


def _label(term: str, rows: list[dict[str, Any]], sets: dict[str, set[str]]) -> str:
    """The group's term, with the word most of its judgments also use (in 60% or more) when there is one."""
    together = Counter(t for j in rows for t in sets.get(j["id"], ()) if t != term)
    if together:
        other, n = min(together.items(), key=lambda kv: (-kv[1], kv[0]))
        if n >= 0.6 * len(rows):
            return f"{term} {other}"
    return term


def _outcome(rows: list[dict[str, Any]]) -> tuple[str, int, int, float | None]:
    """(category, dominant count, decided count, enforcement rate or None when nothing was decided)."""
    approvals = sum(j["decision"] in APPROVALS for j in rows)
    rejections = sum(j["decision"] in REJECTIONS for j in rows)
    decided = approvals + rejections
    if not decided:
        return "feedback", 0, 0, None
    if rejections >= approvals:
        return "rejection", rejections, decided, round(rejections / decided, 2)
    return "approval", approvals, decided, round(approvals / decided, 2)


def patterns(judgments: list[dict[str, Any]], *, stored: dict[str, dict[str, Any]], now: int,
             deadline: float | None = None) -> list[dict[str, Any]]:
    """The key's patterns: rows for insight_patterns (key, members, enforcement_rate, confidence, updated_at,
    pattern = the wire object). A pattern whose judgments did not change keeps its times (`stored`: by key).
    `Overrun` past `deadline` (a time.monotonic() value)."""
    out = []
    sets = termsets(judgments, deadline=deadline)
    for term, rows in group_reasons(judgments, sets=sets, deadline=deadline):
        label = _label(term, rows, sets)
        category, dominant, decided, enforcement = _outcome(rows)
        n = len(rows)
        if category in ("rejection", "approval"):
            verb = "rejected" if category == "rejection" else "approved"
            description = (f'Work whose review mentions "{label}" is usually {verb} ({dominant} of {decided} '
                           "decisions).")
        else:
            description = f'Reviewers repeatedly raise "{label}" ({n} comments).'
        orgs = {j["organization_id"] for j in rows}
        kinds = Counter(j["content_type"] for j in rows if j["content_type"])
        members = hashlib.sha256("\n".join(sorted(j["id"] for j in rows)).encode()).hexdigest()[:32]
        before = stored.get(term)
        if before is None or before["members"] != members:
            discovered = updated = now
        else:
            discovered, updated = before["pattern"]["discoveredAt"], before["updated_at"]
        confidence = round(min(1.0, n / 10) * (enforcement if enforcement is not None else 0.5), 2)
        wire: dict[str, Any] = {"scope": "org" if len(orgs) == 1 else "apiKey"}
        if len(orgs) == 1:
            wire["organizationId"] = next(iter(orgs))
        wire |= {
            "description": description, "confidence": confidence, "sourceCount": n,
            "contentType": min(kinds.items(), key=lambda kv: (-kv[1], kv[0]))[0] if kinds else None,
            "category": category, "discoveredAt": discovered, "updatedAt": updated,
            "uniqueReviewers": len({j["reviewer_id"]
                                    for j in rows
                                    if j["reviewer_id"]}), "topSourceRecordIds": [j["id"] for j in rows[:TOP_SOURCES]]
        }
        if enforcement is not None:
            wire["enforcementRate"] = enforcement
        out.append({
            "key": term, "label": label, "members": members, "enforcement_rate": enforcement, "confidence": confidence,
            "updated_at": updated, "pattern": wire, "ids": [j["id"] for j in rows]
        })
    return out


# --- profiles -------------------------------------------------------------------------------------


def _top(counter: Counter, n: int) -> list[tuple[Any, int]]:
    return sorted(counter.items(), key=lambda kv: (-kv[1], str(kv[0])))[:n]


def _text(value: Any, limit: int = 500) -> str | None:
    return value[:limit] if isinstance(value, str) and value else None


def profiles(judgments: list[dict[str, Any]], *, issues: dict[str, str], now: int) -> list[dict[str, Any]]:
    """One profile per reviewer (the MAX_PROFILES with most judgments): rows (user_id, judgments, profile).
    `issues`: judgment id → the slug of the recurring reason it belongs to (the flags)."""
    by_user: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for j in judgments:  # newest first
        if j["reviewer_id"]:
            by_user[j["reviewer_id"]].append(j)
    chosen = sorted(by_user.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:MAX_PROFILES]
    return [{"user_id": user, "judgments": len(rows), "profile": _profile(user, rows, issues, now)}
            for user, rows in chosen]


def _profile(user: str, rows: list[dict[str, Any]], issues: dict[str, str], now: int) -> dict[str, Any]:
    total = len(rows)
    approvals = sum(j["decision"] in APPROVALS for j in rows)
    flags = Counter(issues[j["id"]] for j in rows if j["decision"] in FLAGS and j["id"] in issues)
    kinds = Counter(j["content_type"] for j in rows if j["content_type"])
    hours = Counter((j["created_at"] // 3_600_000) % 24 for j in rows)
    orgs: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for j in rows:
        orgs[j["organization_id"]][0] += 1
        orgs[j["organization_id"]][1] += j["decision"] in APPROVALS
    top_orgs = sorted(orgs.items(), key=lambda kv: (-kv[1][0], kv[0]))[:TOP_ORGS]
    profile: dict[str, Any] = {
        "userId": user, "name": _text(rows[0]["name"]), "email": _text(rows[0]["email"]), "totalJudgments": total,
        "approvalRate": _rate(approvals, total), "avgReviewTimeSeconds": 0,
        "topFlags": [{"issue": issue, "count": n} for issue, n in _top(flags, TOP_FLAGS)],
        "contentTypes": [kind for kind, _ in _top(kinds, TOP_CONTENT_TYPES)],
        "peakHours": sorted(int(hour) for hour, _ in _top(hours, PEAK_HOURS)), "orgBreakdown": {
            org: {
                "organizationId": org, "clientOrganizationId": org, "judgments": n, "approvals": a,
                "approvalRate": _rate(a, n)
            }
            for org, (n, a) in top_orgs
        }, "lastActive": max(j["created_at"] for j in rows), "twinEligible": total >= TWIN_MIN, "twinAccuracy": None
    }
    if total >= TWIN_MIN:
        evolved = _evolved(rows, now)
        if evolved:
            profile["evolvedStandards"] = evolved
    return profile


def _evolved(rows: list[dict[str, Any]], now: int) -> list[dict[str, Any]]:
    """Content types whose approval rate moved by SHIFT or more between the last 90 days and the 90 to 365 days
    before, with EVOLVED_MIN judgments in each window."""
    recent_from, old_from = now - 90 * DAY_MS, now - 365 * DAY_MS
    windows: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: {"new": [], "old": []})
    for j in rows:
        if not j["content_type"] or j["created_at"] > now:
            continue
        if j["created_at"] >= recent_from:
            windows[j["content_type"]]["new"].append(j)
        elif j["created_at"] >= old_from:
            windows[j["content_type"]]["old"].append(j)
    out = []
    for kind in sorted(windows):
        new, old = windows[kind]["new"], windows[kind]["old"]
        if len(new) < EVOLVED_MIN or len(old) < EVOLVED_MIN:
            continue
        rate_new = sum(j["decision"] in APPROVALS for j in new) / len(new)
        rate_old = sum(j["decision"] in APPROVALS for j in old) / len(old)
        if abs(rate_new - rate_old) >= SHIFT:
            out.append({
                "topic": kind, "shiftDate": min(j["created_at"] for j in new),
                "oldPattern": f"Approved {round(rate_old * 100)}% of the time ({len(old)} judgments, 90 to 365 days "
                "ago).", "newPattern": f"Approved {round(rate_new * 100)}% of the time ({len(new)} judgments, last 90 "
                "days)."
            })
    return out[:TOP_CONTENT_TYPES]


# --- alerts ---------------------------------------------------------------------------------------


def _window(judgments: Iterable[dict[str, Any]], now: int, days: int) -> list[dict[str, Any]]:
    return [j for j in judgments if now - days * DAY_MS <= j["created_at"] <= now]


def _alert(alert_type: str, severity: str, dedup: str, title: str, description: str, evidence: dict[str, Any],
           action: str) -> dict[str, Any]:
    return {
        "alert_type": alert_type, "severity": severity, "dedup_key": dedup, "body": {
            "title": title, "description": description, "evidence": evidence, "suggestedAction": action,
            "actionUrl": None
        }
    }


def anomalies(judgments: list[dict[str, Any]], *, now: int) -> list[dict[str, Any]]:
    """Approval rate and volume of the last 7 days against the last 30."""
    week, month = _window(judgments, now, 7), _window(judgments, now, 30)
    out = []
    decided7 = [j for j in week if j["decision"] in APPROVALS or j["decision"] in REJECTIONS]
    decided30 = [j for j in month if j["decision"] in APPROVALS or j["decision"] in REJECTIONS]
    if len(decided7) >= ALERT_RATE_MIN_7D and len(decided30) >= ALERT_RATE_MIN_30D:
        rate7 = sum(j["decision"] in APPROVALS for j in decided7) / len(decided7)
        rate30 = sum(j["decision"] in APPROVALS for j in decided30) / len(decided30)
        delta = rate7 - rate30
        if abs(delta) >= ALERT_RATE_DELTA:
            severity = "high" if abs(delta) >= 0.4 else "medium" if abs(delta) >= 0.3 else "low"
            fell = delta < 0
            moved = "fell" if fell else "rose"
            description = (f"Approval rate {moved} from {round(rate30 * 100)}% (30-day) to {round(rate7 * 100)}% "
                           f"(7-day), a {round(abs(delta) * 100)}% {'drop' if fell else 'rise'}.")
            sample = [j["id"] for j in decided7 if (j["decision"] in REJECTIONS) == fell][:TOP_SOURCES]
            out.append(
                _alert(
                    "anomaly", severity, "anomaly:approvalRate",
                    f"Approval rate {'dropped' if fell else 'rose'} significantly", description, {
                        "metric": "approvalRate", "baseline": round(rate30, 2), "current": round(rate7, 2),
                        "window": "7d vs 30d", "sourceRecordIds": sample
                    }, "Review recent rejections to identify if a new pattern or reviewer behavior is causing the "
                    "decline." if fell else "Check whether review standards were relaxed or a recurring issue was "
                    "fixed."))
    per_day7, per_day30 = len(week) / 7, len(month) / 30
    spike = len(week) >= ALERT_VOLUME_MIN_7D and per_day7 >= 2 * per_day30
    slump = len(month) >= ALERT_VOLUME_MIN_30D and per_day7 <= 0.5 * per_day30
    if spike or slump:
        ratio = per_day7 / per_day30 if per_day30 else 0.0
        severity = ("high" if ratio >= 3 or ratio <= 0.1 else "medium" if ratio >= 2.5 or ratio <= 0.25 else "low")
        out.append(
            _alert(
                "anomaly", severity, "anomaly:volume", f"Review volume {'spiked' if spike else 'fell'}",
                f"Judgments per day {'rose' if spike else 'fell'} from {per_day30:.1f} (30-day) to {per_day7:.1f} "
                "(7-day).", {
                    "metric": "volume", "baseline": round(per_day30, 2), "current": round(per_day7, 2),
                    "window": "7d vs 30d", "sourceRecordIds": [j["id"] for j in week[:TOP_SOURCES]]
                }, "Check whether a new team, document type or agent started reviewing, or reviews stopped."
                if spike else "Check whether reviews stopped reaching collab (activity logging, integrations)."))
    return out


def pattern_shifts(found: list[dict[str, Any]], *, stored: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """A pattern whose approval share moved by SHIFT or more (standards_drift: a reversal from mostly approved to
    mostly rejected counts in full), or a strong new one (emerging_standard); only against an earlier computation
    (`stored` not empty)."""
    if not stored:
        return []
    out = []
    for p in found:
        wire, before = p["pattern"], stored.get(p["key"])
        if wire["sourceCount"] < PATTERN_ALERT_MIN_SOURCES or p["enforcement_rate"] is None:
            continue
        evidence = {"window": "since last computation", "sourceRecordIds": wire["topSourceRecordIds"]}
        if before is None:
            if wire["confidence"] >= 0.6:
                out.append(
                    _alert("emerging_standard", "low", f"emerging_standard:{p['key']}", "A new review standard emerged",
                           wire["description"],
                           evidence | {"metric": "enforcementRate", "current": p["enforcement_rate"]},
                           "Confirm the standard and document it where reviewers and agents can find it."))
            continue
        if before["enforcement_rate"] is None:
            continue
        # The enforcement rate is the leading side's share: compare approval shares, so a flip shows in full.
        old = round(_approval_share(before["pattern"]["category"], before["enforcement_rate"]), 2)
        new = round(_approval_share(wire["category"], p["enforcement_rate"]), 2)
        if abs(new - old) >= SHIFT:
            out.append(
                _alert("standards_drift", "high" if abs(new - old) >= 0.5 else "medium", f"standards_drift:{p['key']}",
                       f'Reviews of "{p["label"]}" changed direction',
                       f'Approvals of "{p["label"]}" moved from {round(old * 100)}% to {round(new * 100)}%.',
                       evidence | {"metric": "approvalRate", "baseline": old, "current": new},
                       "Check whether the standard changed on purpose and tell reviewers."))
    return out


def _approval_share(category: str, enforcement: float) -> float:
    return enforcement if category == "approval" else 1 - enforcement


def admit(candidates: list[dict[str, Any]], *, recent: list[dict[str, Any]], now: int) -> list[dict[str, Any]]:
    """The candidates to raise: none whose dedupKey is active or was raised in the last 7 days, and no more than
    ALERTS_PER_WEEK raised in any rolling 7 days (`recent`: the key's alerts of the last 7 days and its active
    ones), the most severe first."""
    week = [a for a in recent if a["created_at"] > now - 7 * DAY_MS]
    blocked = {a["dedup_key"] for a in recent if a["status"] == "active" or a in week}
    room = max(0, ALERTS_PER_WEEK - len(week))
    fresh = [c for c in candidates if c["dedup_key"] not in blocked]
    fresh.sort(key=lambda c: (_SEVERITY_ORDER[c["severity"]], c["dedup_key"]))
    return fresh[:room]
