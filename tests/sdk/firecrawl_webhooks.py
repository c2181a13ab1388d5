"""The official Firecrawl Python SDK's webhook options through lingo's webhook relay: run by
tests/sdk.rs as `python3 tests/sdk/firecrawl_webhooks.py BASE_URL RECEIVER_URL`, with lingo in
front of the mock (routes `/v1` and `/v2`, the relay on). The v2 client's `WebhookConfig` (a
crawl), its string form (a batch scrape) and the v1 client's `V1WebhookConfig` (a crawl) each
start a job; the script prints the jobs' ids as JSON, and the test checks what the receiver
got.

Exits non-zero (with the reason) on the first thing that is not what the client expects.
"""
import json
import sys

from firecrawl import Firecrawl, V1FirecrawlApp
from firecrawl.v1.client import V1WebhookConfig
from firecrawl.v2.types import WebhookConfig

base, receiver = sys.argv[1].rstrip("/"), sys.argv[2].rstrip("/")
app = Firecrawl(api_key="app-key", api_url=base)

crawl = app.start_crawl(
    "https://example.com",
    limit=3,
    webhook=WebhookConfig(
        url=f"{receiver}/py-crawl",
        headers={"X-From": "python"},
        metadata={"sdk": "python"},
        events=["started", "page", "completed"],
    ),
)
assert crawl.id, crawl

batch = app.start_batch_scrape(["https://example.com/a"], webhook=f"{receiver}/py-batch")
assert batch.id, batch

v1 = V1FirecrawlApp(api_key="app-key", api_url=base)
old = v1.async_crawl_url(
    "https://example.com", webhook=V1WebhookConfig(url=f"{receiver}/py-v1", events=["page"])
)
assert old.success and old.id, old

print(json.dumps({"crawl": crawl.id, "batch": batch.id, "v1": old.id}))
print("firecrawl python webhooks: ok")
