//! What the rules look at: the fields each side read, and what in the bytes causes a
//! difference.

use super::super::request::Seen;
use super::super::response::Read;
use super::super::{BodyEnd, Fields, Octets};

pub fn values<'a>(fields: &'a Fields, name: &'a [u8]) -> impl Iterator<Item = &'a Octets> {
    fields
        .iter()
        .filter(move |(n, _)| n.0 == name)
        .map(|(_, v)| v)
}

pub fn has(fields: &Fields, name: &[u8]) -> bool {
    values(fields, name).next().is_some()
}

pub fn without(fields: &Fields, name: &[u8]) -> Fields {
    fields
        .iter()
        .filter(|(n, _)| n.0 != name)
        .cloned()
        .collect()
}

/// The comma-separated items of a field value, trimmed.
pub fn items(value: &Octets) -> impl Iterator<Item = &[u8]> {
    value.0.split(|&b| b == b',').map(<[u8]>::trim_ascii)
}

/// `1*DIGIT` within 64 bits.
pub fn number(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// How many field lines named `name` (any case) `bytes` holds.
pub fn field_lines(bytes: &[u8], name: &[u8]) -> usize {
    (bytes.split(|&b| b == b'\n'))
        .filter(|line| line.len() > name.len() && line[..name.len()].eq_ignore_ascii_case(name))
        .filter(|line| line[name.len()..].trim_ascii_start().starts_with(b":"))
        .count()
}

/// A request or a response: a head and a body.
pub trait Message: Clone + PartialEq {
    fn body(&mut self) -> &mut BodyEnd;
}

impl Message for Seen {
    fn body(&mut self) -> &mut BodyEnd {
        &mut self.body
    }
}

impl Message for Read {
    fn body(&mut self) -> &mut BodyEnd {
        &mut self.body
    }
}

/// Whether lingo's body failed where hyper read the same message whole, all else equal.
pub fn failed_here_read_there<T: Message>(lingo: Option<&T>, hyper: Option<&T>) -> bool {
    let (Some(l), Some(h)) = (lingo, hyper) else {
        return false;
    };
    let (mut failed, mut read) = (l.clone(), h.clone());
    *failed.body() == BodyEnd::Failed && matches!(read.body(), BodyEnd::Whole(..)) && {
        *failed.body() = read.body().clone();
        failed == read
    }
}

/// Whether `bytes` hold a line that begins as a chunk size with an extension (`;`) and
/// holds a control byte, or runs over 4 KiB.
pub fn odd_extension(bytes: &[u8]) -> bool {
    bytes.split(|&b| b == b'\n').any(|line| {
        let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
        let rest = line[digits..].trim_ascii_start();
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        digits > 0
            && rest.starts_with(b";")
            && (line.len() >= 4096 || line.iter().any(|&b| b < b' ' && b != b'\t' || b == 0x7f))
    })
}

/// The items of each `Content-Length` line `bytes` hold, read as numbers.
fn lengths(bytes: &[u8]) -> Vec<Option<u64>> {
    let name = b"content-length:";
    (bytes.split(|&b| b == b'\n'))
        .filter(|line| line.len() > name.len() && line[..name.len()].eq_ignore_ascii_case(name))
        .flat_map(|line| {
            let value = line[name.len()..]
                .strip_suffix(b"\r")
                .unwrap_or(&line[name.len()..]);
            let value = Octets(value.to_vec());
            items(&value).map(number).collect::<Vec<_>>()
        })
        .collect()
}

/// Whether `bytes` hold a `Content-Length` line whose value is 2^64-2 or more.
pub fn huge_length(bytes: &[u8]) -> bool {
    lengths(bytes)
        .iter()
        .any(|n| n.is_some_and(|n| n >= u64::MAX - 1))
}

/// Whether `bytes` hold a `Content-Length` line with an item that is no number.
pub fn no_number_length(bytes: &[u8]) -> bool {
    lengths(bytes).contains(&None)
}

/// Whether a value has a byte outside visible ASCII (and tab): hyper cannot read it as
/// text, and reads no token in it.
pub fn opaque(value: &Octets) -> bool {
    value.0.iter().any(|&b| b < b' ' && b != b'\t' || b >= 0x7f)
}

/// Whether a `Connection` value is [`opaque`].
pub fn opaque_connection(fields: &Fields) -> bool {
    values(fields, b"connection").any(opaque)
}

/// Whether `bytes` hold a last chunk (`0`, extensions, CRLF) whose trailer section, up to the next
/// CRLF CRLF, has a bare LF.
pub fn bare_lf_trailer(bytes: &[u8]) -> bool {
    (0..bytes.len()).any(|at| {
        let line_start = at == 0 || bytes[at - 1] == b'\n';
        let zeros = bytes[at..].iter().take_while(|&&b| b == b'0').count();
        // The rest of the last chunk's line: its extensions, if any, then CRLF.
        let line = &bytes[at + zeros..];
        let Some(end) = line.windows(2).position(|w| w == b"\r\n") else {
            return false;
        };
        let extensions = line[..end].trim_ascii_start();
        if !(extensions.is_empty() || extensions.starts_with(b";")) {
            return false;
        }
        let rest = &line[end + 2..];
        let section = match rest.windows(4).position(|w| w == b"\r\n\r\n") {
            Some(end) => &rest[..end + 4],
            None => rest,
        };
        let bare =
            (0..section.len()).any(|i| section[i] == b'\n' && (i == 0 || section[i - 1] != b'\r'));
        line_start && zeros > 0 && bare
    })
}
