//! Addresses the SFTP server bans after repeated failed logins (the server counts the failures;
//! the store keeps the bans, so that every node honours one and an operator can lift it).

use crate::{StoreError, Tenancy};
use chrono::{DateTime, Utc};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SftpBan {
    /// The client's IP address, as the server saw it.
    pub address: String,
    /// Failed logins that earned the ban.
    pub failures: u32,
    pub banned_at: DateTime<Utc>,
    pub banned_until: DateTime<Utc>,
}

type BanRow = (String, i64, DateTime<Utc>, DateTime<Utc>);

fn ban_of((address, failures, banned_at, banned_until): BanRow) -> SftpBan {
    SftpBan {
        address,
        failures: u32::try_from(failures).unwrap_or(u32::MAX),
        banned_at,
        banned_until,
    }
}

/// SFTP bans (not scoped to an organisation: an address is banned whoever it tried to be).
impl Tenancy {
    /// Bans `address` until `until` (a ban already there is replaced).
    #[tracing::instrument(skip_all)]
    pub async fn ban_sftp_address(
        &self,
        address: &str,
        failures: u32,
        until: DateTime<Utc>,
    ) -> Result<SftpBan, StoreError> {
        const SQL: &str = "INSERT INTO sftp_bans (address, failures, banned_at, banned_until) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (address) DO UPDATE \
             SET failures = excluded.failures, banned_at = excluded.banned_at, \
             banned_until = excluded.banned_until";
        let at = self.now();
        self.execute(SQL, params![address, i64::from(failures), at, until])
            .await?;
        Ok(SftpBan {
            address: address.to_string(),
            failures,
            banned_at: at,
            banned_until: until,
        })
    }

    /// The ban on `address` in force now, if any.
    #[tracing::instrument(skip_all)]
    pub async fn sftp_ban(&self, address: &str) -> Result<Option<SftpBan>, StoreError> {
        const SQL: &str = "SELECT address, failures, banned_at, banned_until FROM sftp_bans \
             WHERE address = $1 AND banned_until > $2";
        let row: Option<BanRow> = self.read_row(SQL, params![address, self.now()]).await?;
        Ok(row.map(ban_of))
    }

    /// Every ban in force now, the latest first.
    #[tracing::instrument(skip_all)]
    pub async fn sftp_bans(&self) -> Result<Vec<SftpBan>, StoreError> {
        const SQL: &str = "SELECT address, failures, banned_at, banned_until FROM sftp_bans \
             WHERE banned_until > $1 ORDER BY banned_at DESC, address";
        let rows: Vec<BanRow> = self.read_rows(SQL, params![self.now()]).await?;
        Ok(rows.into_iter().map(ban_of).collect())
    }

    /// Lifts the ban on `address`; whether one was in force. Bans that ended are cleared too.
    #[tracing::instrument(skip_all)]
    pub async fn unban_sftp_address(&self, address: &str) -> Result<bool, StoreError> {
        let at = self.now();
        let lifted = self
            .execute(
                "DELETE FROM sftp_bans WHERE address = $1 AND banned_until > $2",
                params![address, at],
            )
            .await?;
        self.execute(
            "DELETE FROM sftp_bans WHERE banned_until <= $1",
            params![at],
        )
        .await?;
        Ok(lifted > 0)
    }
}
