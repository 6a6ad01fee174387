//! One SSH connection: authentication against the store (password or key), then the `sftp`
//! subsystem and nothing else (no shell, no commands, no forwarding).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use russh::server::{Auth, ChannelOpenHandle, Msg, PublicKeyOffer, Session, VerifiedPublicKey};
use russh::{Channel, ChannelId};
use store::{SftpBan, SftpLogin};

use super::bounded::Bounded;
use super::defender::Defender;
use super::files::{Context, Files};
use crate::sftp::keys::fingerprint;

pub struct Connection {
    pub context: Arc<Context>,
    pub defender: Arc<Defender>,
    pub peer: Option<SocketAddr>,
    pub login: Option<SftpLogin>,
    pub channels: HashMap<ChannelId, Channel<Msg>>,
}

impl Connection {
    fn peer(&self) -> String {
        self.peer.map_or_else(|| "-".into(), |p| p.to_string())
    }

    /// The ban on the client's address in force now, if any. (A ban that cannot be looked up
    /// is logged and not enforced: the store being down refuses every login anyway.)
    async fn ban(&self) -> Option<SftpBan> {
        let peer = self.peer?;
        match self
            .context
            .store
            .tenancy()
            .sftp_ban(&peer.ip().to_string())
            .await
        {
            Ok(ban) => ban,
            Err(err) => {
                tracing::error!(%err, "an SFTP ban could not be looked up");
                None
            }
        }
    }

    async fn banned(&self) -> bool {
        match self.ban().await {
            Some(ban) => {
                tracing::warn!(peer = %self.peer(), until = %ban.banned_until,
                    "SFTP login refused: the address is banned");
                true
            }
            None => false,
        }
    }

    fn accepted(&mut self, login: SftpLogin, method: &str) -> Auth {
        tracing::info!(user = %login.username, org = %login.org_id, peer = %self.peer(), method, "SFTP login");
        self.login = Some(login);
        Auth::Accept
    }

    async fn rejected(&self, user: &str, method: &str) -> Auth {
        tracing::warn!(user, peer = %self.peer(), method, "SFTP login failed");
        let Some(peer) = self.peer else {
            return Auth::reject();
        };
        if let Some(failures) = self.defender.failed(peer.ip(), std::time::Instant::now()) {
            let ban = self.defender.policy.ban;
            let until = chrono::Duration::from_std(ban)
                .ok()
                .and_then(|ban| self.context.store.now().checked_add_signed(ban))
                .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC);
            let address = peer.ip().to_string();
            match self
                .context
                .store
                .tenancy()
                .ban_sftp_address(&address, failures, until)
                .await
            {
                Ok(_) => tracing::warn!(peer = %address, failures, %until,
                    "address banned after repeated failed logins (lift it: rewards sftp unban)"),
                Err(err) => tracing::error!(%err, peer = %address, "an SFTP ban could not be kept"),
            }
        }
        Auth::reject()
    }

    async fn key_login(&self, user: &str, key: &russh::keys::PublicKey) -> Option<SftpLogin> {
        match self
            .context
            .store
            .tenancy()
            .sftp_login_key(user, &fingerprint(key))
            .await
        {
            Ok(login) => login,
            Err(err) => {
                tracing::error!(%err, "SFTP key login could not be checked");
                None
            }
        }
    }
}

impl russh::server::Handler for Connection {
    type Error = russh::Error;

    async fn auth_none(&mut self, _user: &str) -> Result<Auth, Self::Error> {
        Ok(Auth::reject())
    }

    /// Shown before the login: to a banned address, that it is banned and until when (the same
    /// to every user name, so it tells nothing of which users exist).
    async fn authentication_banner(&mut self) -> Result<Option<String>, Self::Error> {
        Ok(self.ban().await.map(|ban| {
            let minutes = (ban.banned_until - self.context.store.now()).num_minutes() + 1;
            format!(
                "This address ({}) is banned from logging in until {} UTC (about {minutes} \
                 minute(s)) after {} failed logins. Ask the service's operator to lift it.\r\n",
                ban.address,
                ban.banned_until.format("%Y-%m-%d %H:%M:%S"),
                ban.failures,
            )
        }))
    }

    async fn auth_password(&mut self, user: &str, password: &str) -> Result<Auth, Self::Error> {
        if self.banned().await {
            return Ok(Auth::reject());
        }
        match self
            .context
            .store
            .tenancy()
            .sftp_login_password(user, password)
            .await
        {
            Ok(Some(login)) => Ok(self.accepted(login, "password")),
            Ok(None) => Ok(self.rejected(user, "password").await),
            Err(err) => {
                tracing::error!(%err, "SFTP password login could not be checked");
                Ok(Auth::reject())
            }
        }
    }

    /// A key the user does not hold is turned away before the client signs with it; clients
    /// try each of their keys in turn, so this is not counted as a failure.
    async fn auth_publickey_offered(
        &mut self,
        user: &str,
        offer: PublicKeyOffer<'_>,
    ) -> Result<Auth, Self::Error> {
        if !self.banned().await && self.key_login(user, offer.public_key).await.is_some() {
            Ok(Auth::Accept)
        } else {
            Ok(Auth::reject())
        }
    }

    async fn auth_publickey(
        &mut self,
        user: &str,
        key: VerifiedPublicKey<'_>,
    ) -> Result<Auth, Self::Error> {
        if self.banned().await {
            return Ok(Auth::reject());
        }
        match self.key_login(user, key.public_key).await {
            Some(login) => Ok(self.accepted(login, "publickey")),
            None => Ok(self.rejected(user, "publickey").await),
        }
    }

    async fn channel_open_session(
        &mut self,
        channel: Channel<Msg>,
        reply: ChannelOpenHandle,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        self.channels.insert(channel.id(), channel);
        reply.accept().await;
        Ok(())
    }

    async fn subsystem_request(
        &mut self,
        channel_id: ChannelId,
        name: &str,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        let (Some(login), "sftp") = (self.login.clone(), name) else {
            session.channel_failure(channel_id)?;
            return Ok(());
        };
        let Some(channel) = self.channels.remove(&channel_id) else {
            session.channel_failure(channel_id)?;
            return Ok(());
        };
        let files = match Files::new(self.context.clone(), login, self.peer()) {
            Ok(files) => files,
            Err(err) => {
                tracing::error!(%err, "the organisation's SFTP folders could not be made");
                session.channel_failure(channel_id)?;
                return Ok(());
            }
        };
        session.channel_success(channel_id)?;
        let config = russh_sftp::server::Config {
            max_client_packet_len: self.context.settings.max_packet_bytes,
        };
        let stream = Bounded::new(channel.into_stream(), config.max_client_packet_len);
        russh_sftp::server::run_with_config(stream, files, config).await;
        Ok(())
    }

    async fn shell_request(
        &mut self,
        channel: ChannelId,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        session.channel_failure(channel)?;
        Ok(())
    }

    async fn exec_request(
        &mut self,
        channel: ChannelId,
        _data: &[u8],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        session.channel_failure(channel)?;
        Ok(())
    }

    async fn channel_eof(
        &mut self,
        channel: ChannelId,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        session.close(channel)?;
        Ok(())
    }
}
