//! Scheduled daily exports: each serving node looks every `LOOK` for days that are due, claims
//! them (one node per day, see `store`'s schedules) and writes each day's transactions, those
//! the ledger recorded that UTC day, to `exports/transactions-<day>.<format>` in the
//! organisation's SFTP tree.

use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::NaiveTime;
use store::{ClaimedDay, ExportFilter, ExportTime, OrgScope, Store};

use folders::{Folder, Tree};

/// How often a node looks for due days.
pub const LOOK: Duration = Duration::from_secs(60);

/// A time of day as a schedule takes it, `HH:MM` (UTC): minutes after midnight.
pub fn time_of_day(text: &str) -> Result<u32, String> {
    use chrono::Timelike;
    NaiveTime::parse_from_str(text, "%H:%M")
        .ok()
        .filter(|_| text.len() == 5)
        .map(|t| t.hour() * 60 + t.minute())
        .ok_or_else(|| format!("`{text}` is not a time of day: HH:MM, 00:00 to 23:59"))
}

/// Minutes after midnight as `HH:MM`.
pub fn clock(minute: u32) -> String {
    format!("{:02}:{:02}", minute / 60, minute % 60)
}

/// The file name of `day`'s export.
pub fn file_name(claimed: &ClaimedDay) -> String {
    format!(
        "transactions-{}.{}",
        claimed.day.format("%Y-%m-%d"),
        claimed.format.as_str()
    )
}

/// Writes every due day of every schedule, looking every `look`, until `stop`.
pub async fn run(
    store: Store,
    data_dir: PathBuf,
    look: Duration,
    stop: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(stop);
    loop {
        match store.export_schedules().await {
            Ok(schedules) => {
                for schedule in schedules {
                    export_due_days(&store, &data_dir, &schedule.org()).await;
                }
            }
            Err(err) => tracing::warn!(%err, "could not read the export schedules"),
        }
        tokio::select! {
            _ = tokio::time::sleep(look) => {}
            _ = &mut stop => return,
        }
    }
}

/// Writes the organisation's due days, oldest first; how many files were written.
pub async fn export_due_days(store: &Store, data_dir: &Path, org: &OrgScope) -> u32 {
    let org_id = org.id();
    let mut written = 0;
    loop {
        let claimed = match store.claim_export_day(org).await {
            Ok(Some(claimed)) => claimed,
            Ok(None) => return written,
            Err(err) => {
                tracing::warn!(%err, org = org_id, "could not claim an export day");
                return written;
            }
        };
        match export_day(store, data_dir, org, &claimed).await {
            Ok(rows) => {
                written += 1;
                tracing::info!(org = org_id, day = %claimed.day, rows, "daily export written");
            }
            Err(err) => {
                tracing::error!(%err, org = org_id, day = %claimed.day, "the daily export failed; it will be tried again");
                if let Err(err) = store.release_export_day(&claimed).await {
                    tracing::warn!(%err, org = org_id, "could not give the export day up");
                }
                return written;
            }
        }
    }
}

/// Writes the claimed day's file and records it; the rows written.
async fn export_day(
    store: &Store,
    data_dir: &Path,
    org: &OrgScope,
    claimed: &ClaimedDay,
) -> Result<u64, String> {
    let tree = Tree::open(data_dir, &claimed.org_id)
        .map_err(|e| format!("the organisation's SFTP tree: {e}"))?;
    let name = file_name(claimed);
    let start = claimed.day.and_time(NaiveTime::MIN).and_utc();
    let filter = ExportFilter {
        from: Some(start),
        until: Some(start + chrono::Duration::days(1)),
        by: ExportTime::Recorded,
        ..ExportFilter::all()
    };
    let path = tree.file(Folder::Exports, &name);
    let rows = crate::export(store, org, &filter, &path, claimed.format, |_| {}).await?;
    match store.finish_export_day(claimed, &name, rows).await {
        Ok(true) => Ok(rows),
        Ok(false) => {
            Err("the claim ran out before the file was done; another node writes it".into())
        }
        Err(err) => Err(err.to_string()),
    }
}
