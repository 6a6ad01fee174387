//! Configuration: defaults that work with nothing set, then a TOML file (`--config`), then
//! environment variables, each overriding the one before. Every setting is named once, in
//! `settings!`: its key in the file, its type and where it goes in the (nested) `Config`; its
//! environment variable is derived from the key (`env_of`).

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use serde::Deserialize;

/// Declares the settings: `key: Type => |config, value| what it sets;`. Makes the file's
/// settings (`FileConfig`, every key optional), their reading from the environment and
/// `Config::apply`.
macro_rules! settings {
    ($($key:ident: $ty:ty => |$config:ident, $value:ident| $apply:expr;)*) => {
        /// The settings a TOML file may hold; every key is optional.
        #[derive(Debug, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        struct FileConfig {
            $($key: Option<$ty>,)*
        }

        impl FileConfig {
            /// The environment's settings, read through `var` (a parameter so tests need not
            /// touch the process environment).
            fn from_env(var: impl Fn(&str) -> Option<String>) -> anyhow::Result<FileConfig> {
                Ok(FileConfig {
                    $($key: {
                        let name = env_of(stringify!($key));
                        let value = var(&name).filter(|v| !v.trim().is_empty());
                        value.map(|v| <$ty as FromEnv>::read(&v).map_err(|e| {
                            anyhow::anyhow!("{name}={v:?}: {e}")
                        })).transpose()?
                    },)*
                })
            }
        }

        impl Config {
            /// Sets what `file` holds.
            fn apply(&mut self, file: FileConfig) {
                $(if let Some($value) = file.$key {
                    let $config: &mut Config = self;
                    $apply;
                })*
            }
        }
    };
}

settings! {
    data_dir: PathBuf => |c, v| c.data_dir = v;
    database_url: String => |c, v| c.database_url = Some(Secret(v));
    codes_key: String => |c, v| c.codes_key = Some(Secret(v));
    http_addr: SocketAddr => |c, v| c.http_addr = v;
    sftp_addr: SocketAddr => |c, v| c.sftp_addr = v;
    admin_addr: SocketAddr => |c, v| c.admin_addr = v;
    db_max_connections: u32 => |c, v| c.db_max_connections = v;
    log_format: LogFormat => |c, v| c.log_format = v;
    background_workers: bool => |c, v| c.background_workers = v;
    sftp_max_upload_bytes: u64 => |c, v| c.sftp.max_upload_bytes = v;
    sftp_auth_delay_ms: u64 => |c, v| c.sftp.auth_rejection_delay = Duration::from_millis(v);
    sftp_max_auth_attempts: usize => |c, v| c.sftp.max_auth_attempts = v;
    sftp_idle_timeout_secs: u64 => |c, v| c.sftp.idle_timeout = Duration::from_secs(v);
    sftp_ban_after: u32 => |c, v| c.sftp.ban.failures = v;
    sftp_ban_window_secs: u64 => |c, v| c.sftp.ban.window = Duration::from_secs(v);
    sftp_ban_secs: u64 => |c, v| c.sftp.ban.ban = Duration::from_secs(v);
    leaderboard_refresh_secs: u64 => |c, v| c.api.leaderboard_refresh = Duration::from_secs(v);
    reviews_profanity_threshold: f64 => |c, v| c.api.moderation.profanity_threshold = v;
    reviews_report_threshold: u32 => |c, v| c.api.moderation.report_threshold = v;
    public_url: String => |c, v| c.api.public_url = Some(v.trim().to_string());
    http_header_timeout_secs: u64 => |c, v| c.api.http.header_timeout = Duration::from_secs(v);
    http_max_connections: usize => |c, v| c.api.http.max_connections = v;
    http_shutdown_grace_secs: u64 => |c, v| c.api.http.grace = Duration::from_secs(v);
    webhook_allow_http: bool => |c, v| c.api.webhooks.rules.allow_http = v;
    webhook_allow: Vec<outbound::Network> => |c, v| c.api.webhooks.rules.allowed = v;
    webhook_timeout_secs: u64 => |c, v| c.api.webhooks.timeout = Duration::from_secs(v);
    webhook_concurrency: usize => |c, v| c.api.webhooks.concurrency = v;
    webhook_sockets: usize => |c, v| c.set_webhook_sockets(v);
    webhook_org_sockets: usize => |c, v| {
        c.api.webhooks.org_sockets = v;
        c.webhook_sockets_set.1 = true;
    };
    webhook_endpoints_per_org: usize => |c, v| c.api.webhooks.endpoints_per_org = v;
    dates_ahead_secs: u64 => |c, v| c.dates_ahead = Duration::from_secs(v);
    audit_retention_days: u32 => |c, v| {
        c.api.audit_retention = (v > 0).then(|| chrono::Duration::days(i64::from(v)));
    };
}

/// The environment variable that sets `key`: `REWARDS_` and the key in upper case, but for the
/// database's URL, which keeps the name tools share.
fn env_of(key: &str) -> String {
    match key {
        "database_url" => "DATABASE_URL".to_string(),
        _ => format!("REWARDS_{}", key.to_ascii_uppercase()),
    }
}

/// A setting as an operator sets it, in messages: `key (VARIABLE)`.
fn named(key: &str) -> String {
    format!("{key} ({})", env_of(key))
}

/// A setting's value read from an environment variable's text.
trait FromEnv: Sized {
    fn read(text: &str) -> Result<Self, String>;
}

/// Text settings: as written.
macro_rules! text_from_env {
    ($($ty:ty),*) => {$(
        impl FromEnv for $ty {
            fn read(text: &str) -> Result<Self, String> {
                Ok(text.into())
            }
        }
    )*};
}
text_from_env!(String, PathBuf);

/// Other settings: parsed, around any spaces.
macro_rules! parsed_from_env {
    ($($ty:ty),*) => {$(
        impl FromEnv for $ty {
            fn read(text: &str) -> Result<Self, String> {
                text.trim().parse().map_err(|e| format!("{e}"))
            }
        }
    )*};
}
parsed_from_env!(SocketAddr, u32, u64, usize, f64, bool, LogFormat);

/// A list: its items separated by commas.
impl FromEnv for Vec<outbound::Network> {
    fn read(text: &str) -> Result<Self, String> {
        text.split(',').map(|n| n.trim().parse()).collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

impl std::str::FromStr for LogFormat {
    type Err = &'static str;

    fn from_str(text: &str) -> Result<LogFormat, &'static str> {
        match text {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            _ => Err("must be `text` or `json`"),
        }
    }
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
    /// The operators' API's address: keep it off the public network.
    pub admin_addr: SocketAddr,
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
            admin_addr: ([127, 0, 0, 1], 8081).into(),
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
        config.apply(FileConfig::from_env(|name| std::env::var(name).ok())?);
        config.check()?;
        Ok(config)
    }

    /// Refuses settings that parse but make no sense, naming the setting.
    fn check(&self) -> anyhow::Result<()> {
        let api = &self.api;
        let webhooks = &api.webhooks;
        let at_least_1 = [
            (
                "leaderboard_refresh_secs",
                api.leaderboard_refresh.is_zero(),
            ),
            (
                "http_header_timeout_secs",
                api.http.header_timeout.is_zero(),
            ),
            ("http_max_connections", api.http.max_connections == 0),
            (
                "reviews_report_threshold",
                api.moderation.report_threshold == 0,
            ),
        ];
        if let Some((key, _)) = at_least_1.iter().find(|(_, zero)| *zero) {
            bail!("{} must be at least 1", named(key));
        }
        let threshold = api.moderation.profanity_threshold;
        if !(0.0..=1.0).contains(&threshold) {
            bail!(
                "{} must be from 0.0 to 1.0, not {threshold}",
                named("reviews_profanity_threshold")
            );
        }
        if webhooks.timeout.is_zero() || webhooks.timeout > Duration::from_secs(60) {
            bail!("{} must be from 1 to 60", named("webhook_timeout_secs"));
        }
        if !(1..=256).contains(&webhooks.concurrency) {
            bail!("{} must be from 1 to 256", named("webhook_concurrency"));
        }
        if !(1..=65_536).contains(&webhooks.sockets) {
            bail!("{} must be from 1 to 65536", named("webhook_sockets"));
        }
        if !(1..=webhooks.sockets).contains(&webhooks.org_sockets) {
            bail!(
                "{} must be from 1 to webhook_sockets ({})",
                named("webhook_org_sockets"),
                webhooks.sockets
            );
        }
        if !(1..=10_000).contains(&webhooks.endpoints_per_org) {
            bail!(
                "{} must be from 1 to 10000",
                named("webhook_endpoints_per_org")
            );
        }
        if self.dates_ahead > Duration::from_secs(366 * 24 * 3600) {
            bail!(
                "{} must be at most 31622400 (a year)",
                named("dates_ahead_secs")
            );
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
                    "{} must be an http or https URL without a query, such as \
                     https://rewards.example.com, not {url:?}",
                    named("public_url")
                );
            }
        }
        Ok(())
    }

    /// `webhook_sockets`, and a quarter of it per organisation unless that is set too.
    fn set_webhook_sockets(&mut self, sockets: usize) {
        let webhooks = &mut self.api.webhooks;
        webhooks.sockets = sockets;
        self.webhook_sockets_set.0 = true;
        if !self.webhook_sockets_set.1 {
            webhooks.org_sockets = (sockets / 4).max(1);
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
        config
            .apply(FileConfig::from_env(env(&[("REWARDS_HTTP_ADDR", "127.0.0.1:7000")])).unwrap());
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
            FileConfig::from_env(env(&[
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
        let err =
            FileConfig::from_env(env(&[("REWARDS_SFTP_MAX_UPLOAD_BYTES", "1GB")])).unwrap_err();
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
        assert_eq!(config.admin_addr, defaults.admin_addr);
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
            FileConfig::from_env(move |name| {
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
        config.apply(
            FileConfig::from_env(env(&[("REWARDS_REVIEWS_PROFANITY_THRESHOLD", "0.7")])).unwrap(),
        );
        config.check().unwrap();
        assert_eq!(config.api.leaderboard_refresh, Duration::from_secs(60));
        assert_eq!(config.api.moderation.report_threshold, 5);
        assert_eq!(config.api.moderation.profanity_threshold, 0.7);
        assert_eq!(config.api.public_url, None);
        let mut behind = Config::default();
        behind.apply(
            FileConfig::from_env(env(&[(
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

    /// Every key the file takes is read from its variable, `REWARDS_` and the key in upper case
    /// (the database's URL from `DATABASE_URL`): a value set there is taken, or refused naming
    /// the variable.
    #[test]
    fn the_audit_trail_is_kept_for_ever_unless_a_retention_is_set() {
        let mut config = Config::default();
        assert_eq!(config.api.audit_retention, None);
        config
            .apply(FileConfig::from_env(env(&[("REWARDS_AUDIT_RETENTION_DAYS", "400")])).unwrap());
        assert_eq!(
            config.api.audit_retention,
            Some(chrono::Duration::days(400))
        );
        config.apply(toml::from_str("audit_retention_days = 0").unwrap());
        assert_eq!(config.api.audit_retention, None);
    }

    #[test]
    fn every_setting_is_read_from_its_variable() {
        let refusal = toml::from_str::<FileConfig>("no_such_key = 1").unwrap_err();
        let message = refusal.message().to_string();
        let keys: Vec<&str> = message
            .split("expected one of ")
            .nth(1)
            .expect("serde lists the known keys")
            .split(", ")
            .map(|key| key.trim_matches(|c| c == '`' || c == '.' || c == ' '))
            .collect();
        assert!(keys.contains(&"webhook_allow"), "{keys:?}");
        assert_eq!(env_of("database_url"), "DATABASE_URL");
        for key in keys {
            let name = env_of(key);
            assert!(name == "DATABASE_URL" || name == format!("REWARDS_{}", key.to_uppercase()));
            match FileConfig::from_env(|n| (n == name).then(|| "x".to_string())) {
                Ok(file) => {
                    let shown = format!("{file:?}");
                    assert!(shown.contains(&format!("{key}: Some(")), "{key}: {shown}");
                }
                Err(err) => assert!(err.to_string().contains(&name), "{key}: {err}"),
            }
        }
    }

    #[test]
    fn bad_values_name_their_variable() {
        let err = FileConfig::from_env(env(&[("REWARDS_HTTP_ADDR", "localhost")])).unwrap_err();
        assert!(err.to_string().contains("REWARDS_HTTP_ADDR"), "{err}");
        let err = FileConfig::from_env(env(&[("REWARDS_LOG_FORMAT", "xml")])).unwrap_err();
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
