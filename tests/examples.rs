//! Every route table the repository shows passes `lingo check` as written: each table under
//! `examples/`, the one the Kubernetes manifest carries, and each table in a ```yaml block of
//! the README and the docs (a block with `routes:`; one without `listen:` gets a loopback
//! listener, as the page leaves it out). Environment variables the tables name get dummy
//! values; files they name (certificates, keys, CA files, secrets) are made beside a copy.
//! And the packaging matches the code: the manifest's ports, probes and mount, the image's
//! table and health check.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap()
}

/// `lingo check` on `text`, copied into a fresh directory with the files it names and its
/// environment variables set; its output when it fails.
fn check(name: &str, text: &str) -> Result<String, String> {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join(name);
    std::fs::write(&table, text).unwrap();
    make_files(dir.path(), text);
    let mut command = Command::new(env!("CARGO_BIN_EXE_lingo"));
    command.arg("check").arg(&table);
    for var in values_after(text, "env: ") {
        command.env(var, format!("dummy-value-of-{var}"));
    }
    let out = command.output().unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        Ok(said)
    } else {
        Err(said)
    }
}

/// The values written after `key` in a flow or block mapping (`cert: certs/a.pem,`), not
/// those that are mappings themselves.
fn values_after<'a>(text: &'a str, key: &str) -> Vec<&'a str> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .flat_map(|l| {
            l.match_indices(key)
                .map(move |(at, _)| &l[at + key.len()..])
        })
        .map(|v| v.split([',', ' ', '}']).next().unwrap().trim())
        .filter(|v| !v.is_empty() && !v.starts_with('{'))
        .collect()
}

/// A certificate and key for each `cert:`/`key:` pair, a CA for each `ca:`, a secret for each
/// `file:`, at the paths the table gives.
fn make_files(dir: &Path, text: &str) {
    let ca = support::pki::TestCa::new("examples");
    let write = |path: &str, contents: &str| {
        let path: PathBuf = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    };
    let leaf = ca.issue("proxy.example.com");
    for cert in values_after(text, "cert: ") {
        write(cert, &leaf.cert_pem);
    }
    for key in values_after(text, " key: ")
        .into_iter()
        .filter(|k| k.contains('/'))
    {
        write(key, &leaf.key_pem);
    }
    for path in values_after(text, "ca: ") {
        write(path, &ca.pem());
    }
    for path in values_after(text, "file: ") {
        write(path, "dummy-secret\n");
    }
}

#[test]
fn every_example_table_passes_lingo_check() {
    let mut tables: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .filter(|p| !p.ends_with("kubernetes-sidecar.yaml"))
        .collect();
    tables.sort();
    assert!(tables.len() >= 6, "{tables:?}");
    let mut failures = Vec::new();
    for table in &tables {
        let name = table.file_name().unwrap().to_str().unwrap();
        if let Err(said) = check(name, &std::fs::read_to_string(table).unwrap()) {
            failures.push(format!("examples/{name}:\n{said}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_table_on_the_pages_passes_lingo_check() {
    let mut pages = vec![PathBuf::from("README.md")];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        pages.push(
            entry
                .unwrap()
                .path()
                .strip_prefix(root())
                .unwrap()
                .to_owned(),
        );
    }
    let mut checked = 0;
    let mut failures = Vec::new();
    for page in pages {
        let text = read(page.to_str().unwrap());
        for (line, block) in yaml_blocks(&text) {
            if !block.lines().any(|l| l.starts_with("routes:")) {
                continue;
            }
            let table = if block.lines().any(|l| l.starts_with("listen:")) {
                block
            } else {
                format!("listen:\n  - addr: 127.0.0.1:8080\n{block}")
            };
            checked += 1;
            if let Err(said) = check("proxy.yaml", &table) {
                failures.push(format!("{}:{line}:\n{said}", page.display()));
            }
        }
    }
    assert!(checked >= 6, "only {checked} tables found on the pages");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Each ```yaml block of a page, with the line it starts on.
fn yaml_blocks(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for (n, line) in text.lines().enumerate() {
        match (&mut open, line.trim_start()) {
            (None, "```yaml") => open = Some((n + 1, String::new())),
            (Some(_), "```") => out.push(open.take().unwrap()),
            (Some((_, block)), _) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    out
}

// === the Kubernetes manifest ===

/// The route table the manifest's ConfigMap carries (`proxy.yaml: |`), unindented.
fn manifest_table(manifest: &str) -> String {
    let start = manifest
        .find("  proxy.yaml: |\n")
        .expect("a proxy.yaml key")
        + 16;
    manifest[start..]
        .lines()
        .take_while(|l| l.is_empty() || l.starts_with("    "))
        .map(|l| l.get(4..).unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_kubernetes_manifest_matches_the_code() {
    let manifest = read("examples/kubernetes-sidecar.yaml");
    let table = manifest_table(&manifest);
    let summary = check("proxy.yaml", &table).unwrap_or_else(|said| panic!("{said}"));
    assert!(summary.contains("0.0.0.0:8080"), "{summary}");
    let loaded = lingo::config::load_str_with_env(&table, Path::new("proxy.yaml"), &|_| {
        Some("dummy".into())
    })
    .unwrap();
    // Each port the pod declares is one lingo binds, and the probes ask the admin listener.
    let admin = loaded.admin.addr.expect("an admin listener for the probes");
    let mut bound: Vec<u16> = loaded.listeners.iter().map(|l| l.addr.port()).collect();
    bound.push(admin.port());
    for port in values_after(&manifest, "containerPort: ") {
        let port: u16 = port.parse().unwrap();
        assert!(
            bound.contains(&port),
            "containerPort {port} is not bound: {bound:?}"
        );
    }
    assert!(manifest.contains(&format!("containerPort: {} }}", admin.port())));
    let probe = |kind: &str| {
        let at = manifest.find(kind).unwrap_or_else(|| panic!("no {kind}"));
        manifest[at..].lines().nth(1).unwrap().trim().to_owned()
    };
    assert_eq!(
        probe("livenessProbe"),
        "httpGet: { path: /healthz, port: admin }"
    );
    assert_eq!(
        probe("readinessProbe"),
        "httpGet: { path: /readyz, port: admin }"
    );
    assert!(
        !loaded.admin.require_key,
        "the kubelet's probes send no key"
    );
    // The table is mounted as a directory (a subPath mount is never updated), where
    // `--config` reads it.
    let mut not_comments = manifest
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'));
    assert!(!not_comments.any(|l| l.contains("subPath")));
    assert!(manifest.contains(r#"args: ["--config", "/etc/lingo/proxy.yaml"]"#));
    assert!(manifest.contains("mountPath: /etc/lingo,"));
    // The pod waits for lingo's drain.
    let grace: u64 = values_after(&manifest, "terminationGracePeriodSeconds: ")[0]
        .parse()
        .unwrap();
    assert!(grace > loaded.limits.drain.as_secs(), "{grace}");
}

// === the container image ===

#[test]
fn the_image_serves_the_shipped_table_and_checks_the_port_it_listens_on() {
    let dockerfile = read("Dockerfile");
    assert!(dockerfile.contains("COPY proxy.yaml /etc/lingo/proxy.yaml\n"));
    assert!(dockerfile.contains(r#"CMD ["--config", "/etc/lingo/proxy.yaml"]"#));
    assert!(dockerfile.contains("RUN cargo build --release --locked"));
    let shipped = lingo::config::load(&root().join("proxy.yaml")).unwrap();
    let port = shipped.listeners[0].addr.port();
    let health = dockerfile
        .lines()
        .find(|l| l.starts_with("HEALTHCHECK "))
        .expect("a HEALTHCHECK");
    assert!(
        health.contains(&format!("http://127.0.0.1:{port}/healthz")),
        "{health}"
    );
    // Not root: a numeric user, which Kubernetes' runAsNonRoot can check.
    let user = dockerfile
        .lines()
        .find_map(|l| l.strip_prefix("USER "))
        .expect("a USER");
    assert!(
        user.split(':')
            .all(|id| id.parse::<u32>().is_ok_and(|id| id > 0)),
        "{user}"
    );
}
