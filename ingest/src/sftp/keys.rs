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
            let mut nonce = [0u8; 8];
            getrandom::fill(&mut nonce)
                .map_err(|e| IngestError::refused(format!("no randomness: {e}")))?;
            match write_private(&path, text.as_bytes(), &nonce) {
                Ok(()) => {
                    tracing::info!(path = %path.display(), fingerprint = %fingerprint(key.public_key()), "SFTP host key created");
                    Ok(key)
                }
                // Another caller made it first (two pages asking at once): that one is the key.
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => host_key(data_dir),
                Err(err) => Err(err).context(path.display()),
            }
        }
        Err(err) => Err(err).context(path.display()),
    }
}

/// Writes `bytes` as the new file `path`, readable by the owner alone, whole or not at all:
/// written beside it first (named after `nonce`), then linked into place, which fails with
/// `AlreadyExists` when the file is there already, so no reader sees half a file and no two
/// writers both win.
#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8], nonce: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tag: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
    let beside = path.with_extension(format!("{tag}.new"));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&beside)
        .and_then(|mut file| file.write_all(bytes).and_then(|()| file.sync_all()));
    let linked = written.and_then(|()| std::fs::hard_link(&beside, path));
    let _ = std::fs::remove_file(&beside);
    linked
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8], _nonce: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callers_at_once_on_a_fresh_directory_share_one_private_host_key() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let prints: Vec<String> = std::thread::scope(|scope| {
            let callers: Vec<_> = (0..8)
                .map(|_| scope.spawn(|| fingerprint(host_key(&data).unwrap().public_key())))
                .collect();
            callers.into_iter().map(|c| c.join().unwrap()).collect()
        });
        assert!(prints.iter().all(|p| *p == prints[0]), "{prints:?}");
        assert_eq!(
            fingerprint(host_key(&data).unwrap().public_key()),
            prints[0]
        );
        let left: Vec<_> = std::fs::read_dir(&data).unwrap().collect();
        assert_eq!(left.len(), 1, "nothing left beside the key");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(data.join(HOST_KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
