//! `/v1/chat/completions` request translation: any bytes are a request or a 400, never a
//! panic; an accepted request becomes a native JSON object with the model and messages.

#![no_main]

use libfuzzer_sys::fuzz_target;
use lingo::translate::chat::{self, RouteDefaults};
use serde_json::{Map, Value, json};

fuzz_target!(|body: &[u8]| {
    let mut options = Map::new();
    options.insert("num_ctx".into(), json!(4096));
    match chat::request(body, &RouteDefaults { options }) {
        Ok(mut request) => {
            assert!(!request.model().trim().is_empty());
            assert!((1..=chat::MAX_N).contains(&u64::from(request.n())));
            request.set_model("upstream");
            let native: Value = serde_json::from_slice(&request.native_body()).unwrap();
            assert_eq!(native["model"], "upstream");
            assert!(native["messages"].as_array().is_some_and(|m| !m.is_empty()));
        }
        Err(e) => assert!(!e.message.is_empty()),
    }
});
