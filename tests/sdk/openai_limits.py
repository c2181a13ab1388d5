"""The official OpenAI Python SDK against lingo's per-client limits: run by tests/sdk.rs as
`python3 tests/sdk/openai_limits.py BASE_URL budget|rate`, as client team-a (key `ka`), with
the SDK's default retries (2).

`budget`: a first call is answered and uses up the budget; the next raises RateLimitError
(429, `insufficient_quota`) after one request. Lingo's refusal says `x-should-retry: false`;
this SDK also declines a `retry-after-ms` over two minutes before it reads that header, and
the budget renews only at the next UTC midnight.
`rate`: a first call is answered; the next is refused once by the one-a-second bucket, and the
SDK waits the `retry-after-ms` it was given, retries by itself and is answered.

Prints one JSON line (the statuses the SDK's HTTP client saw, and for `rate` the wait it was
told and how long the second call took), then `openai limits: ok`. Exits non-zero (with the
reason) on the first thing that is not what the SDK is expected to do.
"""
import json
import sys
import time

import openai

base_url, mode = sys.argv[1], sys.argv[2]

# Every response the SDK's own HTTP client receives, retries included, in order.
seen = []


def note(response):
    seen.append({"status": response.status_code,
                 "retry_after_ms": response.headers.get("retry-after-ms"),
                 "should_retry": response.headers.get("x-should-retry")})


client = openai.OpenAI(
    base_url=base_url,
    api_key="ka",
    http_client=openai.DefaultHttpxClient(event_hooks={"response": [note]}),
)
assert client.max_retries == 2, client.max_retries
hello = [{"role": "user", "content": "hi"}]

first = client.chat.completions.create(model="gpt-4o-mini", messages=hello)
assert first.choices[0].message.content == "Lingo is a mock", first
assert [r["status"] for r in seen] == [200], seen

if mode == "budget":
    start = time.monotonic()
    try:
        client.chat.completions.create(model="gpt-4o-mini", messages=hello)
        raise AssertionError("a call past the spent budget was answered")
    except openai.RateLimitError as e:
        assert e.status_code == 429, e.status_code
        assert e.code == "insufficient_quota", e.body
        assert e.type == "insufficient_quota", e.body
        assert e.response.headers.get("x-should-retry") == "false", e.response.headers
    assert [r["status"] for r in seen] == [200, 429], f"the SDK retried: {seen}"
    print(json.dumps({"seen": seen, "elapsed_ms": round((time.monotonic() - start) * 1000)}))
elif mode == "rate":
    start = time.monotonic()
    second = client.chat.completions.create(model="gpt-4o-mini", messages=hello)
    elapsed_ms = (time.monotonic() - start) * 1000
    assert second.choices[0].message.content == "Lingo is a mock", second
    assert [r["status"] for r in seen] == [200, 429, 200], seen
    wait_ms = int(seen[1]["retry_after_ms"])
    assert 0 < wait_ms <= 1000, seen
    # The SDK slept the wait it was told before it sent the retry.
    assert elapsed_ms >= wait_ms, (elapsed_ms, wait_ms)
    print(json.dumps({"seen": seen, "retry_after_ms": wait_ms, "elapsed_ms": round(elapsed_ms)}))
else:
    raise SystemExit(f"unknown mode {mode}")

print("openai limits: ok")
