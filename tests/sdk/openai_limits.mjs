// The official OpenAI JavaScript SDK against lingo's per-client limits: run by tests/sdk.rs as
// `node tests/sdk/openai_limits.mjs BASE_URL budget|rate`, as client team-a (key `ka`), with the
// SDK's default retries (2), and the `openai` package in the gitignored tests/sdk/node_modules
// (`.ci/run` puts it there with `npm install --no-save --prefix tests/sdk ... openai`).
//
// `budget`: a first call is answered and uses up the budget; the next throws RateLimitError
// (429, `insufficient_quota`) after one request, as lingo's `x-should-retry: false` asks.
// `rate`: a first call is answered; the next is refused once by the one-a-second bucket, and
// the SDK waits the `retry-after-ms` it was given, retries by itself and is answered.
//
// Prints one JSON line (the statuses the SDK's fetch saw, and for `rate` the wait it was told
// and how long the second call took), then `openai js limits: ok`. Exits non-zero (with the
// reason) on the first thing that is not what the SDK is expected to do.
import assert from "node:assert/strict";

import OpenAI from "openai";

const [baseURL, mode] = process.argv.slice(2);

// Every response the SDK's fetch receives, retries included, in order.
const seen = [];
const noting = async (url, init) => {
  const response = await fetch(url, init);
  seen.push({
    status: response.status,
    retry_after_ms: response.headers.get("retry-after-ms"),
    should_retry: response.headers.get("x-should-retry"),
  });
  return response;
};

const client = new OpenAI({ baseURL, apiKey: "ka", fetch: noting });
assert.equal(client.maxRetries, 2);
const hello = { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] };
const statuses = () => seen.map((r) => r.status);

const first = await client.chat.completions.create(hello);
assert.equal(first.choices[0].message.content, "Lingo is a mock");
assert.deepEqual(statuses(), [200]);

if (mode === "budget") {
  const start = performance.now();
  // The refusal's retry-after-ms is the time left until the budget renews (hours): an SDK that
  // retried anyway would sleep that long, so a call still pending after 10 s is a retry.
  const pending = new Promise((_, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`still pending after 10 s, waiting to retry: ${JSON.stringify(seen)}`)),
      10_000,
    );
    timer.unref();
  });
  const error = await Promise.race([client.chat.completions.create(hello), pending]).then(
    () => assert.fail("a call past the spent budget was answered"),
    (e) => e,
  );
  assert.ok(error instanceof OpenAI.RateLimitError, String(error));
  assert.equal(error.status, 429);
  assert.equal(error.code, "insufficient_quota");
  assert.equal(error.type, "insufficient_quota");
  assert.equal(error.headers.get("x-should-retry"), "false");
  assert.deepEqual(statuses(), [200, 429], `the SDK retried: ${JSON.stringify(seen)}`);
  console.log(JSON.stringify({ seen, elapsed_ms: Math.round(performance.now() - start) }));
} else if (mode === "rate") {
  const start = performance.now();
  const second = await client.chat.completions.create(hello);
  const elapsed = performance.now() - start;
  assert.equal(second.choices[0].message.content, "Lingo is a mock");
  assert.deepEqual(statuses(), [200, 429, 200], JSON.stringify(seen));
  const wait = Number(seen[1].retry_after_ms);
  assert.ok(wait > 0 && wait <= 1000, JSON.stringify(seen));
  // The SDK slept the wait it was told before it sent the retry (a timer may fire a
  // millisecond early, by its rounding).
  assert.ok(elapsed >= wait - 2, `${elapsed} ms, told ${wait} ms`);
  console.log(JSON.stringify({ seen, retry_after_ms: wait, elapsed_ms: Math.round(elapsed) }));
} else {
  throw new Error(`unknown mode ${mode}`);
}

console.log("openai js limits: ok");
