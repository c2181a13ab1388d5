//! lingo's strict reader of native stream lines (`translate::scan`): whatever it reads, serde
//! reads the same (a string, a plain `u64`), and any value it skips serde skips too. The
//! event readers built on it are checked against serde by `cargo test` (generated lines).

#![no_main]

use libfuzzer_sys::fuzz_target;
use lingo::translate::scan::Scan;
use serde::de::IgnoredAny;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut scan = Scan::new(text);
    if let Some(read) = scan.str()
        && scan.end().is_some()
    {
        let serde = serde_json::from_str::<String>(text);
        assert_eq!(serde.ok().as_deref(), Some(&*read), "{text:?}");
    }
    let mut scan = Scan::new(text);
    if let Some(read) = scan.u64()
        && scan.end().is_some()
    {
        assert_eq!(
            serde_json::from_str::<u64>(text).ok(),
            Some(read),
            "{text:?}"
        );
    }
    let mut scan = Scan::new(text);
    if scan.skip().is_some() && scan.end().is_some() {
        assert!(serde_json::from_str::<IgnoredAny>(text).is_ok(), "{text:?}");
    }
});
