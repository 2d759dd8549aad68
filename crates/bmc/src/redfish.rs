//! Redfish: node power from a chassis's `EnvironmentMetrics` (`PowerWatts`) or its
//! power supplies' metrics (`PowerSubsystem/PowerSupplies/*/Metrics`,
//! `InputPowerWatts`), or from the deprecated `Power` resource
//! (`PowerControl[].PowerConsumedWatts`, else `PowerSupplies[].PowerInputWatts`).
//!
//! Discovery walks `/redfish/v1/Chassis` once and settles on one chassis and one
//! resource; each reading then GETs only what that needs (one resource, or one per
//! power supply). A chassis not contained in another is preferred (the enclosure, not
//! a board inside it), then the collection's order; or the caller names the chassis.
//!
//! Every request has a time limit, a response size limit (4 MiB by default), and
//! discovery a request budget. Only paths under `/redfish/v1/` on the configured host
//! are followed, so the credentials never go elsewhere; redirects are refused and no
//! proxy is used. Credentials: HTTP Basic, from `REDFISH_USERNAME`/`REDFISH_PASSWORD`
//! or from a file only its owner may read (user name on the first line, password on the
//! second), never from a command-line argument. TLS certificates are verified (against
//! Mozilla's roots, or a CA file) unless `insecure` is set, which the source records.

use crate::error::BmcError;
use crate::secret::{base64, read_owner_only_file, scrub, Secret};
use crate::PowerSource;
use numalab_records::bmc::{
    BmcAccess, BmcReading, BmcSource, BmcSourceKind, PowerPart, RedfishTransport,
};
use serde_json::Value;
use std::cell::Cell;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The environment variable holding the Redfish user name.
pub const REDFISH_USERNAME_ENV: &str = "REDFISH_USERNAME";
/// The environment variable holding the Redfish password.
pub const REDFISH_PASSWORD_ENV: &str = "REDFISH_PASSWORD";
/// Default response size limit: 4 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 4 << 20;
/// Default request budget of a discovery.
pub const DEFAULT_MAX_REQUESTS: usize = 64;
/// At most this many chassis are looked at.
const MAX_CHASSIS: usize = 16;
/// At most this many power supplies per chassis are looked at.
const MAX_SUPPLIES: usize = 16;

/// Where the Redfish credentials come from.
#[derive(Debug, Clone)]
pub enum RedfishCredentials {
    /// `REDFISH_USERNAME` and `REDFISH_PASSWORD` in this process's environment.
    Env,
    /// A file readable by its owner only: user name on line 1, password on line 2.
    File(PathBuf),
    /// Credentials the caller already holds.
    Given {
        /// User name.
        user: String,
        /// Password.
        password: Secret,
    },
    /// No authentication (mock-ups and services that allow anonymous reads).
    Anonymous,
}

/// Which power resource to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RedfishResource {
    /// `PowerSubsystem`/`EnvironmentMetrics` where the chassis has them, else `Power`.
    #[default]
    Auto,
    /// Only `EnvironmentMetrics.PowerWatts` or `PowerSubsystem` power-supply metrics.
    PowerSubsystem,
    /// Only the deprecated `Power` resource.
    Power,
}

/// How to reach a Redfish service.
#[derive(Debug, Clone)]
pub struct RedfishConfig {
    /// The service's address: `https://host[:port]` (a path, if given, is ignored;
    /// `/redfish/v1` is used). No user name or password in it.
    pub url: String,
    /// Credentials.
    pub credentials: RedfishCredentials,
    /// Which resource.
    pub resource: RedfishResource,
    /// The chassis to read (its `Id`, the last path segment); `None` to choose.
    pub chassis: Option<String>,
    /// Skip TLS certificate verification (recorded in the source as insecure).
    pub insecure: bool,
    /// A PEM file of CA certificates to verify the BMC's certificate against, instead of
    /// Mozilla's roots.
    pub ca_file: Option<PathBuf>,
    /// Allow `http://` to a loopback address (tests, an SSH tunnel); other plain HTTP
    /// is always refused.
    pub allow_plain_http_loopback: bool,
    /// Time limit of one request (connect, send, whole response).
    pub timeout: Duration,
    /// Largest response accepted.
    pub max_response_bytes: u64,
    /// Request budget of the discovery.
    pub max_requests: usize,
}

impl RedfishConfig {
    /// Defaults for `url`: automatic resource and chassis, credentials from the
    /// environment, certificates verified, 5 s per request, 4 MiB, 64 requests.
    pub fn new(url: impl Into<String>) -> Self {
        RedfishConfig {
            url: url.into(),
            credentials: RedfishCredentials::Env,
            resource: RedfishResource::Auto,
            chassis: None,
            insecure: false,
            ca_file: None,
            allow_plain_http_loopback: false,
            timeout: Duration::from_secs(5),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            max_requests: DEFAULT_MAX_REQUESTS,
        }
    }
}

/// `scheme://authority`, checked.
#[derive(Debug, Clone)]
pub(crate) struct Origin {
    https: bool,
    origin: String,
}

pub(crate) fn parse_origin(url: &str, allow_http_loopback: bool) -> Result<Origin, BmcError> {
    let (https, rest) = if let Some(r) = url.strip_prefix("https://") {
        (true, r)
    } else if let Some(r) = url.strip_prefix("http://") {
        (false, r)
    } else {
        return Err(BmcError::Config(format!(
            "Redfish URL {:?} must start with https://",
            url.split('@').next_back().unwrap_or("")
        )));
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains('@') {
        return Err(BmcError::Config(
            "the Redfish URL must not hold a user name or password; give them in $REDFISH_USERNAME and $REDFISH_PASSWORD or a credential file instead, never in the address".into(),
        ));
    }
    if authority.is_empty()
        || authority
            .chars()
            .any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(BmcError::Config(format!(
            "Redfish URL {url:?} has no valid host"
        )));
    }
    let (host, _) = crate::address::split_host_port(authority)
        .map_err(|e| BmcError::Config(format!("Redfish URL {url:?}: {e}")))?;
    if !https {
        let loopback = host.eq_ignore_ascii_case("localhost")
            || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
        if !(allow_http_loopback && loopback) {
            return Err(BmcError::Config(format!(
                "plain http:// to {host} refused: credentials and readings would cross the network \
                 unencrypted; use https:// (plain HTTP is allowed only to a loopback address, when asked for)"
            )));
        }
    }
    Ok(Origin {
        https,
        origin: format!("{}://{authority}", if https { "https" } else { "http" }),
    })
}

/// An HTTP client for one Redfish service, with its limits.
struct Client {
    agent: ureq::Agent,
    origin: Origin,
    auth: Option<Secret>,
    secrets: Vec<Secret>,
    max_bytes: u64,
    budget: Cell<usize>,
    budget_limit: Cell<usize>,
}

impl Client {
    fn new(cfg: &RedfishConfig) -> Result<Client, BmcError> {
        let origin = parse_origin(&cfg.url, cfg.allow_plain_http_loopback)?;
        let (user, password) = match &cfg.credentials {
            RedfishCredentials::Anonymous => (None, None),
            RedfishCredentials::Given { user, password } => {
                (Some(user.clone()), Some(password.clone()))
            }
            RedfishCredentials::Env => {
                let user = std::env::var(REDFISH_USERNAME_ENV)
                    .ok()
                    .filter(|u| !u.is_empty());
                let password = Secret::from_env(REDFISH_PASSWORD_ENV);
                match (user, password) {
                    (Some(u), Some(p)) => (Some(u), Some(p)),
                    _ => {
                        return Err(BmcError::MissingCredential(format!(
                            "set {REDFISH_USERNAME_ENV} and {REDFISH_PASSWORD_ENV}, or give a credential file \
                             (user name on line 1, password on line 2) readable only by its owner"
                        )))
                    }
                }
            }
            RedfishCredentials::File(p) => {
                let mut lines = read_owner_only_file(p)?.into_iter();
                match (lines.next(), lines.next()) {
                    (Some(u), Some(pw)) if !u.is_empty() && !pw.is_empty() => {
                        (Some(u.expose().to_string()), Some(pw))
                    }
                    _ => {
                        return Err(BmcError::CredentialFile {
                            path: p.clone(),
                            problem: "expected the user name on line 1 and the password on line 2"
                                .into(),
                        })
                    }
                }
            }
        };
        let mut secrets = Vec::new();
        let auth = match (user, password) {
            (Some(u), Some(p)) => {
                if u.contains(':') {
                    return Err(BmcError::Config(
                        "a Redfish user name must not contain ':' (HTTP Basic)".into(),
                    ));
                }
                let token = base64(format!("{u}:{}", p.expose()).as_bytes());
                secrets.push(p);
                let token = Secret::new(token);
                secrets.push(token.clone());
                Some(token)
            }
            _ => None,
        };
        let mut tls = ureq::tls::TlsConfig::builder().disable_verification(cfg.insecure);
        if let Some(ca) = &cfg.ca_file {
            // Read as a direct input: a device or a FIFO is refused, never read.
            let what = "the BMC's CA certificate";
            let pem = numalab_schema::input::read(ca, what, numalab_schema::input::TEXT)
                .map_err(BmcError::File)?;
            let certs: Vec<ureq::tls::Certificate<'static>> = ureq::tls::parse_pem(&pem)
                .filter_map(|item| match item {
                    Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                    _ => None,
                })
                .collect();
            if certs.is_empty() {
                return Err(BmcError::File(numalab_schema::input::InputError {
                    path: ca.clone(),
                    reason: format!("no PEM certificate in it; give {what} as a PEM file (-----BEGIN CERTIFICATE-----)"),
                }));
            }
            tls = tls.root_certs(ureq::tls::RootCerts::Specific(Arc::new(certs)));
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(cfg.timeout))
            .max_redirects(0)
            .http_status_as_error(true)
            .proxy(None)
            .user_agent("numalab-bmc")
            .tls_config(tls.build())
            .build()
            .into();
        Ok(Client {
            agent,
            origin,
            auth,
            secrets,
            max_bytes: cfg.max_response_bytes,
            budget: Cell::new(cfg.max_requests),
            budget_limit: Cell::new(cfg.max_requests),
        })
    }

    fn set_budget(&self, n: usize) {
        self.budget.set(n);
        self.budget_limit.set(n);
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin.origin)
    }

    fn scrubbed(&self, text: &str) -> String {
        let refs: Vec<&Secret> = self.secrets.iter().collect();
        scrub(text, &refs)
    }

    /// GETs a path under `/redfish/v1/` and parses it as JSON.
    fn get(&self, path: &str) -> Result<Value, BmcError> {
        let path = path.split('#').next().unwrap_or(path);
        if !(path == "/redfish/v1" || path.starts_with("/redfish/v1/"))
            || path.contains("..")
            || path.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(BmcError::Parse {
                what: "Redfish link".into(),
                problem: format!(
                    "{path:?} is not a path under /redfish/v1/ on this service; not followed"
                ),
            });
        }
        let left = self.budget.get();
        if left == 0 {
            return Err(BmcError::TooManyRequests {
                limit: self.budget_limit.get(),
            });
        }
        self.budget.set(left - 1);
        let url = self.url(path);
        let mut req = self
            .agent
            .get(&url)
            .header("Accept", "application/json")
            .header("OData-Version", "4.0");
        if let Some(token) = &self.auth {
            req = req.header("Authorization", format!("Basic {}", token.expose()));
        }
        let mut resp = req.call().map_err(|e| self.map_err(&url, e))?;
        let body = resp
            .body_mut()
            .with_config()
            .limit(self.max_bytes)
            .read_to_vec()
            .map_err(|e| self.map_err(&url, e))?;
        serde_json::from_slice(&body).map_err(|e| BmcError::Parse {
            what: format!("JSON of {url}"),
            problem: e.to_string(),
        })
    }

    fn map_err(&self, url: &str, e: ureq::Error) -> BmcError {
        let url = url.to_string();
        match e {
            ureq::Error::StatusCode(status) => BmcError::HttpStatus {
                url,
                status,
                hint: match status {
                    401 => " (unauthorised: check the user name and password)".into(),
                    403 => " (forbidden: the account lacks the privilege to read this)".into(),
                    404 => " (not found on this BMC)".into(),
                    _ => String::new(),
                },
            },
            ureq::Error::BodyExceedsLimit(_) => BmcError::TooLarge {
                url,
                limit_bytes: self.max_bytes,
            },
            ureq::Error::Tls(m) => BmcError::Tls {
                url,
                problem: self.scrubbed(m),
            },
            ureq::Error::Rustls(r) => BmcError::Tls {
                url,
                problem: self.scrubbed(&r.to_string()),
            },
            // The OS's reason in words (connection refused, no route), never "os error N".
            // (A TLS failure arrives as an Io error without an OS code: handled below.)
            ureq::Error::Io(io) if io.raw_os_error().is_some() => BmcError::Http {
                url,
                problem: self.scrubbed(&numalab_schema::input::io_reason(&io)),
            },
            other => {
                let text = self.scrubbed(&other.to_string());
                let lower = text.to_ascii_lowercase();
                if self.origin.https
                    && (lower.contains("certificate")
                        || lower.contains("tls")
                        || lower.contains("handshake"))
                {
                    BmcError::Tls { url, problem: text }
                } else {
                    BmcError::Http { url, problem: text }
                }
            }
        }
    }
}

fn odata_id(v: &Value) -> Option<String> {
    v.get("@odata.id")
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn link(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(odata_id)
}

fn reading(v: &Value, key: &str) -> Option<f64> {
    v.get(key)
        .and_then(|x| x.get("Reading"))
        .and_then(Value::as_f64)
        .filter(|w| w.is_finite())
}

fn members(v: &Value) -> Vec<String> {
    v.get("Members")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(odata_id).collect())
        .unwrap_or_default()
}

fn last_segment(path: &str) -> &str {
    path.trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(path)
}

/// What each reading fetches.
#[derive(Debug, Clone)]
enum Plan {
    /// `EnvironmentMetrics.PowerWatts.Reading` of the chassis.
    Environment { chassis: String, path: String },
    /// The sum of `InputPowerWatts.Reading` over the power supplies' metrics.
    Supplies {
        chassis: String,
        /// (supply id, metrics path)
        metrics: Vec<(String, String)>,
    },
    /// The chassis's deprecated `Power` resource.
    Power { chassis: String, path: String },
}

/// Node power from a Redfish service.
pub struct RedfishSource {
    client: Client,
    plan: Plan,
    transport: RedfishTransport,
    /// Sensors used by the last reading.
    used: Vec<String>,
    method: String,
}

impl std::fmt::Debug for RedfishSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedfishSource")
            .field("origin", &self.client.origin.origin)
            .field("plan", &self.plan)
            .field("transport", &self.transport)
            .finish_non_exhaustive()
    }
}

struct ChassisInfo {
    id: String,
    contained: bool,
    environment: Option<String>,
    subsystem: Option<String>,
    power: Option<String>,
}

impl RedfishSource {
    /// Checks the settings, then walks the service to find a chassis and resource that
    /// report node power (at most `max_requests` requests).
    pub fn connect(cfg: &RedfishConfig) -> Result<RedfishSource, BmcError> {
        let client = Client::new(cfg)?;
        let transport = if !client.origin.https {
            RedfishTransport::PlainHttpLoopback
        } else if cfg.insecure {
            RedfishTransport::HttpsInsecure
        } else {
            RedfishTransport::HttpsVerified
        };
        let plan = discover(&client, cfg)?;
        let mut src = RedfishSource {
            client,
            plan,
            transport,
            used: Vec::new(),
            method: String::new(),
        };
        src.describe_plan();
        Ok(src)
    }

    fn describe_plan(&mut self) {
        let (used, method) = match &self.plan {
            Plan::Environment { chassis, .. } => (
                vec![format!("Chassis {chassis} EnvironmentMetrics PowerWatts")],
                "the chassis's EnvironmentMetrics PowerWatts".to_string(),
            ),
            Plan::Supplies { chassis, metrics } => (
                metrics
                    .iter()
                    .map(|(id, _)| format!("Chassis {chassis} PowerSupply {id} InputPowerWatts"))
                    .collect(),
                "sum of the power supplies' InputPowerWatts (PowerSubsystem)".to_string(),
            ),
            Plan::Power { chassis, .. } => (
                vec![format!(
                    "Chassis {chassis} Power PowerControl PowerConsumedWatts"
                )],
                "PowerControl PowerConsumedWatts of the Power resource".to_string(),
            ),
        };
        self.used = used;
        self.method = method;
    }

    fn read_plan(&mut self) -> Result<BmcReading, BmcError> {
        let plan = self.plan.clone();
        let (watts, parts) = match &plan {
            Plan::Environment { chassis, path } => {
                let v = self.client.get(path)?;
                let w = reading(&v, "PowerWatts").ok_or_else(|| {
                    BmcError::NoPower(format!(
                        "{} has no PowerWatts.Reading now",
                        self.client.url(path)
                    ))
                })?;
                (
                    w,
                    vec![PowerPart {
                        name: format!("Chassis {chassis} EnvironmentMetrics PowerWatts"),
                        watts: w,
                        used: true,
                    }],
                )
            }
            Plan::Supplies { chassis, metrics } => {
                let mut parts = Vec::new();
                for (id, path) in metrics {
                    let v = self.client.get(path)?;
                    if let Some(w) = reading(&v, "InputPowerWatts") {
                        parts.push(PowerPart {
                            name: format!("Chassis {chassis} PowerSupply {id} InputPowerWatts"),
                            watts: w,
                            used: true,
                        });
                    }
                }
                if parts.is_empty() {
                    return Err(BmcError::NoPower(format!(
                        "no power supply of chassis {chassis} reports InputPowerWatts now"
                    )));
                }
                (parts.iter().map(|p| p.watts).sum(), parts)
            }
            Plan::Power { chassis, path } => {
                let v = self.client.get(path)?;
                let (w, parts, method) = power_resource(&v, chassis).ok_or_else(|| {
                    BmcError::NoPower(format!(
                        "{} has neither PowerControl PowerConsumedWatts nor PowerSupplies PowerInputWatts now",
                        self.client.url(path)
                    ))
                })?;
                self.used = parts
                    .iter()
                    .filter(|p| p.used)
                    .map(|p| p.name.clone())
                    .collect();
                self.method = method;
                (w, parts)
            }
        };
        Ok(BmcReading::watts(watts, parts))
    }

    /// The URL of the resource read (for one power supply, its metrics), without
    /// credentials.
    pub fn url(&self) -> String {
        match &self.plan {
            Plan::Environment { path, .. } | Plan::Power { path, .. } => self.client.url(path),
            Plan::Supplies { metrics, .. } => {
                let first = metrics.first().map(|(_, p)| p.as_str()).unwrap_or("");
                if metrics.len() > 1 {
                    format!(
                        "{} (and {} more)",
                        self.client.url(first),
                        metrics.len() - 1
                    )
                } else {
                    self.client.url(first)
                }
            }
        }
    }
}

/// The node figure of a `Power` resource: the first `PowerControl` entry with
/// `PowerConsumedWatts`, else the sum of `PowerSupplies[].PowerInputWatts`.
fn power_resource(v: &Value, chassis: &str) -> Option<(f64, Vec<PowerPart>, String)> {
    let mut parts = Vec::new();
    let mut chosen: Option<f64> = None;
    if let Some(controls) = v.get("PowerControl").and_then(Value::as_array) {
        for (i, c) in controls.iter().enumerate() {
            if let Some(w) = c.get("PowerConsumedWatts").and_then(Value::as_f64) {
                let name = c.get("Name").and_then(Value::as_str).map_or_else(
                    || format!("PowerControl[{i}]"),
                    |n| format!("PowerControl[{i}] {n}"),
                );
                let used = chosen.is_none();
                if used {
                    chosen = Some(w);
                }
                parts.push(PowerPart {
                    name: format!("Chassis {chassis} Power {name} PowerConsumedWatts"),
                    watts: w,
                    used,
                });
            }
        }
    }
    let mut supply_sum = 0.0;
    let mut supplies = 0;
    if let Some(psus) = v.get("PowerSupplies").and_then(Value::as_array) {
        for (i, p) in psus.iter().enumerate() {
            if let Some(w) = p.get("PowerInputWatts").and_then(Value::as_f64) {
                let name = p.get("Name").and_then(Value::as_str).map_or_else(
                    || format!("PowerSupplies[{i}]"),
                    |n| format!("PowerSupplies[{i}] {n}"),
                );
                parts.push(PowerPart {
                    name: format!("Chassis {chassis} Power {name} PowerInputWatts"),
                    watts: w,
                    used: chosen.is_none(),
                });
                supply_sum += w;
                supplies += 1;
            }
        }
    }
    match chosen {
        Some(w) => Some((
            w,
            parts,
            "PowerControl PowerConsumedWatts of the Power resource".into(),
        )),
        None if supplies > 0 => Some((
            supply_sum,
            parts,
            "sum of PowerSupplies PowerInputWatts of the Power resource (no PowerControl figure)"
                .into(),
        )),
        None => None,
    }
}

fn discover(client: &Client, cfg: &RedfishConfig) -> Result<Plan, BmcError> {
    let collection = client.get("/redfish/v1/Chassis")?;
    let mut paths = members(&collection);
    if let Some(want) = &cfg.chassis {
        paths.retain(|p| last_segment(p) == want || p == want);
        if paths.is_empty() {
            return Err(BmcError::NoPower(format!(
                "no chassis {want:?} in /redfish/v1/Chassis (members: {})",
                members(&collection).join(", ")
            )));
        }
    }
    paths.truncate(MAX_CHASSIS);
    let mut chassis = Vec::new();
    for p in &paths {
        let v = client.get(p)?;
        chassis.push(ChassisInfo {
            id: v
                .get("Id")
                .and_then(Value::as_str)
                .unwrap_or_else(|| last_segment(p))
                .to_string(),
            contained: v
                .get("Links")
                .and_then(|l| l.get("ContainedBy"))
                .is_some_and(|c| !c.is_null()),
            environment: link(&v, "EnvironmentMetrics"),
            subsystem: link(&v, "PowerSubsystem"),
            power: link(&v, "Power"),
        });
    }
    // Enclosures first (stable: the collection's order otherwise).
    chassis.sort_by_key(|c| c.contained);
    let mut tried = Vec::new();
    for c in &chassis {
        if cfg.resource != RedfishResource::Power {
            match subsystem_plan(client, c) {
                Ok(Some(plan)) => return Ok(plan),
                Ok(None) => tried.push(format!(
                    "chassis {}: no PowerSubsystem/EnvironmentMetrics power",
                    c.id
                )),
                Err(e) if fatal(&e) => return Err(e),
                Err(e) => tried.push(format!("chassis {}: {e}", c.id)),
            }
        }
        if cfg.resource != RedfishResource::PowerSubsystem {
            match &c.power {
                Some(path) => match client.get(path) {
                    Ok(v) => {
                        if power_resource(&v, &c.id).is_some() {
                            return Ok(Plan::Power {
                                chassis: c.id.clone(),
                                path: path.clone(),
                            });
                        }
                        tried.push(format!("chassis {}: Power has no power figure", c.id));
                    }
                    Err(e) if fatal(&e) => return Err(e),
                    Err(e) => tried.push(format!("chassis {}: {e}", c.id)),
                },
                None => tried.push(format!("chassis {}: no Power resource", c.id)),
            }
        }
    }
    if chassis.is_empty() {
        tried.push("the Chassis collection is empty".into());
    }
    Err(BmcError::NoPower(format!("Redfish: {}", tried.join("; "))))
}

/// Errors that end a discovery (the service is unreachable, refuses us, or the budget
/// is spent), as opposed to one resource missing or malformed, after which discovery
/// tries the next.
fn fatal(e: &BmcError) -> bool {
    matches!(
        e,
        BmcError::TooManyRequests { .. }
            | BmcError::Tls { .. }
            | BmcError::Http { .. }
            | BmcError::HttpStatus {
                status: 401 | 403,
                ..
            }
    )
}

/// GETs a resource that may be missing: `Ok(None)` when it is (404, bad JSON, a link
/// off the service), the error when it ends the discovery.
fn get_optional(client: &Client, path: &str) -> Result<Option<Value>, BmcError> {
    match client.get(path) {
        Ok(v) => Ok(Some(v)),
        Err(e) if fatal(&e) => Err(e),
        Err(_) => Ok(None),
    }
}

fn subsystem_plan(client: &Client, c: &ChassisInfo) -> Result<Option<Plan>, BmcError> {
    if let Some(path) = &c.environment {
        if let Some(v) = get_optional(client, path)? {
            if reading(&v, "PowerWatts").is_some() {
                return Ok(Some(Plan::Environment {
                    chassis: c.id.clone(),
                    path: path.clone(),
                }));
            }
        }
    }
    let Some(sub) = &c.subsystem else {
        return Ok(None);
    };
    let Some(v) = get_optional(client, sub)? else {
        return Ok(None);
    };
    let Some(coll) = link(&v, "PowerSupplies") else {
        return Ok(None);
    };
    let Some(coll) = get_optional(client, &coll)? else {
        return Ok(None);
    };
    let mut metrics = Vec::new();
    for psu in members(&coll).into_iter().take(MAX_SUPPLIES) {
        let Some(p) = get_optional(client, &psu)? else {
            continue;
        };
        let absent = p
            .get("Status")
            .and_then(|s| s.get("State"))
            .and_then(Value::as_str)
            == Some("Absent");
        let Some(m) = link(&p, "Metrics") else {
            continue;
        };
        if absent {
            continue;
        }
        let Some(mv) = get_optional(client, &m)? else {
            continue;
        };
        if reading(&mv, "InputPowerWatts").is_some() {
            let id = p
                .get("Id")
                .and_then(Value::as_str)
                .unwrap_or_else(|| last_segment(&psu))
                .to_string();
            metrics.push((id, m));
        }
    }
    if metrics.is_empty() {
        return Ok(None);
    }
    Ok(Some(Plan::Supplies {
        chassis: c.id.clone(),
        metrics,
    }))
}

impl PowerSource for RedfishSource {
    fn source(&self) -> BmcSource {
        let kind = match self.plan {
            Plan::Power { .. } => BmcSourceKind::RedfishPower,
            _ => BmcSourceKind::RedfishPowerSubsystem,
        };
        let transport = match self.transport {
            RedfishTransport::HttpsVerified => "HTTPS, certificate verified",
            RedfishTransport::HttpsInsecure => "HTTPS, certificate NOT verified (insecure)",
            RedfishTransport::PlainHttpLoopback => "plain HTTP on loopback",
        };
        let url = self.url();
        BmcSource {
            kind,
            description: format!("Redfish {url} ({transport}): {}", self.method),
            access: BmcAccess::Redfish {
                url,
                transport: self.transport,
            },
            sensors: self.used.clone(),
            method: self.method.clone(),
        }
    }

    fn read(&mut self, cancel: &AtomicBool) -> Result<BmcReading, BmcError> {
        if cancel.load(Ordering::Relaxed) {
            return Err(BmcError::Cancelled);
        }
        // Each reading may make as many requests as its plan needs, no more.
        let needed = match &self.plan {
            Plan::Supplies { metrics, .. } => metrics.len(),
            _ => 1,
        };
        self.client.set_budget(needed);
        self.read_plan()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked() {
        assert!(parse_origin("https://bmc.example", false).unwrap().https);
        assert_eq!(
            parse_origin("https://10.1.2.3:8443/redfish/v1", false)
                .unwrap()
                .origin,
            "https://10.1.2.3:8443"
        );
        let e = parse_origin("https://root:pw-planted@bmc", false)
            .unwrap_err()
            .to_string();
        assert!(
            !e.contains("pw-planted") && e.contains("must not hold"),
            "{e}"
        );
        let e = parse_origin("ftp://root:pw-planted@bmc", false)
            .unwrap_err()
            .to_string();
        assert!(!e.contains("pw-planted"), "{e}");
        assert!(parse_origin("http://bmc.example", true).is_err());
        assert!(parse_origin("http://127.0.0.1:8000", false).is_err());
        assert!(parse_origin("http://127.0.0.1:8000", true).is_ok());
        assert!(parse_origin("http://[::1]:8000", true).is_ok());
        assert!(parse_origin("http://localhost", true).is_ok());
        assert!(parse_origin("http://127.0.0.1.evil.example", true).is_err());
    }

    #[test]
    fn power_resource_prefers_power_control() {
        let v: Value = serde_json::json!({
            "PowerControl": [{"Name": "System Input Power", "PowerConsumedWatts": 344}],
            "PowerSupplies": [{"Name": "PSU1", "PowerInputWatts": 180}, {"Name": "PSU2", "PowerInputWatts": 190}]
        });
        let (w, parts, _) = power_resource(&v, "1U").unwrap();
        assert_eq!(w, 344.0);
        assert_eq!(parts.iter().filter(|p| p.used).count(), 1);
        let v: Value = serde_json::json!({
            "PowerSupplies": [{"Name": "PSU1", "PowerInputWatts": 180}, {"Name": "PSU2", "PowerInputWatts": 190.5}]
        });
        let (w, parts, method) = power_resource(&v, "1U").unwrap();
        assert_eq!(w, 370.5);
        assert!(parts.iter().all(|p| p.used) && method.contains("sum"));
        assert!(power_resource(&serde_json::json!({"Voltages": []}), "1U").is_none());
    }
}
