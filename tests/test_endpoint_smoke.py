from tests.conftest import make_scenario, recorded_run


def test_it_answers_a_scenario_turn_through_the_openai_sdk(oai):
    make_scenario("smoke", [{"turn": 1, "response": {"kind": "text", "assistant_text": "pong"}}])
    raw = oai.chat.completions.with_raw_response.create(model="m", messages=[{"role": "user", "content": "smoke"}])
    completion = raw.parse()
    assert completion.choices[0].message.content == "pong"
    run = recorded_run(raw.headers["x-harness-run"], status="passed", events=4)
    assert run.scenario_id == "smoke"
    assert [e.kind for e in run.events.all()] == ["request", "match", "validation", "response"]
