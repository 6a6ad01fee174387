//! Identifiers and random tokens.

use sha2::{Digest, Sha256};

/// A new record id: a UUIDv7, so ids sort by creation time (lists page in creation order), also
/// within a millisecond and across threads: the process keeps the last id's millisecond and
/// random bits, and the next id in the same millisecond (or after the clock stepped back) is
/// that plus one. The random bits come from a generator seeded once by the operating system: a
/// batch file makes two ids a row, and a system call for each was a tenth of the writer's time.
pub fn new_id() -> String {
    /// (millisecond of the last id, its 74 random bits, the generator's state).
    static STATE: std::sync::Mutex<(u64, u128, u64)> = std::sync::Mutex::new((0, 0, 0));
    let now = chrono::Utc::now().timestamp_millis().max(0) as u64;
    let (millis, bits) = {
        let mut state = STATE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (last, mut bits, mut seed) = *state;
        if seed == 0 {
            let mut bytes = [0u8; 8];
            getrandom::fill(&mut bytes).expect("the operating system's random source is available");
            seed = u64::from_le_bytes(bytes) | 1;
        }
        const MASK: u128 = (1 << 74) - 1;
        let millis = if now <= last && bits < MASK {
            bits += 1;
            last
        } else {
            // xorshift64*, twice: 74 fresh bits, the top one clear so increments have room.
            let mut next = || {
                seed ^= seed >> 12;
                seed ^= seed << 25;
                seed ^= seed >> 27;
                seed.wrapping_mul(0x2545_f491_4f6c_dd1d)
            };
            bits = ((u128::from(next()) << 64 | u128::from(next())) & MASK) >> 1;
            now.max(last)
        };
        *state = (millis, bits, seed);
        (millis, bits)
    };
    // rand_a (12 bits, after the version's nibble) and rand_b (62, after the variant's 2 bits).
    let (a, b) = ((bits >> 62) as u16, bits as u64 & ((1 << 62) - 1));
    let mut random = [0u8; 10];
    random[..2].copy_from_slice(&a.to_be_bytes());
    random[2..].copy_from_slice(&b.to_be_bytes());
    uuid::Builder::from_unix_timestamp_millis(millis, &random)
        .into_uuid()
        .to_string()
}

/// A number drawn uniformly from [0, 1) by the operating system's random source.
pub fn random_roll() -> f64 {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the operating system's random source is available");
    (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64
}

/// `bytes` random bytes from the operating system, as lowercase hex, behind `prefix`.
pub fn random_token(prefix: &str, bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).expect("the operating system's random source is available");
    format!("{prefix}{}", hex(&buf))
}

/// `bytes` as lowercase hexadecimal.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)].into());
        out.push(DIGITS[usize::from(b & 15)].into());
    }
    out
}

/// The 16 bytes that key a transaction of `kind` with `external_id` in `org_id` (unique in the
/// journal): SHA-256 of the three, cut short.
pub fn idem_key_of(org_id: &str, kind: &str, external_id: &str) -> Vec<u8> {
    sha256(&format!("{org_id}:{kind}:{external_id}"))[..16].to_vec()
}

pub fn sha256(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

/// A request's digest, as stored to tell its repeat from another request with the same key.
pub fn fingerprint(request: &serde_json::Value) -> String {
    hex(&sha256(&request.to_string()))
}

/// A request's fingerprint, kept with what it made: a short digest of each of its fields, in
/// order (`text`), so that another request under the same key is told apart by the first field
/// that differs. Fingerprints written before fields were kept are one digest of the whole
/// request, which `matches` still recognises.
#[derive(Debug, Clone)]
pub struct Fingerprint {
    pub text: String,
    whole: String,
    fields: Vec<String>,
}

impl Fingerprint {
    /// The fingerprint of a request: its fields as its serialization writes them, each under the
    /// name it serializes with (the one a client sends), in the order it writes them. A field
    /// left out of the serialization (the request's own key) is left out of the fingerprint.
    pub fn of_request(request: &impl serde::Serialize) -> Self {
        let text = serde_json::to_string(request).expect("a request serializes to JSON");
        let Fields(fields) =
            serde_json::from_str(&text).expect("a request serializes as a JSON object");
        let (names, values) = fields.into_iter().unzip();
        Fingerprint::of_fields(names, values)
    }

    /// The fingerprint of a request whose fields `fields` hold `values`.
    pub fn of(fields: &[&str], values: Vec<serde_json::Value>) -> Self {
        Fingerprint::of_fields(
            fields
                .iter()
                .map(std::string::ToString::to_string)
                .collect(),
            values,
        )
    }

    fn of_fields(fields: Vec<String>, values: Vec<serde_json::Value>) -> Self {
        let digests: Vec<String> = values
            .iter()
            .map(|v| hex(&sha256(&v.to_string())[..6]))
            .collect();
        Fingerprint {
            text: format!("f:{}", digests.join(".")),
            whole: fingerprint(&serde_json::Value::Array(values)),
            fields,
        }
    }

    /// Whether `stored` is this request's fingerprint; if not, the first field that differs
    /// (`None` when the stored one cannot say: one digest of a whole request).
    pub fn matches(&self, stored: &str) -> Result<(), Option<&str>> {
        if stored == self.text || stored == self.whole {
            return Ok(());
        }
        let Some(digests) = stored.strip_prefix("f:") else {
            return Err(None);
        };
        let mine = self.text["f:".len()..].split('.');
        let differs = digests.split('.').zip(mine).position(|(a, b)| a != b);
        Err(differs.and_then(|i| self.fields.get(i).map(String::as_str)))
    }

    /// The refusal of another request under `key` (the field that names it: `externalId`,
    /// `reference`) whose fingerprint is `stored`.
    pub fn conflict(&self, key: &'static str, stored: &str) -> crate::StoreError {
        let differs = self.matches(stored).err().flatten();
        let message = match differs {
            Some(field) => format!("{key} was used for another request: its {field} differs"),
            None => format!("{key} was used for another request"),
        };
        crate::StoreError::refused(
            "already_exists",
            Some(differs.unwrap_or(key).into()),
            message,
        )
    }
}

/// A JSON object's members in the order its text writes them (`serde_json`'s own map sorts
/// them), so that a request's fields keep the order of its type.
struct Fields(Vec<(String, serde_json::Value)>);

impl<'de> serde::Deserialize<'de> for Fields {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> serde::de::Visitor<'de> for Members {
            type Value = Fields;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Fields, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry()? {
                    members.push(member);
                }
                Ok(Fields(members))
            }
        }
        deserializer.deserialize_map(Members)
    }
}

/// Serializes tokens as micro-tokens (a whole number), as a request's fingerprint keeps them.
pub fn as_micros<S: serde::Serializer>(tokens: &crate::Tokens, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_i64(tokens.micros())
}

/// Compares two byte strings in time that depends only on their length, so a response time never
/// tells an attacker how many leading bytes of a guess were right.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_two_lowercase_digits_a_byte() {
        assert_eq!(hex(&[0x00, 0x09, 0x9f, 0xa0, 0xff]), "00099fa0ff");
        assert_eq!(hex(&[]), "");
    }

    #[test]
    fn ids_are_version_7_unique_and_in_order() {
        let ids: Vec<String> = (0..10_000).map(|_| new_id()).collect();
        for id in &ids {
            let parsed = uuid::Uuid::parse_str(id).unwrap();
            assert_eq!(parsed.get_version_num(), 7, "{id}");
        }
        let mut sorted = ids.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, ids, "unique and increasing");
    }

    #[test]
    fn ids_made_one_after_another_on_different_threads_are_in_order() {
        // Requests of one client are served by whichever thread is free.
        let ids: Vec<String> = (0..200)
            .map(|i| match i % 2 {
                0 => new_id(),
                _ => std::thread::spawn(new_id).join().unwrap(),
            })
            .collect();
        let mut sorted = ids.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, ids);
    }
}
