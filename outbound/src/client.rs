//! The HTTP client that delivers webhooks, and the address rules it keeps: `https` only unless
//! the operator allows `http`; no address in a loopback, private, shared, link-local (cloud
//! metadata among them), multicast or otherwise special range, nor an IPv6 form that embeds an
//! IPv4 address in one (IPv4-compatible, translated, 6to4, NAT64) or tunnels to one (Teredo),
//! unless configuration allows it (`webhook_allow`), checked on every connection after the name
//! is resolved, so a name that later resolves elsewhere gains nothing; redirects are not followed (a 3xx is a failed
//! attempt); at most `SNIPPET` bytes of an answer are read; each attempt ends by `timeout`.

use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::rt::TokioExecutor;
use store::AttemptOutcome;

/// Bytes of an answer's body kept in the delivery log.
pub const SNIPPET: usize = 1_024;
/// Bytes of an answer's body read at most (the rest is dropped with the connection).
const READ_AT_MOST: usize = 4_096;
/// How long saving an endpoint waits for its name to resolve.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

/// A network, as configuration names it: an address (`127.0.0.1`) or a CIDR block
/// (`10.0.0.0/8`, `fd00::/8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    address: IpAddr,
    prefix: u8,
}

impl std::str::FromStr for Network {
    type Err = String;
    fn from_str(text: &str) -> Result<Network, String> {
        let invalid = || format!("`{text}` is not an address or a CIDR block");
        let (address, prefix) = match text.trim().split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text.trim(), None),
        };
        let address: IpAddr = address.parse().map_err(|_| invalid())?;
        let most = if address.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= most)
                .ok_or_else(invalid)?,
            None => most,
        };
        Ok(Network { address, prefix })
    }
}

impl<'de> serde::Deserialize<'de> for Network {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Network, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl Network {
    fn contains(&self, ip: IpAddr) -> bool {
        let bits = |ip: IpAddr| match ip {
            IpAddr::V4(v4) => (u128::from(v4.to_bits()), 32),
            IpAddr::V6(v6) => (v6.to_bits(), 128),
        };
        let ((mine, width), (theirs, their_width)) = (bits(self.address), bits(unmapped(ip)));
        if width != their_width {
            return false;
        }
        let shift = width - u32::from(self.prefix);
        shift >= width || (mine >> shift) == (theirs >> shift)
    }
}

/// An IPv4 address written as IPv6 (`::ffff:a.b.c.d`) as the IPv4 address it is.
fn unmapped(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Which special range `ip` is in, if any: the addresses a delivery may not reach unless
/// allowed.
pub fn special_range(ip: IpAddr) -> Option<&'static str> {
    match unmapped(ip) {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => special_v6(v6),
    }
}

fn special_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        _ if ip.is_loopback() => "loopback",
        _ if ip.is_private() => "private",
        (169, 254, _) => "link-local (cloud metadata among it)",
        (100, 64..=127, _) => "shared (carrier-grade NAT)",
        (0, _, _) => "this network",
        (192, 0, 0) => "protocol assignments",
        (198, 18..=19, _) => "benchmarking",
        _ if ip.is_multicast() => "multicast",
        _ if a >= 240 => "reserved",
        _ if ip.is_documentation() => "documentation",
        _ => return None,
    })
}

fn special_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    let embedded = |high: u16, low: u16| Ipv4Addr::from((u32::from(high) << 16) | u32::from(low));
    Some(match s[0] {
        _ if ip.is_loopback() => "loopback",
        _ if ip.is_unspecified() => "unspecified",
        _ if ip.is_multicast() => "multicast",
        // ::/96 and ::ffff:0:0/96 carry an IPv4 address that some stacks reach as IPv4.
        _ if ip.to_bits() >> 32 == 0 => "IPv4-compatible",
        _ if ip.to_bits() >> 32 == 0xffff_0000 => "IPv4-translated",
        0x0100 if s[1..4] == [0, 0, 0] => "discard",
        // The well-known NAT64 prefix reaches the IPv4 address it embeds; judged as that one.
        0x0064 if s[1] == 0xff9b && s[2..6] == [0; 4] => {
            return special_v4(embedded(s[6], s[7])).map(|_| "NAT64 form of a special IPv4");
        }
        0x0064 if s[1] == 0xff9b => "IPv4 translation (local use)",
        // 2001::/23, Teredo (2001::/32, which tunnels to an IPv4 address) among it.
        0x2001 if s[1] < 0x0200 => "protocol assignments (Teredo among them)",
        0x2001 if s[1] == 0x0db8 => "documentation",
        0x3fff if s[1] < 0x1000 => "documentation",
        0x2002 => return special_v4(embedded(s[1], s[2])).map(|_| "6to4 form of a special IPv4"),
        // fc00::/7, where cloud metadata (fd00:ec2::254) also lives.
        _ if s[0] & 0xfe00 == 0xfc00 => "unique local (private)",
        _ if s[0] & 0xffc0 == 0xfe80 => "link-local",
        _ if s[0] & 0xffc0 == 0xfec0 => "site-local",
        _ => return None,
    })
}

/// The operator's rules for endpoint addresses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AddressRules {
    /// Whether `http://` endpoints are allowed (`https://` always is).
    pub allow_http: bool,
    /// Special addresses allowed all the same (a receiver on this host in tests, a private
    /// network the operator trusts).
    pub allowed: Vec<Network>,
}

impl AddressRules {
    /// Why `ip` may not be reached, if it may not.
    pub fn refusal(&self, ip: IpAddr) -> Option<String> {
        let range = special_range(ip)?;
        if self.allowed.iter().any(|n| n.contains(ip)) {
            return None;
        }
        Some(format!(
            "{ip} is a {range} address, which deliveries may not reach"
        ))
    }

    /// The endpoint address `url` if it may be delivered to: an absolute `https` (or allowed
    /// `http`) address without credentials, whose host, resolved now, has no refused address.
    pub async fn check(&self, url: &str) -> Result<Uri, String> {
        let uri = self.parse(url)?;
        let host = host_of(&uri);
        let port = uri.port_u16().unwrap_or(match uri.scheme_str() {
            Some("http") => 80,
            _ => 443,
        });
        let addresses: Vec<IpAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) => {
                let lookup = tokio::net::lookup_host((host.as_str(), port));
                tokio::time::timeout(LOOKUP_TIMEOUT, lookup)
                    .await
                    .map_err(|_| format!("`{host}` did not resolve within 5 seconds"))?
                    .map_err(|e| format!("`{host}` does not resolve: {e}"))?
                    .map(|a| a.ip())
                    .collect()
            }
        };
        if addresses.is_empty() {
            return Err(format!("`{host}` resolves to no address"));
        }
        match addresses.into_iter().find_map(|ip| self.refusal(ip)) {
            Some(refused) => Err(refused),
            None => Ok(uri),
        }
    }

    /// `url` parsed and its form checked (nothing resolved).
    pub fn parse(&self, url: &str) -> Result<Uri, String> {
        let uri: Uri = url
            .parse()
            .map_err(|_| "an absolute https:// address".to_string())?;
        match uri.scheme_str() {
            Some("https") => {}
            Some("http") if self.allow_http => {}
            Some("http") => {
                return Err("must be https:// (the operator has not allowed http)".into());
            }
            _ => return Err("an absolute https:// address".into()),
        }
        let Some(authority) = uri.authority() else {
            return Err("an absolute https:// address with a host".into());
        };
        if authority.as_str().contains('@') {
            return Err("must not carry credentials".into());
        }
        if authority.host().is_empty() {
            return Err("an absolute https:// address with a host".into());
        }
        Ok(uri)
    }
}

/// The URI's host, without an IPv6 literal's brackets.
fn host_of(uri: &Uri) -> String {
    let host = uri.host().unwrap_or_default();
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_string()
}

/// The resolver deliveries connect through: the system's, less refused addresses.
#[derive(Clone)]
struct Guarded(Arc<AddressRules>);

impl tower::Service<Name> for Guarded {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Self::Response>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let rules = self.0.clone();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            let mut refusals = found.iter().filter_map(|a| rules.refusal(a.ip()));
            if let Some(refused) = refusals.next() {
                return Err(io::Error::new(io::ErrorKind::PermissionDenied, refused));
            }
            Ok(found.into_iter())
        })
    }
}

type Connector = HttpsConnector<HttpConnector<Guarded>>;

/// Sends deliveries: one per call, each ending by the timeout.
#[derive(Clone)]
pub struct Sender {
    client: Client<Connector, Full<Bytes>>,
    rules: Arc<AddressRules>,
    timeout: Duration,
}

impl Sender {
    pub fn new(rules: AddressRules, timeout: Duration) -> Sender {
        let rules = Arc::new(rules);
        let mut http = HttpConnector::new_with_resolver(Guarded(rules.clone()));
        http.enforce_http(false);
        http.set_connect_timeout(Some(timeout));
        let builder = hyper_rustls::HttpsConnectorBuilder::new();
        let builder = match builder.with_native_roots() {
            Ok(builder) => builder,
            Err(e) => {
                tracing::warn!(%e, "no trusted roots found: https deliveries will fail");
                hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(
                    rustls::ClientConfig::builder()
                        .with_root_certificates(rustls::RootCertStore::empty())
                        .with_no_client_auth(),
                )
            }
        };
        let connector = builder.https_or_http().enable_http1().wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Sender {
            client,
            rules,
            timeout,
        }
    }

    pub fn rules(&self) -> &AddressRules {
        &self.rules
    }

    /// POSTs `body` (JSON) to `url` with `headers`, an attempt made `attempted_at` (the
    /// store's clock); what came of it.
    pub async fn post(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: Bytes,
        attempted_at: DateTime<Utc>,
    ) -> AttemptOutcome {
        let started = Instant::now();
        let answer = tokio::time::timeout(self.timeout, self.exchange(url, headers, body)).await;
        let latency_ms = u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX);
        let (status_code, response) = match answer {
            Ok(Ok((status, body))) => (Some(status), Some(body)),
            Ok(Err(error)) => (None, Some(error)),
            Err(_) => (
                None,
                Some(format!("no answer within {} ms", self.timeout.as_millis())),
            ),
        };
        AttemptOutcome {
            attempted_at,
            status_code,
            latency_ms,
            response,
        }
    }

    /// The status and the beginning of the body, or what went wrong.
    async fn exchange(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: Bytes,
    ) -> Result<(u16, String), String> {
        let uri = self.rules.parse(url)?;
        // An address written as such is connected to without the resolver.
        if let Ok(ip) = host_of(&uri).parse::<IpAddr>()
            && let Some(refused) = self.rules.refusal(ip)
        {
            return Err(refused);
        }
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(uri)
            .header("content-type", "application/json")
            .header(
                "user-agent",
                concat!("rewards-webhooks/", env!("CARGO_PKG_VERSION")),
            );
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let request = request
            .body(Full::new(body))
            .map_err(|e| format!("the request could not be made: {e}"))?;
        let response = self
            .client
            .request(request)
            .await
            .map_err(|e| describe(&e))?;
        let status = response.status().as_u16();
        let mut body = response.into_body();
        let mut read = Vec::new();
        while read.len() < READ_AT_MOST {
            match body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        read.extend_from_slice(&data);
                    }
                }
                // A body cut short still answered with its status.
                Some(Err(_)) | None => break,
            }
        }
        read.truncate(SNIPPET);
        Ok((status, String::from_utf8_lossy(&read).into_owned()))
    }
}

/// The error and its causes, as one line for the log.
fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn special_ranges_are_refused_unless_allowed() {
        let rules = AddressRules::default();
        for refused in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "::",
            "fe80::1",
            "fd00:ec2::254",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
        ] {
            assert!(rules.refusal(ip(refused)).is_some(), "{refused}");
        }
        // Every IPv6 form that embeds an IPv4 address or is reserved, with the range it names.
        for (refused, says) in [
            ("::7f00:1", "IPv4-compatible"),
            ("::127.0.0.1", "IPv4-compatible"),
            ("::8.8.8.8", "IPv4-compatible"),
            ("::ffff:0:7f00:1", "IPv4-translated"),
            ("::ffff:0:a9fe:a9fe", "IPv4-translated"),
            ("2002:7f00:1::1", "6to4"),
            ("2002:a00:1::", "6to4"),
            ("2002:a9fe:a9fe::1", "6to4"),
            ("2001::1", "Teredo"),
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),
            ("2001:2::1", "protocol assignments"),
            ("64:ff9b::7f00:1", "NAT64"),
            ("64:ff9b::10.0.0.1", "NAT64"),
            ("64:ff9b:1::a00:1", "local use"),
            ("100::1", "discard"),
            ("100::ffff:1", "discard"),
            ("2001:db8::1", "documentation"),
            ("3fff::1", "documentation"),
            ("fec0::1", "site-local"),
            ("fe80::1", "link-local"),
        ] {
            let refusal = rules.refusal(ip(refused)).unwrap_or_default();
            assert!(refusal.contains(says), "{refused}: {refusal:?}");
        }
        for public in [
            "93.184.216.34",
            "2606:4700::1111",
            "8.8.8.8",
            "2002:5db8:d822::1",
            "64:ff9b::5db8:d822",
            "2001:4860:4860::8888",
            "100:0:0:1::1",
        ] {
            assert_eq!(rules.refusal(ip(public)), None, "{public}");
        }
        let rules = AddressRules {
            allow_http: true,
            allowed: vec!["127.0.0.1".parse().unwrap(), "10.0.0.0/8".parse().unwrap()],
        };
        assert_eq!(rules.refusal(ip("127.0.0.1")), None);
        assert_eq!(rules.refusal(ip("::ffff:127.0.0.1")), None);
        assert_eq!(rules.refusal(ip("10.200.0.9")), None);
        assert!(rules.refusal(ip("127.0.0.2")).is_some());
        assert!(rules.refusal(ip("11.0.0.1")).is_none());
        assert!("10.0.0.0/33".parse::<Network>().is_err());
        assert!("nonsense".parse::<Network>().is_err());
    }

    #[tokio::test]
    async fn addresses_are_checked_for_form_scheme_and_range() {
        let strict = AddressRules::default();
        for (url, says) in [
            ("not a url", "absolute"),
            ("/relative/path", "absolute"),
            ("ftp://example.com/x", "absolute"),
            ("http://example.com/hook", "http"),
            ("https://user:pw@example.com/", "credentials"),
            ("https://127.0.0.1/hook", "loopback"),
            ("https://[::1]:8443/hook", "loopback"),
            ("https://169.254.169.254/latest/meta-data", "link-local"),
            ("https://localhost/hook", "loopback"),
            ("https://[::7f00:1]/hook", "IPv4-compatible"),
            ("https://[2002:7f00:1::1]/hook", "6to4"),
            ("https://[::ffff:0:7f00:1]/hook", "IPv4-translated"),
            ("https://[100::1]/hook", "discard"),
        ] {
            let refused = strict.check(url).await.expect_err(url);
            assert!(refused.contains(says), "{url}: {refused}");
        }
        assert!(strict.check("https://93.184.216.34/hook").await.is_ok());
        let local = AddressRules {
            allow_http: true,
            allowed: vec!["127.0.0.1".parse().unwrap()],
        };
        assert!(local.check("http://127.0.0.1:9/hook").await.is_ok());
    }

    #[tokio::test]
    async fn a_refused_address_is_never_connected_to() {
        let sender = Sender::new(
            AddressRules {
                allow_http: true,
                allowed: vec![],
            },
            Duration::from_secs(2),
        );
        let outcome = sender
            .post(
                "http://127.0.0.1:9/hook",
                &[],
                Bytes::from_static(b"{}"),
                Utc::now(),
            )
            .await;
        assert_eq!(outcome.status_code, None);
        assert!(outcome.response.unwrap().contains("loopback"));
        let outcome = sender
            .post(
                "http://localhost:9/hook",
                &[],
                Bytes::from_static(b"{}"),
                Utc::now(),
            )
            .await;
        assert_eq!(outcome.status_code, None);
        assert!(
            outcome.response.unwrap().contains("loopback"),
            "by name too"
        );
    }
}
