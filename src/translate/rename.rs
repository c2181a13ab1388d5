//! Model aliases on native routes, the response side: each response line's top-level `model` is
//! the alias again. (The request side splices the upstream's name in: see `splice`.)

use std::ops::Range;

use bytes::{Bytes, BytesMut};

use super::splice;
use super::translation::LineTranslator;
use crate::base::dialect::Dialect;
use crate::base::usage::Usage;

/// Puts the alias back into each response line's top-level `model`, however the upstream
/// spaces its JSON; a line whose `model` is another name (or that is not JSON) is left alone.
pub struct Rename {
    model: String,
    alias: Bytes,
}

impl Rename {
    pub fn new(model: &str, alias: &str) -> Self {
        Rename {
            model: model.to_owned(),
            alias: splice::string_literal(alias),
        }
    }

    /// Where the line's `model` names the upstream's model.
    fn model_at(&self, line: &[u8]) -> Option<Range<usize>> {
        let found = splice::find(line, &["model"])?.pop()?;
        (found.string()? == self.model).then_some(found.range)
    }
}

impl LineTranslator for Rename {
    fn on_line(&mut self, line: &[u8]) -> Result<Vec<Bytes>, String> {
        let mut out = match self.model_at(line) {
            Some(range) => splice::replaced(line, range, &self.alias),
            None => BytesMut::from(line),
        };
        out.extend_from_slice(b"\n");
        Ok(vec![out.freeze()])
    }

    fn finish(&mut self) -> Result<Vec<Bytes>, String> {
        Ok(Vec::new())
    }

    fn dialect(&self) -> Dialect {
        Dialect::Native
    }

    fn usage(&self) -> Option<Usage> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_get_the_alias_back_and_nothing_is_added() {
        let mut rename = Rename::new("llama3.2:latest", "gpt-4o-mini");
        for (line, want) in [
            (
                r#"{"model" : "llama3.2:latest","done":false}"#,
                "{\"model\" : \"gpt-4o-mini\",\"done\":false}\n",
            ),
            (
                r#"{"model":"other","done":true}"#,
                "{\"model\":\"other\",\"done\":true}\n",
            ),
            ("not json", "not json\n"),
        ] {
            let frames = rename.on_line(line.as_bytes()).unwrap();
            assert_eq!(frames, [Bytes::from(want)], "{line}");
        }
        // The stream ends as the upstream's did: no closing frame, no usage of its own (the
        // native lines carry their counts to the client as they are).
        assert_eq!(rename.finish(), Ok(vec![]));
        assert_eq!(rename.usage(), None);
        assert_eq!(rename.dialect(), Dialect::Native);
    }
}
