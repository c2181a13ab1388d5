"""The official OpenAI Python SDK against lingo: run by tests/sdk.rs with lingo's base URL.

Exits non-zero (with the reason) on the first thing that is not what the SDK expects.
"""
import sys

import openai

base_url = sys.argv[1]
client = openai.OpenAI(base_url=base_url, api_key="not-needed", max_retries=0)

whole = client.chat.completions.create(
    model="gpt-4o-mini",
    messages=[{"role": "user", "content": "hello there"}],
)
assert whole.id.startswith("chatcmpl-"), whole.id
assert whole.model == "gpt-4o-mini", whole.model
assert whole.choices[0].message.content == "Lingo is a mock", whole.choices[0].message.content
assert whole.choices[0].finish_reason == "stop"
assert whole.usage.completion_tokens == 4, whole.usage

text = []
usage = None
with client.chat.completions.create(
    model="gpt-4o-mini",
    messages=[{"role": "user", "content": "hi"}],
    stream=True,
    stream_options={"include_usage": True},
) as stream:
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            if choice.delta.content:
                text.append(choice.delta.content)
assert "".join(text) == "Lingo is a mock", text
assert usage is not None and usage.completion_tokens == 4, usage

tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
called = client.chat.completions.create(
    model="gpt-4o-mini", messages=[{"role": "user", "content": "weather?"}], tools=tools)
call = called.choices[0].message.tool_calls[0]
assert call.function.name == "get_weather" and call.function.arguments == '{"city":"mock"}', call
assert called.choices[0].finish_reason == "tool_calls"

try:
    client.chat.completions.create(model="gpt-4o-mini", messages=[], temperature=1)
    raise AssertionError("an empty messages list was accepted")
except openai.BadRequestError as e:
    assert e.status_code == 400 and e.body["param"] == "messages", e.body

try:
    with client.chat.completions.create(
        model="gpt-4o-mini@error_after=2", messages=[{"role": "user", "content": "x"}], stream=True
    ) as stream:
        for _ in stream:
            pass
    raise AssertionError("a broken stream looked complete")
except openai.APIError as e:
    assert "mock error after 2 tokens" in str(e), e

print("openai sdk: ok")
