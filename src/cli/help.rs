//! What `--help` prints: lingo's, and each command's.

/// The usage lines and the commands: printed under a command-line error too.
pub const USAGE: &str = "\
usage:
  lingo [serve] [--config PATH] [--log-format FORMAT]
  lingo check [--no-secrets] [PATH]
  lingo mock [--listen ADDR] [--log-format FORMAT] [--KNOB VALUE ...]
  lingo help [COMMAND]

commands:
  serve   serve a route table (the command when none is given)
  check   load a route table, report every problem or print what it means
  mock    run the built-in mock backend alone
  help    print this help, or a command's (`lingo help check`)";

/// `lingo --help`; `{USAGE}` stands for [`USAGE`].
pub const LINGO: &str = "\
lingo: a protocol-translating reverse proxy for model servers and web-data APIs.

It serves a route table (proxy.yaml). Each route passes requests through to an upstream, or
translates between the chat-completions dialect (/v1/chat/completions, ...), the native one
(/api/chat, ...) and the web-data API's two versions (/v1/scrape, /v2/crawl, ...).

{USAGE}

options:
  -c, --config PATH        the route table to serve (default proxy.yaml)
      --log-format FORMAT  log lines in logfmt (`text`, the default) or as JSON (`json`)
  -h, --help               print this help (`lingo COMMAND --help`: a command's)
  -V, --version            print the version and the commit it was built from

environment:
  LINGO_LOG_FORMAT   `text` or `json`, as --log-format (the option wins)
  RUST_LOG           which log lines are written (default info; e.g. warn, lingo=debug)
  LINGO_WORKERS      threads serving connections (default one per core)
  and the variables a table's `{ env: VAR }` secrets name (client and upstream keys)

signals (serve):
  SIGHUP             reload the route table now (a change to its file reloads it too);
                     a table that does not load is refused and the old one keeps serving
  SIGTERM, SIGINT    stop accepting connections, let those open finish for up to
                     limits.drain (default 30s), then exit

exit status: 0 done; 1 the route table does not load, or lingo cannot start; 2 a command-line
error.";

/// `lingo serve --help`.
pub const SERVE: &str = "\
lingo serve: serve a route table until SIGTERM or SIGINT. `serve` is the command when none
is given: `lingo --config proxy.yaml` is `lingo serve --config proxy.yaml`.

usage: lingo [serve] [--config PATH] [--log-format FORMAT]

options:
  -c, --config PATH        the route table (default proxy.yaml)
      --log-format FORMAT  log lines in logfmt (`text`, the default) or as JSON (`json`)
  -h, --help               print this help

environment:
  LINGO_LOG_FORMAT   `text` or `json`, as --log-format (the option wins)
  RUST_LOG           which log lines are written (default info; e.g. warn, lingo=debug)
  LINGO_WORKERS      threads serving connections (default one per core)
  and the variables a table's `{ env: VAR }` secrets name (client and upstream keys)

signals:
  SIGHUP             reload the route table now (a change to its file reloads it too);
                     a table that does not load is refused and the old one keeps serving
  SIGTERM, SIGINT    stop accepting connections, let those open finish for up to
                     limits.drain (default 30s), then exit

exit status: 0 stopped by a signal; 1 the route table does not load, or a listener cannot be
bound; 2 a command-line error.";

/// `lingo check --help`.
pub const CHECK: &str = "\
lingo check: load a route table as `lingo serve` would and print what it means (listeners,
the admin listener, clients, upstreams, models, routes, limits, warnings), or every problem
as FILE:LINE:COLUMN: reason, one a line, on stderr.

usage: lingo check [--no-secrets] [PATH]

arguments:
  PATH           the route table (default proxy.yaml)

options:
  --no-secrets   check secrets' shape only: `{ env: VAR }` and `{ file: PATH }` keys are not
                 read, so a table checks where its keys are not set (CI)
  -h, --help     print this help

exit status: 0 the table loads; 1 it does not; 2 a command-line error.";

/// `lingo mock --help`.
pub const MOCK: &str = "\
lingo mock: run the built-in deterministic backend alone (a load-test target, or a stand-in
for a model server), until SIGTERM or SIGINT. It responds to the native API (/api/chat,
/api/generate, /api/embed, /api/tags, ...) and the web-data API (/v1 and /v2 scrape, crawl,
batch, usage); with --speaks chat-completions, the chat-completions API (/v1/chat/completions,
/v1/completions, /v1/embeddings, /v1/models) instead.

usage: lingo mock [--listen ADDR] [--log-format FORMAT] [--KNOB VALUE ...]

options:
  -l, --listen ADDR        the IP:PORT to listen on (default 127.0.0.1:11435)
      --log-format FORMAT  log lines in logfmt (`text`, the default) or as JSON (`json`)
  -h, --help               print this help

knobs (every response's; a request's `X-Mock: tokens=3,status=503` header, or a model name
such as `m@tokens=3`, sets them for that request):
  --tokens N               tokens in a response (default 16)
  --token-delay D          pause before each token after the first (250ms, 2s, 1m; default 0)
  --first-token-delay D    pause before the response's head (default 0)
  --embedding-size N       numbers in an embedding (default 16)
  --status CODE            respond with this error status instead
  --error-after N          end a stream with an error line after N tokens
  --cut-after N            cut the connection after N tokens
  --loaded MODEL,...       the models /api/ps says are loaded (default none)
  --busy true              refuse every request that runs a model with a native server's
                           503 for a full queue (its listings still answered)
  --page-delay D           pause before each page of a web-data job (default 0: a job has
                           ended when its start gets a response)
  --job-fail-after N       a web-data job fails after N pages
  --webhook-retry D,D,D    delays between a webhook's attempts (default 1m,5m,15m)
  --webhook-timeout D      time a webhook receiver has to respond with 2xx (default 10s)
  --webhook-secret S       sign webhooks: X-Firecrawl-Signature, HMAC-SHA256 of the body
  --speaks DIALECT         chat-completions (that API instead), or web-data-v2 (version 2
                           of the web-data API only); default: native and web-data

exit status: 0 stopped by a signal; 1 the address cannot be bound; 2 a command-line error.";
