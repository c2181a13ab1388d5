use super::*;

fn parse(args: &str) -> Result<Command, CliError> {
    parse_from(args.split_whitespace().map(OsString::from))
}

fn serve(config: &str, log_format: Option<LogFormat>) -> Result<Command, CliError> {
    Ok(Command::Serve {
        config: config.into(),
        log_format,
    })
}

fn check(path: &str, secrets: Secrets) -> Result<Command, CliError> {
    Ok(Command::Check {
        path: path.into(),
        secrets,
    })
}

fn mock(listen: &str, knobs: &str, log_format: Option<LogFormat>) -> Result<Command, CliError> {
    Ok(Command::Mock {
        listen: listen.parse().unwrap(),
        knobs: knobs.into(),
        log_format,
    })
}

#[test]
fn commands() {
    let json = Some(LogFormat::Json);
    let cases = [
        ("", serve("proxy.yaml", None)),
        ("--config other.yaml", serve("other.yaml", None)),
        ("--config=other.yaml", serve("other.yaml", None)),
        ("-c other.yaml", serve("other.yaml", None)),
        ("--log-format json", serve("proxy.yaml", json)),
        (
            "-c x.yaml --log-format=text",
            serve("x.yaml", Some(LogFormat::Text)),
        ),
        ("serve", serve("proxy.yaml", None)),
        ("serve -c x.yaml --log-format json", serve("x.yaml", json)),
        ("check", check("proxy.yaml", Secrets::Read)),
        ("check my.yaml", check("my.yaml", Secrets::Read)),
        (
            "check --no-secrets my.yaml",
            check("my.yaml", Secrets::ShapeOnly),
        ),
        (
            "check my.yaml --no-secrets",
            check("my.yaml", Secrets::ShapeOnly),
        ),
        ("--help", Ok(Command::Help(Topic::Lingo))),
        ("-h", Ok(Command::Help(Topic::Lingo))),
        ("help", Ok(Command::Help(Topic::Lingo))),
        ("help mock", Ok(Command::Help(Topic::Mock))),
        ("serve --help", Ok(Command::Help(Topic::Serve))),
        ("check --help", Ok(Command::Help(Topic::Check))),
        ("check x.yaml -h", Ok(Command::Help(Topic::Check))),
        ("mock --help", Ok(Command::Help(Topic::Mock))),
        ("--version", Ok(Command::Version)),
        ("-V", Ok(Command::Version)),
        ("mock", mock(DEFAULT_MOCK_LISTEN, "", None)),
        (
            "mock --listen 127.0.0.1:9 --tokens 3 --token-delay 100ms --log-format json",
            mock("127.0.0.1:9", "tokens=3,token_delay=100ms", json),
        ),
        (
            "mock --webhook-retry 1s,2s --webhook-timeout 500ms --page-delay 10ms",
            mock(
                DEFAULT_MOCK_LISTEN,
                "webhook_retry=1s,2s,webhook_timeout=500ms,page_delay=10ms",
                None,
            ),
        ),
    ];
    for (args, expected) in cases {
        assert_eq!(parse(args), expected, "lingo {args}");
    }
}

#[test]
fn errors() {
    let commands = "the commands are serve (the default), check, mock and help";
    let cases = [
        ("start", format!("unknown command `start`; {commands}")),
        ("help start", format!("unknown command `start`; {commands}")),
        ("--bogus", "unknown option `--bogus`".into()),
        ("--config", "`--config` needs a value".into()),
        ("-c", "`-c` needs a value".into()),
        ("check a.yaml b.yaml", "unexpected argument `b.yaml`".into()),
        ("check --config x", "unknown option `--config`".into()),
        ("--config x extra", "unexpected argument `extra`".into()),
        ("--config x check", "unexpected argument `check`".into()),
        ("help check mock", "unexpected argument `mock`".into()),
        (
            "--log-format xml",
            "`--log-format xml`: the format is json or text".into(),
        ),
        (
            "mock --listen nowhere",
            "`nowhere` is not an IP:PORT address".into(),
        ),
        ("mock --tokens", "`--tokens` needs a value".into()),
    ];
    for (args, expected) in cases {
        assert_eq!(
            parse(args).unwrap_err().to_string(),
            expected,
            "lingo {args}"
        );
    }
}

#[test]
fn the_log_format_option_wins_over_the_environment() {
    let env = |v: &str| Some(OsString::from(v));
    let (json, text) = (LogFormat::Json, LogFormat::Text);
    assert_eq!(log_format(None, None), Ok(text));
    assert_eq!(log_format(None, env("json")), Ok(json));
    assert_eq!(log_format(Some(text), env("json")), Ok(text));
    assert_eq!(log_format(Some(json), env("xml")), Ok(json));
    assert_eq!(
        log_format(None, env("xml")).unwrap_err().to_string(),
        "LINGO_LOG_FORMAT is `xml`; it is json or text"
    );
}

/// Every help names its command's options; lingo's names every command.
#[test]
fn each_help_describes_its_own_options() {
    let cases = [
        (
            Topic::Lingo,
            &[
                "serve",
                "check",
                "mock",
                "--config",
                "--log-format",
                "--version",
                "LINGO_LOG_FORMAT",
                "RUST_LOG",
                "SIGHUP",
                "SIGTERM",
            ][..],
        ),
        (
            Topic::Serve,
            &["--config", "--log-format", "SIGHUP", "SIGINT"][..],
        ),
        (
            Topic::Check,
            &["--no-secrets", "PATH", "FILE:LINE:COLUMN"][..],
        ),
        (
            Topic::Mock,
            &[
                "--listen",
                "--tokens",
                "--token-delay",
                "--cut-after",
                "--speaks",
            ][..],
        ),
    ];
    for (topic, words) in cases {
        let text = topic.help();
        for word in words {
            assert!(text.contains(word), "{topic:?} help lacks {word}:\n{text}");
        }
        assert!(!text.contains("{USAGE}"), "{text}");
    }
}
