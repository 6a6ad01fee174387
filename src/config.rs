//! Configuration: defaults that work with nothing set, then a TOML file (`--config`), then
//! environment variables, each overriding the one before.

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use serde::Deserialize;

/// The settings a TOML file may hold; every key is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    data_dir: Option<PathBuf>,
    database_url: Option<String>,
    codes_key: Option<String>,
    http_addr: Option<SocketAddr>,
    sftp_addr: Option<SocketAddr>,
    db_max_connections: Option<u32>,
    log_format: Option<LogFormat>,
    background_workers: Option<bool>,
    sftp_max_upload_bytes: Option<u64>,
    sftp_auth_delay_ms: Option<u64>,
    sftp_max_auth_attempts: Option<usize>,
    sftp_idle_timeout_secs: Option<u64>,
    sftp_ban_after: Option<u32>,
    sftp_ban_window_secs: Option<u64>,
    sftp_ban_secs: Option<u64>,
    leaderboard_refresh_secs: Option<u64>,
    reviews_profanity_threshold: Option<f64>,
    reviews_report_threshold: Option<u32>,
    public_url: Option<String>,
    http_header_timeout_secs: Option<u64>,
    http_max_connections: Option<usize>,
    http_shutdown_grace_secs: Option<u64>,
    webhook_allow_http: Option<bool>,
    webhook_allow: Option<Vec<outbound::Network>>,
    webhook_timeout_secs: Option<u64>,
    webhook_concurrency: Option<usize>,
    webhook_sockets: Option<usize>,
    webhook_org_sockets: Option<usize>,
    webhook_endpoints_per_org: Option<usize>,
    dates_ahead_secs: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

#[derive(Debug, Clone)]
pub struct Config {
    /// Where the SQLite database (by default) and, later, SFTP files live.
    pub data_dir: PathBuf,
    /// `None`: the SQLite file `rewards.db` in `data_dir`.
    pub database_url: Option<Secret>,
    /// The 64 hex digits that seal redemption codes. `None`: the key in `data_dir/codes.key`,
    /// made on first start. Several nodes on one database need the same key.
    pub codes_key: Option<Secret>,
    pub http_addr: SocketAddr,
    /// The SFTP server's address (batch files).
    pub sftp_addr: SocketAddr,
    /// Connections per PostgreSQL pool (per process).
    pub db_max_connections: u32,
    pub log_format: LogFormat,
    /// Whether `serve` also runs the earn worker and the expiry sweeper. A deployment may keep
    /// some nodes for HTTP only.
    pub background_workers: bool,
    /// The SFTP server's limits (upload size, login delays and attempts, idle time, bans).
    pub sftp: ingest::sftp::Settings,
    /// The leaderboard's interval and the review moderation thresholds.
    pub api: api::Settings,
    /// How far ahead of the clock a transaction may be dated.
    pub dates_ahead: Duration,
    /// Whether `webhook_sockets` and `webhook_org_sockets` were set (else they follow the
    /// process's descriptor limit at start: `derive_sockets`).
    pub webhook_sockets_set: (bool, bool),
}

impl Default for Config {
    fn default() -> Self {
        Config {
            data_dir: PathBuf::from("./data"),
            database_url: None,
            codes_key: None,
            http_addr: ([127, 0, 0, 1], 8080).into(),
            sftp_addr: ([127, 0, 0, 1], 2222).into(),
            db_max_connections: 16,
            log_format: LogFormat::Text,
            background_workers: true,
            sftp: ingest::sftp::Settings::default(),
            api: api::Settings::default(),
            dates_ahead: Duration::from_secs(24 * 3600),
            webhook_sockets_set: (false, false),
        }
    }
}

impl Config {
    /// Reads the configuration: defaults, then `file` if given, then the environment.
    pub fn load(file: Option<&Path>) -> anyhow::Result<Config> {
        let mut config = Config::default();
        if let Some(path) = file {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading configuration file {}", path.display()))?;
            let parsed: FileConfig = toml::from_str(&text)
                .with_context(|| format!("parsing configuration file {}", path.display()))?;
            config.apply(parsed);
        }
        config.apply(from_env(|name| std::env::var(name).ok())?);
        config.check()?;
        Ok(config)
    }

    /// Refuses settings that parse but make no sense, naming the setting.
    fn check(&self) -> anyhow::Result<()> {
        let api = &self.api;
        if api.leaderboard_refresh.is_zero() {
            bail!("leaderboard_refresh_secs (REWARDS_LEADERBOARD_REFRESH_SECS) must be at least 1");
        }
        let threshold = api.moderation.profanity_threshold;
        if !(0.0..=1.0).contains(&threshold) {
            bail!(
                "reviews_profanity_threshold (REWARDS_REVIEWS_PROFANITY_THRESHOLD) must be from \
                 0.0 to 1.0, not {threshold}"
            );
        }
        if api.http.header_timeout.is_zero() {
            bail!("http_header_timeout_secs (REWARDS_HTTP_HEADER_TIMEOUT_SECS) must be at least 1");
        }
        if api.http.max_connections == 0 {
            bail!("http_max_connections (REWARDS_HTTP_MAX_CONNECTIONS) must be at least 1");
        }
        if api.webhooks.timeout.is_zero() || api.webhooks.timeout > Duration::from_secs(60) {
            bail!("webhook_timeout_secs (REWARDS_WEBHOOK_TIMEOUT_SECS) must be from 1 to 60");
        }
        if !(1..=256).contains(&api.webhooks.concurrency) {
            bail!("webhook_concurrency (REWARDS_WEBHOOK_CONCURRENCY) must be from 1 to 256");
        }
        if !(1..=65_536).contains(&api.webhooks.sockets) {
            bail!("webhook_sockets (REWARDS_WEBHOOK_SOCKETS) must be from 1 to 65536");
        }
        if !(1..=api.webhooks.sockets).contains(&api.webhooks.org_sockets) {
            bail!(
                "webhook_org_sockets (REWARDS_WEBHOOK_ORG_SOCKETS) must be from 1 to \
                 webhook_sockets ({})",
                api.webhooks.sockets
            );
        }
        if !(1..=10_000).contains(&api.webhooks.endpoints_per_org) {
            bail!(
                "webhook_endpoints_per_org (REWARDS_WEBHOOK_ENDPOINTS_PER_ORG) must be from 1 to \
                 10000"
            );
        }
        if self.dates_ahead > Duration::from_secs(366 * 24 * 3600) {
            bail!("dates_ahead_secs (REWARDS_DATES_AHEAD_SECS) must be at most 31622400 (a year)");
        }
        if api.moderation.report_threshold == 0 {
            bail!("reviews_report_threshold (REWARDS_REVIEWS_REPORT_THRESHOLD) must be at least 1");
        }
        if let Some(url) = &api.public_url {
            let rest = url
                .strip_prefix("https://")
                .or_else(|| url.strip_prefix("http://"));
            let usable = rest.is_some_and(|rest| {
                !rest.is_empty()
                    && !rest.starts_with('/')
                    && !rest.contains(|c: char| c.is_whitespace() || "?#@".contains(c))
            });
            if !usable {
                bail!(
                    "public_url (REWARDS_PUBLIC_URL) must be an http or https URL without a query, \
                     such as https://rewards.example.com, not {url:?}"
                );
            }
        }
        Ok(())
    }

    fn apply(&mut self, file: FileConfig) {
        if let Some(v) = file.data_dir {
            self.data_dir = v;
        }
        if let Some(v) = file.database_url {
            self.database_url = Some(Secret(v));
        }
        if let Some(v) = file.codes_key {
            self.codes_key = Some(Secret(v));
        }
        if let Some(v) = file.http_addr {
            self.http_addr = v;
        }
        if let Some(v) = file.sftp_addr {
            self.sftp_addr = v;
        }
        if let Some(v) = file.db_max_connections {
            self.db_max_connections = v;
        }
        if let Some(v) = file.log_format {
            self.log_format = v;
        }
        if let Some(v) = file.background_workers {
            self.background_workers = v;
        }
        let sftp = &mut self.sftp;
        if let Some(v) = file.sftp_max_upload_bytes {
            sftp.max_upload_bytes = v;
        }
        if let Some(v) = file.sftp_auth_delay_ms {
            sftp.auth_rejection_delay = Duration::from_millis(v);
        }
        if let Some(v) = file.sftp_max_auth_attempts {
            sftp.max_auth_attempts = v;
        }
        if let Some(v) = file.sftp_idle_timeout_secs {
            sftp.idle_timeout = Duration::from_secs(v);
        }
        if let Some(v) = file.sftp_ban_after {
            sftp.ban.failures = v;
        }
        if let Some(v) = file.sftp_ban_window_secs {
            sftp.ban.window = Duration::from_secs(v);
        }
        if let Some(v) = file.sftp_ban_secs {
            sftp.ban.ban = Duration::from_secs(v);
        }
        let api = &mut self.api;
        if let Some(v) = file.leaderboard_refresh_secs {
            api.leaderboard_refresh = Duration::from_secs(v);
        }
        if let Some(v) = file.reviews_profanity_threshold {
            api.moderation.profanity_threshold = v;
        }
        if let Some(v) = file.reviews_report_threshold {
            api.moderation.report_threshold = v;
        }
        if let Some(v) = file.public_url {
            api.public_url = Some(v.trim().to_string());
        }
        if let Some(v) = file.http_header_timeout_secs {
            api.http.header_timeout = Duration::from_secs(v);
        }
        if let Some(v) = file.http_max_connections {
            api.http.max_connections = v;
        }
        if let Some(v) = file.http_shutdown_grace_secs {
            api.http.grace = Duration::from_secs(v);
        }
        let webhooks = &mut api.webhooks;
        if let Some(v) = file.webhook_allow_http {
            webhooks.rules.allow_http = v;
        }
        if let Some(v) = file.webhook_allow {
            webhooks.rules.allowed = v;
        }
        if let Some(v) = file.webhook_timeout_secs {
            webhooks.timeout = Duration::from_secs(v);
        }
        if let Some(v) = file.webhook_concurrency {
            webhooks.concurrency = v;
        }
        if let Some(v) = file.webhook_sockets {
            webhooks.sockets = v;
            self.webhook_sockets_set.0 = true;
            if !self.webhook_sockets_set.1 {
                webhooks.org_sockets = (v / 4).max(1);
            }
        }
        if let Some(v) = file.webhook_org_sockets {
            webhooks.org_sockets = v;
            self.webhook_sockets_set.1 = true;
        }
        if let Some(v) = file.webhook_endpoints_per_org {
            webhooks.endpoints_per_org = v;
        }
        if let Some(v) = file.dates_ahead_secs {
            self.dates_ahead = Duration::from_secs(v);
        }
    }

    /// Sets the sockets deliveries may use from the process's descriptor limit (see
    /// `outbound::sockets_within`), where configuration did not set them.
    pub fn derive_sockets(&mut self, descriptors: u64) {
        let (sockets_set, org_set) = self.webhook_sockets_set;
        let webhooks = &mut self.api.webhooks;
        if !sockets_set {
            webhooks.sockets = outbound::sockets_within(descriptors, self.api.http.max_connections);
        }
        if !org_set {
            webhooks.org_sockets = (webhooks.sockets / 4).max(1);
        }
        webhooks.org_sockets = webhooks.org_sockets.min(webhooks.sockets);
    }
}

/// The environment's settings, read through `var` (a parameter so tests need not touch the
/// process environment).
fn from_env(var: impl Fn(&str) -> Option<String>) -> anyhow::Result<FileConfig> {
    fn parse<T: std::str::FromStr>(name: &str, value: Option<String>) -> anyhow::Result<Option<T>>
    where
        T::Err: fmt::Display,
    {
        value
            .filter(|v| !v.trim().is_empty())
            .map(|v| {
                v.trim()
                    .parse::<T>()
                    .map_err(|e| anyhow::anyhow!("{name}={v:?}: {e}"))
            })
            .transpose()
    }
    let log_format = match var("REWARDS_LOG_FORMAT").as_deref().map(str::trim) {
        None | Some("") => None,
        Some("text") => Some(LogFormat::Text),
        Some("json") => Some(LogFormat::Json),
        Some(other) => bail!("REWARDS_LOG_FORMAT={other:?}: must be `text` or `json`"),
    };
    Ok(FileConfig {
        data_dir: var("REWARDS_DATA_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from),
        database_url: var("DATABASE_URL").filter(|v| !v.trim().is_empty()),
        codes_key: var("REWARDS_CODES_KEY").filter(|v| !v.trim().is_empty()),
        http_addr: parse("REWARDS_HTTP_ADDR", var("REWARDS_HTTP_ADDR"))?,
        sftp_addr: parse("REWARDS_SFTP_ADDR", var("REWARDS_SFTP_ADDR"))?,
        db_max_connections: parse(
            "REWARDS_DB_MAX_CONNECTIONS",
            var("REWARDS_DB_MAX_CONNECTIONS"),
        )?,
        log_format,
        background_workers: parse(
            "REWARDS_BACKGROUND_WORKERS",
            var("REWARDS_BACKGROUND_WORKERS"),
        )?,
        sftp_max_upload_bytes: parse(
            "REWARDS_SFTP_MAX_UPLOAD_BYTES",
            var("REWARDS_SFTP_MAX_UPLOAD_BYTES"),
        )?,
        sftp_auth_delay_ms: parse(
            "REWARDS_SFTP_AUTH_DELAY_MS",
            var("REWARDS_SFTP_AUTH_DELAY_MS"),
        )?,
        sftp_max_auth_attempts: parse(
            "REWARDS_SFTP_MAX_AUTH_ATTEMPTS",
            var("REWARDS_SFTP_MAX_AUTH_ATTEMPTS"),
        )?,
        sftp_idle_timeout_secs: parse(
            "REWARDS_SFTP_IDLE_TIMEOUT_SECS",
            var("REWARDS_SFTP_IDLE_TIMEOUT_SECS"),
        )?,
        sftp_ban_after: parse("REWARDS_SFTP_BAN_AFTER", var("REWARDS_SFTP_BAN_AFTER"))?,
        sftp_ban_window_secs: parse(
            "REWARDS_SFTP_BAN_WINDOW_SECS",
            var("REWARDS_SFTP_BAN_WINDOW_SECS"),
        )?,
        sftp_ban_secs: parse("REWARDS_SFTP_BAN_SECS", var("REWARDS_SFTP_BAN_SECS"))?,
        leaderboard_refresh_secs: parse(
            "REWARDS_LEADERBOARD_REFRESH_SECS",
            var("REWARDS_LEADERBOARD_REFRESH_SECS"),
        )?,
        reviews_profanity_threshold: parse(
            "REWARDS_REVIEWS_PROFANITY_THRESHOLD",
            var("REWARDS_REVIEWS_PROFANITY_THRESHOLD"),
        )?,
        reviews_report_threshold: parse(
            "REWARDS_REVIEWS_REPORT_THRESHOLD",
            var("REWARDS_REVIEWS_REPORT_THRESHOLD"),
        )?,
        public_url: var("REWARDS_PUBLIC_URL").filter(|v| !v.trim().is_empty()),
        http_header_timeout_secs: parse(
            "REWARDS_HTTP_HEADER_TIMEOUT_SECS",
            var("REWARDS_HTTP_HEADER_TIMEOUT_SECS"),
        )?,
        http_max_connections: parse(
            "REWARDS_HTTP_MAX_CONNECTIONS",
            var("REWARDS_HTTP_MAX_CONNECTIONS"),
        )?,
        http_shutdown_grace_secs: parse(
            "REWARDS_HTTP_SHUTDOWN_GRACE_SECS",
            var("REWARDS_HTTP_SHUTDOWN_GRACE_SECS"),
        )?,
        webhook_allow_http: parse(
            "REWARDS_WEBHOOK_ALLOW_HTTP",
            var("REWARDS_WEBHOOK_ALLOW_HTTP"),
        )?,
        webhook_allow: var("REWARDS_WEBHOOK_ALLOW")
            .filter(|v| !v.trim().is_empty())
            .map(|v| {
                v.split(',')
                    .map(|n| n.trim().parse())
                    .collect::<Result<Vec<_>, String>>()
                    .map_err(|e| anyhow::anyhow!("REWARDS_WEBHOOK_ALLOW={v:?}: {e}"))
            })
            .transpose()?,
        webhook_timeout_secs: parse(
            "REWARDS_WEBHOOK_TIMEOUT_SECS",
            var("REWARDS_WEBHOOK_TIMEOUT_SECS"),
        )?,
        webhook_concurrency: parse(
            "REWARDS_WEBHOOK_CONCURRENCY",
            var("REWARDS_WEBHOOK_CONCURRENCY"),
        )?,
        webhook_sockets: parse("REWARDS_WEBHOOK_SOCKETS", var("REWARDS_WEBHOOK_SOCKETS"))?,
        webhook_org_sockets: parse(
            "REWARDS_WEBHOOK_ORG_SOCKETS",
            var("REWARDS_WEBHOOK_ORG_SOCKETS"),
        )?,
        webhook_endpoints_per_org: parse(
            "REWARDS_WEBHOOK_ENDPOINTS_PER_ORG",
            var("REWARDS_WEBHOOK_ENDPOINTS_PER_ORG"),
        )?,
        dates_ahead_secs: parse("REWARDS_DATES_AHEAD_SECS", var("REWARDS_DATES_AHEAD_SECS"))?,
    })
}

/// A value that must never reach a log: `Debug` and `Display` hide the password of a URL.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl Config {
    /// The key that seals redemption codes: `codes_key`, else the one kept in the data
    /// directory (made there, readable by its owner only, on first use).
    pub fn code_key(&self) -> anyhow::Result<store::CodeKey> {
        match &self.codes_key {
            Some(hex) => store::CodeKey::from_hex(hex.expose())
                .map_err(|e| anyhow::anyhow!("codes_key (REWARDS_CODES_KEY) {e}")),
            None => Ok(store::CodeKey::load_or_create(
                &self.data_dir.join(CODES_KEY_FILE),
            )?),
        }
    }
}

/// The file in the data directory that keeps the codes key when none is configured.
pub const CODES_KEY_FILE: &str = "codes.key";

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl fmt::Display for Secret {
    /// `postgres://app:hunter2@db/rewards?sslpassword=x` shows as `postgres://app:***@db/rewards?***`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some((scheme, rest)) = self.0.split_once("://") else {
            return f.write_str("***");
        };
        let (rest, query) = match rest.split_once('?') {
            Some((rest, _)) => (rest, "?***"),
            None => (rest, ""),
        };
        let rest = match rest.rsplit_once('@') {
            Some((userinfo, host)) => match userinfo.split_once(':') {
                Some((user, _)) => format!("{user}:***@{host}"),
                None => format!("{userinfo}@{host}"),
            },
            None => rest.to_string(),
        };
        write!(f, "{scheme}://{rest}{query}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn environment_overrides_the_file_which_overrides_defaults() {
        let mut config = Config::default();
        config.apply(
            toml::from_str("http_addr = '0.0.0.0:9000'\ndata_dir = '/srv/rewards'").unwrap(),
        );
        config.apply(from_env(env(&[("REWARDS_HTTP_ADDR", "127.0.0.1:7000")])).unwrap());
        assert_eq!(config.http_addr, "127.0.0.1:7000".parse().unwrap());
        assert_eq!(config.data_dir, PathBuf::from("/srv/rewards"));
        assert_eq!(config.sftp_addr, "127.0.0.1:2222".parse().unwrap());
    }

    #[test]
    fn sftp_limits_come_from_the_file_and_the_environment() {
        let mut config = Config::default();
        config
            .apply(toml::from_str("sftp_max_upload_bytes = 1048576\nsftp_ban_after = 3").unwrap());
        config.apply(
            from_env(env(&[
                ("REWARDS_SFTP_BAN_AFTER", "10"),
                ("REWARDS_SFTP_AUTH_DELAY_MS", "250"),
                ("REWARDS_SFTP_IDLE_TIMEOUT_SECS", "30"),
            ]))
            .unwrap(),
        );
        let sftp = &config.sftp;
        assert_eq!(sftp.max_upload_bytes, 1_048_576);
        assert_eq!(sftp.ban.failures, 10);
        assert_eq!(sftp.auth_rejection_delay, Duration::from_millis(250));
        assert_eq!(sftp.idle_timeout, Duration::from_secs(30));
        assert_eq!(sftp.max_auth_attempts, 6, "the default stays");
        let err = from_env(env(&[("REWARDS_SFTP_MAX_UPLOAD_BYTES", "1GB")])).unwrap_err();
        assert!(
            err.to_string().contains("REWARDS_SFTP_MAX_UPLOAD_BYTES"),
            "{err}"
        );
    }

    /// Every key the configuration file takes appears in the sample (set, or commented out
    /// where it has no default), and nothing else does: serde's refusal of an unknown key lists
    /// the keys it knows.
    #[test]
    fn the_sample_file_names_every_key() {
        let refusal = toml::from_str::<FileConfig>("no_such_key = 1").unwrap_err();
        let known: std::collections::BTreeSet<String> = refusal
            .message()
            .split("expected one of ")
            .nth(1)
            .expect("serde lists the known keys")
            .split(", ")
            .map(|key| {
                key.trim_matches(|c| c == '`' || c == '.' || c == ' ')
                    .to_string()
            })
            .collect();
        assert!(
            known.contains("data_dir") && known.contains("webhook_concurrency"),
            "{known:?}"
        );
        let sample: std::collections::BTreeSet<String> = include_str!("../samples/rewards.toml")
            .lines()
            .map(|line| line.trim_start_matches("# ").trim_start())
            .filter_map(|line| line.split_once(" = ").map(|(key, _)| key.trim()))
            .filter(|key| {
                !key.is_empty() && key.chars().all(|c| c.is_ascii_lowercase() || c == '_')
            })
            .map(String::from)
            .collect();
        assert_eq!(sample, known);
    }

    #[test]
    fn delivery_sockets_follow_the_descriptor_limit_unless_set() {
        let sockets = |config: &Config| {
            let webhooks = &config.api.webhooks;
            (webhooks.sockets, webhooks.org_sockets)
        };
        let mut config = Config::default();
        config.derive_sockets(1_048_576);
        assert_eq!(sockets(&config), (1_024, 256));
        config.derive_sockets(6_000);
        assert_eq!(sockets(&config), ((6_000 - 4_096 - 256) / 4, 103));
        // Fewer descriptors than the HTTP listener may take: the floor.
        config.derive_sockets(1_024);
        assert_eq!(sockets(&config), (8, 2));
        let mut set = Config::default();
        set.apply(FileConfig {
            webhook_sockets: Some(100),
            ..Default::default()
        });
        set.derive_sockets(1_048_576);
        assert_eq!(sockets(&set), (100, 25));
        set.apply(FileConfig {
            webhook_org_sockets: Some(60),
            ..Default::default()
        });
        set.derive_sockets(1_048_576);
        assert_eq!(sockets(&set), (100, 60));
        set.check().unwrap();
        set.api.webhooks.org_sockets = 101;
        assert!(
            set.check()
                .unwrap_err()
                .to_string()
                .contains("webhook_org_sockets")
        );
    }

    #[test]
    fn the_sample_file_shows_the_defaults() {
        let mut config = Config::default();
        config.apply(toml::from_str(include_str!("../samples/rewards.toml")).unwrap());
        let defaults = Config::default();
        assert_eq!(config.data_dir, defaults.data_dir);
        assert_eq!(config.http_addr, defaults.http_addr);
        assert_eq!(config.sftp_addr, defaults.sftp_addr);
        assert_eq!(config.db_max_connections, defaults.db_max_connections);
        assert_eq!(config.log_format, defaults.log_format);
        assert_eq!(config.background_workers, defaults.background_workers);
        assert!(config.database_url.is_none());
        assert!(config.codes_key.is_none());
        let sftp = (&config.sftp, &defaults.sftp);
        assert_eq!(sftp.0.max_upload_bytes, sftp.1.max_upload_bytes);
        assert_eq!(sftp.0.auth_rejection_delay, sftp.1.auth_rejection_delay);
        assert_eq!(sftp.0.max_auth_attempts, sftp.1.max_auth_attempts);
        assert_eq!(sftp.0.idle_timeout, sftp.1.idle_timeout);
        assert_eq!(sftp.0.ban.failures, sftp.1.ban.failures);
        assert_eq!(sftp.0.ban.window, sftp.1.ban.window);
        assert_eq!(sftp.0.ban.ban, sftp.1.ban.ban);
        assert_eq!(config.api, defaults.api);
    }

    #[test]
    fn webhook_settings_are_read_and_checked() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            from_env(move |name| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            })
        };
        let mut config = Config::default();
        config.apply(
            env(&[
                ("REWARDS_WEBHOOK_ALLOW_HTTP", "true"),
                ("REWARDS_WEBHOOK_ALLOW", "127.0.0.1, 10.0.0.0/8"),
                ("REWARDS_WEBHOOK_TIMEOUT_SECS", "5"),
            ])
            .unwrap(),
        );
        config.check().unwrap();
        let webhooks = &config.api.webhooks;
        assert!(webhooks.rules.allow_http);
        assert_eq!(webhooks.rules.allowed.len(), 2);
        assert_eq!(webhooks.timeout, Duration::from_secs(5));
        let err = env(&[("REWARDS_WEBHOOK_ALLOW", "10.0.0.0/40")]).unwrap_err();
        assert!(err.to_string().contains("REWARDS_WEBHOOK_ALLOW"), "{err}");
        config.apply(env(&[("REWARDS_WEBHOOK_TIMEOUT_SECS", "0")]).unwrap());
        let err = config.check().unwrap_err();
        assert!(err.to_string().contains("webhook_timeout_secs"), "{err}");
    }

    #[test]
    fn leaderboard_and_review_settings_are_read_and_checked() {
        let mut config = Config::default();
        config.apply(
            toml::from_str("leaderboard_refresh_secs = 60\nreviews_report_threshold = 5").unwrap(),
        );
        config.apply(from_env(env(&[("REWARDS_REVIEWS_PROFANITY_THRESHOLD", "0.7")])).unwrap());
        config.check().unwrap();
        assert_eq!(config.api.leaderboard_refresh, Duration::from_secs(60));
        assert_eq!(config.api.moderation.report_threshold, 5);
        assert_eq!(config.api.moderation.profanity_threshold, 0.7);
        assert_eq!(config.api.public_url, None);
        let mut behind = Config::default();
        behind.apply(
            from_env(env(&[(
                "REWARDS_PUBLIC_URL",
                "https://rewards.example.com/",
            )]))
            .unwrap(),
        );
        behind.check().unwrap();
        assert_eq!(
            behind.api.public_url.as_deref(),
            Some("https://rewards.example.com/")
        );
        for (setting, value) in [
            ("leaderboard_refresh_secs", "0"),
            ("reviews_profanity_threshold", "1.5"),
            ("reviews_report_threshold", "0"),
            ("public_url", "'rewards.example.com'"),
            ("public_url", "'https://'"),
            ("public_url", "'https://x.example?a=1'"),
        ] {
            let mut config = Config::default();
            config.apply(toml::from_str(&format!("{setting} = {value}")).unwrap());
            let err = config.check().unwrap_err();
            assert!(err.to_string().contains(setting), "{err}");
        }
    }

    #[test]
    fn bad_values_name_their_variable() {
        let err = from_env(env(&[("REWARDS_HTTP_ADDR", "localhost")])).unwrap_err();
        assert!(err.to_string().contains("REWARDS_HTTP_ADDR"), "{err}");
        let err = from_env(env(&[("REWARDS_LOG_FORMAT", "xml")])).unwrap_err();
        assert!(err.to_string().contains("REWARDS_LOG_FORMAT"), "{err}");
        assert!(toml::from_str::<FileConfig>("http_adr = '1.2.3.4:5'").is_err());
    }

    #[test]
    fn secrets_never_show_in_debug_or_display() {
        let secret = Secret("postgres://app:hunter2@db:5432/rewards?sslpassword=x".into());
        let config = Config {
            database_url: Some(secret.clone()),
            ..Config::default()
        };
        for shown in [format!("{config:?}"), format!("{secret}")] {
            assert!(
                !shown.contains("hunter2") && !shown.contains("sslpassword"),
                "{shown}"
            );
        }
        assert!(format!("{secret}").contains("app:***@db:5432/rewards"));
        assert_eq!(
            secret.expose(),
            "postgres://app:hunter2@db:5432/rewards?sslpassword=x"
        );
    }
}
