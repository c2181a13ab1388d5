//! Path normalisation from outside the crate, on inputs hyper would never pass it (a space,
//! a control byte, a non-ASCII byte in the target): `normalize` refuses them on its own, and
//! decodes exactly the unreserved escapes. (Over sockets: smuggling.rs.) Written for the
//! mutation pass: see mutants.md.

use lingo::http::path::normalize;

#[test]
fn unreserved_escapes_are_decoded_and_nothing_else() {
    for (raw, want) in [
        ("/api/%70ull", "/api/pull"),
        ("/a/%41%7a%30", "/a/Az0"),
        ("/a/%2D%2d", "/a/--"),
        ("/a/%5F", "/a/_"),
        ("/a/%7E", "/a/~"),
        ("/a/%5f%7e", "/a/_~"),
        ("/a/%20", "/a/%20"),
        ("/a/%3F", "/a/%3F"),
        ("/a/%25", "/a/%25"),
    ] {
        assert_eq!(normalize(raw).as_deref(), Ok(want), "{raw}");
    }
}

#[test]
fn bytes_hyper_would_refuse_are_refused_here_too() {
    for raw in [
        "/a b",
        "/a\u{1}b",
        "/a\u{7f}",
        "/a\tb",
        "/caf\u{e9}",
        "/a\u{80}",
    ] {
        assert_eq!(
            normalize(raw),
            Err("control characters are not allowed"),
            "{raw:?}"
        );
    }
}
