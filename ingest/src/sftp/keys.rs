//! SSH keys: the server's host key (made on first start, kept in the data directory) and the
//! users' public keys as operators hand them in.

use std::path::Path;

use russh::keys::ssh_key::LineEnding;
use russh::keys::ssh_key::private::Ed25519Keypair;
use russh::keys::{HashAlg, PrivateKey, PublicKey};
use store::NewSftpKey;

use crate::error::{Context, IngestError};

/// Where the host key lives in the data directory.
pub const HOST_KEY_FILE: &str = "sftp_host_ed25519_key";

/// The host key in `data_dir`, made (ed25519) and saved, readable by its owner only, if it is
/// not there yet.
pub fn host_key(data_dir: &Path) -> Result<PrivateKey, IngestError> {
    let path = data_dir.join(HOST_KEY_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => PrivateKey::from_openssh(text.as_bytes()).map_err(|e| {
            IngestError::refused(format!(
                "{}: not an OpenSSH private key: {e}",
                path.display()
            ))
        }),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            let mut seed = [0u8; 32];
            getrandom::fill(&mut seed)
                .map_err(|e| IngestError::refused(format!("no randomness: {e}")))?;
            let key = PrivateKey::from(Ed25519Keypair::from_seed(&seed));
            let text = key
                .to_openssh(LineEnding::LF)
                .map_err(|e| IngestError::refused(format!("encoding the host key: {e}")))?;
            std::fs::create_dir_all(data_dir).context(data_dir.display())?;
            write_private(&path, text.as_bytes())?;
            tracing::info!(path = %path.display(), fingerprint = %fingerprint(key.public_key()), "SFTP host key created");
            Ok(key)
        }
        Err(err) => Err(err).context(path.display()),
    }
}

#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), IngestError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .context(path.display())?;
    file.write_all(bytes).context(path.display())
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), IngestError> {
    std::fs::write(path, bytes).context(path.display())
}

/// `SHA256:...`, as `ssh-keygen -l` and OpenSSH clients print it.
pub fn fingerprint(key: &PublicKey) -> String {
    key.fingerprint(HashAlg::Sha256).to_string()
}

/// A public key in OpenSSH's one-line format (`ssh-ed25519 AAAA... comment`), as the store
/// keeps it.
pub fn parse_public_key(text: &str) -> Result<NewSftpKey, IngestError> {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .ok_or_else(|| IngestError::refused("the file holds no public key"))?;
    let key = PublicKey::from_openssh(line).map_err(|e| {
        IngestError::refused(format!(
            "not an OpenSSH public key ({e}); use the .pub file"
        ))
    })?;
    Ok(NewSftpKey {
        fingerprint: fingerprint(&key),
        public_key: key
            .to_openssh()
            .map_err(|e| IngestError::refused(format!("encoding the key: {e}")))?,
    })
}
