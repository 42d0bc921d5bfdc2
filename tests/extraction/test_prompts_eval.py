"""Every prompt file renders with strict variables; the extraction eval scores fixtures and replays cassettes."""

import asyncio

import pytest

from collab import prompts
from collab.extraction import evaluate
from collab.testing import fake_models


def test_every_prompt_renders():
    loaded = prompts.load_all()
    assert {"extract_agents", "merge_agents"} <= set(loaded)
    for prompt in loaded.values():
        system, user = prompt.render(**{name: f"<{name}>" for name in prompt.variables})
        assert system and user
        for name in prompt.variables:
            assert f"<{name}>" in system + user
        assert "$" not in system + user.replace("$$", "")
        assert prompt.schema["type"] == "object"


def test_render_refuses_missing_and_extra_variables():
    prompt = prompts.get("extract_agents")
    with pytest.raises(prompts.PromptError):
        prompt.render(file_name="x", task_count=1)
    with pytest.raises(prompts.PromptError):
        prompt.render(file_name="x", task_count=1, tasks="t", extra="nope")


@pytest.mark.parametrize("text, problem",
                         [(('name = "p"\nversion = 1\nvariables = ["a"]\noutput_schema = "s.json"\n'
                            '[models]\nopenai="gpt-4o"\nclaude="claude-x"\ngemini="gemini-x"\n'
                            '[messages]\nsystem = "$a $b"\nuser = "u"\n'), "undeclared"),
                          (('name = "p"\nversion = 1\nvariables = ["a", "z"]\noutput_schema = "s.json"\n'
                            '[models]\nopenai="gpt-4o"\nclaude="claude-x"\ngemini="gemini-x"\n'
                            '[messages]\nsystem = "$a"\nuser = "u"\n'), "unused"),
                          (('name = "other"\nversion = 1\nvariables = []\noutput_schema = "s.json"\n'
                            '[models]\nopenai="gpt-4o"\nclaude="c"\ngemini="g"\n'
                            '[messages]\nsystem = "s"\nuser = "u"\n'), "does not match"),
                          (('name = "p"\nversion = 1\nvariables = []\noutput_schema = "s.json"\n'
                            '[models]\nopenai="gpt-4o"\n'
                            '[messages]\nsystem = "s"\nuser = "u"\n'), "no model"),
                          (('name = "p"\nversion = 1\nvariables = []\noutput_schema = "missing.json"\n'
                            '[models]\nopenai="gpt-4o"\nclaude="c"\ngemini="g"\n'
                            '[messages]\nsystem = "s"\nuser = "u"\n'), "missing.json")])
def test_invalid_prompt_files_are_refused(tmp_path, text, problem):
    (tmp_path / "s.json").write_text('{"type": "object"}')
    (tmp_path / "p.toml").write_text(text)
    with pytest.raises(prompts.PromptError, match=problem):
        prompts.load(tmp_path / "p.toml")


def test_eval_with_the_stand_in_model_passes_every_fixture(llm, live):
    llm.responder = fake_models.answer
    settings = live.settings.model_copy(update={"openai_api_key": "platform-key"})
    rows = asyncio.run(evaluate.evaluate(settings, provider="openai"))
    assert len(rows) >= 6
    assert all(r.ok for r in rows), evaluate.table(rows)
    assert "| large_2000_rows.csv | 2000/2000 |" in evaluate.table(rows)


def test_eval_record_then_replay(llm, live, tmp_path):
    llm.responder = fake_models.answer
    settings = live.settings.model_copy(update={"openai_api_key": "platform-key"})
    recorded = asyncio.run(evaluate.evaluate(settings, provider="openai", record=tmp_path))
    assert all(r.ok for r in recorded)
    assert len(list(tmp_path.glob("*.json"))) == len(recorded)
    # Replay: only the cassettes can answer now.
    llm.reset()
    llm.responder = evaluate.cassette_responder(tmp_path)
    replayed = asyncio.run(evaluate.evaluate(settings, provider="openai"))
    assert [(r.fixture, r.covered, r.agents, r.ok) for r in replayed] == [(r.fixture, r.covered, r.agents, r.ok)
                                                                          for r in recorded]


def _small_fixtures(tmp_path):
    """Two of the extraction fixtures (the large one is covered above)."""
    import shutil

    small = tmp_path / "fixtures"
    small.mkdir(parents=True)
    for name in ("editorial_review", "marketing_compliance"):
        for path in evaluate.FIXTURES.glob(f"{name}.*"):
            shutil.copy(path, small / path.name)
    return small


def _version_b(tmp_path, marker: str):
    """A copy of prompts/ whose extract_agents system message carries `marker`."""
    import shutil

    b = tmp_path / "prompts-b"
    shutil.copytree(prompts.DEFAULT_DIR, b)
    toml = b / "extract_agents.toml"
    text = toml.read_text()
    toml.write_text(text.replace('[messages]\nsystem = """', f'[messages]\nsystem = """{marker} ', 1))
    assert marker in toml.read_text()
    return b


def test_compare_scores_two_prompt_versions_side_by_side(llm, live, tmp_path):
    b = _version_b(tmp_path, "VERSION-B")

    def respond(provider, body):
        # Version B's prompt "breaks" the model: its answers are not JSON.
        return "not json" if "VERSION-B" in str(body) else fake_models.answer(provider, body)

    llm.responder = respond
    fixtures = _small_fixtures(tmp_path)
    settings = live.settings.model_copy(update={"openai_api_key": "platform-key"})
    a_rows = asyncio.run(evaluate.evaluate(settings, provider="openai", fixtures=fixtures))
    b_rows = asyncio.run(
        evaluate.evaluate(settings.model_copy(update={"prompts_dir": str(b)}), provider="openai", fixtures=fixtures))
    assert all(r.ok for r in a_rows) and not any(r.ok for r in b_rows)
    out = evaluate.compare_table(a_rows, b_rows, names=("current", "prompts-b"))
    assert "A = current, B = prompts-b" in out
    assert "| editorial_review.txt | 6/6 | - |" in out
    assert "| fixtures ok | 2/2 | 0/2 | -2 |" in out
    assert evaluate.regressions(a_rows, b_rows) == ["editorial_review.txt", "marketing_compliance.csv"]
    assert evaluate.regressions(a_rows, a_rows) == []


def test_compare_from_the_command_entry(live, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("collab.config.get_settings", lambda: live.settings)
    b = _version_b(tmp_path, "Version B.")
    code = evaluate.main(provider="fake", mode="live", fixtures=_small_fixtures(tmp_path), compare=("current", str(b)))
    out = capsys.readouterr().out
    assert code == 0, out  # the stand-in model answers both versions alike: nothing got worse
    assert "| fixtures ok | 2/2 | 2/2 | +0 |" in out
    with pytest.raises(SystemExit, match="not a directory"):
        evaluate.main(provider="fake", mode="live", fixtures=_small_fixtures(tmp_path / "x"),
                      compare=("current", str(tmp_path / "none")))


def test_a_model_on_a_server_the_team_runs_answers_the_eval_and_is_named(llm, live, tmp_path, monkeypatch, capsys):
    llm.responder = fake_models.answer
    settings = live.settings.model_copy(update={"ollama_base_url": llm.base_url("ollama")})
    monkeypatch.setattr("collab.config.get_settings", lambda: settings)
    fixtures, report = _small_fixtures(tmp_path), tmp_path / "first.json"
    code = evaluate.main(provider="openai", mode="live", fixtures=fixtures, model="ollama/qwen2.5:1.5b", report=report)
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith("model: ollama/qwen2.5:1.5b\n") and "| editorial_review.txt |" in out
    assert {c["json"]["model"] for c in llm.of("ollama")} == {"qwen2.5:1.5b"} and not llm.of("openai")
    assert "format" in llm.of("ollama")[0]["json"]  # the schema, as Ollama's structured output

    # The next run, side by side with the report of the first (the model got worse at one fixture).
    llm.responder = lambda provider, body: "no JSON" if "editorial" in str(body) else fake_models.answer(provider, body)
    code = evaluate.main(provider="openai", mode="live", fixtures=fixtures, model="ollama/qwen2.5:1.5b",
                         compare=(str(report), ))
    out = capsys.readouterr().out
    assert code == 1, out  # a fixture that passed fails now
    assert f"A = {report} (ollama/qwen2.5:1.5b), B = ollama/qwen2.5:1.5b" in out
    assert "| fixtures ok | 2/2 | 1/2 | -1 |" in out


@pytest.mark.parametrize("model, message", [("gpt-4o", "a server you run"), ("llama3", "Unsupported model"),
                                            ("openai-compatible/m", "COLLAB_OPENAI_COMPATIBLE_BASE_URL")])
def test_eval_model_refusals_say_what_to_do(live, monkeypatch, model, message):
    monkeypatch.setattr("collab.config.get_settings", lambda: live.settings)
    with pytest.raises(SystemExit, match=message):
        evaluate.main(provider="openai", mode="live", model=model)


def test_eval_on_the_embedded_model_needs_one_named(live, monkeypatch):
    monkeypatch.setattr("collab.config.get_settings", lambda: live.settings.model_copy(update={"local_model": None}))
    with pytest.raises(SystemExit, match="set COLLAB_LOCAL_MODEL"):
        evaluate.main(provider="openai", mode="live", model="local")
