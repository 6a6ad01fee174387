//! Daily export schedules: one per organisation, each day's file written once for all the nodes
//! of one database.
//!
//! Day D (a UTC day) is due at D+1 00:00 plus the schedule's minute, and never before
//! `SETTLE` past midnight, so the last writes of D have committed. A node claims the day by
//! moving `claimed_until` forward in one conditional update while nobody holds it; it writes
//! the file and then moves `next_day` on, which only the claim's holder can do. A node that dies
//! mid-file leaves the claim to run out; another then writes the whole day again (files are
//! put in place by a rename, so a half-written one is never seen).

use crate::OrgScope;
use crate::{Store, StoreError};
use chrono::{DateTime, Duration, NaiveDate, NaiveTime, Utc};
use seam::scope::Sealed;

/// How long a claimed day is its claimer's alone.
const LEASE: Duration = Duration::minutes(30);

/// How long after a day ends its export may start, whatever the schedule's minute.
pub const SETTLE: Duration = Duration::minutes(5);

string_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum ExportFormat ("export format") {
        Parquet = "parquet",
        Csv = "csv",
    }
}

row_struct! {
    struct ScheduleRow {
        org_id: String,
        at_minute: i64,
        format: String,
        next_day: NaiveDate,
        last_file: Option<String>,
        last_rows: Option<i64>,
        last_at: Option<DateTime<Utc>>,
    }
}

const COLUMNS: &str = "org_id, at_minute, format, next_day, last_file, last_rows, last_at";

/// An organisation's daily export.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportSchedule {
    pub org_id: String,
    /// Minutes after midnight (UTC) when the previous day is exported.
    pub at_minute: u32,
    pub format: ExportFormat,
    /// The first day not yet exported.
    pub next_day: NaiveDate,
    /// The last file written: its name, rows and when.
    pub last: Option<(String, u64, DateTime<Utc>)>,
    pub(crate) sealed: Sealed,
}

impl ExportSchedule {
    /// When `day` may be exported.
    pub fn due_at(&self, day: NaiveDate) -> DateTime<Utc> {
        let end = day
            .succ_opt()
            .unwrap_or(day)
            .and_time(NaiveTime::MIN)
            .and_utc();
        end + Duration::minutes(i64::from(self.at_minute)).max(SETTLE)
    }
}

fn schedule_from_row(row: ScheduleRow) -> Result<ExportSchedule, StoreError> {
    let format = crate::error::known(
        ExportFormat::parse(&row.format),
        "export_schedules",
        "format",
        &row.format,
    )?;
    Ok(ExportSchedule {
        org_id: row.org_id,
        at_minute: u32::try_from(row.at_minute).unwrap_or_default(),
        format,
        next_day: row.next_day,
        last: match (row.last_file, row.last_rows, row.last_at) {
            (Some(file), Some(rows), Some(at)) => Some((file, rows.max(0) as u64, at)),
            _ => None,
        },
        sealed: Sealed::vouched(),
    })
}

/// A day claimed for export: write its file, then `finish_export_day`.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimedDay {
    pub org_id: String,
    pub day: NaiveDate,
    pub format: ExportFormat,
    lease: DateTime<Utc>,
}

/// Daily exports: an organisation's schedule and the claim of each due day by one node.
impl Store {
    /// Sets the organisation's daily export (replacing its time and format if it has one; the
    /// days already exported stay done). A new schedule's first day is `first_day`.
    #[tracing::instrument(skip_all)]
    pub async fn set_export_schedule(
        &self,
        org: &OrgScope,
        at_minute: u32,
        format: ExportFormat,
        first_day: NaiveDate,
    ) -> Result<ExportSchedule, StoreError> {
        let org_id = org.id();
        const SQL: &str = "INSERT INTO export_schedules (org_id, at_minute, format, next_day, \
             created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (org_id) DO UPDATE \
             SET at_minute = excluded.at_minute, format = excluded.format";
        if at_minute >= 24 * 60 {
            return Err(StoreError::invalid("at", "a time of day, 00:00 to 23:59"));
        }
        self.tenancy().get_org(org_id).await?;
        self.execute(
            SQL,
            params![
                org_id,
                i64::from(at_minute),
                format.as_str(),
                first_day,
                self.now()
            ],
        )
        .await?;
        self.export_schedule(org)
            .await?
            .ok_or(StoreError::NotFound { what: "schedule" })
    }

    #[tracing::instrument(skip_all)]
    pub async fn export_schedule(
        &self,
        org: &OrgScope,
    ) -> Result<Option<ExportSchedule>, StoreError> {
        let org_id = org.id();
        let sql = format!("SELECT {COLUMNS} FROM export_schedules WHERE org_id = $1");
        let row: Option<ScheduleRow> = self.read_row(&sql, params![org_id]).await?;
        row.map(schedule_from_row).transpose()
    }

    /// Every organisation's schedule, by organisation id.
    #[tracing::instrument(skip_all)]
    pub async fn export_schedules(&self) -> Result<Vec<ExportSchedule>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM export_schedules ORDER BY org_id");
        let rows: Vec<ScheduleRow> = self.read_rows(&sql, params![]).await?;
        rows.into_iter().map(schedule_from_row).collect()
    }

    /// Stops the organisation's daily export; false when it had none.
    #[tracing::instrument(skip_all)]
    pub async fn remove_export_schedule(&self, org: &OrgScope) -> Result<bool, StoreError> {
        let org_id = org.id();
        const SQL: &str = "DELETE FROM export_schedules WHERE org_id = $1";
        let removed = self.execute(SQL, params![org_id]).await?;
        Ok(removed > 0)
    }

    /// Claims the organisation's next day if it is due and no node holds it.
    #[tracing::instrument(skip_all)]
    pub async fn claim_export_day(&self, org: &OrgScope) -> Result<Option<ClaimedDay>, StoreError> {
        let org_id = org.id();
        const CLAIM: &str = "UPDATE export_schedules SET claimed_until = $3 \
             WHERE org_id = $1 AND next_day = $2 AND (claimed_until IS NULL OR claimed_until < $4)";
        let Some(schedule) = self.export_schedule(org).await? else {
            return Ok(None);
        };
        let (at, day) = (self.now(), schedule.next_day);
        if schedule.due_at(day) > at {
            return Ok(None);
        }
        let lease = at + LEASE;
        let claimed = self.execute(CLAIM, params![org_id, day, lease, at]).await?;
        Ok((claimed == 1).then(|| ClaimedDay {
            org_id: org_id.to_string(),
            day,
            format: schedule.format,
            lease,
        }))
    }

    /// Records the claimed day as written (`file`, `rows`) and moves the schedule to the next
    /// day. False when the claim was lost (it ran out and another node took the day).
    #[tracing::instrument(skip_all)]
    pub async fn finish_export_day(
        &self,
        claimed: &ClaimedDay,
        file: &str,
        rows: u64,
    ) -> Result<bool, StoreError> {
        const SQL: &str = "UPDATE export_schedules SET next_day = $3, claimed_until = NULL, \
             last_file = $5, last_rows = $6, last_at = $7 \
             WHERE org_id = $1 AND next_day = $2 AND claimed_until = $4";
        let next = claimed.day.succ_opt().unwrap_or(claimed.day);
        let done = self
            .execute(
                SQL,
                params![
                    &claimed.org_id,
                    claimed.day,
                    next,
                    claimed.lease,
                    file,
                    i64::try_from(rows).unwrap_or(i64::MAX),
                    self.now()
                ],
            )
            .await?;
        Ok(done == 1)
    }

    /// Gives the claimed day up (its file could not be written): due again at the next look.
    #[tracing::instrument(skip_all)]
    pub async fn release_export_day(&self, claimed: &ClaimedDay) -> Result<(), StoreError> {
        const SQL: &str = "UPDATE export_schedules SET claimed_until = NULL \
             WHERE org_id = $1 AND next_day = $2 AND claimed_until = $3";
        self.execute(SQL, params![&claimed.org_id, claimed.day, claimed.lease])
            .await?;
        Ok(())
    }
}

impl ExportSchedule {
    /// The scope of the organisation whose export this is.
    pub fn org(&self) -> crate::OrgScope {
        crate::OrgScope::vouched(&self.org_id)
    }
}
