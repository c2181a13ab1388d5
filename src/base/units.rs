//! Durations (`250ms`, `5s`, `2m`, `1h`, `30d`) and sizes (`1048576`, `512KB`, `10MiB`) as written in
//! the table, and back again for `lingo check`.
//!
//! Whole numbers only: a fraction (`1.5s`) or a bare number for a duration is more likely a
//! mistake than a wish, so it is refused with a message showing the accepted forms.

use std::time::Duration;

const DURATION_HELP: &str = "write a whole number and a unit: 250ms, 5s, 2m, 1h or 30d";
const SIZE_HELP: &str =
    "write a number of bytes, or a whole number and a unit: 512KB, 10MB, 10MiB, 1GiB";

/// Size units, largest first so [`format_size`] picks a short exact form (decimal first
/// when both fit: `512000` is shown as written, `512KB`, rather than `500KiB`).
const SIZE_UNITS: [(&str, u64); 7] = [
    ("GB", 1_000_000_000),
    ("GiB", 1 << 30),
    ("MB", 1_000_000),
    ("MiB", 1 << 20),
    ("KB", 1_000),
    ("KiB", 1 << 10),
    ("B", 1),
];

/// Parses `<whole number><unit>` with unit `ms`, `s`, `m`, `h` or `d`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("`{text}` is not a duration; {DURATION_HELP}");
    let (number, unit) = split_number(text).ok_or_else(bad)?;
    let millis_per_unit: u64 = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(bad()),
    };
    let millis = number
        .checked_mul(millis_per_unit)
        .ok_or_else(|| format!("`{text}` is too long a duration"))?;
    Ok(Duration::from_millis(millis))
}

/// Parses a byte count, bare or with a unit (`KB` = 1000, `KiB` = 1024; any letter case).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let bad = || format!("`{text}` is not a size; {SIZE_HELP}");
    let (number, unit) = split_number(text).ok_or_else(bad)?;
    let scale = match unit {
        "" => 1,
        unit => SIZE_UNITS
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(unit))
            .map(|&(_, scale)| scale)
            .ok_or_else(bad)?,
    };
    number
        .checked_mul(scale)
        .ok_or_else(|| format!("`{text}` is too large a size"))
}

/// An exact form of a duration that [`parse_duration`] accepts: days when whole and more
/// than one, else hours when whole, else
/// seconds (`120s` reads as written more often than `2m` does), else milliseconds.
pub fn format_duration(duration: Duration) -> String {
    match duration.as_millis() {
        0 => "0s".into(),
        m if m > 86_400_000 && m.is_multiple_of(86_400_000) => format!("{}d", m / 86_400_000),
        m if m.is_multiple_of(3_600_000) => format!("{}h", m / 3_600_000),
        m if m.is_multiple_of(1_000) => format!("{}s", m / 1_000),
        m => format!("{m}ms"),
    }
}

/// A wait as the chat-completions API writes it (its `x-ratelimit-reset-*` fields): `20ms`,
/// `1.5s`, `6m0s`, `1h2m3s`.
pub fn format_wait(ms: u64) -> String {
    if ms == 0 {
        return "0s".into();
    }
    if ms < 1_000 {
        return format!("{ms}ms");
    }
    let (hours, minutes) = (ms / 3_600_000, ms / 60_000 % 60);
    let seconds = match ms % 60_000 {
        s if s.is_multiple_of(1_000) => format!("{}s", s / 1_000),
        s => {
            let text = format!("{}.{:03}", s / 1_000, s % 1_000);
            format!("{}s", text.trim_end_matches('0'))
        }
    };
    match (hours, minutes) {
        (0, 0) => seconds,
        (0, m) => format!("{m}m{seconds}"),
        (h, m) => format!("{h}h{m}m{seconds}"),
    }
}

/// A short exact form of a size, in the units [`parse_size`] accepts.
pub fn format_size(bytes: u64) -> String {
    SIZE_UNITS
        .iter()
        .find(|&&(_, scale)| bytes != 0 && bytes.is_multiple_of(scale))
        .map_or_else(
            || format!("{bytes}B"),
            |(name, scale)| format!("{}{name}", bytes / scale),
        )
}

/// Splits `"10 MiB"` into `(10, "MiB")`; `None` when there is no leading whole number.
fn split_number(text: &str) -> Option<(u64, &str)> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let number = text[..digits].parse().ok()?;
    Some((number, text[digits..].trim_start()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_read_as_the_chat_completions_api_writes_them() {
        for (ms, text) in [
            (0, "0s"),
            (20, "20ms"),
            (1_000, "1s"),
            (1_500, "1.5s"),
            (360_000, "6m0s"),
            (3_723_000, "1h2m3s"),
            (86_400_000, "24h0m0s"),
        ] {
            assert_eq!(format_wait(ms), text);
        }
    }

    #[test]
    fn durations() {
        let ok = [
            ("250ms", 250),
            ("5s", 5_000),
            ("2m", 120_000),
            ("1h", 3_600_000),
            ("30d", 2_592_000_000),
            (" 5 s ", 5_000),
            ("0s", 0),
        ];
        for (text, millis) in ok {
            assert_eq!(
                parse_duration(text),
                Ok(Duration::from_millis(millis)),
                "{text}"
            );
        }
        for text in ["", "5", "s", "1.5s", "5 sec", "-1s", "5S", "abc", "1w"] {
            let error = parse_duration(text).unwrap_err();
            assert_eq!(
                error,
                format!("`{text}` is not a duration; {DURATION_HELP}")
            );
        }
        assert!(parse_duration("99999999999999999999s").is_err());
        assert!(
            parse_duration("18446744073709551615h")
                .unwrap_err()
                .contains("too long")
        );
    }

    #[test]
    fn sizes() {
        let ok = [
            ("1048576", 1_048_576),
            ("512KB", 512_000),
            ("10MB", 10_000_000),
            ("10MiB", 10 << 20),
            ("1GiB", 1 << 30),
            ("1gb", 1_000_000_000),
            ("4 KiB", 4096),
            ("7B", 7),
        ];
        for (text, bytes) in ok {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
        for text in ["", "MB", "1.5MB", "10 megabytes", "-1", "1TB"] {
            let error = parse_size(text).unwrap_err();
            assert_eq!(error, format!("`{text}` is not a size; {SIZE_HELP}"));
        }
        assert!(
            parse_size("18446744073709551615GiB")
                .unwrap_err()
                .contains("too large")
        );
    }

    #[test]
    fn formats_round_trip() {
        for text in [
            "250ms", "5s", "120s", "1h", "24h", "30d", "90s", "1500ms", "0s",
        ] {
            assert_eq!(format_duration(parse_duration(text).unwrap()), text);
        }
        assert_eq!(format_duration(parse_duration("2m").unwrap()), "120s");
        for text in ["10MiB", "1GiB", "512KB", "10MB", "1000001B", "0B"] {
            assert_eq!(format_size(parse_size(text).unwrap()), text);
        }
    }
}
