// The official Firecrawl JavaScript SDK's webhook options through lingo's webhook relay: run by
// tests/sdk.rs as `node tests/sdk/firecrawl_webhooks.mjs BASE_URL RECEIVER_URL`, with lingo in
// front of the mock (routes `/v1` and `/v2`, the relay on) and @mendable/firecrawl-js 4 in the
// gitignored tests/sdk/node_modules. The v2 client's webhook object (a crawl), its string form
// (a batch scrape) and the v1 client's (a crawl) each start a job; the script prints the jobs'
// ids as JSON, and the test checks what the receiver got.
//
// Exits non-zero (with the reason) on the first thing that is not what the client expects.
import assert from "node:assert/strict";

import Firecrawl from "@mendable/firecrawl-js";

const base = process.argv[2].replace(/\/$/, "");
const receiver = process.argv[3].replace(/\/$/, "");
const app = new Firecrawl({ apiKey: "app-key", apiUrl: base });

const crawl = await app.startCrawl("https://example.com", {
  limit: 3,
  webhook: {
    url: `${receiver}/js-crawl`,
    headers: { "X-From": "javascript" },
    metadata: { sdk: "javascript" },
    events: ["started", "page", "completed"],
  },
});
assert.ok(crawl.id, JSON.stringify(crawl));

const batch = await app.startBatchScrape(["https://example.com/a"], {
  webhook: `${receiver}/js-batch`,
});
assert.ok(batch.id, JSON.stringify(batch));

const old = await app.v1.asyncCrawlUrl("https://example.com", {
  webhook: { url: `${receiver}/js-v1`, events: ["page"] },
});
assert.ok(old.success && old.id, JSON.stringify(old));

console.log(JSON.stringify({ crawl: crawl.id, batch: batch.id, v1: old.id }));
console.log("firecrawl js webhooks: ok");
