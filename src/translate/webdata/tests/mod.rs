//! Table-driven tests of the v1 -> v2 translation: the path map, request bodies, responses.

mod hostile;
mod request;
mod response;
mod route;

use serde_json::Value;

use super::*;

/// The v2 body of a v1 `call` with `body`, or the refusal's (status, v1 body).
fn translate(call: Call, body: &Value) -> Result<(Value, JsonAs), (u16, Value)> {
    match request(call, body.to_string().as_bytes()) {
        Ok(t) => {
            let body = serde_json::from_slice(&t.body.unwrap()).unwrap();
            Ok((body, t.json_as))
        }
        Err(r) => Err((r.status, serde_json::from_slice(&r.body()).unwrap())),
    }
}
