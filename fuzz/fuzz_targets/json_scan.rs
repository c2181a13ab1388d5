//! lingo's strict reader of native stream lines (`translate::scan`), over bytes as they come:
//! whatever it reads, serde reads the same (a string, a plain `u64`), any value it skips
//! serde skips too, and nothing it accepts is anything but UTF-8. The event readers built on
//! it are checked against serde by `cargo test` (generated lines, spoilt bytes).

#![no_main]

use libfuzzer_sys::fuzz_target;
use lingo::translate::scan::Scan;
use serde::de::IgnoredAny;

fuzz_target!(|data: &[u8]| {
    let mut scan = Scan::new(data);
    if let Some(read) = scan.str()
        && scan.end().is_some()
    {
        let serde = serde_json::from_slice::<String>(data);
        assert_eq!(serde.ok().as_deref(), Some(&*read), "{data:?}");
    }
    let mut scan = Scan::new(data);
    if let Some(read) = scan.u64()
        && scan.end().is_some()
    {
        assert_eq!(
            serde_json::from_slice::<u64>(data).ok(),
            Some(read),
            "{data:?}"
        );
    }
    let mut scan = Scan::new(data);
    if scan.skip().is_some() && scan.end().is_some() {
        assert!(std::str::from_utf8(data).is_ok(), "{data:?}");
        assert!(serde_json::from_slice::<IgnoredAny>(data).is_ok(), "{data:?}");
    }
});
