"""The pure rules of ask and suggest: the citation check, and the counting of a suggestion with its caveats."""

from collab.memory import ask, suggest

NOW = 1_800_000_000_000
DAY = 86_400_000


def record(rid, decision, user, *, similarity=0.6, age_days=1, reasoning="No citation for the claim."):
    return {
        "recordId": rid, "decision": decision, "actionUser": {"userId": user}, "similarity": similarity,
        "createdAt": NOW - age_days * DAY, "reasoning": reasoning
    }


def test_citations_keep_only_shown_records_once_and_a_bad_confidence_is_zero():
    shown = {"r1": "The claim lacks a citation.", "src_1": "\nMedical claims must cite a source."}
    answer = ask.ModelAnswer(
        answer=" Cite sources. ", confidence=float("nan"), citations=[
            ask.Cited(recordId="r1", snippet="LACKS  a citation"),
            ask.Cited(recordId="r9", snippet="made up"),
            ask.Cited(recordId="[src_1]", snippet="not in it"),
            ask.Cited(recordId="r1", snippet="again"),
        ])
    assert ask.checked(answer, shown) == {
        "answer": "Cite sources.", "confidence": 0.0, "citations": [
            {"recordId": "r1", "snippet": "LACKS a citation"},
            {"recordId": "src_1", "snippet": "Medical claims must cite a source."},
        ]
    }
    uncited = ask.ModelAnswer(answer="Yes.", confidence=0.9, citations=[ask.Cited(recordId="zz", snippet="x")])
    assert ask.checked(uncited, shown) == {"answer": "Yes.", "citations": [], "confidence": 0.3}
    assert ask.checked(ask.ModelAnswer(answer="  ", confidence=0.9, citations=[]), shown)["confidence"] == 0


def test_a_tally_needs_two_on_a_side_and_names_its_caveats():
    one_each = [record("a", "approved", "u1"), record("b", "rejected", "u2"), record("c", "comment", "u3")]
    assert suggest.tally(one_each, scope="document", now_ms=NOW, knowledge_fresh=False,
                         partial=[]) == {"primary": None, "conflict": None}
    old = [record(f"r{i}", "disagree", f"u{i % 2}", age_days=400) for i in range(3)]
    split = old + [record("a1", "endorse", "u7"), record("a2", "document_approved", "u8")]
    out = suggest.tally(split, scope="apiKey", now_ms=NOW, knowledge_fresh=True, partial=["document", "organization"])
    primary, conflict = out["primary"], out["conflict"]
    assert (primary["recommendation"], primary["basedOn"], primary["uniqueReviewers"],
            primary["scopeLabel"]) == ("reject", 3, 2, "All content")
    assert primary["caveats"] == [
        "Conflicting precedent: 2 judgment(s) support approve", suggest.KNOWLEDGE, suggest.STALE,
        "Partial data: the document's precedent timed out and was skipped",
        "Partial data: the organization's precedent timed out and was skipped"
    ]
    assert primary["confidence"] == round(0.6 * 3 / 5, 2) and conflict["confidence"] == round(0.4 * 2 / 4, 2)
    assert conflict["caveats"] == ["Minority view: 2 judgment(s) support approve, 3 support reject"]
    assert primary["topReasons"] == ["No citation for the claim"]
