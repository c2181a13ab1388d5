//! Mis-indented lines: what a YAML reader reports far from the mistake ("missing field" at
//! the parent, "mapping values are not allowed", "comment intercepting the multiline text")
//! is found here and told at the line itself, with the column that fixes it.
//!
//! It runs only once a table has failed to parse. Each key or list entry near the error is
//! moved, with the lines under it, to each column the lines above it use; a move that lets
//! the file parse (or parse past both the line and the first error) is the diagnosis. So
//! the schema is the parser's own: a key is moved only where the table takes it.

/// One line of the table as its indentation sees it.
#[derive(Debug, Clone, Copy)]
struct Line<'a> {
    /// 0-based.
    index: usize,
    /// Spaces before the first character (`-` or the key).
    indent: usize,
    /// Where the key starts, after any `- ` markers.
    column: usize,
    /// `key` of `key: ...`, if the line starts a mapping entry.
    key: Option<&'a str>,
    /// Whether it starts a list entry (`- ...`).
    entry: bool,
    /// Whether the lines under it belong to it: a list entry, or a key with nothing after it.
    opens: bool,
}

/// A mis-indented line and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Misindent {
    /// 1-based.
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// Lines to try, nearest the error first, and parses to try at most: a mistake is found
/// near where the parser gave up, and a table that is broken throughout is not searched.
const NEAREST: usize = 24;
const ATTEMPTS: usize = 200;

/// Finds the line whose move to another column fixes the parse error at `error_line`
/// (1-based; 0 when unknown). `parses` says where a text's first error is (`None`: none).
pub fn diagnose(
    text: &str,
    error_line: usize,
    parses: impl Fn(&str) -> Option<usize>,
) -> Option<Misindent> {
    let raw: Vec<&str> = text.lines().collect();
    if let Some(tab) = tab_indented(&raw, error_line) {
        return Some(tab);
    }
    let lines: Vec<Line<'_>> = raw
        .iter()
        .enumerate()
        .filter_map(|(i, l)| Line::read(i, l))
        .collect();
    let error = error_line.saturating_sub(1);
    let mut candidates: Vec<usize> = (0..lines.len()).collect();
    candidates.sort_by_key(|&c| (lines[c].index.abs_diff(error), lines[c].index));
    candidates.truncate(NEAREST);
    // Keys first: a list entry can often be moved to where a key under it would fit too
    // (an entry at its parent key's column is valid YAML), and the key is the likelier slip.
    let keys = candidates
        .iter()
        .filter(|&&c| !lines[c].entry && lines[c].key.is_some());
    let entries = candidates.iter().filter(|&&c| lines[c].entry);
    let mut attempts = 0;
    for &c in keys.chain(entries) {
        let line = lines[c];
        for target in columns(&lines[..c], line) {
            attempts += 1;
            if attempts > ATTEMPTS {
                return None;
            }
            let moved = shift(&raw, &lines[c..], target);
            let fixed = match parses(&moved) {
                None => true,
                Some(at) => at > error_line.max(line.index + 1),
            };
            if fixed {
                return Some(describe(&lines[..c], line, target));
            }
        }
    }
    None
}

/// A line indented with a tab where the parser gave up (YAML indents with spaces only).
fn tab_indented(raw: &[&str], error_line: usize) -> Option<Misindent> {
    let text = raw.get(error_line.checked_sub(1)?)?;
    let lead = &text[..text.len() - text.trim_start().len()];
    let at = lead.find('\t')?;
    Some(Misindent {
        line: error_line,
        column: at + 1,
        message: "this line is indented with a tab; YAML indents with spaces only".into(),
    })
}

/// The columns worth trying for `line`, nearest its own first: where the lines above it
/// start and where their keys start, and one level under the line just above.
fn columns(above: &[Line<'_>], line: Line<'_>) -> Vec<usize> {
    let mut columns = Vec::new();
    if let Some(last) = above.last() {
        columns.push(last.column + 2);
    }
    // Up to the last top-level line: further up, columns belong to other sections.
    for l in above.iter().rev() {
        columns.extend([l.indent, l.column]);
        if l.indent == 0 {
            break;
        }
    }
    columns.retain(|&c| c != line.indent);
    columns.sort_by_key(|&c| (c.abs_diff(line.indent), c));
    columns.dedup();
    columns
}

/// The text with `lines[0]` (and the lines under it, if it opens a block) moved to start
/// at `target`.
fn shift(raw: &[&str], lines: &[Line<'_>], target: usize) -> String {
    let first = lines[0];
    let block_end = if first.opens {
        lines[1..]
            .iter()
            .find(|l| l.indent <= first.indent)
            .map_or(raw.len(), |l| l.index)
    } else {
        first.index + 1
    };
    let mut out = String::with_capacity(text_len(raw) + target);
    for (i, text) in raw.iter().enumerate() {
        let body = text.trim_start_matches(' ');
        let blank = body.trim().is_empty() || body.starts_with('#');
        if (first.index..block_end).contains(&i) && !blank {
            // Lines under the first keep their place relative to it.
            let under = (text.len() - body.len()).saturating_sub(first.indent);
            out.extend(std::iter::repeat_n(' ', target + under));
            out.push_str(body);
        } else {
            out.push_str(text);
        }
        out.push('\n');
    }
    out
}

fn text_len(raw: &[&str]) -> usize {
    raw.iter().map(|l| l.len() + 1).sum()
}

/// The message for moving `line` to `target`: what it is read as part of where it is, and
/// what it lines up with (or goes under) where it belongs.
fn describe(above: &[Line<'_>], line: Line<'_>, target: usize) -> Misindent {
    let what = match (line.entry, line.key) {
        (false, Some(key)) => format!("`{key}`"),
        _ => "this list entry".to_owned(),
    };
    let now = match above.iter().rev().find(|l| l.column < line.column) {
        Some(parent) => format!("it is read as part of {}", parent.name()),
        None => "it is a top-level key".to_owned(),
    };
    let place = if line.entry {
        entry_place(above, target)
    } else {
        key_place(above, target)
    };
    let under = if line.opens && line.key.is_some() && !line.entry {
        " with the lines under it"
    } else {
        ""
    };
    Misindent {
        line: line.index + 1,
        column: line.indent + 1,
        message: format!(
            "{what} is mis-indented: at column {} {now}; move it{under} to column {}, {place}",
            line.indent + 1,
            target + 1,
        ),
    }
}

/// Where a list entry starting at `target` would be: beside an entry above it, or under
/// the key or entry it would belong to.
fn entry_place(above: &[Line<'_>], target: usize) -> String {
    for l in above.iter().rev() {
        if l.entry && l.indent == target {
            return format!("in line with the entry on line {}", l.index + 1);
        }
        if l.column <= target {
            return format!("under {}", l.name());
        }
    }
    "at the top level".to_owned()
}

/// Where a key starting at `target` would be: in line with a key above it, or under the
/// key or entry it would belong to.
fn key_place(above: &[Line<'_>], target: usize) -> String {
    for l in above.iter().rev() {
        if l.column == target {
            return match l.key {
                Some(key) => format!("in line with `{key}` (line {})", l.index + 1),
                None => format!("in line with the entry on line {}", l.index + 1),
            };
        }
        if l.column < target {
            return format!("under {}", l.name());
        }
    }
    "at the top level".to_owned()
}

// === impl Line ===

impl<'a> Line<'a> {
    /// A line that has content (not blank, not only a comment).
    fn read(index: usize, text: &'a str) -> Option<Self> {
        let body = text.trim_start_matches(' ');
        if body.trim().is_empty() || body.starts_with('#') {
            return None;
        }
        let indent = text.len() - body.len();
        let mut rest = body;
        while let Some(after) = rest
            .strip_prefix('-')
            .filter(|r| r.is_empty() || r.starts_with(' '))
        {
            rest = after.trim_start_matches(' ');
        }
        let entry = rest.len() != body.len();
        let column = text.len() - rest.len();
        let key = rest.split_once(':').and_then(|(key, after)| {
            let plain = !key.is_empty()
                && key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
            (plain && (after.is_empty() || after.starts_with(' '))).then_some(key)
        });
        let empty_value = key.is_some_and(|key| {
            let after = rest[key.len() + 1..].trim();
            after.is_empty() || after.starts_with('#')
        });
        Some(Line {
            index,
            indent,
            column,
            key,
            entry,
            opens: entry || empty_value,
        })
    }

    /// How a message names it: `key` (line N), or the list entry on line N.
    fn name(&self) -> String {
        match (self.entry, self.key) {
            (false, Some(key)) => format!("`{key}` (line {})", self.index + 1),
            _ => format!("the list entry on line {}", self.index + 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_as_their_indentation_sees_them() {
        let cases = [
            ("  url: http://x", 2, 2, Some("url"), false, false),
            ("    timeouts:", 4, 4, Some("timeouts"), false, true),
            (
                "    timeouts:   # the defaults",
                4,
                4,
                Some("timeouts"),
                false,
                true,
            ),
            ("  - prefix: /api", 2, 4, Some("prefix"), true, true),
            ("  - { prefix: /api, to: m }", 2, 4, None, true, true),
            ("- - a: b", 0, 4, Some("a"), true, true),
            (
                "    bearer: { env: KEY }",
                4,
                4,
                Some("bearer"),
                false,
                false,
            ),
            ("  url: http://x:80", 2, 2, Some("url"), false, false),
            ("  http://x:80", 2, 2, None, false, false),
        ];
        for (text, indent, column, key, entry, opens) in cases {
            let line = Line::read(0, text).unwrap();
            assert_eq!(
                (line.indent, line.column, line.key, line.entry, line.opens),
                (indent, column, key, entry, opens),
                "{text:?}"
            );
        }
        for blank in ["", "   ", "  # a comment"] {
            assert!(Line::read(0, blank).is_none(), "{blank:?}");
        }
    }

    #[test]
    fn a_block_moves_with_the_key_that_opens_it() {
        let raw = ["a:", "  b:", "  c: 1", "  d: 2", "e: 3"];
        let lines: Vec<_> = raw
            .iter()
            .enumerate()
            .filter_map(|(i, l)| Line::read(i, l))
            .collect();
        // `b:` opens a block, but `c` and `d` are its siblings, not under it: only `b` moves.
        assert_eq!(
            shift(&raw, &lines[1..], 4),
            "a:\n    b:\n  c: 1\n  d: 2\ne: 3\n"
        );
        // `a:` takes everything under it along.
        assert_eq!(
            shift(&raw, &lines[0..], 2),
            "  a:\n    b:\n    c: 1\n    d: 2\ne: 3\n"
        );
    }
}
