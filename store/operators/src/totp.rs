//! Time-based one-time passwords (RFC 6238 over RFC 4226's HOTP): HMAC-SHA-1 of the number of
//! 30-second steps since 1970, truncated to 6 digits, as every authenticator app computes them.
//! The secret is given to the app in base 32 (RFC 4648, unpadded) inside an `otpauth://` URI.

use ring::hmac;

/// Seconds a code lasts.
pub const STEP: i64 = 30;
/// Steps before and after now whose codes are taken (clocks drift; people type slowly).
pub const DRIFT: i64 = 1;
/// Bytes of a new secret (160 bits, as RFC 4226 recommends).
pub const SECRET_BYTES: usize = 20;

/// The 6-digit code of `secret` at step `step`.
pub fn code_at(secret: &[u8], step: i64) -> u32 {
    let key = hmac::Key::new(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, secret);
    let tag = hmac::sign(&key, &step.to_be_bytes());
    let mac = tag.as_ref();
    let offset = usize::from(mac[mac.len() - 1] & 0x0f);
    let word = u32::from_be_bytes([
        mac[offset],
        mac[offset + 1],
        mac[offset + 2],
        mac[offset + 3],
    ]);
    (word & 0x7fff_ffff) % 1_000_000
}

/// The step `unix_seconds` falls in.
pub fn step_of(unix_seconds: i64) -> i64 {
    unix_seconds.div_euclid(STEP)
}

/// The step within `DRIFT` of `now_step` whose code `typed` is (6 digits, spaces ignored).
pub fn matching_step(secret: &[u8], typed: &str, now_step: i64) -> Option<i64> {
    let digits: String = typed.chars().filter(|c| !c.is_whitespace()).collect();
    if digits.len() != 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let code: u32 = digits.parse().ok()?;
    (now_step - DRIFT..=now_step + DRIFT).find(|step| code_at(secret, *step) == code)
}

/// `bytes` in base 32 (RFC 4648's alphabet, no padding).
pub fn base32(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for byte in bytes {
        buffer = (buffer << 8) | u32::from(*byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(char::from(ALPHABET[((buffer >> bits) & 31) as usize]));
        }
    }
    if bits > 0 {
        out.push(char::from(ALPHABET[((buffer << (5 - bits)) & 31) as usize]));
    }
    out
}

/// The bytes base-32 `text` holds (upper or lower case, no padding), if it is base 32.
pub fn from_base32(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 5 / 8);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let value = match c.to_ascii_uppercase() {
            c @ b'A'..=b'Z' => c - b'A',
            c @ b'2'..=b'7' => c - b'2' + 26,
            _ => return None,
        };
        buffer = (buffer << 5) | u32::from(value);
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
        }
    }
    Some(out)
}

/// The URI an authenticator app reads (as a QR code or typed): the account and its issuer.
pub fn uri(secret: &[u8], account: &str, issuer: &str) -> String {
    let escape = |text: &str| -> String {
        text.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'@' => {
                    char::from(b).to_string()
                }
                other => format!("%{other:02X}"),
            })
            .collect()
    };
    format!(
        "otpauth://totp/{}:{}?secret={}&issuer={}&algorithm=SHA1&digits=6&period={STEP}",
        escape(issuer),
        escape(account),
        base32(secret),
        escape(issuer)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238, appendix B (SHA-1), the last 6 of its 8 digits.
    #[test]
    fn codes_are_the_rfc_test_vectors() {
        let secret = b"12345678901234567890";
        for (time, code) in [
            (59, 287_082),
            (1_111_111_109, 81_804),
            (1_111_111_111, 50_471),
            (1_234_567_890, 5_924),
            (2_000_000_000, 279_037),
            (20_000_000_000, 353_130),
        ] {
            assert_eq!(code_at(secret, step_of(time)), code, "at {time}");
        }
    }

    #[test]
    fn a_code_is_taken_one_step_either_side_only() {
        let secret = b"12345678901234567890";
        let now = step_of(1_111_111_109);
        let code = format!("{:06}", code_at(secret, now - 1));
        assert_eq!(matching_step(secret, &code, now), Some(now - 1));
        assert_eq!(matching_step(secret, &code, now + 2), None);
        assert_eq!(matching_step(secret, "12345", now), None);
        assert_eq!(matching_step(secret, "abcdef", now), None);
    }

    #[test]
    fn base32_is_rfc_4648() {
        for (bytes, text) in [
            (&b""[..], ""),
            (b"f", "MY"),
            (b"fo", "MZXQ"),
            (b"foo", "MZXW6"),
            (b"foob", "MZXW6YQ"),
            (b"fooba", "MZXW6YTB"),
            (b"foobar", "MZXW6YTBOI"),
        ] {
            assert_eq!(base32(bytes), text);
            assert_eq!(from_base32(text).unwrap(), bytes);
        }
        assert_eq!(from_base32("mzxw6"), Some(b"foo".to_vec()));
        assert_eq!(from_base32("MZ1"), None);
        assert!(
            uri(b"12345678901234567890", "ada@example.com", "Rewards").starts_with(
                "otpauth://totp/Rewards:ada@example.com?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&"
            )
        );
    }
}
