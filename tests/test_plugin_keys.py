"""The plugin and API keys, as a team uses it (pytester, in a subprocess): ``harness.expect_key`` (in-process and in
server mode) fails a test whose calls carry another key or none, naming the place and the fingerprint, never the
key; keys that must arrive are refused in-process as the server refuses them; a scenario's failure scoped to one
provider lets a client's fallback to another succeed."""

from __future__ import annotations

import pytest

from harnessweb.engine import keys
from harnessweb.testing.harness import Harness, Options

pytest_plugins = ["pytester"]

TESTS = """
import anthropic
import openai
import pytest

from harnessweb.engine import keys

SECRET = "sk-test-expected-key-0001"
OTHER = "sk-test-other-key-0002"


def ask(client, text="hi", model="gpt-4o"):
    return client.chat.completions.create(model=model, messages=[{"role": "user", "content": text}])


def test_the_expected_key_passes(harness):
    assert harness.expect_key(SECRET) == keys.fingerprint(SECRET)
    harness.set_response(text="keyed")
    assert ask(harness.openai_client(api_key=SECRET)).choices[0].message.content == "keyed"
    assert harness.last_call.key == {"place": "authorization", "fingerprint": keys.fingerprint(SECRET)}
    assert harness.key_problems() == []


def test_fails_another_key(harness):
    harness.expect_key(keys.fingerprint(SECRET))  # a fingerprint does as well as the key
    harness.set_response(text="not for you")
    answer = ask(harness.openai_client(api_key=OTHER)).choices[0].message.content
    assert answer == "Scenario validation failed."


def test_fails_the_right_key_in_the_wrong_header(harness):
    harness.expect_key(SECRET, place="x-api-key")
    client = harness.anthropic_client(api_key=SECRET)  # the SDK sends it as a bearer token
    client.messages.create(model="claude-sonnet-4-6", max_tokens=20, messages=[{"role": "user", "content": "x"}])


def test_fails_a_scenario_expecting_another_key(harness):
    harness.use_scenario({"id": "keyed", "expect_key": {"fingerprint": keys.fingerprint(SECRET)},
                          "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "Keyed."}}]})
    ask(harness.openai_client(), "keyed")  # the harness's own test key


def test_a_place_nobody_reads_is_refused(harness):
    with pytest.raises(Exception, match="expect_key: invalid") as caught:
        harness.expect_key(SECRET, place="x-token")
    assert SECRET not in str(caught.value)


def test_keys_must_arrive_with_the_header(harness):
    http = harness.http_client()
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    refused = http.post(harness.base_url + "/v1/chat/completions", json=body, headers={"X-Harness-Require-Key": "1"})
    assert refused.status_code == 401 and "You didn't provide an API key" in refused.json()["error"]["message"]
    assert harness.last_call.error == {"status": 401, "kind": "rejected", "message": refused.json()["error"]["message"]}
    assert http.post(harness.base_url + "/v1/chat/completions", json=body).status_code == 200  # off by default
    client = harness.openai_client(default_headers={"X-Harness-Require-Key": "1"})
    assert ask(client).choices  # the harness's client sends its key where OpenAI reads it


def test_keys_must_arrive_for_a_scenario_that_says_so(harness):
    harness.use_scenario({"id": "needs-key", "require_key": True,
                          "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "Keyed."}}]})
    http = harness.http_client()
    body = {"model": "m", "messages": [{"role": "user", "content": "needs-key"}]}
    refused = http.post(harness.base_url + "/v1/chat/completions", json=body, headers={"api-key": "k"})
    assert refused.status_code == 401  # Azure's header sent to OpenAI
    assert ask(harness.openai_client(), "needs-key").choices[0].message.content == "Keyed."


SCOPED = {"id": "scoped", "turns": [{"turn": 1, "failures_before_success": 2, "failure_status": "rate_limit",
          "failure_retry_after_ms": 10, "failure_scope": {"model": ["model-a"]},
          "response": {"kind": "text", "assistant_text": "Answered."}}]}


def fallback(first, second):
    try:
        return first()
    except (openai.RateLimitError, anthropic.RateLimitError):
        return second()


def test_a_fallback_model_succeeds_where_the_scoped_one_fails(harness):
    harness.use_scenario(SCOPED)
    client = harness.openai_client(max_retries=1)
    answer = fallback(lambda: ask(client, "scoped", "model-a"), lambda: ask(client, "scoped", "model-b"))
    assert answer.choices[0].message.content == "Answered."
    assert [(c.model, c.error and c.error["kind"]) for c in harness.calls] == [
        ("model-a", "rate_limit"), ("model-a", "rate_limit"), ("model-b", None)]


def test_a_fallback_protocol_succeeds_where_openai_fails(harness):
    harness.use_scenario({**SCOPED, "turns": [{**SCOPED["turns"][0], "failures_before_success": "always",
                                                "failure_scope": {"protocol": ["openai"]}}]})
    client = harness.openai_client(max_retries=1)
    claude = harness.anthropic_client(max_retries=0)
    message = fallback(lambda: ask(client, "scoped"), lambda: claude.messages.create(
        model="claude-sonnet-4-6", max_tokens=50, messages=[{"role": "user", "content": "scoped"}]))
    assert message.content[0].text == "Answered."
    assert [c.protocol for c in harness.calls] == ["openai", "openai", "anthropic"]
"""

SERVER_TESTS = """
from harnessweb.engine import keys

SECRET = "sk-test-server-key-0003"


def ask(client, text="hi"):
    return client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": text}])


def test_the_expected_key_passes_on_the_server(harness):
    harness.serve()
    harness.expect_key(SECRET)
    harness.set_response(text="served")
    assert ask(harness.openai_client(api_key=SECRET)).choices[0].message.content == "served"
    assert harness.last_call.key == {"place": "authorization", "fingerprint": keys.fingerprint(SECRET)}


def test_fails_another_key_on_the_server(harness):
    harness.serve()
    harness.expect_key(SECRET)
    ask(harness.openai_client())  # the run's own key
"""


def test_it_fails_tests_whose_calls_carry_another_key_in_process(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_keys=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=9, errors=3)  # a test failed at teardown counts as passed, and as an error
    from harnessweb.engine.keys import fingerprint

    expected, other = fingerprint("sk-test-expected-key-0001"), fingerprint("sk-test-other-key-0002")
    test_key = fingerprint("harness-test-key")
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_fails_another_key*",
            f"*harness: call 0: Expected the API key with fingerprint {expected} but the request carried the key "
            f"with fingerprint {other} in the authorization header*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            f"*call 0: Expected the API key with fingerprint {expected} in the x-api-key header but the request "
            f"carried the key with fingerprint {expected} in the authorization header*"
        ]
    )
    result.stdout.fnmatch_lines([f"*carried the key with fingerprint {test_key} in the authorization header*"])
    output = result.stdout.str() + result.stderr.str()
    assert "sk-test-other-key-0002" not in output.replace('OTHER = "sk-test-other-key-0002"', "")


def test_it_applies_keys_that_must_arrive_from_the_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nharness_require_key = true\n")
    pytester.makepyfile(
        test_required="""
def test_a_request_without_a_key_is_refused(harness):
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    refused = harness.http_client().post(harness.base_url + "/v1/chat/completions", json=body)
    assert refused.status_code == 401
    reply = harness.openai_client().chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert reply.choices
"""
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_it_fails_tests_whose_calls_carry_another_key_in_server_mode(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_server_keys=SERVER_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1)
    from harnessweb.engine.keys import fingerprint

    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_fails_another_key_on_the_server*",
            f"*harness: call 0: Expected the API key with fingerprint {fingerprint('sk-test-server-key-0003')} but the "
            "request carried the key with fingerprint * in the authorization header*",
        ]
    )


# (path, body, the header the provider reads its key from, the refusal's body without one)
ROUTES = [
    ("/v1/embeddings", {"model": "e", "input": "hi"}, {"authorization": "Bearer k"},
     {"error": {"message": keys.MISSING["openai"][1], "type": "invalid_request_error", "param": None, "code": None}}),
    ("/v2/embed", {"model": "embed-v4.0", "texts": ["hi"], "input_type": "search_document"},
     {"authorization": "Bearer k"}, {"message": "no api key supplied"}),
    ("/openai/deployments/e/embeddings", {"input": "hi"}, {"api-key": "k"},
     {"error": {"code": "401", "message": keys.MISSING["azure"][1]}}),
    ("/openai/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "hi"}]}, {"api-key": "k"},
     {"error": {"code": "401", "message": keys.MISSING["azure"][1]}}),
    ("/openai/v1/responses", {"model": "m", "input": "hi"}, {"authorization": "Bearer entra"},
     {"error": {"code": "401", "message": keys.MISSING["azure"][1]}}),
]  # fmt: skip


@pytest.mark.parametrize(("path", "body", "key", "refusal"), ROUTES, ids=lambda v: v if isinstance(v, str) else "")
def test_in_process_every_route_checks_keys_as_the_server_does(path, body, key, refusal) -> None:
    http = Harness().http_client()
    refused = http.post(Harness.base_url + path, json=body, headers={"X-Harness-Require-Key": "1"})
    answer = refused.json()
    assert refused.status_code == 401 and {k: answer[k] for k in refusal} == refusal
    assert http.post(Harness.base_url + path, json=body, headers={"X-Harness-Require-Key": "1", **key}).is_success
    required = Harness(options=Options(require_key=True)).http_client()
    assert required.post(Harness.base_url + path, json=body).status_code == 401
    assert required.post(Harness.base_url + path, json=body, headers=key).is_success
