"""The official Firecrawl Python SDK's v1 client (`V1FirecrawlApp`, what `Firecrawl(...).v1`
wraps in firecrawl-py 4.x) against lingo in front of a web-data v2-only upstream: run by
tests/sdk.rs with lingo's base URL (routes `prefix: /v1` and `prefix: /v2`). The upstream
speaks version 2 only, so every v1 shape seen here is lingo's translation.

Exits non-zero (with the reason) on the first thing that is not what the client expects.
"""
import sys

import requests

from firecrawl import V1FirecrawlApp
from firecrawl.v1.client import V1JsonConfig, V1ScrapeOptions, V1ScrapeParams

base = sys.argv[1].rstrip("/")
app = V1FirecrawlApp(api_key="fc-lingo-client-key", api_url=base)
schema = {"type": "object", "properties": {"title": {"type": "string"}}}

scraped = app.scrape_url(
    "https://example.com",
    formats=["markdown", "extract"],
    # checkPromptInjection: a V1JsonConfig field, and a member of v2's json format too.
    extract=V1JsonConfig(schema=schema, prompt="the title", checkPromptInjection=True),
)
assert scraped.success, scraped
assert scraped.extract == {"title": "mock title"}, scraped.extract
assert scraped.json_field is None, scraped.json_field
assert scraped.markdown, scraped
assert scraped.metadata and scraped.metadata.get("sourceURL") == "https://example.com", scraped.metadata

# The SDK's own polling: POST /v1/crawl, then GET /v1/crawl/:id until completed, following
# any `next` (which lingo must have re-based on itself and on /v1).
crawled = app.crawl_url(
    "https://example.com",
    limit=3,
    max_depth=2,
    allow_backward_links=True,
    scrape_options=V1ScrapeOptions(formats=["markdown"]),
    poll_interval=1,
)
assert crawled.success and crawled.status == "completed", crawled
assert len(crawled.data) == crawled.total and crawled.total > 0, crawled
for doc in crawled.data:
    assert doc.markdown, doc
    assert doc.extract is None and doc.json_field is None, doc
    assert doc.metadata and doc.metadata.get("sourceURL"), doc

# The v1 SDK cannot put extract options in a crawl: it re-validates `scrape_options` as
# V1ScrapeOptions, which has no `extract`/`jsonOptions` field, so they are dropped. A v1
# server responded to that with its own 400, and so does lingo (v2 would have accepted it).
try:
    app.crawl_url(
        "https://example.com",
        scrape_options=V1ScrapeParams(formats=["extract"], extract=V1JsonConfig(prompt="title")),
    )
    raise AssertionError("a crawl asking for extract without its options started")
except requests.exceptions.HTTPError as e:
    assert e.response.status_code == 400, e
    assert "the extract format needs extract options" in str(e), e

started = app.async_crawl_url("https://example.com", limit=2)
assert started.success and started.id, started
assert started.url == f"{base}/v1/crawl/{started.id}", started.url
status = app.check_crawl_status(started.id)
assert status.success and status.status == "completed", status
assert len(status.data) == status.total, status

# A batch, polled by the SDK like a crawl: `extract` asked for comes back as `extract`, `json`
# as `json` (lingo remembers each job's v1 formats).
batch = app.batch_scrape_urls(
    ["https://example.com"],
    formats=["markdown", "extract"],
    extract=V1JsonConfig(prompt="title"),
    poll_interval=1,
)
assert batch.success and batch.status == "completed" and batch.data, batch
assert all(d.extract == {"title": "Mock page"} and d.json_field is None for d in batch.data), batch
as_json = app.async_batch_scrape_urls(
    ["https://example.com"], formats=["json"], json_options=V1JsonConfig(prompt="title")
)
assert as_json.url == f"{base}/v1/batch/scrape/{as_json.id}", as_json.url
pages = app.check_batch_scrape_status(as_json.id)
assert pages.data and all(
    d.json_field == {"title": "Mock page"} and d.extract is None for d in pages.data
), pages

mapped = app.map_url("https://example.com")
assert mapped.success, mapped
assert mapped.links and all(isinstance(link, str) for link in mapped.links), mapped.links
assert "https://example.com/about" in mapped.links, mapped.links

found = app.search("lingo", limit=2)
assert found.success, found
assert isinstance(found.data, list) and len(found.data) == 2, found.data
assert all(isinstance(r, dict) and r.get("url") for r in found.data), found.data

usage = app.get_token_usage()
assert usage.success, usage
assert usage.data.remaining_tokens == 1_000_000, usage.data
assert usage.data.plan_tokens == 1_000_000, usage.data
assert usage.data.billing_period_start == "2026-01-01T00:00:00.000Z", usage.data
assert usage.data.billing_period_end == "2026-02-01T00:00:00.000Z", usage.data

print("firecrawl sdk: ok")
