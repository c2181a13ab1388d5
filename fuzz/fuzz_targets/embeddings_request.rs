//! `/v1/embeddings` request translation: any bytes are a request or a 400, never a panic;
//! an accepted request becomes `/api/embed` (and legacy `/api/embeddings`) JSON bodies.

#![no_main]

use libfuzzer_sys::fuzz_target;
use lingo::translate::embeddings;
use serde_json::Value;

fuzz_target!(|body: &[u8]| {
    match embeddings::request(body) {
        Ok(request) => {
            assert!(!request.inputs.is_empty());
            let native: Value = serde_json::from_slice(&request.embed_body("m")).unwrap();
            assert_eq!(
                native["input"].as_array().map(Vec::len),
                Some(request.inputs.len())
            );
            for input in &request.inputs {
                let legacy: Value =
                    serde_json::from_slice(&request.legacy_body("m", input)).unwrap();
                assert_eq!(legacy["prompt"].as_str(), Some(input.as_str()));
            }
        }
        Err(e) => assert!(!e.message.is_empty()),
    }
});
