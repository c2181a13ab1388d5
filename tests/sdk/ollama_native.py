"""The official Ollama Python client against lingo's native route over a chat-completions
upstream: run by tests/sdk.rs with lingo's base URL (the route is `prefix: /api`, so the
client's host is lingo's root).

Exits non-zero (with the reason) on the first thing that is not what the client expects.
"""
import json
import sys
import urllib.request

import ollama

client = ollama.Client(host=sys.argv[1])
hello = [{"role": "user", "content": "hello there"}]

text = []
chunks = list(client.chat(model="llama3", messages=hello, stream=True))
for chunk in chunks:
    assert chunk.model == "llama3", chunk
    text.append(chunk.message.content or "")
assert "".join(text) == "Lingo is a mock", text
assert all(not c.done for c in chunks[:-1]), chunks
last = chunks[-1]
assert last.done and last.done_reason == "stop", last
assert last.eval_count == 4, last

whole = client.chat(model="llama3", messages=hello, stream=False)
assert whole.done and whole.done_reason == "stop", whole
assert whole.message.role == "assistant", whole.message
assert whole.message.content == "Lingo is a mock", whole.message
assert whole.eval_count == 4, whole

weather = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
called = client.chat(model="llama3", messages=hello, tools=[weather], stream=False)
calls = called.message.tool_calls or []
assert [(c.function.name, dict(c.function.arguments)) for c in calls] == [
    ("get_weather", {"city": "mock"})
], called.message
streamed_calls = [
    c
    for chunk in client.chat(model="llama3", messages=hello, tools=[weather], stream=True)
    for c in (chunk.message.tool_calls or [])
]
assert [(c.function.name, dict(c.function.arguments)) for c in streamed_calls] == [
    ("get_weather", {"city": "mock"})
], streamed_calls
history = hello + [
    called.message,
    {"role": "tool", "content": "sunny", "tool_name": "get_weather"},
]
reply = client.chat(model="llama3", messages=history, stream=False)
assert reply.message.content == "Lingo is a mock", reply

as_json = client.chat(model="llama3", messages=hello, format="json", stream=False)
assert json.loads(as_json.message.content) == {"answer": "mock"}, as_json.message
schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
shaped = client.chat(model="llama3", messages=hello, format=schema, stream=False)
assert json.loads(shaped.message.content) == {"city": "mock"}, shaped.message

generated = client.generate(model="llama3", prompt="hello there", stream=False)
assert generated.done, generated
assert generated.response == "Lingo is a mock", generated
pieces = [c.response for c in client.generate(model="llama3", prompt="hi", stream=True)]
assert "".join(pieces) == "Lingo is a mock", pieces

embedded = client.embed(model="all-minilm", input=["one", "two"])
assert len(embedded.embeddings) == 2, embedded
assert all(len(e) == 16 for e in embedded.embeddings), embedded

assert client.ps().models == [], client.ps()
# The Python client has no version call (the JS one does): asked directly.
with urllib.request.urlopen(sys.argv[1].rstrip("/") + "/api/version") as response:
    version = json.load(response)
assert version == {"version": "0.12.0"}, version

names = [m.model for m in client.list().models]
assert "llama3.2:3b" in names and "llama3" in names, names

shown = client.show("llama3")
assert shown.details.family == "llama", shown
assert "completion" in (shown.capabilities or []), shown

try:
    client.chat(model="missing-model", messages=hello, stream=False)
    raise AssertionError("a missing model got a response")
except ollama.ResponseError as e:
    assert e.status_code == 404, (e.status_code, e.error)
    assert "missing-model" in e.error, e.error

try:
    client.show("missing-model")
    raise AssertionError("a missing model was described")
except ollama.ResponseError as e:
    assert e.status_code == 404, (e.status_code, e.error)

try:
    for _ in client.chat(model="missing-model", messages=hello, stream=True):
        pass
    raise AssertionError("a missing model streamed")
except ollama.ResponseError as e:
    assert e.status_code == 404, (e.status_code, e.error)

try:
    for _ in client.chat(model="llama3@error_after=2", messages=hello, stream=True):
        pass
    raise AssertionError("a broken stream looked complete")
except ollama.ResponseError as e:
    assert "mock error after 2 tokens" in e.error, e.error

print("ollama sdk: ok")
