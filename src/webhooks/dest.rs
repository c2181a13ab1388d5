//! Where deliveries may go: the address lingo connects to, after resolving the name, must be
//! a public one. Every range of IANA's special-purpose address registries (IPv4 and IPv6) is
//! refused (loopback, private, link-local and the cloud metadata address in it, CGNAT's
//! shared space, "this network" and the unspecified address, IPv4-mapped and -compatible
//! IPv6, multicast, documentation, benchmarking, ...) unless `webhooks.allow` names it. An
//! address that embeds an IPv4 one (mapped, NAT64) is judged by that one too.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::base::cidr::Cidr;

/// A destination lingo does not deliver to: the address, and the range it is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    pub addr: IpAddr,
    pub range: &'static str,
}

/// The special-purpose IPv4 ranges, with what each is.
const V4: [(Ipv4Addr, u8, &str); 18] = [
    (Ipv4Addr::new(0, 0, 0, 0), 8, "\"this network\" (0.0.0.0/8)"),
    (Ipv4Addr::new(10, 0, 0, 0), 8, "private (10.0.0.0/8)"),
    (
        Ipv4Addr::new(100, 64, 0, 0),
        10,
        "shared address space, CGNAT (100.64.0.0/10)",
    ),
    (Ipv4Addr::new(127, 0, 0, 0), 8, "loopback (127.0.0.0/8)"),
    (
        Ipv4Addr::new(169, 254, 0, 0),
        16,
        "link-local, cloud metadata (169.254.0.0/16)",
    ),
    (Ipv4Addr::new(172, 16, 0, 0), 12, "private (172.16.0.0/12)"),
    (
        Ipv4Addr::new(192, 0, 0, 0),
        24,
        "IETF protocol assignments (192.0.0.0/24)",
    ),
    (
        Ipv4Addr::new(192, 0, 2, 0),
        24,
        "documentation (192.0.2.0/24)",
    ),
    (
        Ipv4Addr::new(192, 31, 196, 0),
        24,
        "AS112 (192.31.196.0/24)",
    ),
    (Ipv4Addr::new(192, 52, 193, 0), 24, "AMT (192.52.193.0/24)"),
    (
        Ipv4Addr::new(192, 88, 99, 0),
        24,
        "6to4 relay anycast (192.88.99.0/24)",
    ),
    (
        Ipv4Addr::new(192, 168, 0, 0),
        16,
        "private (192.168.0.0/16)",
    ),
    (
        Ipv4Addr::new(192, 175, 48, 0),
        24,
        "AS112 (192.175.48.0/24)",
    ),
    (
        Ipv4Addr::new(198, 18, 0, 0),
        15,
        "benchmarking (198.18.0.0/15)",
    ),
    (
        Ipv4Addr::new(198, 51, 100, 0),
        24,
        "documentation (198.51.100.0/24)",
    ),
    (
        Ipv4Addr::new(203, 0, 113, 0),
        24,
        "documentation (203.0.113.0/24)",
    ),
    (Ipv4Addr::new(224, 0, 0, 0), 4, "multicast (224.0.0.0/4)"),
    (
        Ipv4Addr::new(240, 0, 0, 0),
        4,
        "reserved, broadcast (240.0.0.0/4)",
    ),
];

/// The special-purpose IPv6 ranges. NAT64's well-known prefix is not here: its addresses
/// are judged by the IPv4 address they carry (see [`embedded`]).
const V6: [(Ipv6Addr, u8, &str); 15] = [
    (Ipv6Addr::UNSPECIFIED, 128, "unspecified (::/128)"),
    (Ipv6Addr::LOCALHOST, 128, "loopback (::1/128)"),
    (
        Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0, 0),
        96,
        "IPv4-mapped (::ffff:0:0/96)",
    ),
    (Ipv6Addr::UNSPECIFIED, 96, "IPv4-compatible (::/96)"),
    (
        Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0),
        48,
        "local-use NAT64 (64:ff9b:1::/48)",
    ),
    (
        Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0),
        64,
        "discard-only (100::/64)",
    ),
    (
        Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
        32,
        "documentation (2001:db8::/32)",
    ),
    (
        Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0),
        23,
        "IETF protocol assignments, Teredo (2001::/23)",
    ),
    (
        Ipv6Addr::new(0x2002, 0, 0, 0, 0, 0, 0, 0),
        16,
        "6to4 (2002::/16)",
    ),
    (
        Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0),
        20,
        "documentation (3fff::/20)",
    ),
    (
        Ipv6Addr::new(0x5f00, 0, 0, 0, 0, 0, 0, 0),
        16,
        "SRv6 SIDs (5f00::/16)",
    ),
    (
        Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0),
        7,
        "unique local, private (fc00::/7)",
    ),
    (
        Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0),
        10,
        "link-local (fe80::/10)",
    ),
    (
        Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0),
        10,
        "site-local (fec0::/10)",
    ),
    (
        Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0),
        8,
        "multicast (ff00::/8)",
    ),
];

/// Whether lingo may connect to `addr`: allowed when `allow` names it (or the IPv4 address
/// it carries), else refused when it is in a special-purpose range (or carries an IPv4
/// address that is).
pub fn check(addr: IpAddr, allow: &[Cidr]) -> Result<(), Refused> {
    let inner = embedded(addr);
    let allowed = |ip: IpAddr| allow.iter().any(|range| range.contains(ip));
    if allowed(addr) || inner.is_some_and(|v4| allowed(IpAddr::V4(v4))) {
        return Ok(());
    }
    let refused = |range| Err(Refused { addr, range });
    if let Some(range) = special(addr) {
        return refused(range);
    }
    match inner.and_then(|v4| special(IpAddr::V4(v4))) {
        Some(range) => refused(range),
        None => Ok(()),
    }
}

/// The range `addr` is in, if it is a special-purpose one.
fn special(addr: IpAddr) -> Option<&'static str> {
    let hit = |ip: IpAddr, len: u8| Cidr::new(ip, len).contains(addr);
    match addr {
        IpAddr::V4(_) => V4
            .iter()
            .find(|(ip, len, _)| hit(IpAddr::V4(*ip), *len))
            .map(|(.., range)| *range),
        IpAddr::V6(_) => V6
            .iter()
            .find(|(ip, len, _)| hit(IpAddr::V6(*ip), *len))
            .map(|(.., range)| *range),
    }
}

/// The IPv4 address an IPv6 one carries: IPv4-mapped (`::ffff:a.b.c.d`) or NAT64's
/// well-known prefix (`64:ff9b::a.b.c.d`).
fn embedded(addr: IpAddr) -> Option<Ipv4Addr> {
    let IpAddr::V6(v6) = addr else {
        return None;
    };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let nat64 = Cidr::new(
        IpAddr::V6(Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0)),
        96,
    );
    nat64.contains(addr).then(|| {
        let [.., a, b, c, d] = v6.octets();
        Ipv4Addr::new(a, b, c, d)
    })
}

/// The address a URL's host names without a lookup: an IPv6 literal in brackets, or an
/// IPv4 address in any form the system's resolver reads as one without asking DNS (`1.2.3.4`,
/// and `inet_aton`'s shorter and numeric forms: `0`, `127.1`, `2130706433`, `0x7f.0.0.1`,
/// `0177.0.0.1`). `None`: a name.
pub fn literal(host: &str) -> Option<IpAddr> {
    if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return v6.parse::<Ipv6Addr>().ok().map(IpAddr::V6);
    }
    let parts: Vec<u64> = host.split('.').map(number).collect::<Option<_>>()?;
    let (last, leading) = parts.split_last()?;
    if leading.len() > 3 || leading.iter().any(|&p| p > 0xff) {
        return None;
    }
    let width = 8 * (4 - leading.len());
    if *last >= 1u64 << width {
        return None;
    }
    let high = leading
        .iter()
        .enumerate()
        .fold(0u64, |acc, (i, &p)| acc | (p << (24 - 8 * i)));
    u32::try_from(high | last)
        .ok()
        .map(|n| IpAddr::V4(Ipv4Addr::from(n)))
}

/// One part of an `inet_aton` address: decimal, `0x` hex or `0`-led octal.
fn number(part: &str) -> Option<u64> {
    let (digits, radix) = match part.as_bytes() {
        [b'0', b'x' | b'X', rest @ ..] => (rest, 16),
        [b'0', rest @ ..] if !rest.is_empty() => (rest, 8),
        digits => (digits, 10),
    };
    if digits.is_empty() && radix != 16 {
        return None;
    }
    let text = std::str::from_utf8(digits).ok()?;
    if text.is_empty() {
        return Some(0);
    }
    if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(text, radix)
        .ok()
        .filter(|&n| n <= u64::from(u32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn special_addresses_are_refused_public_ones_are_not() {
        let refused = [
            "127.0.0.1",
            "127.255.255.254",
            "0.0.0.0",
            "10.1.2.3",
            "100.64.0.1",
            "100.127.255.255",
            "169.254.169.254",
            "172.31.0.1",
            "192.168.0.1",
            "192.0.2.1",
            "198.18.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:8.8.8.8",
            "::127.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b:1::1",
            "2001:db8::1",
            "2001::1",
            "2002:7f00:1::",
            "fd00::1",
            "fe80::1",
            "ff02::1",
        ];
        for addr in refused {
            assert!(check(ip(addr), &[]).is_err(), "{addr}");
        }
        let public = [
            "8.8.8.8",
            "100.63.255.255",
            "100.128.0.0",
            "172.32.0.1",
            "2606:4700::1111",
            "64:ff9b::808:808",
        ];
        for addr in public {
            assert_eq!(check(ip(addr), &[]), Ok(()), "{addr}");
        }
        let metadata = check(ip("169.254.169.254"), &[]).unwrap_err();
        assert!(metadata.range.contains("metadata"), "{metadata:?}");
    }

    #[test]
    fn the_allow_list_names_what_may_be_reached() {
        let allow = [
            Cidr::parse("127.0.0.0/8").unwrap(),
            Cidr::parse("fd00::/8").unwrap(),
        ];
        for addr in ["127.0.0.1", "::ffff:127.0.0.1", "fd00::5"] {
            assert_eq!(check(ip(addr), &allow), Ok(()), "{addr}");
        }
        for addr in ["::1", "10.0.0.1", "169.254.169.254"] {
            assert!(check(ip(addr), &allow).is_err(), "{addr}");
        }
    }

    #[test]
    fn literal_hosts_in_every_spelling() {
        let cases = [
            ("127.0.0.1", Some("127.0.0.1")),
            ("0", Some("0.0.0.0")),
            ("127.1", Some("127.0.0.1")),
            ("2130706433", Some("127.0.0.1")),
            ("0x7f.0.0.1", Some("127.0.0.1")),
            ("0177.0.0.1", Some("127.0.0.1")),
            ("0x7f000001", Some("127.0.0.1")),
            ("10.0.258", Some("10.0.1.2")),
            ("[::1]", Some("::1")),
            ("[::ffff:127.0.0.1]", Some("::ffff:127.0.0.1")),
            ("localhost", None),
            ("hooks.example", None),
            ("1.2.3.4.5", None),
            ("256.0.0.1", None),
            ("1.2.3.256", None),
            ("4294967296", None),
            ("08.0.0.1", None),
            ("1e3", None),
            ("", None),
            ("[not-v6]", None),
        ];
        for (host, want) in cases {
            assert_eq!(literal(host), want.map(ip), "{host}");
        }
    }
}
