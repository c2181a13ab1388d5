//! The error renderer's pure parts, from outside the crate: durations in messages are spelled
//! as `proxy.yaml` spells them. (Each error's status, shape and code over sockets: errors.rs
//! and promises.rs.) Written for the mutation pass: see mutants.md.

use std::time::Duration;

use lingo::base::units::{format_duration, parse_duration};

#[test]
fn durations_are_spelled_as_the_table_spells_them() {
    for (d, want) in [
        (Duration::ZERO, "0s"),
        (Duration::from_millis(250), "250ms"),
        (Duration::from_millis(1500), "1500ms"),
        (Duration::from_secs(1), "1s"),
        (Duration::from_secs(30), "30s"),
        (Duration::from_secs(90), "90s"),
        (Duration::from_secs(60), "60s"),
        (Duration::from_secs(120), "120s"),
        (Duration::from_secs(3600), "1h"),
    ] {
        assert_eq!(format_duration(d), want, "{d:?}");
        assert_eq!(parse_duration(want), Ok(d), "{want} reads back");
    }
}
