//! The route-table loader (parse, then compile) on arbitrary text: a table or errors that
//! each say something, never a panic.

#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // A directory with no files: `file:` secrets and TLS paths do not resolve.
    let source = Path::new("/nonexistent-lingo-fuzz/proxy.yaml");
    let env = |name: &str| (name.len() < 16).then(|| format!("secret-of-{name}"));
    if let Err(errors) = lingo::config::load_str_with_env(text, source, &env) {
        assert!(!errors.0.is_empty());
        for e in &errors.0 {
            assert!(!e.message.trim().is_empty(), "{e:?}");
        }
    }
});
