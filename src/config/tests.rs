//! Every rule of the route table, with each error message and its place.

use std::path::{Path, PathBuf};

use hyper::header::HeaderValue;

use super::*;
use crate::base::dialect::Dialect;
use crate::base::secret::SecretSource;
use crate::table::{PathMatch, Target};

const ENV_SECRET: &str = "sk-env-secret";

/// The environment every test sees: `SET` holds a key, `EMPTY` is set but empty.
fn env(name: &str) -> Option<String> {
    match name {
        "SET" => Some(ENV_SECRET.to_owned()),
        "EMPTY" => Some(String::new()),
        _ => None,
    }
}

fn load(text: &str) -> Result<RouteTable, ConfigErrors> {
    load_str_with_env(text, Path::new("proxy.yaml"), &env)
}

fn ok(text: &str) -> RouteTable {
    load(text).unwrap_or_else(|e| panic!("expected the table to load:\n{e}"))
}

fn errors(text: &str) -> Vec<String> {
    match load(text) {
        Ok(_) => vec![],
        Err(e) => e.0.iter().map(ToString::to_string).collect(),
    }
}

/// Runs `(table, every expected error)` cases.
fn check_errors(cases: &[(&str, &[&str])]) {
    for (text, expected) in cases {
        assert_eq!(errors(text), *expected, "for:\n{text}");
    }
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls")
}

const LISTEN: &str = "listen:\n  - addr: 127.0.0.1:8080\n";

/// A table of two upstreams (lines 1-5) for route and model cases to extend.
const BASE: &str = "\
listen:
  - addr: 127.0.0.1:8080
upstreams:
  models: { url: http://127.0.0.1:11434, speaks: native }
  webdata: { url: https://api.firecrawl.dev, speaks: web-data }
";

fn with_base(rest: &str) -> String {
    format!("{BASE}{rest}")
}

#[test]
fn shape_errors_have_line_and_column() {
    let route_with = |extra: &str| {
        with_base(&format!(
            "routes:\n  - {{ prefix: /api, to: models, {extra} }}\n"
        ))
    };
    let unknown_route_key = route_with("speak: native");
    let bad_bool = route_with("allow_model_management: maybe");
    let mock_key =
        format!("{LISTEN}upstreams:\n  m: {{ mock: {{ tokens: 3, speed: 2 }}, speaks: native }}\n");
    let bad_u32 =
        format!("{LISTEN}upstreams:\n  m: {{ mock: {{ tokens: -3 }}, speaks: native }}\n");
    let timeout_key = format!(
        "{LISTEN}upstreams:\n  m: {{ mock: {{}}, speaks: native, timeouts: {{ conect: 1s }} }}\n"
    );
    let missing_to = with_base("routes:\n  - prefix: /api\n");
    check_errors(&[
        (
            "listn:\n  - addr: 127.0.0.1:8080\n",
            &[
                "proxy.yaml:1:1: unknown field `listn`, expected one of listen, clients, upstreams, models, routes, limits, quota_store, owned_by, admin",
            ],
        ),
        (
            &unknown_route_key,
            &[
                "proxy.yaml:7:33: unknown field `speak`, expected one of path, prefix, speaks, to, allow_model_management, max_body, options, extra_options, websocket",
            ],
        ),
        (&bad_bool, &["proxy.yaml:7:57: invalid boolean"]),
        (
            &mock_key,
            &[
                "proxy.yaml:4:27: unknown field `speed`, expected one of tokens, token_delay, first_token_delay, embedding_size, page_delay, webhook_retry, webhook_timeout, webhook_secret",
            ],
        ),
        (&bad_u32, &["proxy.yaml:4:24: invalid u32"]),
        (
            &timeout_key,
            &["proxy.yaml:4:46: unknown field `conect`, expected one of connect, first_byte, idle"],
        ),
        (&missing_to, &["proxy.yaml:7:5: missing field `to`"]),
        ("listen: [\n", &["proxy.yaml:1:9: unclosed bracket '['"]),
        (
            "# only a comment\n\n",
            &["proxy.yaml: the file is empty; it needs at least `listen:` and `routes:`"],
        ),
    ]);
}

#[test]
fn duplicate_keys_are_errors() {
    let upstream = format!("{BASE}  models: {{ url: http://127.0.0.1:11435, speaks: native }}\n");
    check_errors(&[
        (
            "listen: []\nroutes: []\nroutes: []\n",
            &["proxy.yaml:3:1: duplicate mapping key `routes` is not allowed here"],
        ),
        (
            &upstream,
            &["proxy.yaml:6:3: duplicate mapping key `models` is not allowed here"],
        ),
        (
            "listen:\n  - { addr: 127.0.0.1:8080, addr: 127.0.0.1:8081 }\n",
            &["proxy.yaml:2:29: duplicate mapping key `addr` is not allowed here"],
        ),
    ]);
}

#[test]
fn listener_rules() {
    let many = "\
listen:
  - addr: localhost:8080
  - addr: 127.0.0.1:8080
  - addr: 127.0.0.1:8080
  - addr: 127.0.0.1:9090
    public_url: ftp://x
  - addr: 127.0.0.1:9091
    public_url: https://x/?q=1
  - addr: 127.0.0.1:9092
    public_url: https://proxy.example.com
  - addr: 127.0.0.1:9093
    tls: { cert: nope.pem, key: nope.key }
";
    check_errors(&[
        (
            "routes: []\n",
            &["proxy.yaml: no listeners: add `listen: [{ addr: 127.0.0.1:8080 }]`"],
        ),
        (
            "listen: []\n",
            &["proxy.yaml:1:9: no listeners: add `listen: [{ addr: 127.0.0.1:8080 }]`"],
        ),
        (
            many,
            &[
                "proxy.yaml:2:11: listen address `localhost:8080` is not IP:PORT (for example 127.0.0.1:8080)",
                "proxy.yaml:4:11: listen address 127.0.0.1:8080 is already used on line 3",
                "proxy.yaml:6:17: listen 127.0.0.1:9090: public_url `ftp://x` must start with http:// or https://",
                "proxy.yaml:8:17: listen 127.0.0.1:9091: public_url `https://x/?q=1` must not have a query or fragment",
                "proxy.yaml:12:10: listen 127.0.0.1:9093: cannot read TLS certificate file `nope.pem`: No such file or directory (os error 2)",
            ],
        ),
    ]);
    let table =
        ok("listen:\n  - { addr: \"[::1]:8443\", public_url: https://proxy.example.com/ }\n");
    let listener = &table.listeners[0];
    assert_eq!(listener.addr, "[::1]:8443".parse().unwrap());
    assert_eq!(
        listener.public_url.as_ref().unwrap(),
        "https://proxy.example.com/"
    );
    assert!(listener.tls.is_none());
}

#[test]
fn tls_listeners() {
    // Relative paths resolve against the table's directory, not the working directory.
    let source = fixtures().join("proxy.yaml");
    let text =
        "listen:\n  - addr: 127.0.0.1:8443\n    tls: { cert: localhost.pem, key: localhost.key }\n";
    let table = load_str_with_env(text, &source, &env).unwrap();
    let tls = table.listeners[0].tls.as_ref().unwrap();
    assert_eq!(tls.alpn_protocols, [b"h2".to_vec(), b"http/1.1".to_vec()]);

    let dir = fixtures();
    let case = |cert: &str, key: &str| {
        let text =
            format!("listen:\n  - addr: 127.0.0.1:8443\n    tls: {{ cert: {cert}, key: {key} }}\n");
        let errors = load_str_with_env(&text, &source, &env).unwrap_err();
        assert_eq!(errors.0.len(), 1);
        (
            errors.0[0].line,
            errors.0[0].column,
            errors.0[0].message.clone(),
        )
    };
    let cases = [
        (
            "localhost.pem",
            "other.key",
            "the key does not belong to the certificate".to_owned(),
        ),
        (
            "localhost.key",
            "localhost.key",
            format!(
                "no PEM certificate found in `{}`",
                dir.join("localhost.key").display()
            ),
        ),
        (
            "localhost.pem",
            "localhost.pem",
            format!(
                "no PEM private key found in `{}`",
                dir.join("localhost.pem").display()
            ),
        ),
        (
            "README.md",
            "localhost.key",
            format!(
                "no PEM certificate found in `{}`",
                dir.join("README.md").display()
            ),
        ),
        (
            "localhost.pem",
            "missing.key",
            format!(
                "cannot read TLS private key file `{}`",
                dir.join("missing.key").display()
            ),
        ),
    ];
    for (cert, key, expected) in cases {
        let (line, column, message) = case(cert, key);
        assert_eq!((line, column), (3, 10), "{cert} {key}");
        assert!(message.starts_with("listen 127.0.0.1:8443: "), "{message}");
        assert!(message.contains(&expected), "{message}");
    }
}

#[test]
fn secret_rules() {
    let text = format!(
        "{LISTEN}clients:
  - {{ name: a, key: {{ env: UNSET }} }}
  - {{ name: b, key: {{ env: EMPTY }} }}
  - {{ name: c, key: {{ env: SET }} }}
  - {{ name: c, key: {{ env: SET }} }}
  - {{ name: d, key: {{ env: SET, value: x }} }}
  - {{ name: e, key: {{}} }}
  - {{ name: f, key: {{ file: no/such/file }} }}
  - {{ name: g, key: {{ value: \"\" }} }}
  - {{ name: \"\", key: {{ value: zz }} }}
"
    );
    let one_of = r#"a secret is exactly one of { env: VAR }, { file: PATH } or { value: "..." }"#;
    check_errors(&[(
        &text,
        &[
            "proxy.yaml:4:21: client `a` key: environment variable `UNSET` is not set",
            "proxy.yaml:5:21: client `b` key: environment variable `EMPTY` is empty",
            "proxy.yaml:7:13: client name `c` is already used on line 6",
            "proxy.yaml:7:21: client `c` has the same key as client `c` (line 6); each client needs its own key",
            &format!("proxy.yaml:8:21: client `d` key: {one_of}"),
            &format!("proxy.yaml:9:21: client `e` key: {one_of}"),
            "proxy.yaml:10:21: client `f` key: cannot read secret file `no/such/file`: No such file or directory (os error 2)",
            "proxy.yaml:11:21: client `g` key: the inline secret is empty",
            "proxy.yaml:12:13: a client needs a non-empty `name:`",
        ],
    )]);
}

#[test]
fn file_secrets_are_trimmed_and_relative_to_the_table() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("dev.key"), "sk-from-file \n\n").unwrap();
    std::fs::write(dir.path().join("blank.key"), "\n").unwrap();
    let source = dir.path().join("proxy.yaml");
    let text = format!(
        "{LISTEN}clients:\n  - {{ name: dev, key: {{ file: dev.key }} }}\n  - {{ name: ops, key: {{ env: SET }} }}\n"
    );
    let table = load_str_with_env(&text, &source, &env).unwrap();
    let names: Vec<_> = table.clients.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["dev", "ops"]);
    assert_eq!(table.clients[0].key.expose(), "sk-from-file");
    assert_eq!(
        table.clients[0].source,
        SecretSource::File(dir.path().join("dev.key"))
    );
    assert_eq!(table.clients[1].source, SecretSource::Env("SET".into()));
    // Files the table reads are listed, for the reload watch.
    assert_eq!(table.files, [dir.path().join("dev.key")]);

    let text = format!("{LISTEN}clients:\n  - {{ name: dev, key: {{ file: blank.key }} }}\n");
    let errors = load_str_with_env(&text, &source, &env).unwrap_err();
    let expected = format!(
        "client `dev` key: secret file `{}` is empty",
        dir.path().join("blank.key").display()
    );
    assert_eq!(errors.0[0].message, expected);
}

#[test]
fn upstream_rules() {
    let text = format!(
        r#"{LISTEN}upstreams:
  a: {{ url: http://x, mock: {{}}, speaks: native }}
  b: {{ speaks: native }}
  c: {{ url: ftp://x, speaks: native }}
  d: {{ url: "http://x/?q", speaks: native }}
  e: {{ url: "http://x/#f", speaks: native }}
  f: {{ url: "http://user:pw@x/", speaks: native }}
  g: {{ url: "http://", speaks: native }}
  h: {{ url: x:80, speaks: native }}
  i: {{ url: http://x, speaks: klingon }}
  j: {{ url: http://x, speaks: native, timeouts: {{ connect: 0s, first_byte: soon, idle: 5 }} }}
  k: {{ url: http://x, speaks: native, auth: {{ bearer: {{ value: k }}, value: {{ value: k }} }} }}
  l: {{ url: http://x, speaks: native, auth: {{ header: "bad header", bearer: {{ value: k }} }} }}
  m: {{ url: http://x, speaks: native, auth: {{ value: {{ value: "a\nsecretline" }} }} }}
  n: {{ mock: {{ token_delay: fast }}, speaks: native }}
"#
    );
    let one_of = "needs exactly one of `bearer:` (sent as \"Bearer <key>\") or `value:` (the whole header value)";
    let duration = "is not a duration; write a whole number and a unit: 250ms, 5s, 2m, 1h or 30d";
    check_errors(&[(
        &text,
        &[
            "proxy.yaml:4:29: upstream `a` has both `url:` and `mock:`; keep one",
            "proxy.yaml:5:3: upstream `b` needs `url:`, `mock:` or `backends:`",
            "proxy.yaml:6:13: upstream `c`: url `ftp://x` must start with http:// or https://",
            "proxy.yaml:7:13: upstream `d`: url `http://x/?q` must not have a query or fragment",
            "proxy.yaml:8:13: upstream `e`: url `http://x/#f` must not have a query or fragment",
            "proxy.yaml:9:13: upstream `f`: url must not carry credentials; use `auth:` instead",
            "proxy.yaml:10:13: upstream `g`: url `http://` is not a URL (for example http://127.0.0.1:11434)",
            "proxy.yaml:11:13: upstream `h`: url `x:80` must start with http:// or https://",
            "proxy.yaml:12:31: upstream `i`: unknown dialect `klingon`; speaks is one of chat-completions, native, web-data, web-data-v2",
            "proxy.yaml:13:60: upstream `j` timeouts.connect must be more than 0",
            &format!("proxy.yaml:13:76: upstream `j` timeouts.first_byte: `soon` {duration}"),
            &format!("proxy.yaml:13:88: upstream `j` timeouts.idle: `5` {duration}"),
            &format!("proxy.yaml:14:45: upstream `k` auth {one_of}"),
            "proxy.yaml:15:55: upstream `l` auth: `bad header` is not a valid header name",
            "proxy.yaml:16:54: upstream `m` auth: the key from inline value has characters a header cannot carry",
            &format!("proxy.yaml:17:29: upstream `n` mock.token_delay: `fast` {duration}"),
        ],
    )]);
}

#[test]
fn mock_job_and_webhook_keys() {
    let table = ok(&format!(
        r#"{LISTEN}upstreams:
  hooks: {{ mock: {{ page_delay: 0ms, webhook_retry: [1s, 0s, 2m], webhook_timeout: 500ms, webhook_secret: {{ env: SET }} }}, speaks: web-data }}
  none: {{ mock: {{ webhook_retry: [] }}, speaks: web-data }}
"#
    ));
    let Target::Mock(mock) = &table.upstreams[0].backends[0].target else {
        panic!("not a mock")
    };
    let secs = std::time::Duration::from_secs;
    assert_eq!(mock.page_delay, Some(std::time::Duration::ZERO));
    assert_eq!(mock.webhook_retry, Some(vec![secs(1), secs(0), secs(120)]));
    assert_eq!(
        mock.webhook_timeout,
        Some(std::time::Duration::from_millis(500))
    );
    assert_eq!(
        mock.webhook_secret.as_ref().map(|s| s.expose()),
        Some(ENV_SECRET)
    );
    let Target::Mock(none) = &table.upstreams[1].backends[0].target else {
        panic!("not a mock")
    };
    assert_eq!(none.webhook_retry, Some(vec![]));

    let text = format!(
        r#"{LISTEN}upstreams:
  a: {{ mock: {{ webhook_timeout: 0s, page_delay: soon }}, speaks: web-data }}
  b: {{ mock: {{ webhook_retry: [1s, 1s, 1s, 1s, 1s, 1s, 1s, 1s, 1s] }}, speaks: web-data }}
  c: {{ mock: {{ webhook_retry: [1s, later, 1] }}, speaks: web-data }}
  d: {{ mock: {{ webhook_secret: {{ env: UNSET }} }}, speaks: web-data }}
"#
    );
    let duration = "is not a duration; write a whole number and a unit: 250ms, 5s, 2m, 1h or 30d";
    check_errors(&[(
        &text,
        &[
            "proxy.yaml:4:33: upstream `a` mock.webhook_timeout must be more than 0",
            &format!("proxy.yaml:4:49: upstream `a` mock.page_delay: `soon` {duration}"),
            "proxy.yaml:5:31: upstream `b` mock.webhook_retry has 9 delays; at most 8",
            &format!("proxy.yaml:6:36: upstream `c` mock.webhook_retry: `later` {duration}"),
            &format!("proxy.yaml:6:43: upstream `c` mock.webhook_retry: `1` {duration}"),
            "proxy.yaml:7:32: upstream `d` mock.webhook_secret: environment variable `UNSET` is not set",
        ],
    )]);
}

#[test]
fn upstreams_compile() {
    let table = ok(&format!(
        r#"{LISTEN}upstreams:
  plain: {{ url: http://127.0.0.1:11434, speaks: native }}
  based: {{ url: "https://api.example.com/base/", speaks: chat-completions, timeouts: {{ connect: 250ms, idle: 2m }} }}
  fake: {{ mock: {{ tokens: 16, token_delay: 20ms, first_token_delay: 0s, embedding_size: 8 }}, speaks: native }}
  bare: {{ mock: {{}}, speaks: web-data }}
  bearer: {{ url: http://x, speaks: web-data, auth: {{ bearer: {{ env: SET }} }} }}
  raw: {{ url: http://x, speaks: web-data, auth: {{ header: X-Api-Key, value: {{ value: "Token abc" }} }} }}
"#
    ));
    let names: Vec<_> = table.upstreams.iter().map(|u| &*u.name).collect();
    assert_eq!(
        names,
        ["plain", "based", "fake", "bare", "bearer", "raw"],
        "file order"
    );

    let url = |i: usize| match &table.upstreams[i].backends[0].target {
        Target::Url(url) => url.to_string(),
        Target::Mock(_) => panic!("not a url"),
    };
    assert_eq!(url(0), "http://127.0.0.1:11434/");
    assert_eq!(
        url(1),
        "https://api.example.com/base",
        "trailing slash dropped"
    );
    assert_eq!(table.upstreams[1].speaks, Dialect::Chat);

    let timeouts = table.upstreams[1].timeouts;
    assert_eq!(timeouts.connect, std::time::Duration::from_millis(250));
    assert_eq!(timeouts.first_byte, crate::table::DEFAULT_FIRST_BYTE);
    assert_eq!(timeouts.idle, std::time::Duration::from_secs(120));
    let defaults = table.upstreams[0].timeouts;
    assert_eq!(
        (defaults.connect, defaults.first_byte, defaults.idle),
        (
            crate::table::DEFAULT_CONNECT,
            crate::table::DEFAULT_FIRST_BYTE,
            crate::table::DEFAULT_IDLE
        )
    );

    let Target::Mock(mock) = &table.upstreams[2].backends[0].target else {
        panic!("not a mock")
    };
    assert_eq!((mock.tokens, mock.embedding_size), (Some(16), Some(8)));
    assert_eq!(mock.token_delay, Some(std::time::Duration::from_millis(20)));
    assert_eq!(mock.first_token_delay, Some(std::time::Duration::ZERO));
    let Target::Mock(bare) = &table.upstreams[3].backends[0].target else {
        panic!("not a mock")
    };
    assert_eq!((bare.tokens, bare.token_delay), (None, None));

    let bearer = table.upstreams[4].auth.as_ref().unwrap();
    assert_eq!(bearer.header, hyper::header::AUTHORIZATION);
    assert_eq!(
        bearer.value,
        HeaderValue::from_str(&format!("Bearer {ENV_SECRET}")).unwrap()
    );
    assert!(bearer.value.is_sensitive());
    assert_eq!(bearer.key.expose(), ENV_SECRET);
    assert_eq!(bearer.source, SecretSource::Env("SET".into()));

    let raw = table.upstreams[5].auth.as_ref().unwrap();
    assert_eq!(raw.header.as_str(), "x-api-key");
    assert_eq!(raw.value, "Token abc");
    assert!(raw.value.is_sensitive());
    assert_eq!(raw.key.expose(), "abc");
    assert_eq!(raw.source, SecretSource::Inline);
}

#[test]
fn model_and_route_rules() {
    let text = with_base(
        r#"models:
  good: { upstream: models, model: "llama3.2:3b" }
  bad: { upstream: nope, model: x }
  empty: { upstream: models, model: "" }
routes:
  - { path: /v1/chat/completions, speaks: chat-completions, to: models }
  - { path: /a, prefix: /a, to: models }
  - { to: models }
  - { prefix: v1, to: models }
  - { prefix: /x, to: nope }
  - { prefix: /api, to: models }
  - { prefix: /api/, to: models }
  - { prefix: /w, to: webdata, allow_model_management: true }
  - { prefix: /t, speaks: chat-completions, to: models, allow_model_management: true }
  - { prefix: /n, to: models, allow_model_management: true }
  - { prefix: /s, speaks: pirate, to: models }
  - { prefix: /q?x, to: models }
  - { prefix: /m, to: models, max_body: 0 }
  - { prefix: /m2, to: models, max_body: lots }
limits: { max_body: 1.5MB, drain: forever }
"#,
    );
    let mm = "allow_model_management only means something on a native pass-through route";
    let size = "is not a size; write a number of bytes, or a whole number and a unit: 512KB, 10MB, 10MiB, 1GiB";
    check_errors(&[(
        &text,
        &[
            "proxy.yaml:8:20: model alias `bad` goes to undefined upstream `nope`; defined: models, webdata",
            "proxy.yaml:9:3: model alias `empty` needs a non-empty `model:`",
            "proxy.yaml:12:5: a route has `path:` (exact) or `prefix:` (whole segments), not both",
            "proxy.yaml:13:5: a route needs `path:` (exact) or `prefix:` (whole segments)",
            "proxy.yaml:14:15: route path `v1` must start with `/`",
            "proxy.yaml:15:23: route /x goes to undefined upstream `nope`; defined: models, webdata",
            "proxy.yaml:17:5: route prefix /api is defined twice: lines 16 and 17",
            &format!(
                "proxy.yaml:18:5: route /w: {mm}; this route goes to web-data upstream `webdata`"
            ),
            &format!(
                "proxy.yaml:19:5: route /t: {mm}; this route translates chat-completions to native"
            ),
            "proxy.yaml:21:27: route /s: unknown dialect `pirate`; speaks is one of chat-completions, native, web-data, web-data-v2",
            "proxy.yaml:22:15: route path `/q?x` must not have a query or fragment",
            "proxy.yaml:23:41: route /m: max_body must be more than 0",
            &format!("proxy.yaml:24:42: route /m2: max_body: `lots` {size}"),
            &format!("proxy.yaml:25:21: limits.max_body: `1.5MB` {size}"),
            "proxy.yaml:25:35: limits.drain: `forever` is not a duration; write a whole number and a unit: 250ms, 5s, 2m, 1h or 30d",
        ],
    )]);
    let no_upstreams = format!("{LISTEN}routes:\n  - {{ prefix: /, to: models }}\n");
    check_errors(&[(
        &no_upstreams,
        &["proxy.yaml:4:22: route / goes to undefined upstream `models`; defined: none"],
    )]);
}

#[test]
fn routes_compile() {
    let table = ok(&with_base(
        "models:
  gpt-4o-mini: { upstream: models, model: \"llama3.2:3b\" }
routes:
  - { path: /v1/chat/completions, speaks: chat-completions, to: models }
  - { prefix: /, to: webdata }
  - { prefix: /api/, to: models, allow_model_management: true, max_body: 1KiB }
  - { path: /exact/, speaks: native, to: models, websocket: true }
limits: { max_body: 512KB, drain: 0s }
",
    ));
    let alias = &table.models["gpt-4o-mini"];
    assert_eq!((alias.upstream, alias.model.as_str()), (0, "llama3.2:3b"));

    let routes = &table.routes;
    let matchers: Vec<_> = routes.iter().map(|r| r.matcher.clone()).collect();
    assert_eq!(
        matchers,
        [
            PathMatch::Exact("/v1/chat/completions".into()),
            PathMatch::Prefix(String::new()),
            PathMatch::Prefix("/api".into()),
            PathMatch::Exact("/exact/".into()),
        ]
    );
    let lines: Vec<_> = routes.iter().map(|r| r.line).collect();
    assert_eq!(lines, [9, 10, 11, 12]);
    let speaks: Vec<_> = routes.iter().map(|r| r.speaks).collect();
    assert_eq!(
        speaks,
        [
            Dialect::Chat,
            Dialect::WebData,
            Dialect::Native,
            Dialect::Native
        ]
    );
    let upstreams: Vec<_> = routes.iter().map(|r| r.upstream).collect();
    assert_eq!(upstreams, [0, 1, 0, 0]);
    let bodies: Vec<_> = routes.iter().map(|r| r.max_body).collect();
    assert_eq!(bodies, [512_000, 512_000, 1024, 512_000]);
    assert!(routes[2].allow_model_management && !routes[0].allow_model_management);
    let websocket: Vec<_> = routes.iter().map(|r| r.websocket).collect();
    assert_eq!(websocket, [false, false, false, true]);
    assert_eq!(table.limits.drain, std::time::Duration::ZERO);
    assert!(
        table.warnings.is_empty(),
        "chat completions are translated: {:?}",
        table.warnings
    );

    let defaults = ok(&with_base("routes: []\n"));
    assert_eq!(defaults.limits.max_body, crate::table::DEFAULT_MAX_BODY);
    assert_eq!(defaults.limits.drain, crate::table::DEFAULT_DRAIN);
    assert_eq!(defaults.warnings, ["no routes: every request gets a 404"]);
}

#[test]
fn translator_status_covers_every_pair() {
    let elsewhere = PathMatch::Exact("/v1/elsewhere".into());
    for client in Dialect::ALL {
        for upstream in Dialect::ALL {
            let status = translator_status(client, upstream, &elsewhere);
            let web_data_pair = client.is_web_data() && upstream.is_web_data();
            assert_eq!(
                status.is_none(),
                client == upstream || web_data_pair,
                "{client} -> {upstream}"
            );
            assert!(status.is_none_or(|s| s.ends_with("responds with 501")));
        }
    }
    let chat = PathMatch::Exact("/v1/chat/completions".into());
    assert_eq!(
        translator_status(Dialect::Chat, Dialect::Native, &chat),
        None
    );
    let v1 = PathMatch::Prefix("/v1".into());
    assert_eq!(
        translator_status(Dialect::Chat, Dialect::Native, &v1).as_deref(),
        Some(
            "only /v1/chat/completions, /v1/completions, /v1/embeddings, /v1/models, /v1/models/{id} translated from chat-completions to native yet; other paths respond with 501"
        )
    );
}

#[test]
fn native_clients_over_chat_completions_are_translated_in_part() {
    let chat = PathMatch::Exact("/api/chat".into());
    assert_eq!(
        translator_status(Dialect::Native, Dialect::Chat, &chat),
        None
    );
    // Model management has no counterpart: a prefix route says the rest responds with 501.
    let api = PathMatch::Prefix("/api".into());
    assert_eq!(
        translator_status(Dialect::Native, Dialect::Chat, &api).as_deref(),
        Some(
            "only /api/chat, /api/generate, /api/embed, /api/embeddings, /api/tags, /api/show, /api/ps, /api/version translated from native to chat-completions yet; other paths respond with 501"
        )
    );
}

#[test]
fn extra_options_is_a_policy_of_native_routes_over_chat_completions() {
    let table = |route: &str| {
        with_base(&format!(
            "  oai: {{ url: http://127.0.0.1:8000, speaks: chat-completions }}\nroutes:\n  - {route}\n"
        ))
    };
    use crate::translate::native::Extras;
    for (setting, want) in [
        ("", Extras::Pass),
        (", extra_options: pass", Extras::Pass),
        (", extra_options: drop", Extras::Drop),
        (", extra_options: refuse", Extras::Refuse),
    ] {
        let t = ok(&table(&format!(
            "{{ prefix: /api, speaks: native, to: oai{setting} }}"
        )));
        assert_eq!(t.routes[0].extras, want, "{setting}");
    }
    check_errors(&[
        (
            &table("{ prefix: /api, speaks: native, to: oai, extra_options: keep }"),
            &[
                "proxy.yaml:8:61: route /api: extra_options is one of pass, drop, refuse (not `keep`)",
            ],
        ),
        (
            &table("{ prefix: /api, to: models, extra_options: drop }"),
            &[
                "proxy.yaml:8:48: route /api: extra_options only means something on a native route to a chat-completions upstream",
            ],
        ),
    ]);
}

#[test]
fn a_small_max_response_is_a_warning_where_web_data_v1_is_translated() {
    let table = |limits: &str| {
        format!(
            "{LISTEN}upstreams:\n  fc: {{ url: https://fc.example, speaks: web-data-v2 }}\n\
             routes:\n  - {{ prefix: /v1, to: fc }}\n{limits}"
        )
    };
    let warned = |t: &RouteTable| {
        t.warnings
            .iter()
            .any(|w| w.starts_with("limits.max_response is"))
    };
    assert!(!warned(&ok(&table(""))), "the default is enough");
    let small = ok(&table("limits: { max_response: 2MiB }\n"));
    assert!(warned(&small), "{:?}", small.warnings);
    assert!(
        small.warnings.iter().any(|w| w.contains("2MiB")),
        "{:?}",
        small.warnings
    );
    let pass = format!(
        "{LISTEN}upstreams:\n  fc: {{ url: https://fc.example, speaks: web-data }}\nroutes:\n  - {{ prefix: /v1, to: fc }}\nlimits: {{ max_response: 2MiB }}\n"
    );
    assert!(!warned(&ok(&pass)), "nothing is translated");
}

#[test]
fn every_error_is_reported_at_once() {
    let text = "\
listen:
  - addr: nowhere
upstreams:
  a: { url: ftp://a, speaks: native }
routes:
  - { prefix: /a, to: a }
  - { prefix: /b, to: b }
";
    let lines: Vec<_> = load(text).unwrap_err().0.iter().map(|e| e.line).collect();
    assert_eq!(
        lines,
        [2, 4, 7],
        "a broken upstream is still defined for its routes"
    );
}

fn contract_text() -> String {
    // A copy of the route-table contract kept in the repository (a clone has nothing beside
    // it); `.ci/run` checks that the copy still matches the contract when the contract is there.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/route-table.yaml"
    );
    std::fs::read_to_string(path).expect("the contract's copy at tests/fixtures/route-table.yaml")
}

#[test]
fn contract_file_loads_and_means_what_it_says() {
    let env = |name: &str| match name {
        "LINGO_DEV_KEY" => Some("sk-dev-contract".to_owned()),
        "FIRECRAWL_API_KEY" => Some("fc-contract".to_owned()),
        _ => None,
    };
    let table = load_str_with_env(&contract_text(), Path::new("route-table.yaml"), &env).unwrap();
    assert_eq!(table.listeners.len(), 1);
    assert_eq!(table.listeners[0].addr, "127.0.0.1:8080".parse().unwrap());
    assert_eq!(table.clients[0].name, "dev");
    assert_eq!(table.clients[0].key.expose(), "sk-dev-contract");

    let models = &table.upstreams[0];
    assert_eq!((&*models.name, models.speaks), ("models", Dialect::Native));
    assert_eq!(
        models.timeouts.first_byte,
        std::time::Duration::from_secs(120)
    );
    let webdata = &table.upstreams[1];
    assert_eq!(
        (&*webdata.name, webdata.speaks),
        ("webdata", Dialect::WebData)
    );
    let auth = webdata.auth.as_ref().unwrap();
    assert_eq!(auth.value, "Bearer fc-contract");
    assert_eq!(auth.key.expose(), "fc-contract");
    assert_eq!(table.models["gpt-4o-mini"].model, "llama3.2:3b");

    let cases = [
        (
            "/v1/chat/completions",
            "path /v1/chat/completions",
            Dialect::Chat,
            "models",
        ),
        ("/v1/scrape", "prefix /v1", Dialect::WebData, "webdata"),
        (
            "/v1/models/llama3.2:3b",
            "prefix /v1/models",
            Dialect::Chat,
            "models",
        ),
        ("/api/tags", "prefix /api", Dialect::Native, "models"),
        ("/v2/crawl/x", "prefix /v2", Dialect::WebData, "webdata"),
    ];
    for (path, matcher, speaks, upstream) in cases {
        let route = table.find(path).unwrap();
        assert_eq!(route.matcher.to_string(), matcher, "{path}");
        assert_eq!(route.speaks, speaks, "{path}");
        assert_eq!(&*table.upstream(route.upstream).name, upstream, "{path}");
    }
    assert!(table.find("/elsewhere").is_none());
    assert!(
        table.warnings.is_empty(),
        "all four chat paths are translated: {:?}",
        table.warnings
    );

    // Without its environment, the contract names both missing variables.
    let errors =
        load_str_with_env(&contract_text(), Path::new("route-table.yaml"), &|_| None).unwrap_err();
    let text = errors.to_string();
    assert_eq!(errors.0.len(), 2, "{text}");
    assert!(
        text.contains("`LINGO_DEV_KEY` is not set")
            && text.contains("`FIRECRAWL_API_KEY` is not set")
    );
}

#[test]
fn shipped_proxy_yaml_loads_without_environment() {
    let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/proxy.yaml"));
    let text = std::fs::read_to_string(path).unwrap();
    let table = load_str_with_env(&text, path, &|_| None).unwrap();
    let routes: Vec<_> = table.routes.iter().map(|r| r.matcher.to_string()).collect();
    let contract = load_str_with_env(&contract_text(), path, &|_| Some("k".into())).unwrap();
    let expected: Vec<_> = contract
        .routes
        .iter()
        .map(|r| r.matcher.to_string())
        .collect();
    assert_eq!(routes, expected, "the shipped routes are the contract's");
    assert!(table.clients.is_empty());
}

#[test]
fn secrets_never_appear_in_messages_summary_or_debug() {
    let text = format!(
        "{LISTEN}clients:
  - {{ name: a, key: {{ value: sk-inline-secret }} }}
  - {{ name: b, key: {{ value: sk-inline-secret }} }}
upstreams:
  w: {{ url: http://x, speaks: web-data, auth: {{ bearer: {{ env: SET }} }} }}
  v: {{ url: http://x, speaks: web-data, auth: {{ value: {{ value: \"sk-bad\\u0001secret\" }} }} }}
"
    );
    let errors = load(&text).unwrap_err().to_string();
    assert_eq!(errors.lines().count(), 2, "{errors}");
    for secret in ["sk-inline-secret", "sk-bad", ENV_SECRET] {
        assert!(!errors.contains(secret), "{errors}");
    }

    let table = ok(&format!(
        "{LISTEN}clients:\n  - {{ name: a, key: {{ value: sk-inline-secret }} }}
upstreams:\n  w: {{ url: http://x, speaks: web-data, auth: {{ bearer: {{ env: SET }} }} }}\n"
    ));
    let shown = format!("{}\n{table:?}", summary(&table));
    for secret in ["sk-inline-secret", ENV_SECRET] {
        assert!(!shown.contains(secret), "{shown}");
    }
}

#[test]
fn summary_shows_what_the_table_means() {
    let env = |name: &str| match name {
        "LINGO_DEV_KEY" | "FIRECRAWL_API_KEY" => Some(format!("value-of-{name}")),
        _ => None,
    };
    let table = load_str_with_env(&contract_text(), Path::new("route-table.yaml"), &env).unwrap();
    let text = summary(&table);
    let expected = [
        "route-table.yaml: OK",
        "  127.0.0.1:8080  http",
        "clients: 1 (dev)",
        "  models   http://127.0.0.1:11434/  speaks native",
        "    timeouts: connect 2s, first_byte 120s, idle 60s",
        "  webdata  https://api.firecrawl.dev/  speaks web-data",
        "    auth: authorization (key from env FIRECRAWL_API_KEY)",
        "  gpt-4o-mini -> models as llama3.2:3b",
        "  path /v1/chat/completions  chat-completions -> models (native)  translate",
        "  path /v1/embeddings        chat-completions -> models (native)  translate",
        "  path /v1/completions       chat-completions -> models (native)  translate",
        "  prefix /api                native -> models (native)  pass-through",
        "  prefix /v2                 web-data -> webdata (web-data)  pass-through",
        "limits: max_body 10MiB, drain 30s",
    ];
    for line in expected {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in:\n{text}"
        );
    }
    assert!(!text.contains("value-of-"), "{text}");

    let open = ok(&with_base(
        "routes:\n  - { prefix: /api, to: models, max_body: 1MiB, allow_model_management: true }\n",
    ));
    let text = summary(&open);
    assert!(text.contains("clients: none (open proxy"), "{text}");
    assert!(
        text.contains("pass-through  max_body 1MiB  model management allowed"),
        "{text}"
    );
}

#[test]
fn load_reports_an_unreadable_file() {
    let errors = super::load(Path::new("/nonexistent/proxy.yaml")).unwrap_err();
    assert_eq!(errors.0.len(), 1);
    let message = errors.to_string();
    assert!(
        message.starts_with("/nonexistent/proxy.yaml: cannot read the file: "),
        "{message}"
    );
}

#[test]
fn route_options_and_line_cap() {
    let table = ok(&with_base(
        "limits: { max_line: 64KiB }\nroutes:\n  - { path: /v1/chat/completions, speaks: chat-completions, to: models, options: { num_ctx: 8192 } }\n",
    ));
    assert_eq!(table.limits.max_line, 64 * 1024);
    assert_eq!(table.routes[0].options["num_ctx"], 8192);
    assert_eq!(
        ok(&with_base("routes: []\n")).limits.max_line,
        crate::table::DEFAULT_MAX_LINE
    );
    let errs = errors(&with_base(
        "routes:\n  - { prefix: /api, to: models, options: { num_ctx: 1 } }\n",
    ));
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].starts_with("proxy.yaml:7:"), "{errs:?}");
    assert!(
        errs[0].contains("only mean something on a route that translates to a native upstream")
    );
}

#[test]
fn hardening_keys_compile_and_are_checked() {
    let table = ok(&with_base(
        "limits: { max_header_bytes: 16KiB, max_headers: 50, header_timeout: 5s, idle_timeout: 10s, body_timeout: 7s, max_connections: 100, max_in_flight: 20, max_response: 2MiB }\n\
         admin: { addr: 127.0.0.1:9090, require_key: true }\n\
         clients:\n  - { name: ops, key: { value: k } }\nroutes: []\n",
    ));
    let limits = table.limits;
    assert_eq!(limits.max_header_bytes, 16 * 1024);
    assert_eq!(limits.max_headers, 50);
    assert_eq!(limits.header_timeout, std::time::Duration::from_secs(5));
    assert_eq!(limits.idle_timeout, std::time::Duration::from_secs(10));
    assert_eq!(limits.body_timeout, std::time::Duration::from_secs(7));
    assert_eq!((limits.max_connections, limits.max_in_flight), (100, 20));
    assert_eq!(limits.max_response, 2 * 1024 * 1024);
    assert_eq!(table.admin.addr, Some("127.0.0.1:9090".parse().unwrap()));
    assert!(table.admin.require_key);

    let defaults = ok(&with_base("routes: []\n"));
    assert_eq!(
        defaults.limits.max_headers,
        crate::table::DEFAULT_MAX_HEADERS
    );
    assert_eq!(defaults.admin.addr, None);
    assert_eq!(
        defaults.limits.max_response,
        crate::table::DEFAULT_MAX_RESPONSE
    );
    assert_eq!(
        defaults.limits.body_timeout,
        crate::table::DEFAULT_BODY_TIMEOUT
    );

    check_errors(&[
        (
            &format!(
                "{LISTEN}limits: {{ max_headers: 0, idle_timeout: 0s, max_in_flight: 0, max_response: 0 }}\n\
             admin: {{ addr: 127.0.0.1:8080 }}\nroutes: []\n"
            ),
            &[
                "proxy.yaml:3:24: limits.max_headers must be more than 0",
                "proxy.yaml:3:41: limits.idle_timeout must be more than 0",
                "proxy.yaml:3:60: limits.max_in_flight must be more than 0",
                "proxy.yaml:3:77: limits.max_response must be more than 0",
                "proxy.yaml:4:16: admin address 127.0.0.1:8080 is also a `listen` address; use another port",
            ],
        ),
        (
            &format!("{LISTEN}admin: {{ require_key: true }}\nroutes: []\n"),
            &[
                "proxy.yaml:3:23: admin.require_key needs at least one entry in `clients` (there is no key to require)",
            ],
        ),
    ]);
}

#[test]
fn upstream_tls_and_http2() {
    let table = ok(&format!(
        "{LISTEN}upstreams:\n  a: {{ url: https://x, speaks: native, tls: {{ insecure_skip_verify: true }}, http2: true }}\nroutes: []\n"
    ));
    assert!(table.upstreams[0].http2);
    assert!(
        table.warnings[0].contains("insecure_skip_verify is on"),
        "{:?}",
        table.warnings
    );

    let ca = fixtures().join("ca.pem");
    let text = format!(
        "{LISTEN}upstreams:\n  \
         a: {{ url: http://x, speaks: native, tls: {{ insecure_skip_verify: true }} }}\n  \
         b: {{ url: https://x, speaks: native, tls: {{ ca: {ca}, insecure_skip_verify: true }} }}\n  \
         c: {{ url: https://x, speaks: native, tls: {{ ca: missing.pem }} }}\n\
         routes: []\n",
        ca = ca.display()
    );
    let errs = errors(&text);
    assert_eq!(errs.len(), 3, "{errs:?}");
    assert!(
        errs[0].contains("upstream `a`: `tls:` applies only to an https:// url"),
        "{errs:?}"
    );
    assert!(
        errs[1].contains("has both `ca:` and `insecure_skip_verify:`"),
        "{errs:?}"
    );
    assert!(
        errs[2].contains("cannot read TLS CA certificate file"),
        "{errs:?}"
    );
}

#[test]
fn web_data_v2_upstreams_have_web_data_clients() {
    let table = ok(&format!(
        "{LISTEN}upstreams:\n  fc: {{ mock: {{}}, speaks: web-data-v2 }}\n\
         routes:\n  - {{ prefix: /v1, to: fc }}\n  - {{ prefix: /v2, speaks: web-data-v2, to: fc }}\n"
    ));
    assert_eq!(table.upstreams[0].speaks, Dialect::WebDataV2);
    let v1 = table.find("/v1/scrape").unwrap();
    assert_eq!(v1.speaks, Dialect::WebData);
    assert!(v1.translates(&table.upstreams[0]));
    let v2 = table.find("/v2/scrape").unwrap();
    assert_eq!(v2.speaks, Dialect::WebDataV2);
    assert!(!v2.translates(&table.upstreams[0]));
    assert!(table.warnings.is_empty(), "{:?}", table.warnings);
}

/// With `Secrets::ShapeOnly` nothing is read (the lookup would fail the test), a source
/// used twice is one key (as it would be when read), and a malformed secret is still an
/// error.
#[test]
fn secrets_can_be_checked_for_their_shape_only() {
    let unread = |name: &str| -> Option<String> { panic!("{name} was read") };
    let load = |clients: &str| {
        let text = format!("{BASE}clients:\n{clients}routes: []\n");
        load_str_with(&text, Path::new("proxy.yaml"), &unread, Secrets::ShapeOnly)
    };
    let table =
        load("  - { name: a, key: { env: A_KEY } }\n  - { name: b, key: { file: no/such/key } }\n")
            .unwrap();
    let sources: Vec<_> = table.clients.iter().map(|c| c.source.to_string()).collect();
    assert_eq!(sources, ["env A_KEY", "file no/such/key"]);
    assert!(table.files.is_empty(), "{:?}", table.files);
    let errors = load("  - { name: a, key: { env: K } }\n  - { name: b, key: { env: K } }\n")
        .unwrap_err()
        .to_string();
    assert!(
        errors.contains("client `b` has the same key as client `a`"),
        "{errors}"
    );
    let errors = load("  - { name: a, key: { env: K, value: v } }\n")
        .unwrap_err()
        .to_string();
    assert!(errors.contains("a secret is exactly one of"), "{errors}");
}

#[test]
fn backends_rules() {
    let table = |upstream: &str| {
        format!(
            "{LISTEN}upstreams:\n  a:\n    speaks: native\n{upstream}routes:\n  - {{ prefix: /api, to: a }}\n"
        )
    };
    let cases = [
        (
            "    backends: []\n",
            "upstream `a`: `backends:` is empty; list at least one",
        ),
        (
            "    url: http://x\n    backends: [{ url: http://y }]\n",
            "upstream `a` has `backends:` and `url:` or `mock:`; keep one",
        ),
        (
            "    backends: [{ weight: 2 }]\n",
            "upstream `a` backends[0] needs `url:` or `mock:`",
        ),
        (
            "    backends: [{ url: http://x, weight: 0 }]\n",
            "upstream `a` backends[0]: weight must be 1 or more",
        ),
        (
            "    backends: [{ url: http://x }, { url: http://x/ }]\n",
            "upstream `a` backends[1]: http://x is listed twice",
        ),
        (
            "    backends: [{ url: http://x/a }, { url: http://y/b }]\n",
            "upstream `a`: its backends must share one base path: http://x/a has `/a`, http://y/b has `/b`",
        ),
        (
            "    backends: [{ url: http://x }, { mock: {} }]\n    balance: round-robin\n",
            "upstream `a` balance: write `least-loaded` or `{ sticky: { header: X-Session-Id } }`",
        ),
        (
            "    backends: [{ url: http://x }, { mock: {} }]\n    retry_budget: 20\n",
            "upstream `a` retry_budget: `20` is not a percentage from 0% to 100% (for example 20%)",
        ),
        (
            "    backends: [{ url: http://x }, { mock: {} }]\n    health: { interval: 10ms }\n",
            "upstream `a` health.interval must be 50ms or more: a probe is a request to each backend",
        ),
    ];
    for (upstream, want) in cases {
        let got = errors(&table(upstream));
        assert_eq!(got.len(), 1, "{upstream}: {got:?}");
        assert!(got[0].ends_with(want), "{upstream}: {got:?}");
    }
    let several = ok(&table(
        "    backends:\n      - { url: http://x:1 }\n      - { mock: {}, weight: 2, priority: 1 }\n    balance: { sticky: { header: X-Session-Id } }\n    health: { eject_after: 5 }\n    retry_budget: 10%\n",
    ));
    let a = &several.upstreams[0];
    let shape: Vec<_> = (a.backends.iter())
        .map(|b| (b.label.to_string(), b.weight, b.priority))
        .collect();
    assert_eq!(
        shape,
        [("http://x:1".into(), 1, 0), ("mock#1".into(), 2, 1)]
    );
    assert_eq!(
        a.balance,
        crate::table::Balance::Sticky {
            header: "x-session-id".parse().unwrap()
        }
    );
    assert_eq!(
        (a.health.eject_after, a.health.eject_for),
        (5, std::time::Duration::from_secs(30))
    );
    assert!((a.retry_budget - 0.1).abs() < 1e-9);
    let one = ok(&table("    url: http://x\n    retry_budget: 50%\n"));
    assert!(
        one.warnings
            .iter()
            .any(|w| w.contains("apply only to several `backends:`")),
        "{:?}",
        one.warnings
    );
}

/// A table with one client `a` whose `quota:` is `limits` (flow entries, one a line), a route
/// `/api`, and `more` after.
fn with_quota(limits: &[&str], more: &str) -> String {
    let quota: String = limits.iter().map(|l| format!("      - {l}\n")).collect();
    format!(
        "{LISTEN}clients:\n  - name: a\n    key: {{ value: ka }}\n    quota:\n{quota}\
         upstreams:\n  m: {{ mock: {{}}, speaks: native }}\nroutes:\n  - {{ prefix: /api, to: m }}\n{more}"
    )
}

#[test]
fn quota_rules() {
    let cases: &[(&str, &[&str])] = &[
        (
            &with_quota(
                &["{ requests: 1, tokens: 2, per: 1m }", "{ requests: 1 }"],
                "",
            ),
            &[
                "proxy.yaml:7:9: client `a` quota: a limit counts one of requests, tokens, input_tokens, output_tokens or credits (2 given)",
                "proxy.yaml:8:9: client `a` quota: a limit needs `per:` (1s, 1m, 1h, 1d, 30d)",
            ],
        ),
        (
            &with_quota(
                &[
                    "{ credits: 0, per: 1m }",
                    "{ tokens: 5, per: soon }",
                    "{ tokens: 5, per: 1m, on_store_error: maybe }",
                    "{ tokens: 5, per: 1m, route: /v9 }",
                    "{ tokens: 5, per: 1m, capacity: 0 }",
                ],
                "",
            ),
            &[
                "proxy.yaml:7:20: client `a` quota: credits must be more than 0",
                "proxy.yaml:8:27: client `a` quota.per: `soon` is not a duration; write a whole number and a unit: 250ms, 5s, 2m, 1h or 30d",
                "proxy.yaml:9:47: client `a` quota.on_store_error is allow, deny or local, not `maybe`",
                "proxy.yaml:10:38: client `a` quota.route `/v9` is not a route of this table (routes: prefix /api)",
                "proxy.yaml:11:41: client `a` quota.capacity must be more than 0",
            ],
        ),
        (
            &with_quota(
                &["{ requests: 5, per: 1m }", "{ requests: 9, per: 60s }"],
                "",
            ),
            &[
                "proxy.yaml:8:9: client `a` quota: two limits of requests/60s (choose one, or give one a `route:`)",
            ],
        ),
        (
            &with_quota(
                &["{ requests: 5, per: 1m }"],
                "quota_store:\n  redis: rediss://x:6379\n",
            ),
            &[
                "proxy.yaml:13:10: quota_store.redis is a `redis://host:port` URL (lingo speaks to Redis over plain TCP; reach a TLS Redis through a local tunnel)",
            ],
        ),
    ];
    check_errors(cases);
}

#[test]
fn quota_defaults_and_summary() {
    use crate::table::quota::{OnStoreError, Unit};
    let table = ok(&with_quota(
        &[
            "{ requests: 600, per: 1m, route: /api }",
            "{ tokens: 200000, per: 1d }",
            "{ output_tokens: 50, per: 1h, shadow: true, on_store_error: allow, max_reservation: 10 }",
            "{ requests: 10, per: 1s, capacity: 20, model: big }",
        ],
        "quota_store:\n  redis: redis://user:hunter2@cache:6379/2\n  cluster: true\n",
    ));
    let quota = &table.clients[0].quota;
    let got: Vec<_> = quota
        .iter()
        .map(|l| {
            (
                &*l.id,
                l.unit,
                l.on_store_error,
                l.is_budget(),
                l.max_reservation,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "requests/60s on prefix /api",
                Unit::Requests,
                OnStoreError::Local,
                false,
                8_000
            ),
            ("tokens/24h", Unit::Tokens, OnStoreError::Deny, true, 8_000),
            (
                "output_tokens/1h",
                Unit::OutputTokens,
                OnStoreError::Allow,
                false,
                10
            ),
            (
                "requests/1s/bucket20 for big",
                Unit::Requests,
                OnStoreError::Local,
                false,
                8_000
            ),
        ]
    );
    let store = table.quota_store.as_ref().unwrap();
    assert_eq!(store.timeout, std::time::Duration::from_millis(20));
    let text = summary(&table);
    for line in [
        "  a limits: 600 requests per 60s on prefix /api, rate, on_store_error local; \
         200000 tokens per 24h, budget, on_store_error deny; \
         50 output_tokens per 1h, rate, shadow, on_store_error allow; \
         10 requests per 1s (a bucket of 20) for big, rate, on_store_error local",
        "  limits shared in the Redis Cluster of redis://user:***@cache:6379/2, timeout 20ms",
    ] {
        assert!(text.contains(line), "{line}\nnot in\n{text}");
    }
    assert!(!text.contains("hunter2"), "{text}");
    assert!(!format!("{table:?}").contains("hunter2"));
}
