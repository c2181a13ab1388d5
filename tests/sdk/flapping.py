"""The OpenAI and Ollama Python clients through lingo in front of two native backends, one of
them flapping (failing before its first byte, or cut after it): run by tests/sdk.rs with
lingo's base URL. Each call must get the whole answer or one error, never a truncated text;
most get the answer (a failure before the first byte is sent to the other backend).
"""
import sys

import httpx
import ollama
import openai

base = sys.argv[1]
chat = openai.OpenAI(base_url=base + "/v1", api_key="not-needed", max_retries=0)
native = ollama.Client(host=base)
messages = [{"role": "user", "content": "hi"}]
WHOLE = "Hello world"


def openai_whole():
    return chat.chat.completions.create(model="m", messages=messages).choices[0].message.content


def openai_stream():
    stream = chat.chat.completions.create(model="m", messages=messages, stream=True)
    return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


def ollama_whole():
    return native.chat(model="m", messages=messages, stream=False).message.content


def ollama_stream():
    return "".join(part.message.content for part in native.chat(model="m", messages=messages, stream=True))


calls = [openai_whole, openai_stream, ollama_whole, ollama_stream]
answered = failed = 0
for i in range(40):
    call = calls[i % len(calls)]
    try:
        text = call()
    except (openai.APIError, ollama.ResponseError, httpx.HTTPError):
        failed += 1
        continue
    assert text == WHOLE, f"{call.__name__}: a truncated answer: {text!r}"
    answered += 1
print(f"flapping: ok, {answered} answered, {failed} failed")
assert answered >= 24 and failed >= 1, (answered, failed)
