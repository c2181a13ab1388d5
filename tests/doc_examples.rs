//! The README's and the docs' examples work as written. Every ```sh and ```python block of
//! `README.md`, `docs/*.md` and `examples/README.md` is read, and each command in it is run,
//! or named below with what covers it instead:
//!
//! - `curl ...` runs through `sh`, as written, against a lingo this test started: the shipped
//!   `proxy.yaml` unless the block starts its own. Its address in the docs (`127.0.0.1:8080`)
//!   is rewritten to the port lingo got. A trailing `# 401` says the status the command
//!   expects; without one it must be 2xx.
//! - `lingo --config FILE` (or `cargo run --release --locked -- --config FILE`) and
//!   `lingo mock --listen ADDR ...` start that server, on a free port, for the rest of the
//!   block; `export VAR=value` sets the environment of what follows.
//! - `lingo check FILE` and the other `lingo` commands run to completion and must succeed.
//! - Python blocks run with `python3` against the shipped table when their client library is
//!   installed (one that names no address runs as written); when it is not, the test says so
//!   and, under `CI`, fails.
//! - What this test does not run is in [`NOT_RUN_HERE`], with what runs it; a command in
//!   none of these forms fails the test, so that each new example is covered somehow.

mod support;

use support::listening_on;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Commands this test does not run, and what runs them instead.
const NOT_RUN_HERE: [(&str, &str); 11] = [
    ("cargo test", ".ci/run runs the whole suite"),
    ("cargo build", ".ci/run builds the release binary"),
    (
        "cargo install",
        "the same build as `cargo build`, installed outside the repository",
    ),
    ("cargo bench", "by hand: minutes of the whole machine"),
    ("benches/", "by hand: minutes of the whole machine"),
    ("cp ", "a step of an A/B run by hand"),
    ("tests/mutants/run.sh", "by hand: too slow for CI"),
    (
        "docker ",
        ".ci/run runs the image's command against the same release binary",
    ),
    ("python3 -m pip", ".ci/run installs the SDKs"),
    ("pip ", ".ci/run installs the SDKs"),
    ("npm ", ".ci/run installs the SDKs"),
];

/// The longest one command may take: a guard against a hang, not a measurement.
const DEADLINE: Duration = Duration::from_secs(90);

#[test]
fn every_shell_and_python_example_works_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut shipped: Option<Server> = None;
    let mut ran = 0;
    let mut failures = Vec::new();
    for block in blocks(root) {
        let place = format!("{}:{}", block.file.display(), block.line);
        let shipped = shipped.get_or_insert_with(|| Server::lingo(root, "proxy.yaml", &[]));
        let result = match block.lang.as_str() {
            "python" => python(&block.text, shipped),
            _ => shell(root, &block.text, shipped),
        };
        match result {
            Ok(n) => ran += n,
            Err(e) => failures.push(format!("{place}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(
        ran >= 20,
        "only {ran} commands ran: the blocks were not found"
    );
}

// === the blocks ===

struct Block {
    file: PathBuf,
    line: usize,
    lang: String,
    text: String,
}

/// Every ```sh and ```python block of the README, the docs and the examples' README.
fn blocks(root: &Path) -> Vec<Block> {
    let mut files = vec![root.join("README.md"), root.join("examples/README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let mut open: Option<Block> = None;
        for (n, line) in text.lines().enumerate() {
            match (&mut open, line.trim_start().strip_prefix("```")) {
                (None, Some(lang @ ("sh" | "python"))) => {
                    open = Some(Block {
                        file: file.strip_prefix(root).unwrap().to_owned(),
                        line: n + 1,
                        lang: lang.to_owned(),
                        text: String::new(),
                    })
                }
                (Some(_), Some("")) => out.push(open.take().unwrap()),
                (Some(block), _) => {
                    block.text.push_str(line);
                    block.text.push('\n');
                }
                (None, _) => {}
            }
        }
    }
    out
}

// === shell blocks ===

/// Runs a shell block's commands; how many ran.
fn shell(root: &Path, text: &str, shipped: &Server) -> Result<usize, String> {
    let mut env: Vec<(String, String)> = Vec::new();
    let mut own: Option<Server> = None;
    let mut ran = 0;
    for (command, comment) in commands(text) {
        let mut words: Vec<&str> = command.split_whitespace().collect();
        // `VAR=value command`: the variables go to the environment.
        while let Some((name, value)) = words.first().and_then(|w| assignment(w)) {
            env.push((name.to_owned(), value.to_owned()));
            words.remove(0);
        }
        let rest = words.join(" ");
        if let Some(vars) = rest.strip_prefix("export ") {
            for (name, value) in vars.split_whitespace().filter_map(assignment) {
                env.push((name.to_owned(), value.to_owned()));
            }
            continue;
        }
        if NOT_RUN_HERE
            .iter()
            .any(|(prefix, _)| rest.starts_with(prefix))
        {
            continue;
        }
        let server = own.as_ref().unwrap_or(shipped);
        if rest.starts_with("curl ") {
            curl(&command, &comment, server, &env)?;
        } else if let Some(args) = lingo_args(&words) {
            if let Some(started) = start(root, &args, &env)? {
                own = Some(started);
            } else {
                run_lingo(root, &args, &env)?;
            }
        } else {
            return Err(format!("`{command}`: not run, and not in NOT_RUN_HERE"));
        }
        ran += 1;
    }
    Ok(ran)
}

/// The block's commands (continuation lines joined), each with its trailing comment.
fn commands(text: &str) -> Vec<(String, String)> {
    let joined = text.replace("\\\n", " ");
    joined
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (command, comment) = split_comment(l);
            (command.trim().to_owned(), comment.trim().to_owned())
        })
        .collect()
}

/// A line without its `# comment` (a `#` after a space, outside quotes).
fn split_comment(line: &str) -> (&str, &str) {
    let (mut single, mut double) = (false, false);
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && previous.is_whitespace() => {
                return (&line[..i], &line[i + 1..]);
            }
            _ => {}
        }
        previous = c;
    }
    (line, "")
}

fn assignment(word: &str) -> Option<(&str, &str)> {
    let (name, value) = word.split_once('=')?;
    let is_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    is_name.then_some((name, value))
}

/// The arguments of a `lingo ...` or `cargo run ... -- ...` command.
fn lingo_args(words: &[&str]) -> Option<Vec<String>> {
    let args = match words {
        ["lingo", rest @ ..] => rest,
        ["cargo", "run", rest @ ..] => {
            let dashes = rest.iter().position(|w| *w == "--")?;
            let flags = &rest[..dashes];
            if !flags
                .iter()
                .all(|f| ["--release", "--locked", "--quiet"].contains(f))
            {
                return None;
            }
            &rest[dashes + 1..]
        }
        _ => return None,
    };
    Some(args.iter().map(|a| a.to_string()).collect())
}

/// Starts the server `lingo ARGS` names, if it names one (serving, or the mock alone).
fn start(root: &Path, args: &[String], env: &[(String, String)]) -> Result<Option<Server>, String> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["--config" | "-c", config] => Ok(Some(Server::lingo(root, config, env))),
        ["mock", rest @ ..] => Ok(Some(Server::mock(rest, env))),
        [] => Ok(Some(Server::lingo(root, "proxy.yaml", env))),
        _ => Ok(None),
    }
}

/// `lingo ARGS` run to completion in the repository's root: it must succeed.
fn run_lingo(root: &Path, args: &[String], env: &[(String, String)]) -> Result<(), String> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lingo"));
    command
        .args(args)
        .current_dir(root)
        .envs(env.iter().cloned());
    let (code, out) = finish(command)?;
    match code {
        Some(0) => Ok(()),
        _ => Err(format!(
            "`lingo {}` exited {code:?}:\n{out}",
            args.join(" ")
        )),
    }
}

/// A `curl` command as written, against `server`; its status must be the comment's, or 2xx.
fn curl(
    command: &str,
    comment: &str,
    server: &Server,
    env: &[(String, String)],
) -> Result<(), String> {
    let expected: Option<u16> = comment.split_whitespace().next().and_then(|w| {
        w.trim_end_matches(':')
            .parse()
            .ok()
            .filter(|s| (100..600).contains(s))
    });
    let line = format!(
        "{} -sS --max-time 60 -w '\\n%{{http_code}}'",
        server.rewrite(command)?
    );
    let mut sh = Command::new("sh");
    sh.arg("-c").arg(&line).envs(env.iter().cloned());
    let (code, out) = finish(sh)?;
    let status: u16 = out
        .trim_end()
        .rsplit('\n')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let fine = match expected {
        Some(want) => status == want,
        None => (200..300).contains(&status),
    };
    if code == Some(0) && fine {
        Ok(())
    } else {
        let want = expected.map_or("2xx".to_owned(), |s| s.to_string());
        Err(format!(
            "`{command}`: status {status}, expected {want}:\n{out}"
        ))
    }
}

// === python blocks ===

fn python(text: &str, shipped: &Server) -> Result<usize, String> {
    let module = text
        .lines()
        .find_map(|l| {
            let l = l
                .strip_prefix("from ")
                .or_else(|| l.strip_prefix("import "))?;
            l.split([' ', '.', ',']).next()
        })
        .ok_or("a Python block that imports nothing")?;
    let has = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has {
        support::can_run(
            &format!("python3 with `{module}`"),
            "pip install openai ollama firecrawl-py",
        );
        return Ok(0);
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("example.py");
    // A block that names no address (a receiver's signature check) runs as written.
    let script_text = if text.contains("://") {
        shipped.rewrite(text)?
    } else {
        text.to_owned()
    };
    std::fs::write(&script, script_text).unwrap();
    let mut command = Command::new("python3");
    command.arg(&script);
    match finish(command)? {
        (Some(0), _) => Ok(1),
        (code, out) => Err(format!("python exited {code:?}:\n{out}")),
    }
}

// === processes ===

/// A server this test started, and the address the docs give it.
struct Server {
    child: Child,
    /// The docs' address -> the address it really listens on.
    addresses: HashMap<String, SocketAddr>,
    _dir: Option<tempfile::TempDir>,
}

impl Server {
    /// `lingo --config CONFIG`, its first listener moved to a free port.
    fn lingo(root: &Path, config: &str, env: &[(String, String)]) -> Server {
        let text = std::fs::read_to_string(root.join(config)).unwrap();
        let listen = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("- addr: "))
            .map(|a| a.split_whitespace().next().unwrap().to_owned())
            .unwrap_or_else(|| panic!("{config} has no `- addr:` line"));
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("proxy.yaml");
        std::fs::write(&copy, text.replacen(&listen, "127.0.0.1:0", 1)).unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_lingo"));
        command.arg("--config").arg(&copy).envs(env.iter().cloned());
        Server::spawn(command, &listen, Some(dir))
    }

    /// `lingo mock ARGS`, its `--listen` address moved to a free port.
    fn mock(args: &[&str], env: &[(String, String)]) -> Server {
        let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let listen = match args.iter().position(|a| a == "--listen") {
            Some(i) => std::mem::replace(&mut args[i + 1], "127.0.0.1:0".into()),
            None => {
                args.extend(["--listen".into(), "127.0.0.1:0".into()]);
                lingo::cli::DEFAULT_MOCK_LISTEN.to_owned()
            }
        };
        let mut command = Command::new(env!("CARGO_BIN_EXE_lingo"));
        command.arg("mock").args(&args).envs(env.iter().cloned());
        Server::spawn(command, &listen, None)
    }

    fn spawn(mut command: Command, listen: &str, dir: Option<tempfile::TempDir>) -> Server {
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(listening_on(&line).ok_or(line));
            }
        });
        let started = Instant::now();
        let mut said = Vec::new();
        let real = loop {
            let left = DEADLINE.saturating_sub(started.elapsed());
            match rx.recv_timeout(left) {
                Ok(Ok(addr)) => break addr,
                Ok(Err(line)) => said.push(line),
                Err(_) => panic!("{command:?} did not start: {said:?}"),
            }
        };
        let port = listen.rsplit(':').next().unwrap();
        let addresses = [format!("127.0.0.1:{port}"), format!("localhost:{port}")]
            .into_iter()
            .map(|a| (a, real))
            .collect();
        Server {
            child,
            addresses,
            _dir: dir,
        }
    }

    /// `text` with the docs' address for this server replaced by its real one.
    fn rewrite(&self, text: &str) -> Result<String, String> {
        let mut out = text.to_owned();
        let mut found = false;
        for (docs, real) in &self.addresses {
            found |= out.contains(docs.as_str());
            out = out.replace(docs.as_str(), &real.to_string());
        }
        if found {
            Ok(out)
        } else {
            Err(format!("no address this test serves in `{text}`"))
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `command` to its end (within [`DEADLINE`]): its exit code and what it wrote.
fn finish(mut command: Command) -> Result<(Option<i32>, String), String> {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{command:?}: {e}"))?;
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    let out = match rx.recv_timeout(DEADLINE) {
        Ok(out) => out.map_err(|e| e.to_string())?,
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            return Err(format!("{command:?} did not end within {DEADLINE:?}"));
        }
    };
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    Ok((out.status.code(), text))
}

#[test]
fn the_listening_line_is_read_in_each_log_format() {
    let addr: SocketAddr = "127.0.0.1:41234".parse().unwrap();
    for line in [
        "2026-01-01T00:00:00Z  INFO lingo::server: listening on 127.0.0.1:41234",
        r#"level=info target=lingo::server msg="listening on 127.0.0.1:41234""#,
        r#"{"level":"INFO","message":"listening on 127.0.0.1:41234"}"#,
        "INFO lingo::mock: mock backend listening on 127.0.0.1:41234",
    ] {
        assert_eq!(listening_on(line), Some(addr), "{line}");
    }
    for line in [
        "INFO lingo::server: listening on 127.0.0.1:9090 (admin)",
        r#"msg="listening on 127.0.0.1:9090 (admin)""#,
        "INFO lingo::reload: route table reloaded",
    ] {
        assert_eq!(listening_on(line), None, "{line}");
    }
}
