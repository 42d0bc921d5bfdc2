"""The path a judgment search takes (shown by the console's playground) agrees with the search's own branches."""

from collab.judgments.schemas import SearchJudgments
from collab.judgments.search import path_taken


def test_path_taken_annotation_beats_recency_beats_vector():
    assert path_taken(SearchJudgments(query="q")) == "vector"
    assert path_taken(SearchJudgments(query="q", recencyDays=7)) == "recency"
    annotated = SearchJudgments(query="q", recencyDays=7, filters={"annotationId": "a1"}, organizationId="o1")
    assert path_taken(annotated) == "annotation"
