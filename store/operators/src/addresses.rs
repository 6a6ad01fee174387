//! Source addresses an operator may sign in from: CIDR blocks (`10.0.0.0/8`, `2001:db8::/32`) or
//! single addresses. An operator without any may sign in from anywhere.

use std::net::IpAddr;

use seam::StoreError;

/// One block of addresses: a network address and the length of its prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressBlock {
    network: IpAddr,
    prefix: u8,
}

impl AddressBlock {
    /// `text` as a block: `a.b.c.d/n`, `v6/n`, or one address. The bits past the prefix must be
    /// zero, so that a block is written one way only.
    pub fn parse(text: &str) -> Result<AddressBlock, StoreError> {
        let bad = |why: &str| StoreError::invalid("allowedAddresses", format!("`{text}`: {why}"));
        let (address, prefix) = match text.trim().split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text.trim(), None),
        };
        let network: IpAddr = address
            .parse()
            .map_err(|_| bad("not an IPv4 or IPv6 address"))?;
        let width = if network.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(prefix) => prefix
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= width)
                .ok_or_else(|| bad(&format!("the prefix must be 0 to {width}")))?,
            None => width,
        };
        let block = AddressBlock { network, prefix };
        if block.masked(network) != bits(network) {
            return Err(bad("bits are set past the prefix"));
        }
        Ok(block)
    }

    /// Whether `address` is in this block (an IPv4 address written as IPv6, `::ffff:a.b.c.d`,
    /// is the IPv4 address).
    pub fn contains(&self, address: IpAddr) -> bool {
        let address = match address {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
            v4 => v4,
        };
        address.is_ipv4() == self.network.is_ipv4() && self.masked(address) == bits(self.network)
    }

    /// `address`'s bits under this block's prefix.
    fn masked(&self, address: IpAddr) -> u128 {
        let width = if address.is_ipv4() { 32 } else { 128 };
        let keep = u32::from(self.prefix);
        let mask = if keep == 0 {
            0
        } else {
            (u128::MAX << (128 - keep)) >> (128 - width)
        };
        bits(address) & mask
    }
}

fn bits(address: IpAddr) -> u128 {
    match address {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

impl std::fmt::Display for AddressBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_block_holds_the_addresses_under_its_prefix_only() {
        let block = AddressBlock::parse("10.1.0.0/16").unwrap();
        assert!(block.contains(ip("10.1.255.7")));
        assert!(block.contains(ip("::ffff:10.1.0.1")));
        assert!(!block.contains(ip("10.2.0.1")));
        assert!(!block.contains(ip("::1")));
        let one = AddressBlock::parse("2001:db8::7").unwrap();
        assert_eq!(one.to_string(), "2001:db8::7/128");
        assert!(one.contains(ip("2001:db8::7")));
        assert!(!one.contains(ip("2001:db8::8")));
        assert!(
            AddressBlock::parse("0.0.0.0/0")
                .unwrap()
                .contains(ip("192.0.2.1"))
        );
        assert!(
            AddressBlock::parse("2001:db8::/32")
                .unwrap()
                .contains(ip("2001:db8:1::1"))
        );
    }

    #[test]
    fn a_malformed_block_is_refused_with_the_reason() {
        for (text, why) in [
            ("10.1.0.1/16", "bits are set past the prefix"),
            ("10.0.0.0/33", "the prefix must be 0 to 32"),
            ("nowhere", "not an IPv4 or IPv6 address"),
            ("::/129", "the prefix must be 0 to 128"),
        ] {
            let err = AddressBlock::parse(text).unwrap_err().to_string();
            assert!(err.contains(why), "{text}: {err}");
            assert!(err.starts_with("allowedAddresses"), "{err}");
        }
    }
}
