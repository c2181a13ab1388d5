//! Address ranges in CIDR notation (`10.0.0.0/8`, `fd00::/8`; a bare address is a range of
//! one), and whether an address is in one.

use std::fmt;
use std::net::IpAddr;

/// An address range: the addresses that share the first `len` bits of `addr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    len: u8,
}

// === impl Cidr ===

impl Cidr {
    /// Parses `addr/len` or a bare address. Bits set past the prefix are refused: a range
    /// written `10.1.2.3/8` more likely means something else than `10.0.0.0/8`.
    pub fn parse(text: &str) -> Result<Cidr, String> {
        let (addr, len) = match text.split_once('/') {
            Some((addr, len)) => (addr, Some(len)),
            None => (text, None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| format!("`{text}` is not an address range (for example 10.0.0.0/8)"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let len = match len {
            None => max,
            Some(len) => match len.parse::<u8>() {
                Ok(n) if n <= max => n,
                _ => return Err(format!("`{text}`: the prefix length must be 0 to {max}")),
            },
        };
        let cidr = Cidr { addr, len };
        if cidr.network() != bits(addr) {
            return Err(format!(
                "`{text}` has bits set past its prefix length; the range starts at {}",
                cidr.start()
            ));
        }
        Ok(cidr)
    }

    /// A range of the given address and prefix length (bits past it are ignored).
    pub const fn new(addr: IpAddr, len: u8) -> Cidr {
        Cidr { addr, len }
    }

    /// Whether `ip` is in the range (an IPv4 range holds no IPv6 address, and the reverse).
    pub fn contains(&self, ip: IpAddr) -> bool {
        if self.addr.is_ipv4() != ip.is_ipv4() {
            return false;
        }
        let mask = self.mask();
        bits(ip) & mask == bits(self.addr) & mask
    }

    fn mask(&self) -> u128 {
        let width = if self.addr.is_ipv4() { 32 } else { 128 };
        let ones = u128::MAX
            .checked_shl(128 - u32::from(self.len))
            .unwrap_or(0);
        // Only the address's own width counts.
        ones >> (128 - width)
    }

    fn network(&self) -> u128 {
        bits(self.addr) & self.mask()
    }

    fn start(&self) -> IpAddr {
        match self.addr {
            IpAddr::V4(_) => IpAddr::V4(u32::try_from(self.network()).unwrap_or(0).into()),
            IpAddr::V6(_) => IpAddr::V6(self.network().into()),
        }
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

/// The address as a number, IPv4 in the low 32 bits.
fn bits(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn ranges_hold_their_addresses() {
        let cases = [
            ("127.0.0.0/8", "127.255.0.1", true),
            ("127.0.0.0/8", "128.0.0.1", false),
            ("10.0.0.0/8", "::ffff:10.0.0.1", false),
            ("0.0.0.0/0", "203.0.113.9", true),
            ("0.0.0.0/0", "::1", false),
            ("fd00::/8", "fd12::1", true),
            ("fd00::/8", "fe80::1", false),
            ("::/0", "2001:db8::1", true),
            ("192.168.1.7", "192.168.1.7", true),
            ("192.168.1.7", "192.168.1.8", false),
            ("::1", "::1", true),
        ];
        for (range, addr, inside) in cases {
            let cidr = Cidr::parse(range).unwrap();
            assert_eq!(cidr.contains(ip(addr)), inside, "{range} {addr}");
        }
    }

    #[test]
    fn bad_ranges_say_why() {
        for bad in [
            "localhost",
            "10.0.0.0/33",
            "::/129",
            "10.0.0.0/",
            "10.1.2.3/8",
            "",
        ] {
            assert!(Cidr::parse(bad).is_err(), "{bad}");
        }
        let past = Cidr::parse("10.1.2.3/8").unwrap_err();
        assert!(past.contains("starts at 10.0.0.0"), "{past}");
        assert_eq!(
            Cidr::parse("fd00::/8").unwrap().to_string(),
            "fd00::/8".to_string()
        );
    }
}
