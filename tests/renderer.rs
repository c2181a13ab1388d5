//! The error renderer's pure parts, from outside the crate: durations in messages are spelled
//! as `proxy.yaml` spells them. (Each error's status, shape and code over sockets: errors.rs
//! and promises.rs.) Written for the mutation pass: see mutants.md.

use std::time::Duration;

use lingo::error::humanize;

#[test]
fn durations_are_spelled_as_the_table_spells_them() {
    for (d, want) in [
        (Duration::ZERO, "0ms"),
        (Duration::from_millis(250), "250ms"),
        (Duration::from_millis(1500), "1500ms"),
        (Duration::from_secs(1), "1s"),
        (Duration::from_secs(30), "30s"),
        (Duration::from_secs(90), "90s"),
        (Duration::from_secs(60), "1m"),
        (Duration::from_secs(120), "2m"),
        (Duration::from_secs(3600), "60m"),
    ] {
        assert_eq!(humanize(d), want, "{d:?}");
    }
}
