//! The log's line formats: every event (the access line included) is one line, in logfmt
//! (`text`, the default) or as one JSON object (`json`), with the same keys either way:
//! `time`, `level`, `target`, `msg` (when the event has a message), then the event's fields
//! in the order it names them.
//!
//! A JSON string is escaped as it is formatted, straight into the line; a logfmt value is
//! formatted into a buffer each thread keeps first, since whether it needs quotes is known
//! only once it is whole. Either way a line allocates nothing once the buffers have grown
//! to a line's size (`tests/log_cost.rs`): the access line is written for every request.

use std::cell::RefCell;
use std::fmt::{self, Write};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// logfmt: `key=value` pairs, a value quoted when it has a space, `=`, `"` or a
    /// control character in it.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Formats each event as one line in a [`LogFormat`]; what [`init`] installs.
#[derive(Debug, Clone, Copy)]
pub struct Lines(pub LogFormat);

/// The field that holds an event's message (`info!("...")`).
const MESSAGE: &str = "message";

/// Installs the global subscriber: `RUST_LOG` filters (default `info`), lines in `format`
/// on stderr.
pub fn init(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .event_format(Lines(format))
        .with_writer(std::io::stderr)
        .try_init();
}

// === impl LogFormat ===

impl LogFormat {
    /// What `--log-format` and `LINGO_LOG_FORMAT` accept.
    pub const NAMES: &'static str = "json or text";

    pub fn parse(text: &str) -> Option<LogFormat> {
        match text {
            "text" => Some(LogFormat::Text),
            "json" => Some(LogFormat::Json),
            _ => None,
        }
    }
}

// === impl Lines ===

impl<S, N> FormatEvent<S, N> for Lines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        match self.0 {
            LogFormat::Text => with_scratch(|scratch| {
                line(
                    &mut Logfmt {
                        out: &mut writer,
                        scratch,
                        result: Ok(()),
                        pass: Pass::Message,
                    },
                    event,
                )
            }),
            LogFormat::Json => line(
                &mut Json {
                    out: &mut writer,
                    result: Ok(()),
                    pass: Pass::Message,
                },
                event,
            ),
        }
    }
}

/// What a line's writer is told, in order.
trait LineWriter: Visit {
    /// The line's opening and its time.
    fn start(&mut self) -> fmt::Result;
    /// The level and the target.
    fn head(&mut self, level: &str, target: &str) -> fmt::Result;
    /// Which fields the next visit writes.
    fn set_pass(&mut self, pass: Pass);
    /// Whether every field so far was written (a visit cannot return an error).
    fn result(&mut self) -> fmt::Result;
    /// The line's close and its newline.
    fn end(&mut self) -> fmt::Result;
}

/// Which fields a visit writes: the message comes first whatever its place in the event.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    Message,
    Fields,
}

fn line(out: &mut impl LineWriter, event: &Event<'_>) -> fmt::Result {
    let meta = event.metadata();
    out.start()?;
    out.head(meta.level().as_str(), meta.target())?;
    out.set_pass(Pass::Message);
    event.record(out);
    out.result()?;
    out.set_pass(Pass::Fields);
    event.record(out);
    out.result()?;
    out.end()
}

/// Runs `f` with this thread's scratch buffer, emptied (a fresh one if it is in use: an
/// event logged while a value is being formatted).
fn with_scratch<R>(f: impl FnOnce(&mut String) -> R) -> R {
    thread_local! {
        static SCRATCH: RefCell<String> = const { RefCell::new(String::new()) };
    }
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => {
            scratch.clear();
            f(&mut scratch)
        }
        Err(_) => f(&mut String::new()),
    })
}

/// Whether a field belongs to this pass; the key it is written under.
fn key(pass: Pass, field: &Field) -> Option<&'static str> {
    match (pass, field.name()) {
        (Pass::Message, MESSAGE) => Some("msg"),
        (Pass::Fields, name) if name != MESSAGE => Some(name),
        _ => None,
    }
}

/// Whether `c` is escaped inside a quoted value: the quote, the backslash, control
/// characters, and the two Unicode line separators (some readers break lines at them).
fn is_escaped(c: char) -> bool {
    matches!(c, '"' | '\\' | '\u{2028}' | '\u{2029}') || c.is_control()
}

/// Writes `text` escaped as inside a JSON string (logfmt's quoted values use the same
/// escapes): `\"`, `\\`, `\n`, `\r`, `\t`, `\uXXXX` for the other characters
/// [`is_escaped`] names. Runs of plain characters are written whole.
fn escape(out: &mut impl Write, text: &str) -> fmt::Result {
    let mut plain = 0;
    for (at, c) in text.char_indices() {
        if !is_escaped(c) {
            continue;
        }
        out.write_str(&text[plain..at])?;
        match c {
            '"' => out.write_str("\\\"")?,
            '\\' => out.write_str("\\\\")?,
            '\n' => out.write_str("\\n")?,
            '\r' => out.write_str("\\r")?,
            '\t' => out.write_str("\\t")?,
            // Every character `is_escaped` names is below U+10000: one \u escape each.
            c => write!(out, "\\u{:04x}", u32::from(c))?,
        }
        plain = at + c.len_utf8();
    }
    out.write_str(&text[plain..])
}

/// Escapes what is written through it into `out` (a JSON string's content).
struct Escaping<'a, W>(&'a mut W);

impl<W: Write> Write for Escaping<'_, W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        escape(self.0, s)
    }
}

/// A logfmt line.
struct Logfmt<'a, 'w> {
    out: &'a mut Writer<'w>,
    scratch: &'a mut String,
    result: fmt::Result,
    pass: Pass,
}

impl Logfmt<'_, '_> {
    /// ` key=value`, the value quoted when a reader could not tell where it ends: empty,
    /// or holding a space (any white space), `=`, or a character [`is_escaped`] names.
    fn text(&mut self, key: &str, value: &str) {
        let quoted = value.is_empty()
            || value
                .chars()
                .any(|c| c == '=' || c.is_whitespace() || is_escaped(c));
        self.result = self.result.and_then(|()| {
            write!(self.out, " {key}=")?;
            if !quoted {
                return self.out.write_str(value);
            }
            self.out.write_char('"')?;
            escape(self.out, value)?;
            self.out.write_char('"')
        });
    }

    /// ` key=value` for a value that never needs quotes (a number, `true`).
    fn bare(&mut self, key: &str, value: impl fmt::Display) {
        self.result = self
            .result
            .and_then(|()| write!(self.out, " {key}={value}"));
    }
}

impl Visit for Logfmt<'_, '_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let Some(key) = key(self.pass, field) else {
            return;
        };
        let mut scratch = std::mem::take(self.scratch);
        scratch.clear();
        if write!(scratch, "{value:?}").is_err() {
            self.result = Err(fmt::Error);
        }
        self.text(key, &scratch);
        *self.scratch = scratch;
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if let Some(key) = key(self.pass, field) {
            self.text(key, value);
        }
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        match key(self.pass, field) {
            Some(key) if value.is_finite() => self.bare(key, value),
            Some(key) => self.text(key, &value.to_string()),
            None => {}
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if let Some(key) = key(self.pass, field) {
            self.bare(key, value);
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        if let Some(key) = key(self.pass, field) {
            self.bare(key, value);
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        if let Some(key) = key(self.pass, field) {
            self.bare(key, value);
        }
    }
}

impl LineWriter for Logfmt<'_, '_> {
    fn start(&mut self) -> fmt::Result {
        self.out.write_str("time=")?;
        SystemTime.format_time(self.out)
    }

    fn head(&mut self, level: &str, target: &str) -> fmt::Result {
        write!(self.out, " level={level}")?;
        self.text("target", target);
        self.result
    }

    fn set_pass(&mut self, pass: Pass) {
        self.pass = pass;
    }

    fn result(&mut self) -> fmt::Result {
        self.result
    }

    fn end(&mut self) -> fmt::Result {
        self.out.write_char('\n')
    }
}

/// A JSON line.
struct Json<'a, 'w> {
    out: &'a mut Writer<'w>,
    result: fmt::Result,
    pass: Pass,
}

impl Json<'_, '_> {
    /// `,"key":` then the value, written by `value`.
    fn field(&mut self, key: &str, value: impl FnOnce(&mut Writer<'_>) -> fmt::Result) {
        self.result = self.result.and_then(|()| {
            self.out.write_str(",\"")?;
            escape(self.out, key)?;
            self.out.write_str("\":")?;
            value(self.out)
        });
    }

    fn string(&mut self, key: &str, value: impl fmt::Display) {
        self.field(key, |out| {
            out.write_char('"')?;
            write!(Escaping(out), "{value}")?;
            out.write_char('"')
        });
    }
}

impl Visit for Json<'_, '_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if let Some(key) = key(self.pass, field) {
            self.field(key, |out| {
                out.write_char('"')?;
                write!(Escaping(out), "{value:?}")?;
                out.write_char('"')
            });
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if let Some(key) = key(self.pass, field) {
            self.string(key, value);
        }
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        match key(self.pass, field) {
            Some(key) if value.is_finite() => self.field(key, |out| write!(out, "{value}")),
            // JSON has no NaN or infinity.
            Some(key) => self.string(key, value),
            None => {}
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if let Some(key) = key(self.pass, field) {
            self.field(key, |out| write!(out, "{value}"));
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        if let Some(key) = key(self.pass, field) {
            self.field(key, |out| write!(out, "{value}"));
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        if let Some(key) = key(self.pass, field) {
            self.field(key, |out| write!(out, "{value}"));
        }
    }
}

impl LineWriter for Json<'_, '_> {
    fn start(&mut self) -> fmt::Result {
        self.out.write_str("{\"time\":\"")?;
        SystemTime.format_time(self.out)?;
        self.out.write_char('"')
    }

    fn head(&mut self, level: &str, target: &str) -> fmt::Result {
        self.string("level", level);
        self.string("target", target);
        self.result
    }

    fn set_pass(&mut self, pass: Pass) {
        self.pass = pass;
    }

    fn result(&mut self) -> fmt::Result {
        self.result
    }

    fn end(&mut self) -> fmt::Result {
        self.out.write_str("}\n")
    }
}

#[cfg(test)]
mod tests;
