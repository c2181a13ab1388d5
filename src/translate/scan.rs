//! A strict one-pass JSON reader: for the small flat objects of a native stream (one per
//! token), and for a client's request (`translate::json`).
//!
//! It exists because serde's generic visitor is most of a streamed translation's work (the
//! figures are in docs/benchmarks.md), most of it for keys lingo ignores. It reads only what
//! it is sure of, and its caller returns `None` ("not sure") for anything else: for a native
//! line, a nested value it does not expect, a number that is not a plain unsigned integer, a
//! field given twice; for any reader, a key with an escape or past ASCII, a lone surrogate, a
//! raw control character, a string that is not UTF-8, bytes after the value. The caller then
//! lets serde read the text, so a response is never different from serde's: either the same
//! value, or serde's own (value or error). Each reader built on it has a test that walks the
//! fields of the serde struct it stands in for, so a field added there and not here fails.

use std::borrow::Cow;

/// Deepest nesting a skipped value may have before the scan leaves it to serde.
const MAX_SKIP_DEPTH: usize = 16;

/// A cursor over JSON text, as bytes, made one of two ways. Over bytes ([`Scan::new`], a
/// native line, of which lingo reads one string): only the strings it gives are checked as
/// UTF-8, and any other string with a byte past ASCII is checked as it is read. Over text
/// already checked whole ([`Scan::of_str`], a request, most of whose strings are kept):
/// nothing is checked again.
#[derive(Debug)]
pub struct Scan<'a> {
    text: &'a [u8],
    at: usize,
    /// The text, when it is known to be UTF-8: the strings read are sliced from it, not
    /// checked again.
    whole: Option<&'a str>,
}

impl<'a> Scan<'a> {
    /// A scan of bytes, each string checked as UTF-8 as it is read.
    pub fn new(text: &'a [u8]) -> Self {
        Scan {
            text,
            at: 0,
            whole: None,
        }
    }

    /// A scan of text known to be UTF-8.
    pub fn of_str(text: &'a str) -> Self {
        Scan {
            text: text.as_bytes(),
            at: 0,
            whole: Some(text),
        }
    }

    /// The text from `from` to `to` (a string's bytes, or a number's), if it is UTF-8.
    #[inline(always)]
    fn text(&self, from: usize, to: usize) -> Option<&'a str> {
        match self.whole {
            Some(whole) => whole.get(from..to),
            None => std::str::from_utf8(&self.text[from..to]).ok(),
        }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text
    }

    /// The next byte that is not JSON whitespace, left unread.
    #[inline(always)]
    pub fn peek(&mut self) -> Option<u8> {
        let bytes = self.bytes();
        while let Some(&c) = bytes.get(self.at) {
            if !matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(c);
            }
            self.at += 1;
        }
        None
    }

    #[inline(always)]
    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.at += 1)
    }

    fn word(&mut self, word: &str) -> Option<()> {
        self.peek()?;
        self.text[self.at..]
            .starts_with(word.as_bytes())
            .then(|| self.at += word.len())
    }

    /// An object: `member` is called with each key and the scan at its value, which it must
    /// read (or return `None`).
    pub fn object(
        &mut self,
        mut member: impl FnMut(&'a [u8], &mut Self) -> Option<()>,
    ) -> Option<()> {
        self.list(b'{', b'}', |scan| {
            let (from, to) = scan.member_key()?;
            member(&scan.text[from..to], scan)
        })
    }

    /// [`Scan::object`], each key given as text.
    pub fn object_str(
        &mut self,
        mut member: impl FnMut(&'a str, &mut Self) -> Option<()>,
    ) -> Option<()> {
        self.list(b'{', b'}', |scan| {
            let (from, to) = scan.member_key()?;
            member(scan.text(from, to)?, scan)
        })
    }

    /// A member's key and the colon after it.
    #[inline(always)]
    fn member_key(&mut self) -> Option<(usize, usize)> {
        let key = self.key()?;
        self.eat(b':')?;
        Some(key)
    }

    /// An array: `item` is called with the scan at each value, which it must read (or return
    /// `None`).
    pub fn array(&mut self, item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.list(b'[', b']', item)
    }

    /// `open`, items read by `item` separated by commas, `close`: an object's members or an
    /// array's values.
    fn list(
        &mut self,
        open: u8,
        close: u8,
        mut item: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        self.eat(open)?;
        if self.peek()? == close {
            self.at += 1;
            return Some(());
        }
        loop {
            item(self)?;
            match self.peek()? {
                b',' => self.at += 1,
                c if c == close => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// The end of the text: nothing but whitespace may follow the value.
    pub fn end(mut self) -> Option<()> {
        self.peek().is_none().then_some(())
    }

    /// A string, borrowed unless it has escapes. This and its small steps are always
    /// inlined: called some ten times a line, they are shorter than a call's set-up.
    #[inline(always)]
    pub fn str(&mut self) -> Option<Cow<'a, str>> {
        match self.plain_str()? {
            Ok((from, to)) => self.text(from, to).map(Cow::Borrowed),
            Err((start, end)) => self.with_care(start, end),
        }
    }

    /// A string read and dropped: one of plain ASCII is not checked as UTF-8 (it is).
    #[inline(always)]
    fn skip_str(&mut self) -> Option<()> {
        match self.plain_str()? {
            Ok(_) => Some(()),
            Err((start, end)) => self.with_care(start, end).map(drop),
        }
    }

    /// A key: a string of plain ASCII, as the span of its bytes, `(from, to)` (one with
    /// escapes or other bytes is left to serde: `None`).
    #[inline(always)]
    fn key(&mut self) -> Option<(usize, usize)> {
        self.plain_str()?.ok()
    }

    /// A string's opening quote and its run of plain ASCII: `Ok` with the span of its bytes
    /// when the run is the whole string (the scan then past its closing quote), else
    /// `Err` with where the string starts and the byte that needs care (the scan left at the
    /// string's start).
    #[inline(always)]
    fn plain_str(&mut self) -> Option<Result<(usize, usize), (usize, usize)>> {
        self.eat(b'"')?;
        let start = self.at;
        let end = self.plain_run(start);
        if *self.bytes().get(end)? != b'"' {
            return Some(Err((start, end)));
        }
        self.at = end + 1;
        Some(Ok((start, end)))
    }

    /// `null` or a string.
    pub fn opt_str(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.peek()? == b'n' {
            return self.word("null").map(|()| None);
        }
        self.str().map(Some)
    }

    /// `null`.
    pub fn null(&mut self) -> Option<()> {
        self.word("null")
    }

    /// Whether the value is `null` (left unread when it is not).
    pub fn is_null(&mut self) -> bool {
        self.peek() == Some(b'n')
    }

    pub fn bool(&mut self) -> Option<bool> {
        match self.peek()? {
            b't' => self.word("true").map(|()| true),
            b'f' => self.word("false").map(|()| false),
            _ => None,
        }
    }

    /// A plain unsigned integer (`0` or digits not starting with `0`, no sign, fraction or
    /// exponent) that fits a `u64`.
    pub fn u64(&mut self) -> Option<u64> {
        self.peek()?;
        let start = self.at;
        let digits = self.digits();
        let text = &self.text[start..self.at];
        if digits == 0 || (digits > 1 && text[0] == b'0') {
            return None;
        }
        if matches!(self.bytes().get(self.at), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        text.iter().try_fold(0_u64, |n, &d| {
            n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
        })
    }

    /// Any value, read and dropped.
    pub fn skip(&mut self) -> Option<()> {
        self.skip_at(0)
    }

    fn skip_at(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => self.skip_str(),
            b't' => self.word("true"),
            b'f' => self.word("false"),
            b'n' => self.word("null"),
            b'-' | b'0'..=b'9' => self.skip_number(),
            _ if depth == MAX_SKIP_DEPTH => None,
            b'[' => self.array(|scan| scan.skip_at(depth + 1)),
            // Anything else but an object is refused by `object`.
            _ => self.object(|_, scan| scan.skip_at(depth + 1)),
        }
    }

    /// A number as JSON writes one: its text.
    pub fn number(&mut self) -> Option<&'a str> {
        self.peek()?;
        let from = self.at;
        self.skip_number()?;
        self.text(from, self.at)
    }

    /// A number as JSON writes one, `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, read
    /// (the scan at its first byte).
    fn skip_number(&mut self) -> Option<()> {
        if self.bytes()[self.at] == b'-' {
            self.at += 1;
        }
        let start = self.at;
        let digits = self.digits();
        if digits == 0 || (digits > 1 && self.bytes()[start] == b'0') {
            return None;
        }
        if self.bytes().get(self.at) == Some(&b'.') {
            self.at += 1;
            (self.digits() > 0).then_some(())?;
        }
        if matches!(self.bytes().get(self.at), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.bytes().get(self.at), Some(b'+' | b'-')) {
                self.at += 1;
            }
            (self.digits() > 0).then_some(())?;
        }
        Some(())
    }

    fn digits(&mut self) -> usize {
        let start = self.at;
        let bytes = self.bytes();
        while bytes.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        self.at - start
    }

    /// Where the run of string bytes from `at` that need no care ends: at a quote, a
    /// backslash, a control character, a byte past ASCII or the end of the text. Eight bytes
    /// at a time, then the last few one by one.
    #[inline(always)]
    fn plain_run(&self, at: usize) -> usize {
        let bytes = self.bytes();
        let mut at = at;
        while let Some(word) = bytes.get(at..at + 8) {
            let marked = needs_care(u64::from_le_bytes(word.try_into().expect("eight bytes")));
            if marked != 0 {
                return at + marked.trailing_zeros() as usize / 8;
            }
            at += 8;
        }
        while bytes
            .get(at)
            .is_some_and(|&c| c != b'"' && c != b'\\' && (0x20..0x80).contains(&c))
        {
            at += 1;
        }
        at
    }

    /// The rest of a string from its first byte that needs care at `at` (`start`: its first
    /// byte): escapes unescaped, bytes past ASCII checked as UTF-8 unless the whole text was
    /// (a run of them ends at a quote or a backslash, which no UTF-8 sequence holds), a
    /// control character refused.
    /// Not inlined, not cold either: a token past ASCII is common.
    #[inline(never)]
    fn with_care(&mut self, start: usize, mut at: usize) -> Option<Cow<'a, str>> {
        let bytes = self.bytes();
        // Borrowed until the first escape; `from`: the first byte not yet in `out`.
        let mut out: Option<String> = None;
        let mut from = start;
        loop {
            match *bytes.get(at)? {
                b'"' => {
                    self.at = at + 1;
                    let last = self.text(from, at)?;
                    return Some(match out {
                        None => Cow::Borrowed(last),
                        Some(mut out) => {
                            out.push_str(last);
                            Cow::Owned(out)
                        }
                    });
                }
                b'\\' => {
                    let out = out.get_or_insert_with(|| String::with_capacity(at - start + 16));
                    out.push_str(self.text(from, at)?);
                    let (c, used) = unescape(&bytes[at + 1..])?;
                    out.push(c);
                    at += 1 + used;
                    from = at;
                }
                c if c < 0x20 => return None,
                c if c >= 0x80 => at += 1,
                _ => at = self.plain_run(at),
            }
        }
    }
}

/// The character an escape stands for (`rest`: what follows the backslash) and how many
/// bytes of `rest` it took. A lone surrogate is left to serde, which refuses it.
fn unescape(rest: &[u8]) -> Option<(char, usize)> {
    let c = match rest.first()? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let high = hex4(rest.get(1..5)?)?;
            if !(0xD800..0xE000).contains(&high) {
                return Some((char::from_u32(high)?, 5));
            }
            if high >= 0xDC00 || rest.get(5..7)? != b"\\u" {
                return None;
            }
            let low = hex4(rest.get(7..11)?)?;
            if !(0xDC00..0xE000).contains(&low) {
                return None;
            }
            let c = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
            return Some((char::from_u32(c)?, 11));
        }
        _ => return None,
    };
    Some((c, 1))
}

/// A word with the high bit set in each byte that is a quote, a backslash, below 0x20 or past
/// ASCII: exact up to the first such byte (a borrow may mark bytes after it), which is all
/// [`Scan::plain_run`] reads.
#[inline(always)]
fn needs_care(word: u64) -> u64 {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGHS: u64 = ONES * 0x80;
    let zero_at = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    zero_at(word ^ (ONES * u64::from(b'"')))
        | zero_at(word ^ (ONES * u64::from(b'\\')))
        | below_space
        | word & HIGHS
}

fn hex4(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0, |n, &d| {
        let v = (d as char).to_digit(16)?;
        Some(n * 16 + v)
    })
}

/// The fields of one object read so far: serde refuses a known field given twice, so a
/// second one is left to it.
#[derive(Debug, Default)]
pub struct Seen(u32);

impl Seen {
    /// Marks field number `field` (< 32) read; `None` if it was already.
    pub fn first(&mut self, field: u32) -> Option<()> {
        let bit = 1 << field;
        (self.0 & bit == 0).then(|| self.0 |= bit)
    }
}

/// The fields a serde struct reads, as its `Deserialize` names them to the deserializer
/// (`deserialize_struct(name, FIELDS, ..)`): for the tests that check a scan reads every one
/// of them, or leaves it to serde on purpose.
#[cfg(test)]
pub(crate) fn fields_of<'de, T: serde::Deserialize<'de>>() -> &'static [&'static str] {
    use serde::de::{self, Visitor};

    /// Records the fields it is asked for, and gives no value.
    struct Fields<'a>(&'a mut &'static [&'static str]);

    impl<'de> de::Deserializer<'de> for Fields<'_> {
        type Error = de::value::Error;

        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("its fields are all that was asked for"))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }

    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Fields(&mut fields));
    fields
}

/// `count` objects of up to five members, keys from `keys`, values JSON and not (and any of
/// `values`), with and without whitespace and trailing bytes: for the tests that check a
/// scan against serde.
#[cfg(test)]
pub(crate) fn random_objects(
    keys: &[&str],
    values: &[&str],
    count: usize,
) -> impl Iterator<Item = String> {
    const VALUES: [&str; 22] = [
        r#""stop""#,
        "null",
        "true",
        "false",
        "0",
        "42",
        "01",
        "-1",
        "1.5e3",
        "18446744073709551616",
        r#""a\nb\u00e9\ud83d\ude00""#,
        r#""lone \udc00""#,
        "[]",
        "[1,[2,{}]]",
        r#"{"k":"v"}"#,
        "{}",
        r#""x"#,
        "nul",
        "[1,]",
        "\"\u{1}\"",
        "\"caf\u{e9} \u{1f600} and more than eight bytes\"",
        "\"\u{e9}\\n\u{e9}\"",
    ];
    const SPACES: [&str; 5] = ["", "", " ", "\n", "\t "];
    let mut next = crate::base::picks::picker(0x2545_f491_4f6c_dd1d);
    let values: Vec<String> = VALUES.iter().chain(values).map(|v| v.to_string()).collect();
    let keys: Vec<String> = keys.iter().map(|k| format!("\"{k}\":")).collect();
    (0..count).map(move |_| {
        let mut line = String::from(SPACES[next(SPACES.len())]);
        line.push('{');
        for i in 0..next(6) {
            if i > 0 {
                line.push(',');
            }
            line.push_str(SPACES[next(SPACES.len())]);
            line.push_str(&keys[next(keys.len())]);
            line.push_str(SPACES[next(SPACES.len())]);
            line.push_str(&values[next(values.len())]);
        }
        line.push_str(["}", "}", "}\n", "} x", ",}", ""][next(6)]);
        line
    })
}

/// `line` as bytes, then spoilt the ways an upstream's bytes can be: a lead byte made
/// `0xff`, a lead byte dropped (its continuation alone), a control character after a
/// character past ASCII. For the tests that check a scan of bytes against serde's.
#[cfg(test)]
pub(crate) fn spoilt(line: &str) -> Vec<Vec<u8>> {
    let bytes = line.as_bytes();
    let mut out = vec![bytes.to_vec()];
    if let Some(lead) = bytes.iter().position(|&b| b >= 0xc0) {
        let mut ff = bytes.to_vec();
        ff[lead] = 0xff;
        let mut dropped = bytes.to_vec();
        dropped.remove(lead);
        let mut control = bytes.to_vec();
        let after = lead + line[lead..].chars().next().map_or(1, char::len_utf8);
        control.insert(after, 0x01);
        out.extend([ff, dropped, control]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn str_of(json: &str) -> Option<Cow<'_, str>> {
        let mut scan = Scan::new(json.as_bytes());
        let s = scan.str()?;
        scan.end().map(|()| s)
    }

    /// Every string reads as serde reads it, or is left to serde.
    #[test]
    fn strings_read_as_serde_reads_them() {
        let cases = [
            (r#""plain""#, true),
            (r#""""#, true),
            (r#""caf\u00e9 \u00E9""#, true),
            (r#""tab\\there \"q\" \/ \b\f\n\r\t""#, true),
            (r#""\u003cb\u003e \ud83d\ude00""#, true),
            ("\"caf\u{e9} \u{1f600}\"", true),
            (r#""lone \ud83d""#, false),
            (r#""lone \ude00""#, false),
            (r#""pair \ud83d\u0041""#, false),
            (r#""bad \x""#, false),
            (r#""short \u12""#, false),
            ("\"raw \u{1} control\"", false),
            (r#""unterminated"#, false),
            (r#""trailing" x"#, false),
        ];
        for (json, fast) in cases {
            let ours = str_of(json);
            assert_eq!(ours.is_some(), fast, "{json}");
            if let Some(ours) = ours {
                assert_eq!(
                    ours,
                    serde_json::from_str::<String>(json).unwrap(),
                    "{json}"
                );
            }
        }
        assert!(matches!(str_of(r#""plain""#), Some(Cow::Borrowed(_))));
    }

    /// Bytes past ASCII, which the scan checks as it reads them: valid UTF-8 reads as serde
    /// reads it (borrowed when unescaped), anything else is left to serde, which refuses it.
    #[test]
    fn bytes_past_ascii_are_checked_as_read() {
        let cases: [(&[u8], Option<&str>); 10] = [
            (b"\"caf\xc3\xa9\"", Some("caf\u{e9}")),
            (
                b"\"\xf0\x9f\x98\x80 and more than eight bytes\"",
                Some("\u{1f600} and more than eight bytes"),
            ),
            (b"\"\xc3\xa9\\n\xc3\xa9\"", Some("\u{e9}\n\u{e9}")),
            (b"\"\\u00e9\xc3\xa9\"", Some("\u{e9}\u{e9}")),
            (b"\"bad \xff\"", None),
            (b"\"cut \xc3\"", None),
            (b"\"cut by an escape \xc3\\n\"", None),
            (b"\"overlong \xc0\xaf\"", None),
            (b"\"\xed\xa0\x80 a surrogate\"", None),
            (b"\"\xc3\xa9\x01 a control after\"", None),
        ];
        for (json, want) in cases {
            let mut scan = Scan::new(json);
            let ours = scan.str().filter(|_| scan.peek().is_none());
            assert_eq!(ours.as_deref(), want, "{json:?}");
            let serde = serde_json::from_slice::<String>(json).ok();
            assert_eq!(serde.as_deref(), want, "{json:?}");
        }
        let mut scan = Scan::new(b"\"caf\xc3\xa9\"");
        assert!(matches!(scan.str(), Some(Cow::Borrowed(_))));
        // A key past ASCII, or a skipped value not UTF-8, is left to serde.
        assert_eq!(Scan::new(b"{\"\xc3\xa9\":1}").object(|_, s| s.skip()), None);
        assert_eq!(Scan::new(b"{\"a\":\"\xff\"}").object(|_, s| s.skip()), None);
        let long = b"{\"a\":\"more than eight bytes \xff\"}";
        assert_eq!(Scan::new(long).object(|_, s| s.skip()), None);
        assert_eq!(
            Scan::new(b"{\"a\":\"\xc3\xa9\"}").object(|_, s| s.skip()),
            Some(())
        );
    }

    /// Numbers: a `u64` only when it is a plain unsigned integer serde reads the same; any
    /// JSON number skipped; what JSON does not allow refused.
    #[test]
    fn numbers() {
        let u64_of = |json: &str| {
            let mut scan = Scan::new(json.as_bytes());
            let n = scan.u64()?;
            scan.end().map(|()| n)
        };
        assert_eq!(u64_of("0"), Some(0));
        assert_eq!(u64_of(" 42 "), Some(42));
        assert_eq!(u64_of("18446744073709551615"), Some(u64::MAX));
        for json in [
            "18446744073709551616",
            "01",
            "-1",
            "-0",
            "1.0",
            "1e2",
            "",
            "x",
            "1x",
        ] {
            assert_eq!(u64_of(json), None, "{json}");
        }
    }

    /// Any JSON value is skipped, nothing JSON does not allow, nothing nested too deep.
    #[test]
    fn skipping() {
        let skips = |json: &str| {
            let mut scan = Scan::new(json.as_bytes());
            scan.skip().and_then(|()| scan.end()).is_some()
        };
        let values = [
            "0",
            "-0",
            "1.5",
            "-12.5e-3",
            "1E+2",
            r#"[1,[2,{"a":null}],true]"#,
            "{}",
        ];
        for json in values {
            assert!(skips(json), "{json}");
            assert!(serde_json::from_str::<serde::de::IgnoredAny>(json).is_ok());
        }
        let not_json = [
            "01", "-", "1.", ".5", "1e", "+1", "[1,]", r#"{"a"}"#, "[1 2]", "nul",
        ];
        for json in not_json {
            assert!(!skips(json), "{json}");
            assert!(serde_json::from_str::<serde::de::IgnoredAny>(json).is_err());
        }
        let depth = MAX_SKIP_DEPTH + 1;
        assert!(!skips(&format!(
            "{}{}",
            "[".repeat(depth),
            "]".repeat(depth)
        )));
    }

    /// A run of plain bytes ends at the first byte that needs care, wherever it stands in
    /// its word or in the few bytes after the last word, and at the end of the text.
    #[test]
    fn a_plain_run_ends_at_the_first_byte_that_needs_care() {
        let needs_care = |c: u8| c == b'"' || c == b'\\' || !(0x20..0x80).contains(&c);
        for c in 0..=u8::MAX {
            for before in 0..20 {
                for after in [0, 1, 9] {
                    let mut text = vec![b'a'; before];
                    text.push(c);
                    text.extend(std::iter::repeat_n(b'"', after));
                    let want = if needs_care(c) { before } else { before + 1 };
                    let want = if after == 0 && !needs_care(c) {
                        text.len()
                    } else {
                        want
                    };
                    assert_eq!(Scan::new(&text).plain_run(0), want, "{c:#x} after {before}");
                }
            }
        }
    }

    #[test]
    fn a_field_is_first_once() {
        let mut seen = Seen::default();
        assert_eq!(seen.first(0), Some(()));
        assert_eq!(seen.first(3), Some(()));
        assert_eq!(seen.first(0), None);
    }
}
