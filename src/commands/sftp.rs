//! `rewards sftp-user ...` and `rewards sftp host-key`: SFTP credentials for the batch door.

use std::io::BufRead;
use std::path::Path;

use anyhow::Context;
use serde_json::json;
use store::{NewSftpKey, NewSftpUser, SftpUser, Store};

use super::emit;
use crate::cli::{SftpCommand, SftpUserCommand};
use rewards::config::Config;

fn read_key(path: &Path) -> anyhow::Result<NewSftpKey> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    ingest::sftp::keys::parse_public_key(&text)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

fn user_json(user: &SftpUser) -> serde_json::Value {
    json!({
        "id": user.id,
        "org": user.org_id,
        "username": user.username,
        "password": user.has_password,
        "keys": user.keys.iter().map(|k| k.fingerprint.as_str()).collect::<Vec<_>>(),
        "disabledAt": user.disabled_at,
        "createdAt": user.created_at,
    })
}

fn user_line(user: &SftpUser) -> String {
    let mut methods = Vec::new();
    if user.has_password {
        methods.push("password".to_string());
    }
    methods.extend(user.keys.iter().map(|k| k.fingerprint.clone()));
    let state = if user.disabled_at.is_some() {
        "disabled"
    } else {
        "enabled"
    };
    format!("{}  {state}  {}", user.username, methods.join(", "))
}

pub async fn user(store: &Store, command: SftpUserCommand, json: bool) -> anyhow::Result<()> {
    match command {
        SftpUserCommand::Add {
            org,
            username,
            password_stdin,
            public_key,
        } => {
            let password = if password_stdin {
                let mut line = String::new();
                std::io::stdin()
                    .lock()
                    .read_line(&mut line)
                    .context("reading the password from standard input")?;
                Some(line.trim_end_matches(['\r', '\n']).to_string())
            } else {
                None
            };
            if password.is_none() && public_key.is_none() {
                anyhow::bail!("give --password-stdin, --public-key FILE, or both");
            }
            let key = public_key.as_deref().map(read_key).transpose()?;
            let new = NewSftpUser {
                username,
                password,
                key,
            };
            let org = store.tenancy().find_org(&org).await?.scope();
            let user = store.tenancy().create_sftp_user(&org, new).await?;
            emit(json, user_json(&user), || user_line(&user));
        }
        SftpUserCommand::KeyAdd {
            org,
            username,
            public_key,
        } => {
            let org = store.tenancy().find_org(&org).await?.scope();
            let key = store
                .tenancy()
                .add_sftp_key(&org, &username, read_key(&public_key)?)
                .await?;
            emit(
                json,
                json!({"username": username, "fingerprint": key.fingerprint}),
                || format!("{username}: added {}", key.fingerprint),
            );
        }
        SftpUserCommand::List { org } => {
            let org = store.tenancy().find_org(&org).await?.scope();
            let users = store.tenancy().list_sftp_users(&org).await?;
            emit(json, users.iter().map(user_json).collect(), || {
                users.iter().map(user_line).collect::<Vec<_>>().join("\n")
            });
        }
        SftpUserCommand::Disable { org, username } => {
            let org = store.tenancy().find_org(&org).await?.scope();
            let user = store.tenancy().disable_sftp_user(&org, &username).await?;
            emit(json, user_json(&user), || user_line(&user));
        }
        SftpUserCommand::Remove { org, username } => {
            let org = store.tenancy().find_org(&org).await?.scope();
            store.tenancy().remove_sftp_user(&org, &username).await?;
            emit(json, json!({"removed": username}), || {
                format!("{username} removed")
            });
        }
    }
    Ok(())
}

/// `rewards sftp host-key`, which needs no database.
pub fn host_key(config: &Config, json: bool) -> anyhow::Result<()> {
    let key = ingest::sftp::keys::host_key(&config.data_dir).map_err(anyhow::Error::msg)?;
    let fingerprint = ingest::sftp::keys::fingerprint(key.public_key());
    let path = config.data_dir.join(ingest::sftp::keys::HOST_KEY_FILE);
    emit(
        json,
        json!({"fingerprint": fingerprint, "algorithm": "ssh-ed25519", "path": path}),
        || format!("{fingerprint} (ED25519)  {}", path.display()),
    );
    Ok(())
}

/// `rewards sftp bans` and `rewards sftp unban ADDRESS`.
pub async fn bans(store: &Store, command: SftpCommand, json: bool) -> anyhow::Result<()> {
    match command {
        SftpCommand::HostKey => unreachable!("answered before the store opens"),
        SftpCommand::Bans => {
            let bans = store.tenancy().sftp_bans().await?;
            let listed: Vec<_> = bans
                .iter()
                .map(|b| {
                    json!({"address": b.address, "failures": b.failures,
                        "bannedAt": b.banned_at, "bannedUntil": b.banned_until})
                })
                .collect();
            emit(json, json!({"bans": listed}), || {
                if bans.is_empty() {
                    return "no address is banned".to_string();
                }
                let mut lines = vec![format!("{} address(es) banned", bans.len())];
                for b in &bans {
                    lines.push(format!(
                        "{}  until {}  ({} failed logins, banned {})",
                        b.address,
                        b.banned_until.format("%Y-%m-%d %H:%M:%S UTC"),
                        b.failures,
                        b.banned_at.format("%Y-%m-%d %H:%M:%S UTC"),
                    ));
                }
                lines.join("\n")
            });
        }
        SftpCommand::Unban { address } => {
            let address = address.to_string();
            if !store.tenancy().unban_sftp_address(&address).await? {
                anyhow::bail!("{address} is not banned (rewards sftp bans lists the bans)");
            }
            emit(json, json!({"unbanned": address}), || {
                format!("{address} may log in again")
            });
        }
    }
    Ok(())
}
