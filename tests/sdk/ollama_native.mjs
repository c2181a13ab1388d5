// The official Ollama JavaScript client against lingo's native route over a chat-completions
// upstream: run by tests/sdk.rs as `node tests/sdk/ollama_native.mjs BASE_URL`, with the
// `ollama` package in the gitignored tests/sdk/node_modules (`.ci/run` puts it there with
// `npm install --no-save --prefix tests/sdk ollama`).
//
// Exits non-zero (with the reason) on the first thing that is not what the client expects.
import assert from "node:assert/strict";

import { Ollama } from "ollama";

const client = new Ollama({ host: process.argv[2] });
const hello = [{ role: "user", content: "hello there" }];

const chunks = [];
for await (const chunk of await client.chat({ model: "llama3", messages: hello, stream: true })) {
  assert.equal(chunk.model, "llama3");
  chunks.push(chunk);
}
assert.equal(chunks.map((c) => c.message.content).join(""), "Lingo is a mock");
assert.ok(chunks.slice(0, -1).every((c) => !c.done), JSON.stringify(chunks));
const last = chunks.at(-1);
assert.ok(last.done && last.done_reason === "stop", JSON.stringify(last));
assert.equal(last.eval_count, 4);

const whole = await client.chat({ model: "llama3", messages: hello, stream: false });
assert.ok(whole.done && whole.done_reason === "stop", JSON.stringify(whole));
assert.equal(whole.message.role, "assistant");
assert.equal(whole.message.content, "Lingo is a mock");
assert.equal(whole.eval_count, 4);

const weather = {
  type: "function",
  function: {
    name: "get_weather",
    description: "The weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};
const called = await client.chat({ model: "llama3", messages: hello, tools: [weather], stream: false });
const callsOf = (calls) => (calls ?? []).map((c) => [c.function.name, c.function.arguments]);
assert.deepEqual(callsOf(called.message.tool_calls), [["get_weather", { city: "mock" }]]);
const streamedCalls = [];
for await (const chunk of await client.chat({ model: "llama3", messages: hello, tools: [weather], stream: true })) {
  streamedCalls.push(...callsOf(chunk.message.tool_calls));
}
assert.deepEqual(streamedCalls, [["get_weather", { city: "mock" }]]);
const history = [...hello, called.message, { role: "tool", content: "sunny", tool_name: "get_weather" }];
const reply = await client.chat({ model: "llama3", messages: history, stream: false });
assert.equal(reply.message.content, "Lingo is a mock");

const asJson = await client.chat({ model: "llama3", messages: hello, format: "json", stream: false });
assert.deepEqual(JSON.parse(asJson.message.content), { answer: "mock" });
const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
const shaped = await client.chat({ model: "llama3", messages: hello, format: schema, stream: false });
assert.deepEqual(JSON.parse(shaped.message.content), { city: "mock" });

const generated = await client.generate({ model: "llama3", prompt: "hello there", stream: false });
assert.ok(generated.done, JSON.stringify(generated));
assert.equal(generated.response, "Lingo is a mock");
const pieces = [];
for await (const part of await client.generate({ model: "llama3", prompt: "hi", stream: true })) {
  pieces.push(part.response);
}
assert.equal(pieces.join(""), "Lingo is a mock");

const embedded = await client.embed({ model: "all-minilm", input: ["one", "two"] });
assert.equal(embedded.embeddings.length, 2);
assert.ok(embedded.embeddings.every((e) => e.length === 16), JSON.stringify(embedded));

assert.deepEqual((await client.ps()).models, []);
assert.deepEqual(await client.version(), { version: "0.12.0" });

const names = (await client.list()).models.map((m) => m.model);
assert.ok(names.includes("llama3.2:3b") && names.includes("llama3"), JSON.stringify(names));

const shown = await client.show({ model: "llama3" });
assert.equal(shown.details.family, "llama");
assert.ok((shown.capabilities ?? []).includes("completion"), JSON.stringify(shown));

async function rejects(what, promise, check) {
  try {
    await promise();
  } catch (e) {
    assert.equal(e.name, "ResponseError", `${what}: ${e.stack}`);
    check(e);
    return;
  }
  assert.fail(`${what}: no error`);
}
await rejects(
  "a missing model",
  () => client.chat({ model: "missing-model", messages: hello, stream: false }),
  (e) => {
    assert.equal(e.status_code, 404);
    assert.match(e.error, /missing-model/);
  },
);
await rejects(
  "a missing model, described",
  () => client.show({ model: "missing-model" }),
  (e) => assert.equal(e.status_code, 404),
);
await rejects(
  "a missing model, streamed",
  async () => {
    for await (const _ of await client.chat({ model: "missing-model", messages: hello, stream: true })) {
      // nothing
    }
  },
  (e) => assert.equal(e.status_code, 404),
);

let broken = null;
try {
  for await (const _ of await client.chat({
    model: "llama3@error_after=2",
    messages: hello,
    stream: true,
  })) {
    // the first two tokens
  }
} catch (e) {
  broken = e;
}
assert.ok(broken, "a broken stream looked complete");
assert.match(String(broken.message ?? broken), /mock error after 2 tokens/);

console.log("ollama js sdk: ok");
