//! The command line: the server and the operator's tools share one binary and one configuration.

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use clap::{Args, Parser, Subcommand};
use store::{ApiVersion, EventType, Permission};

#[derive(Debug, Parser)]
#[command(
    name = "rewards",
    version,
    about = "Rewards and loyalty platform: the service and its operator tools"
)]
pub struct Cli {
    /// A TOML configuration file; environment variables override it.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP API (and background work) until interrupted.
    Serve,
    /// Apply pending database migrations (also done by every other command).
    Migrate,
    /// Manage organisations (tenants).
    #[command(subcommand)]
    Org(OrgCommand),
    /// Manage campaigns (programmes) of an organisation.
    #[command(subcommand)]
    Campaign(CampaignCommand),
    /// Issue, list and revoke API keys.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Manage an organisation's webhook endpoints: where its events are delivered, signed.
    #[command(subcommand)]
    Webhook(WebhookCommand),
    /// Set, list, show and test a campaign's earn rules.
    #[command(subcommand)]
    Rules(RulesCommand),
    /// Manage a campaign's tiers.
    #[command(subcommand)]
    Tier(TierCommand),
    /// Import and export a campaign's reward catalogue (format: templates/catalogue.md).
    #[command(subcommand)]
    Catalogue(CatalogueCommand),
    /// Issue and manage SFTP users (the batch-file door).
    #[command(subcommand, name = "sftp-user")]
    SftpUser(SftpUserCommand),
    /// The SFTP server itself.
    #[command(subcommand)]
    Sftp(SftpCommand),
    /// Set, show and remove an organisation's batch-file mappings (how its columns become
    /// earns). Without one, files use the canonical layout (templates/earn.csv).
    #[command(subcommand)]
    Mapping(MappingCommand),
    /// List and show an organisation's batch files: how each was received and how it ended
    /// (duplicates included).
    #[command(subcommand)]
    Batch(BatchCommand),
    /// Run a batch file through the pipeline here, with progress: recorded as a batch, checked,
    /// evaluated, credited and reported into the organisation's reports/ folder.
    Ingest {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
        /// Check and evaluate every row and write the report (`<file>.dry-run.result.json`)
        /// without touching the ledger or recording a batch.
        #[arg(long)]
        dry_run: bool,
        /// A CSV, XLSX or Parquet earn file.
        file: PathBuf,
    },
    /// Write a realistic earn file (CSV; XLSX or Parquet when FILE ends with .xlsx or .parquet)
    /// of N rows over M wallets, for demos, tests and benchmarks. Needs no database.
    #[cfg(feature = "generate")]
    Generate {
        #[arg(long)]
        rows: u64,
        #[arg(long, default_value_t = 1000)]
        wallets: u64,
        /// Wallet references are PREFIX0, PREFIX1, ...
        #[arg(long, default_value = "card-")]
        wallet_prefix: String,
        /// The share of bad rows (0 to 1), one of each kind in turn.
        #[arg(long, default_value_t = 0.0, value_parser = parse_share)]
        bad_share: f64,
        /// The same seed gives the same file.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The month of 2026 the rows are dated in (days 1 to 28).
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=12))]
        month: u32,
        /// Where to write it.
        file: PathBuf,
    },
    /// Moderate reviews: list those held back for a decision, approve or remove one.
    #[command(subcommand)]
    Reviews(ReviewsCommand),
    /// Export the ledger's transactions to Parquet or CSV, now or daily into the
    /// organisation's SFTP exports/ folder.
    #[command(subcommand)]
    Export(ExportCommand),
    /// Expire every lot of earned tokens that is due now (serve also does this every minute).
    Expire,
    /// Check every wallet: balance = EARN + REFUND - BURN - EXPIRY - REVERSAL, and lots and debts
    /// agree. Exits 1 on a mismatch.
    Audit,
    /// Operator accounts: the people who run the service, their roles and organisations.
    #[command(subcommand)]
    Operator(OperatorCommand),
    /// The audit trail of operators' changes: list, export, and verify its chain.
    #[command(subcommand, name = "audit-log")]
    AuditLog(AuditLogCommand),
    /// Manual adjustments: credit or debit a wallet by hand with a reason, approve or reject
    /// those waiting, adjust from a CSV file, and set each role's limits.
    #[command(subcommand)]
    Adjustment(AdjustmentCommand),
}

#[derive(Debug, Subcommand)]
pub enum AdjustmentCommand {
    /// Credit (a positive amount) or debit (a negative one) a wallet. Above the approval
    /// threshold it waits for another operator's approval.
    Add {
        /// The campaign's id, or its name when no other campaign has it.
        #[arg(long)]
        campaign: String,
        /// The wallet's id or external reference.
        #[arg(long)]
        wallet: String,
        /// Tokens, e.g. 50 or -12.5.
        #[arg(long, allow_hyphen_values = true)]
        amount: String,
        /// goodwill, correction, fraud or migration.
        #[arg(long)]
        reason: String,
        /// Why, in words: the member's history shows it.
        #[arg(long)]
        comment: String,
        /// Your key for it: the same command again makes nothing twice.
        #[arg(long)]
        external_id: Option<String>,
    },
    /// The campaign's adjustments, newest first.
    List {
        #[arg(long)]
        campaign: String,
        /// pending (the approval queue), applied or rejected.
        #[arg(long)]
        status: Option<String>,
        /// Only this bulk file's.
        #[arg(long)]
        batch: Option<String>,
        /// The most to list (at most 100).
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// Approve a pending adjustment (not one you asked for), applying it.
    Approve {
        #[arg(long)]
        campaign: String,
        /// The adjustment's id.
        id: String,
    },
    /// Reject a pending adjustment: nothing is written to the wallet.
    Reject {
        #[arg(long)]
        campaign: String,
        /// The adjustment's id.
        id: String,
        /// Why.
        #[arg(long)]
        note: Option<String>,
    },
    /// Adjust wallets from a CSV file (columns wallet, amount, reason, comment, and optionally
    /// external_id). Only tried, each row's outcome printed, unless --apply.
    Bulk {
        #[arg(long)]
        campaign: String,
        /// Make the adjustments (without it: a dry run that writes nothing).
        #[arg(long)]
        apply: bool,
        file: PathBuf,
    },
    /// Show the limits, or set them: tokens per adjustment for each role that adjusts, and the
    /// threshold above which an adjustment waits for a second operator (`none`: no limit).
    Limits {
        #[arg(long)]
        owner: Option<String>,
        #[arg(long)]
        support: Option<String>,
        #[arg(long)]
        approval_over: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum OperatorCommand {
    /// Add an operator; prints a one-time password, to be changed at the first sign-in (shown
    /// only now, kept only hashed). The first owner is made this way, on the server.
    Add {
        /// The operator's e-mail address, with which it signs in.
        #[arg(long)]
        email: String,
        /// owner, admin, org-admin, support or viewer.
        #[arg(long, value_parser = parse_role)]
        role: store::Role,
        /// An organisation a per-organisation role (org-admin, support, viewer) acts on
        /// (repeatable): its id, or its name when no other organisation has it.
        #[arg(long = "org", value_name = "ORG")]
        orgs: Vec<String>,
        /// An address block the operator may sign in from (repeatable), e.g. 10.0.0.0/8; none:
        /// anywhere.
        #[arg(long = "allow-from", value_name = "CIDR")]
        allow_from: Vec<String>,
    },
    /// List the operators (never their passwords).
    List,
    /// Stop an operator from signing in.
    Disable {
        /// The operator's id or e-mail address.
        operator: String,
    },
    /// Let a disabled operator sign in again.
    Enable {
        /// The operator's id or e-mail address.
        operator: String,
    },
    /// Remove an operator; its entries stay in the audit trail.
    Remove {
        /// The operator's id or e-mail address.
        operator: String,
    },
    /// Give an operator a new one-time password (printed once), to be changed at its next
    /// sign-in.
    ResetPassword {
        /// The operator's id or e-mail address.
        operator: String,
    },
    /// Turn an operator's second factor off (a lost phone): its TOTP secret and recovery codes
    /// are gone; it enrols again when two-factor sign-in is required.
    #[command(name = "reset-2fa")]
    Reset2fa {
        /// The operator's id or e-mail address.
        operator: String,
    },
    /// Give an operator another role (and the organisations a per-organisation role acts on);
    /// it holds from the operator's next request.
    SetRole {
        /// The operator's id or e-mail address.
        operator: String,
        /// owner, admin, org-admin, support or viewer.
        #[arg(long, value_parser = parse_role)]
        role: store::Role,
        /// An organisation a per-organisation role acts on (repeatable): its id, or its name
        /// when no other organisation has it.
        #[arg(long = "org", value_name = "ORG")]
        orgs: Vec<String>,
    },
    /// Require a second factor (TOTP) of every operator, or stop requiring it.
    #[command(name = "require-2fa")]
    Require2fa {
        #[arg(action = clap::ArgAction::Set, value_parser = clap::value_parser!(bool))]
        required: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AuditLogCommand {
    /// Entries, newest first, filtered by who, organisation, operation and time.
    List {
        #[command(flatten)]
        filter: AuditLogFilter,
        /// The most to list.
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=100))]
        limit: u32,
        /// Which page of that many (1 is the newest).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        page: u32,
    },
    /// Write the entries (oldest first) to a CSV file, or Parquet when FILE ends in .parquet.
    Export {
        #[command(flatten)]
        filter: AuditLogFilter,
        /// Where to write them.
        file: PathBuf,
    },
    /// Walk the chain from its first kept entry to its head: exits 1 and names each entry that
    /// was edited, removed or moved.
    Verify,
    /// Remove the entries older than DAYS days (the retention period), recorded in the trail
    /// itself; the chain then starts at the first entry kept.
    Prune {
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        older_than_days: u32,
    },
}

#[derive(Debug, Args)]
pub struct AuditLogFilter {
    /// Entries by this operator (id or e-mail), or this OS user for `local`.
    #[arg(long)]
    pub actor: Option<String>,
    /// Entries about this organisation (its id).
    #[arg(long)]
    pub org: Option<String>,
    /// One operation (`org.create`), or a family ending in `.` (`key.`).
    #[arg(long)]
    pub operation: Option<String>,
    /// From this instant on (RFC 3339).
    #[arg(long, value_parser = parse_time)]
    pub since: Option<DateTime<Utc>>,
    /// Before this instant (RFC 3339).
    #[arg(long, value_parser = parse_time)]
    pub until: Option<DateTime<Utc>>,
}

fn parse_role(s: &str) -> Result<store::Role, String> {
    s.parse()
}

#[derive(Debug, Subcommand)]
pub enum MappingCommand {
    /// Validate a mapping document (TOML, or JSON by its .json extension) and store it for the
    /// file names its `pattern` matches (every file by default). Every problem is listed at once.
    Set {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
        file: PathBuf,
    },
    /// Print the organisation's mappings (or the one for PATTERN) as JSON documents.
    Show {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
        #[arg(long)]
        pattern: Option<String>,
    },
    /// Remove the mapping for PATTERN.
    Remove {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
        #[arg(long)]
        pattern: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ExportCommand {
    /// Write the organisation's transactions to FILE (.parquet or .csv), with progress.
    Transactions {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
        /// Only this campaign's: its id, or its name when no other campaign of the organisation
        /// has it.
        #[arg(long)]
        campaign: Option<String>,
        /// The first day (YYYY-MM-DD, UTC) whose transactions to include.
        #[arg(long, value_name = "DAY", value_parser = parse_day)]
        from: Option<chrono::NaiveDate>,
        /// The last day (YYYY-MM-DD, UTC) whose transactions to include, all of it.
        #[arg(long, value_name = "DAY", value_parser = parse_day)]
        to: Option<chrono::NaiveDate>,
        /// The kinds to include, comma-separated (EARN,BURN,EXPIRY); all by default.
        #[arg(long = "type", value_name = "TYPES", value_delimiter = ',', value_parser = parse_kind)]
        kinds: Vec<store::TransactionKind>,
        /// Bound by the day the ledger recorded each transaction rather than the transaction's
        /// own date (what the daily export does).
        #[arg(long)]
        recorded: bool,
        /// Where to write it; its extension says the format.
        file: PathBuf,
    },
    /// Export the organisation's transactions every day, the previous UTC day's in one file,
    /// into its SFTP exports/ folder. Setting it again changes the time or format.
    Schedule {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
        /// The time of day (HH:MM, UTC) when the previous day is written; not before 00:05.
        #[arg(long, value_parser = parse_time_of_day)]
        at: u32,
        #[arg(long, default_value = "parquet", value_parser = parse_format)]
        format: store::ExportFormat,
    },
    /// Stop the organisation's daily export (files already written stay).
    Unschedule {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
    },
    /// List the daily exports: time, format, the next day due and the last file written.
    Schedules,
}

#[derive(Debug, Subcommand)]
pub enum ReviewsCommand {
    /// The organisation's reviews hidden until an operator decides (a profanity score or
    /// reports at or past the thresholds), oldest first.
    Pending {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
        /// The most to list.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100))]
        limit: u32,
    },
    /// Show the review again in lists and averages, whatever is reported about it later.
    Approve {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
        review_id: String,
    },
    /// Take the review out of the API for good (its author cannot post another for the same
    /// voucher).
    Remove {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
        review_id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum CatalogueCommand {
    /// Check a catalogue document whole, then apply it in one transaction: records are upserted
    /// by their ids, so importing the same file twice changes nothing. Every problem is listed
    /// with its JSON path, and then nothing is written.
    Import {
        /// The campaign: its id, or its name when no other campaign (of the organisation) has it.
        #[arg(long)]
        campaign: String,
        /// Check and count only; nothing is written.
        #[arg(long)]
        dry_run: bool,
        /// Also remove the products, categories and tags that the file no longer holds.
        #[arg(long)]
        replace: bool,
        /// The catalogue document (JSON).
        file: PathBuf,
    },
    /// Write the campaign's catalogue as an import document (to FILE, or standard output).
    Export {
        /// The campaign: its id, or its name when no other campaign (of the organisation) has it.
        #[arg(long)]
        campaign: String,
        file: Option<PathBuf>,
    },
    /// Write a realistic catalogue document of N products (categories, tags, tiers, branches in
    /// three cities, variants at several prices), for demos and load tests. Needs no database.
    #[cfg(feature = "generate")]
    Generate {
        #[arg(long)]
        products: usize,
        /// The same seed gives the same catalogue.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        file: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum TierCommand {
    /// Add a tier; wallets are re-tiered at once.
    Add {
        /// The campaign: its id, or its name when no other campaign (of the organisation) has it.
        #[arg(long)]
        campaign: String,
        #[arg(long)]
        name: String,
        /// Lower is higher priority.
        #[arg(long)]
        precedence: i64,
        /// Lifetime earned tokens from which a wallet holds the tier.
        #[arg(long)]
        threshold: String,
        /// A benefit shown with the tier (repeatable).
        #[arg(long = "benefit")]
        benefits: Vec<String>,
        #[arg(long)]
        image_url: Option<String>,
    },
    /// List a campaign's tiers.
    List {
        /// The campaign: its id, or its name when no other campaign (of the organisation) has it.
        #[arg(long)]
        campaign: String,
    },
    /// Remove a tier (by id or name); its wallets fall to the next tier they reach.
    Remove {
        /// The campaign: its id, or its name when no other campaign (of the organisation) has it.
        #[arg(long)]
        campaign: String,
        tier: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum RulesCommand {
    /// Validate a rule set (TOML) and make it the campaign's active version.
    Set {
        /// The campaign: its id, or its name when no other campaign (of the organisation) has it.
        #[arg(long)]
        campaign: String,
        /// The rule set file.
        file: PathBuf,
    },
    /// List the campaign's rule-set versions (the newest is active).
    List {
        /// The campaign: its id, or its name when no other campaign (of the organisation) has it.
        #[arg(long)]
        campaign: String,
    },
    /// Print a rule-set version (the active one unless --version is given).
    Show {
        /// The campaign: its id, or its name when no other campaign (of the organisation) has it.
        #[arg(long)]
        campaign: String,
        #[arg(long)]
        version: Option<i64>,
    },
    /// Re-evaluate the campaign's stored earn transactions (dated FROM to TO) under a candidate
    /// rule set and report the difference in tokens, in total, per rule and for the wallets it
    /// changes most. Changes nothing.
    Backtest {
        /// The campaign: its id, or its name when no other campaign (of the organisation) has it.
        #[arg(long)]
        campaign: String,
        /// The candidate rule set file.
        file: PathBuf,
        /// First day (YYYY-MM-DD) or moment (RFC 3339).
        #[arg(long)]
        from: String,
        /// Last day (inclusive) or moment.
        #[arg(long)]
        to: String,
    },
    /// Show each limit and budget of the campaign's active rule set with its use in the period
    /// holding a day (today in the programme's time zone unless --day is given): over every
    /// member, wallet or meta value it counts, or for one (--scope) with what is left.
    Limits {
        /// The campaign: its id, or its name when no other campaign (of the organisation) has it.
        #[arg(long)]
        campaign: String,
        /// One member's or wallet's id, or a meta value (for `meta.<key>` limits).
        #[arg(long)]
        scope: Option<String>,
        /// The day (YYYY-MM-DD) whose periods to show.
        #[arg(long)]
        day: Option<String>,
    },
    /// Run a rule set over sample rows (CSV with the earn template's columns) and print each
    /// row's tokens and trace. Touches no database.
    Test {
        /// The rule set file.
        file: PathBuf,
        /// Rows to evaluate: columns id, amount, date (RFC 3339), description, currency,
        /// meta.<key>..., and optionally wallet.tier, wallet.balance, member.status.
        #[arg(long)]
        rows: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum OrgCommand {
    /// Create an organisation; prints its id.
    Create {
        #[arg(long)]
        name: String,
    },
    /// List organisations.
    List,
}

#[derive(Debug, Subcommand)]
pub enum CampaignCommand {
    /// Create a campaign; prints its id.
    Create(CampaignCreate),
    /// List an organisation's campaigns.
    List {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
    },
    /// Show a campaign with its policy, active rule-set version and tiers.
    Show {
        /// The campaign: its id, or its name when no other campaign (of the organisation) has it.
        #[arg(long)]
        campaign: String,
    },
    /// Set the programme's policy: the balance a member must keep, when tokens expire, what a
    /// reversal does with tokens already spent, transfers between wallets and pending points.
    Policy(PolicyArgs),
}

#[derive(Debug, Args)]
pub struct PolicyArgs {
    /// The campaign: its id, or its name when no other campaign (of the organisation) has it.
    #[arg(long)]
    pub campaign: String,
    /// Tokens a burn must leave in the wallet.
    #[arg(long)]
    pub min_balance: Option<String>,
    /// never, end-of-month, end-of-year or days:N.
    #[arg(long, conflicts_with = "expiry_days")]
    pub expiry: Option<String>,
    /// Tokens expire this many days after they were earned (same as --expiry days:N).
    #[arg(long)]
    pub expiry_days: Option<u32>,
    /// What a reversal of an earn does with tokens the member already spent: debt (the
    /// balance goes below zero until later earns pay it), clip (take what is left) or refuse.
    #[arg(long)]
    pub shortfall: Option<String>,
    /// Whether members may transfer tokens between wallets: allow or forbid.
    #[arg(long)]
    pub transfers: Option<String>,
    /// The most tokens one wallet may transfer out in a day (UTC), or `none`.
    #[arg(long)]
    pub transfer_daily_cap: Option<String>,
    /// Whether a transfer moves lifetime earnings (and so tiers) with the tokens.
    #[arg(long)]
    pub transfers_move_earned: Option<bool>,
    /// Earned tokens are pending this many days after the earn's date before they can be
    /// spent (a return window; 0: at once). A rule's `pending_days` overrides it.
    #[arg(long)]
    pub pending_days: Option<u32>,
    /// Whether pending tokens count toward lifetime earnings (and so tiers) when earned,
    /// rather than when they vest.
    #[arg(long)]
    pub pending_counts_tier: Option<bool>,
    /// What the expiry of tokens that were pending counts from: earn or vest.
    #[arg(long)]
    pub expiry_from: Option<String>,
    /// Days before their expiry that tokens about to expire are announced
    /// (`wallet.points_expiring`; 0: never; default 30, at most 366).
    #[arg(long)]
    pub expiry_notice_days: Option<u32>,
    /// How many days back an earn may be dated, by the API or in a file (an older one is
    /// refused, naming `date`), or `none` (back to 1970, the default).
    #[arg(long)]
    pub earn_max_age_days: Option<String>,
}

#[derive(Debug, Args)]
pub struct CampaignCreate {
    /// The organisation: its id, or its name when no other organisation has it.
    #[arg(long)]
    pub org: String,
    #[arg(long)]
    pub name: String,
    /// Currency or points unit: 2-16 letters, digits or `_` (EUR, POINTS...).
    #[arg(long)]
    pub currency: String,
    /// URL of the campaign's logo.
    #[arg(long)]
    pub logo: Option<String>,
    /// URL of the campaign's favicon.
    #[arg(long)]
    pub favicon: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Issue a key for a campaign; prints the key and its secret, which is shown only this once.
    Issue(KeyIssue),
    /// List an organisation's keys (never their secrets).
    List {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
    },
    /// Revoke a key by its id: requests with it are refused from now on.
    Revoke {
        /// The key's id (from `key issue` or `key list`).
        key_id: String,
    },
}

#[derive(Debug, Args)]
pub struct KeyIssue {
    /// The organisation: its id, or its name when no other organisation has it.
    #[arg(long)]
    pub org: String,
    /// The campaign: its id, or its name when no other campaign (of the organisation) has it.
    #[arg(long)]
    pub campaign: String,
    /// Grant a permission (repeatable): vector-search, catalogue-write, redeem-codes, webhooks,
    /// member-data.
    #[arg(long = "allow", value_name = "PERMISSION", value_parser = parse_permission)]
    pub allow: Vec<Permission>,
    /// The API version requests get when they send no `x-api-version` (1.9.5 or 1.6.2).
    #[arg(long, value_parser = parse_version)]
    pub version: Option<ApiVersion>,
    /// The key may only read (GET requests).
    #[arg(long)]
    pub read_only: bool,
}

fn parse_permission(s: &str) -> Result<Permission, String> {
    s.parse()
}

fn parse_version(s: &str) -> Result<ApiVersion, String> {
    s.parse()
}

fn parse_event_type(s: &str) -> Result<EventType, String> {
    s.parse()
}

fn parse_time(s: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.to_utc())
        .map_err(|e| format!("`{s}` is not an RFC 3339 date-time: {e}"))
}

#[derive(Debug, Subcommand)]
pub enum WebhookCommand {
    /// Add an endpoint; prints its signing secret, shown only this once.
    Add {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
        /// Only this campaign's events (and the organisation's own); else every campaign's.
        #[arg(long)]
        campaign: Option<String>,
        /// An https:// address (http:// where `webhook_allow_http` is set).
        #[arg(long)]
        url: String,
        /// An event type to deliver (repeatable); none: every type.
        #[arg(long = "event", value_name = "TYPE", value_parser = parse_event_type)]
        events: Vec<EventType>,
        /// The API version whose shapes deliveries carry (1.9.5 or 1.6.2).
        #[arg(long, value_parser = parse_version, default_value = "1.9.5")]
        version: ApiVersion,
        #[arg(long)]
        description: Option<String>,
    },
    /// List an organisation's endpoints (never their secrets).
    List {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
    },
    /// Remove an endpoint, its pending deliveries and its log.
    Remove {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
        endpoint: String,
    },
    /// Enable an endpoint again (after a 410, days of failures or `disable`).
    Enable {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
        endpoint: String,
    },
    /// Stop delivering to an endpoint; its deliveries wait until it is enabled.
    Disable {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
        endpoint: String,
    },
    /// A new signing secret, printed once; the old one keeps signing beside it for a while.
    RotateSecret {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
        endpoint: String,
        /// Hours the old secret still signs (0 to 168).
        #[arg(long, default_value_t = 24, value_parser = clap::value_parser!(u32).range(0..=168))]
        keep_previous_hours: u32,
    },
    /// Send a `webhook.test` event to the endpoint alone (the running service delivers it).
    Test {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
        endpoint: String,
    },
    /// The endpoint's delivery log, newest attempt first.
    Attempts {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
        endpoint: String,
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100))]
        limit: u32,
    },
    /// Deliver again one event (`--event`) or those of a time range (`--from`, `--to`).
    Redeliver {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
        endpoint: String,
        #[arg(long, conflicts_with_all = ["from", "to"], required_unless_present_all = ["from", "to"])]
        event: Option<String>,
        #[arg(long, value_parser = parse_time, requires = "to")]
        from: Option<DateTime<Utc>>,
        #[arg(long, value_parser = parse_time, requires = "from")]
        to: Option<DateTime<Utc>>,
    },
}

#[derive(Debug, Subcommand)]
pub enum SftpUserCommand {
    /// Issue a user for an organisation, logging in with a password (read from standard input)
    /// and/or a public key.
    Add {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
        #[arg(long)]
        username: String,
        /// Read the password from standard input (its first line), so it never shows in `ps`.
        #[arg(long)]
        password_stdin: bool,
        /// An OpenSSH public key file (`id_ed25519.pub`).
        #[arg(long, value_name = "FILE")]
        public_key: Option<PathBuf>,
    },
    /// Add a public key to a user. A key can belong to one user only.
    KeyAdd {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
        #[arg(long)]
        username: String,
        #[arg(long, value_name = "FILE")]
        public_key: PathBuf,
    },
    /// List an organisation's users with their key fingerprints.
    List {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
    },
    /// Stop a user from logging in.
    Disable {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
        #[arg(long)]
        username: String,
    },
    /// Remove a user and its keys.
    Remove {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
        #[arg(long)]
        username: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum SftpCommand {
    /// Print the server's host key fingerprint (making the key if there is none yet), for
    /// clients to check on their first connection.
    HostKey,
    /// List the addresses banned now after repeated failed logins, and until when.
    Bans,
    /// Lift the ban on an address (it may log in again at once, on every node).
    Unban {
        /// The IP address, as `rewards sftp bans` lists it.
        address: std::net::IpAddr,
    },
}

#[derive(Debug, Subcommand)]
pub enum BatchCommand {
    /// The organisation's batch files, newest first.
    List {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
        /// The most to list.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100))]
        limit: u32,
        /// Which page of that many (1 is the newest).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        page: u32,
    },
    /// One batch: its file, state, counts, the batch a duplicate repeats, and its report.
    Show {
        /// The organisation: its id, or its name when no other organisation has it.
        #[arg(long)]
        org: String,
        /// The batch's id, as `rewards batch list` and the file's report name it.
        id: String,
    },
}

#[cfg(feature = "generate")]
fn parse_share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(share) if (0.0..=1.0).contains(&share) => Ok(share),
        _ => Err(format!("`{s}`: give a share between 0 and 1, e.g. 0.01")),
    }
}

fn parse_day(text: &str) -> Result<chrono::NaiveDate, String> {
    chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .map_err(|_| format!("`{text}` is not a day: YYYY-MM-DD"))
}

fn parse_kind(text: &str) -> Result<store::TransactionKind, String> {
    store::TransactionKind::parse_any_case(text)
        .ok_or_else(|| format!("`{text}` is not a transaction type: EARN, BURN or EXPIRY"))
}

fn parse_format(text: &str) -> Result<store::ExportFormat, String> {
    store::ExportFormat::parse_any_case(text)
        .ok_or_else(|| format!("`{text}` is not a format: parquet or csv"))
}

/// Minutes after midnight from `HH:MM`.
fn parse_time_of_day(text: &str) -> Result<u32, String> {
    exports::scheduled::time_of_day(text)
}
