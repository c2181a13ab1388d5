// The official Firecrawl JavaScript SDK's v1 client (`new Firecrawl({apiKey, apiUrl}).v1`, the
// `FirecrawlAppV1` class of @mendable/firecrawl-js 4.x) against lingo in front of a web-data
// v2-only upstream: run by tests/sdk.rs as `node tests/sdk/firecrawl_v1.mjs BASE_URL`, with
// the package in the gitignored tests/sdk/node_modules (`.ci/run` puts it there with
// `npm install --no-save --prefix tests/sdk @mendable/firecrawl-js@4`). The upstream speaks
// version 2 only, so every v1 shape seen here is lingo's translation.
//
// Exits non-zero (with the reason) on the first thing that is not what the client expects.
import assert from "node:assert/strict";

import Firecrawl, { FirecrawlAppV1 } from "@mendable/firecrawl-js";

const base = process.argv[2].replace(/\/$/, "");
const app = new Firecrawl({ apiKey: "fc-lingo-client-key", apiUrl: base }).v1;
assert.ok(app instanceof FirecrawlAppV1, "Firecrawl(...).v1 is the v1 client");
const schema = { type: "object", properties: { title: { type: "string" } } };
const ok = (what, r) => assert.ok(r && r.success, `${what}: ${JSON.stringify(r)}`);

const scraped = await app.scrapeUrl("https://example.com", {
  formats: ["markdown", "extract"],
  extract: { schema, prompt: "the title" },
});
ok("scrape", scraped);
assert.deepEqual(scraped.extract, { title: "mock title" });
assert.equal(scraped.json, undefined);
assert.ok(scraped.markdown, JSON.stringify(scraped));
assert.equal(scraped.metadata.sourceURL, "https://example.com");

// v1's `json` format stays `json`; checkPromptInjection (in the SDK's jsonOptions type) goes
// into v2's json format.
const asJson = await app.scrapeUrl("https://example.com", {
  formats: ["json"],
  jsonOptions: { prompt: "the title", checkPromptInjection: true },
});
ok("scrape json", asJson);
assert.deepEqual(asJson.json, { title: "Mock page" });
assert.equal(asJson.extract, undefined);

// The SDK's own polling: POST /v1/crawl, GET /v1/crawl/:id until completed, then every `next`.
const crawled = await app.crawlUrl(
  "https://example.com",
  {
    limit: 3,
    maxDepth: 2,
    allowBackwardLinks: true,
    scrapeOptions: { formats: ["markdown", "extract"], extract: { prompt: "title" } },
  },
  1,
);
ok("crawl", crawled);
assert.equal(crawled.status, "completed");
assert.ok(crawled.total > 0 && crawled.data.length === crawled.total, JSON.stringify(crawled));
for (const doc of crawled.data) {
  assert.deepEqual(doc.extract, { title: "Mock page" }, JSON.stringify(doc));
  assert.equal(doc.json, undefined, JSON.stringify(doc));
  assert.ok(doc.markdown, JSON.stringify(doc));
}

const started = await app.asyncCrawlUrl("https://example.com", {
  limit: 3,
  scrapeOptions: { formats: ["markdown", "extract"], extract: { schema } },
});
ok("crawl start", started);
assert.equal(started.url, `${base}/v1/crawl/${started.id}`);
// One document a page, all data asked for: the SDK follows each page's `next` (an absolute
// URL that lingo must have re-based on itself and on /v1) with the client's key.
const status = await app.checkCrawlStatus(started.id, true, undefined, 0, 1);
ok("crawl status", status);
assert.equal(status.status, "completed");
assert.equal(status.data.length, status.total, JSON.stringify(status));
assert.ok(status.total > 1, JSON.stringify(status));
for (const doc of status.data) {
  assert.deepEqual(doc.extract, { title: "Mock page" }, JSON.stringify(doc));
}
// The first page alone: its `next` (which the SDK fetches verbatim, key and all) names lingo.
const firstPage = await app.checkCrawlStatus(started.id, false, undefined, 0, 1);
ok("crawl status page", firstPage);
assert.equal(firstPage.data.length, 1, JSON.stringify(firstPage));
assert.equal(firstPage.next, `${base}/v1/crawl/${started.id}?skip=1&limit=1`);

// A batch, polled by the SDK like a crawl: `extract` comes back as `extract`, `json` as `json`
// (lingo remembers each job's v1 formats).
const batch = await app.batchScrapeUrls(
  ["https://example.com"],
  { formats: ["markdown", "extract"], extract: { prompt: "title" } },
  1,
);
ok("batch", batch);
assert.ok(batch.data.length > 0, JSON.stringify(batch));
for (const doc of batch.data) {
  assert.deepEqual(doc.extract, { title: "Mock page" }, JSON.stringify(doc));
  assert.equal(doc.json, undefined, JSON.stringify(doc));
}
const jsonBatch = await app.asyncBatchScrapeUrls(["https://example.com"], {
  formats: ["json"],
  jsonOptions: { prompt: "title" },
});
ok("batch start", jsonBatch);
assert.equal(jsonBatch.url, `${base}/v1/batch/scrape/${jsonBatch.id}`);
const jsonPages = await app.checkBatchScrapeStatus(jsonBatch.id, true);
ok("batch status", jsonPages);
for (const doc of jsonPages.data) {
  assert.deepEqual(doc.json, { title: "Mock page" }, JSON.stringify(doc));
  assert.equal(doc.extract, undefined, JSON.stringify(doc));
}

// The SDK reads `params.origin` unguarded: map needs a params object, even an empty one.
const mapped = await app.mapUrl("https://example.com", {});
ok("map", mapped);
assert.ok(mapped.links.length > 0 && mapped.links.every((l) => typeof l === "string"), JSON.stringify(mapped));
assert.ok(mapped.links.includes("https://example.com/about"), JSON.stringify(mapped.links));

const found = await app.search("lingo", { limit: 2 });
ok("search", found);
assert.ok(Array.isArray(found.data) && found.data.length === 2, JSON.stringify(found));
assert.ok(found.data.every((r) => typeof r.url === "string"), JSON.stringify(found.data));

const usage = await app.getTokenUsage();
ok("token usage", usage);
assert.deepEqual(usage.data, {
  remaining_tokens: 1_000_000,
  plan_tokens: 1_000_000,
  billing_period_start: "2026-01-01T00:00:00.000Z",
  billing_period_end: "2026-02-01T00:00:00.000Z",
});

// Same body in both versions: the path alone is translated.
const queue = await app.getQueueStatus();
ok("queue status", queue);
assert.equal(queue.maxConcurrency, 2, JSON.stringify(queue));
assert.equal(queue.jobsInQueue, 0, JSON.stringify(queue));

console.log("firecrawl js sdk: ok");
