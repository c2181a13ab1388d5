//! `/v1/completions` request translation: any bytes are a request or a 400, never a panic;
//! each prompt of an accepted request becomes one native `/api/generate` body.

#![no_main]

use libfuzzer_sys::fuzz_target;
use lingo::translate::completions;
use serde_json::{Map, Value};

fuzz_target!(|body: &[u8]| {
    match completions::request(body, &Map::new()) {
        Ok(request) => {
            assert!(!request.prompts.is_empty() && request.prompts.len() <= 64);
            for (i, prompt) in request.prompts.iter().enumerate() {
                let native: Value = serde_json::from_slice(&request.native_body("m", i)).unwrap();
                assert_eq!(native["prompt"].as_str(), Some(prompt.as_str()));
                assert_eq!(native["model"], "m");
            }
        }
        Err(e) => assert!(!e.message.is_empty()),
    }
});
