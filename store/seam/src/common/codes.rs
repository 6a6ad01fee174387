//! Redemption codes: made unguessable, kept encrypted, found again by a keyed hash.
//!
//! A code is 13 characters of Crockford's base 32 (digits and capitals without I, L, O and U,
//! so none is mistaken for another; a typed O reads as 0 and I or L as 1), 65 random bits,
//! shown in groups as `7KQ4-XW2M-9HTRC`. The database holds only its encryption
//! (AES-256-GCM, a fresh 96-bit nonce per code, the organisation's id as associated data, so a
//! ciphertext copied to another organisation does not open) and an HMAC-SHA-256 of the
//! organisation and the code, which is unique per organisation and lets a partner's redeem find
//! the code without decrypting every row. Both keys derive from one 32-byte secret.

use std::io::Write;
use std::path::Path;

use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::hmac;

use crate::error::StoreError;

/// Characters a code is made of: Crockford's base 32.
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/// Characters in a code (5 bits each).
const LENGTH: usize = 13;
/// Characters a masked code still shows.
const SHOWN: usize = 4;

/// A new code, grouped for reading aloud: `XXXX-XXXX-XXXXX`.
pub fn new_code() -> String {
    let mut bytes = [0u8; LENGTH];
    getrandom::fill(&mut bytes).expect("the operating system's random source");
    let chars: String = bytes
        .iter()
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect();
    format!("{}-{}-{}", &chars[..4], &chars[4..8], &chars[8..])
}

/// Characters in a referral code (40 bits: a member shares it, so it is shorter than a
/// redemption code, which is a bearer's value).
pub const REFERRAL_LENGTH: usize = 8;

/// A new referral code, as stored: `REFERRAL_LENGTH` characters of the same alphabet, ungrouped
/// (`referral_shown` groups it).
pub fn new_referral_code() -> String {
    let mut bytes = [0u8; REFERRAL_LENGTH];
    getrandom::fill(&mut bytes).expect("the operating system's random source");
    bytes
        .iter()
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect()
}

/// A stored referral code as members see it: `XXXX-XXXX`.
pub fn referral_shown(code: &str) -> String {
    match code.split_at_checked(REFERRAL_LENGTH / 2) {
        Some((head, tail)) if code.len() == REFERRAL_LENGTH => format!("{head}-{tail}"),
        _ => code.to_string(),
    }
}

/// The code as a client types it, made comparable: upper case, without spaces or dashes, and
/// the letters that look like digits read as those digits.
pub fn normalised(code: &str) -> String {
    code.chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .flat_map(char::to_uppercase)
        .map(|c| match c {
            'O' => '0',
            'I' | 'L' => '1',
            other => other,
        })
        .collect()
}

/// The last 4 characters of a code: all that is kept in clear, for the masked form.
pub fn tail(code: &str) -> &str {
    &code[code.len().saturating_sub(SHOWN)..]
}

/// A code shown masked, from its last 4 characters: `••••-••••-•HTRC`.
pub fn masked_tail(tail: &str) -> String {
    format!("••••-••••-•{tail}")
}

/// `code` with all but its last 4 characters hidden.
pub fn masked(code: &str) -> String {
    masked_tail(tail(code))
}

/// The secret that encrypts and indexes codes.
pub struct CodeKey {
    sealing: LessSafeKey,
    lookup: hmac::Key,
}

impl CodeKey {
    /// From 32 secret bytes.
    pub fn new(secret: &[u8; 32]) -> CodeKey {
        // Two keys from one secret, each for one purpose.
        let derive =
            |purpose: &[u8]| hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, secret), purpose);
        let sealing = derive(b"rewards redemption codes: encryption");
        let lookup = derive(b"rewards redemption codes: lookup");
        CodeKey {
            sealing: LessSafeKey::new(
                UnboundKey::new(&AES_256_GCM, sealing.as_ref()).expect("a 32-byte key"),
            ),
            lookup: hmac::Key::new(hmac::HMAC_SHA256, lookup.as_ref()),
        }
    }

    /// A new random key, kept nowhere: for tests and benchmarks, whose codes need not outlive
    /// the process.
    pub fn random() -> CodeKey {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).expect("the operating system's random source");
        CodeKey::new(&secret)
    }

    /// From 64 hexadecimal digits (configuration `codes_key` / `REWARDS_CODES_KEY`).
    pub fn from_hex(text: &str) -> Result<CodeKey, String> {
        let text = text.trim();
        if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err("must be 64 hexadecimal digits (32 bytes)".into());
        }
        let mut secret = [0u8; 32];
        for (i, byte) in secret.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[i * 2..i * 2 + 2], 16).expect("checked hex digits");
        }
        Ok(CodeKey::new(&secret))
    }

    /// The key kept in `path`, made there (readable by its owner only) on first use.
    pub fn load_or_create(path: &Path) -> Result<CodeKey, StoreError> {
        let invalid = |message: String| StoreError::invalid("codes_key", message);
        match std::fs::read_to_string(path) {
            Ok(text) => {
                CodeKey::from_hex(&text).map_err(|e| invalid(format!("{}: {e}", path.display())))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut secret = [0u8; 32];
                getrandom::fill(&mut secret).expect("the operating system's random source");
                match write_private(path, crate::common::ids::hex(&secret).as_bytes()) {
                    Ok(()) => Ok(CodeKey::new(&secret)),
                    // Another process made it first: theirs is the key.
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        CodeKey::load_or_create(path)
                    }
                    Err(e) => Err(invalid(format!("writing {}: {e}", path.display()))),
                }
            }
            Err(e) => Err(invalid(format!("reading {}: {e}", path.display()))),
        }
    }

    /// `code` encrypted for `org_id`: the nonce, then the ciphertext and its tag.
    pub fn seal(&self, org_id: &str, code: &str) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).expect("the operating system's random source");
        let mut sealed = code.as_bytes().to_vec();
        self.sealing
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(org_id.as_bytes()),
                &mut sealed,
            )
            .expect("a code fits AES-GCM's limits");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        out
    }

    /// The code `sealed` holds, if it was sealed for `org_id` with this key.
    pub fn open(&self, org_id: &str, sealed: &[u8]) -> Option<String> {
        if sealed.len() < NONCE_LEN {
            return None;
        }
        let (nonce, rest) = sealed.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut rest = rest.to_vec();
        let clear = self
            .sealing
            .open_in_place(nonce, Aad::from(org_id.as_bytes()), &mut rest)
            .ok()?;
        String::from_utf8(clear.to_vec()).ok()
    }

    /// The code's lookup hash in `org_id`, as stored: the same for the same code however it is
    /// typed (`normalised`).
    pub fn lookup(&self, org_id: &str, code: &str) -> Vec<u8> {
        let mut context = hmac::Context::with_key(&self.lookup);
        context.update(org_id.as_bytes());
        context.update(&[0]);
        context.update(normalised(code).as_bytes());
        context.sign().as_ref().to_vec()
    }
}

/// Writes `bytes` to a new file at `path` that only its owner may read (mode 0600 on Unix),
/// whole or not at all: written beside it, then linked into place, which fails
/// (`AlreadyExists`) when another process made the file first.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let staged = path.with_extension(crate::common::ids::random_token("staged-", 8));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options.open(&staged).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()
    });
    let linked = written.and_then(|()| std::fs::hard_link(&staged, path));
    let _ = std::fs::remove_file(&staged);
    linked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> CodeKey {
        CodeKey::new(&[7u8; 32])
    }

    #[test]
    fn codes_are_long_random_and_readable() {
        let a = new_code();
        assert_eq!(a.len(), LENGTH + 2);
        assert!(normalised(&a).bytes().all(|b| ALPHABET.contains(&b)), "{a}");
        assert!(!a.contains(['I', 'L', 'O', 'U']));
        let many: std::collections::HashSet<String> = (0..10_000).map(|_| new_code()).collect();
        assert_eq!(many.len(), 10_000);
    }

    #[test]
    fn referral_codes_read_back_as_typed() {
        let code = new_referral_code();
        assert_eq!(code.len(), REFERRAL_LENGTH);
        let shown = referral_shown(&code);
        assert_eq!(shown.len(), REFERRAL_LENGTH + 1);
        assert_eq!(normalised(&shown.to_lowercase()), code);
        assert_eq!(referral_shown("AB"), "AB");
    }

    #[test]
    fn masks_show_the_last_four() {
        assert_eq!(masked("7KQ4-XW2M-9HTRC"), "••••-••••-•HTRC");
    }

    #[test]
    fn sealed_codes_open_only_for_their_organisation_and_key() {
        let code = new_code();
        let sealed = key().seal("org-a", &code);
        assert!(
            !sealed.windows(code.len()).any(|w| w == code.as_bytes()),
            "no clear text"
        );
        assert_eq!(key().open("org-a", &sealed), Some(code.clone()));
        assert_eq!(key().open("org-b", &sealed), None);
        assert_eq!(CodeKey::new(&[8u8; 32]).open("org-a", &sealed), None);
        assert_ne!(
            key().seal("org-a", &code),
            sealed,
            "a fresh nonce each time"
        );
        let mut tampered = sealed.clone();
        tampered[NONCE_LEN] ^= 1;
        assert_eq!(key().open("org-a", &tampered), None);
    }

    #[test]
    fn lookups_ignore_how_a_code_is_typed() {
        let k = key();
        assert_eq!(
            k.lookup("o", "7KQ4-XW2M-9HTRC"),
            k.lookup("o", " 7kq4 xw2m 9htrc")
        );
        assert_eq!(
            k.lookup("o", "10AB"),
            k.lookup("o", "loab"),
            "O reads as 0, L as 1"
        );
        assert_ne!(
            k.lookup("o", "7KQ4-XW2M-9HTRC"),
            k.lookup("p", "7KQ4-XW2M-9HTRC")
        );
    }

    #[test]
    fn a_key_file_is_made_once_private_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("codes.key");
        let sealed = CodeKey::load_or_create(&path).unwrap().seal("o", "ABCD");
        let again = CodeKey::load_or_create(&path).unwrap();
        assert_eq!(again.open("o", &sealed).as_deref(), Some("ABCD"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(&path, "not hex").unwrap();
        assert!(CodeKey::load_or_create(&path).is_err());
        assert!(CodeKey::from_hex(&"ab".repeat(32)).is_ok());
    }
}
