//! `CoordinatorClient`: the SDK's HTTP side of coord/v1 — heartbeats, producer routing, stream creation
//! and reads — with authentication and fail-over between several coordinator URLs.
//!
//! Fail-over: calls go to the URL that last answered. A transport error (connect failure, timeout) or a
//! 502/503/504 moves on to the next URL, each URL tried at most once per call. Any other answer, including a
//! contract error, is returned as is: another replica would say the same.

use crate::auth::{Auth, Credentials, TokenState};
use crate::error::{ClientError, TransportError};
use reqwest::{Method, StatusCode, Url};
use rsc_protocol::wire::{
    CreateStreamRequest, CreateStreamResponse, HeartbeatRequest, HeartbeatResponse,
    ProducerRoutingResponse,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Default timeout of one HTTP request.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// A handle to one logical coordinator (one or more replica URLs). Cheap to clone; clones share the
/// connection pool, the fail-over position and the login token.
#[derive(Clone)]
pub struct CoordinatorClient {
    inner: Arc<Inner>,
}

struct Inner {
    urls: Vec<Url>,
    http: reqwest::Client,
    auth: Auth,
    tokens: tokio::sync::Mutex<TokenState>,
    current: AtomicUsize,
    request_timeout: Duration,
}

/// Builder for [`CoordinatorClient`].
pub struct CoordinatorClientBuilder {
    urls: Vec<String>,
    auth: Auth,
    request_timeout: Duration,
}

/// What `create_stream` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateStream {
    /// The stream and its group were created.
    Created(CreateStreamResponse),
    /// A group already uses this stream prefix (409 `STREAM_PREFIX_ALREADY_EXISTS`); nothing changed.
    AlreadyExists,
}

impl CoordinatorClientBuilder {
    /// Authentication to use (default: none).
    pub fn auth(mut self, auth: Auth) -> Self {
        self.auth = auth;
        self
    }

    /// Log in with these credentials when `Some` (see [`Auth::Login`]); send none when `None`.
    pub fn credentials(mut self, credentials: Option<Credentials>) -> Self {
        self.auth = credentials.map_or(Auth::None, Auth::Login);
        self
    }

    /// Timeout of one HTTP request (default 5 s). Heartbeats may use a shorter one.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Validates the URLs and builds the client.
    pub fn build(self) -> Result<CoordinatorClient, ClientError> {
        if self.urls.is_empty() {
            return Err(ClientError::InvalidConfig(
                "at least one coordinator URL is required, e.g. http://127.0.0.1:8080".into(),
            ));
        }
        let mut urls = Vec::new();
        for raw in &self.urls {
            let url = Url::parse(raw.trim()).map_err(|e| {
                ClientError::InvalidConfig(format!(
                    "coordinator URL {raw:?} is not a URL ({e}); use e.g. http://127.0.0.1:8080"
                ))
            })?;
            if !matches!(url.scheme(), "http" | "https") || url.cannot_be_a_base() {
                return Err(ClientError::InvalidConfig(format!(
                    "coordinator URL {raw:?} must be an http:// or https:// base URL"
                )));
            }
            if !url.username().is_empty() || url.password().is_some() {
                return Err(ClientError::InvalidConfig(format!(
                    "coordinator URL for host {:?} embeds credentials; pass them as credentials instead",
                    url.host_str().unwrap_or("")
                )));
            }
            urls.push(url);
        }
        if self.request_timeout.is_zero() {
            return Err(ClientError::InvalidConfig(
                "request timeout must be positive".into(),
            ));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(self.request_timeout.min(Duration::from_secs(2)))
            .build()
            .map_err(|e| {
                ClientError::InvalidConfig(format!("cannot build the HTTP client: {e}"))
            })?;
        Ok(CoordinatorClient {
            inner: Arc::new(Inner {
                urls,
                http,
                auth: self.auth,
                tokens: tokio::sync::Mutex::new(TokenState::default()),
                current: AtomicUsize::new(0),
                request_timeout: self.request_timeout,
            }),
        })
    }
}

/// The outcome of one attempt against one URL.
enum Attempt {
    Answer(StatusCode, Vec<u8>),
    /// Try the next URL.
    Next(String),
}

impl CoordinatorClient {
    /// A client for the coordinator replicas at `urls` (tried in order on failure), without credentials.
    ///
    /// ```
    /// let c = rsc_client::CoordinatorClient::new(["http://127.0.0.1:8080", "http://127.0.0.1:8081"]).unwrap();
    /// assert_eq!(c.urls().len(), 2);
    /// assert!(rsc_client::CoordinatorClient::new(["not a url"]).is_err());
    /// ```
    pub fn new<I, S>(urls: I) -> Result<Self, ClientError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::builder(urls).build()
    }

    /// A builder for a client of the replicas at `urls`, to set credentials or timeouts.
    ///
    /// ```
    /// use rsc_client::{CoordinatorClient, Credentials};
    /// let c = CoordinatorClient::builder(["http://127.0.0.1:8080"])
    ///     .credentials(Some(Credentials::new("admin", "s3cret")))
    ///     .request_timeout(std::time::Duration::from_secs(2))
    ///     .build()
    ///     .unwrap();
    /// # let _ = c;
    /// ```
    pub fn builder<I, S>(urls: I) -> CoordinatorClientBuilder
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        CoordinatorClientBuilder {
            urls: urls.into_iter().map(Into::into).collect(),
            auth: Auth::None,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        }
    }

    /// The configured base URLs.
    pub fn urls(&self) -> Vec<String> {
        self.inner.urls.iter().map(|u| u.to_string()).collect()
    }

    /// Sends one heartbeat (`POST …/members/{memberId}/heartbeat`) with a per-attempt `timeout`.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), rsc_client::ClientError> {
    /// use rsc_protocol::wire::{HeartbeatRequest, RuntimeConsumerCapacity};
    /// let c = rsc_client::CoordinatorClient::new(["http://127.0.0.1:8080"])?;
    /// let req = HeartbeatRequest {
    ///     protocol_version: 1, request_id: "r1".into(), member_id: "m1".into(), member_name: None,
    ///     member_epoch: 0, metadata_version: 0,
    ///     runtime_consumer_capacity: RuntimeConsumerCapacity { runtime_max_concurrency: 1, available_concurrency: 1 },
    ///     owned_shards: vec![], revoking_shards: vec![], shard_progress: vec![],
    /// };
    /// let resp = c.heartbeat("orders", "orders", "m1", &req, std::time::Duration::from_secs(2)).await?;
    /// println!("{:?} {:?}", resp.status, resp.assignment.assigned_shards);
    /// # Ok(()) }
    /// ```
    pub async fn heartbeat(
        &self,
        stream_prefix: &str,
        consumer_group: &str,
        member_id: &str,
        request: &HeartbeatRequest,
        timeout: Duration,
    ) -> Result<HeartbeatResponse, ClientError> {
        let segments = [
            "coord",
            "v1",
            "streams",
            stream_prefix,
            "groups",
            consumer_group,
            "members",
            member_id,
            "heartbeat",
        ];
        let (status, body) = self
            .call(Method::POST, &segments, &[], Some(request), timeout)
            .await?;
        decode(status, &body)
    }

    /// Reads producer routing (`GET …/producer-routing`) and checks it against the contract.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), rsc_client::ClientError> {
    /// let c = rsc_client::CoordinatorClient::new(["http://127.0.0.1:8080"])?;
    /// let routing = c.producer_routing("orders", "orders").await?;
    /// println!("{} shards, metadata version {}", routing.shard_count, routing.metadata_version);
    /// # Ok(()) }
    /// ```
    pub async fn producer_routing(
        &self,
        stream_prefix: &str,
        consumer_group: &str,
    ) -> Result<ProducerRoutingResponse, ClientError> {
        self.producer_routing_observed(stream_prefix, consumer_group, None)
            .await
    }

    /// Like [`CoordinatorClient::producer_routing`], also telling the coordinator the highest
    /// metadataVersion this producer has seen (`?observedMetadataVersion=N`), so that a metadata rollback
    /// is detected there too.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), rsc_client::ClientError> {
    /// let c = rsc_client::CoordinatorClient::new(["http://127.0.0.1:8080"])?;
    /// let routing = c.producer_routing_observed("orders", "orders", Some(7)).await?;
    /// # let _ = routing; Ok(()) }
    /// ```
    pub async fn producer_routing_observed(
        &self,
        stream_prefix: &str,
        consumer_group: &str,
        observed_metadata_version: Option<i64>,
    ) -> Result<ProducerRoutingResponse, ClientError> {
        let query: Vec<(&str, String)> = observed_metadata_version
            .filter(|v| *v > 0)
            .map(|v| ("observedMetadataVersion", v.to_string()))
            .into_iter()
            .collect();
        let segments = [
            "coord",
            "v1",
            "streams",
            stream_prefix,
            "groups",
            consumer_group,
            "producer-routing",
        ];
        let (status, body) = self
            .call::<()>(
                Method::GET,
                &segments,
                &query,
                None,
                self.inner.request_timeout,
            )
            .await?;
        let routing: ProducerRoutingResponse = decode(status, &body)?;
        if routing.stream_prefix != stream_prefix || routing.consumer_group != consumer_group {
            return Err(ClientError::Protocol(format!(
                "routing for {}/{} returned for a request about {stream_prefix}/{consumer_group}",
                routing.stream_prefix, routing.consumer_group
            )));
        }
        let indexes: Vec<u32> = routing.shards.iter().map(|s| s.shard_index).collect();
        if indexes != (0..routing.shard_count).collect::<Vec<u32>>() {
            return Err(ClientError::Protocol(format!(
                "routing lists shards {indexes:?} but shardCount is {}",
                routing.shard_count
            )));
        }
        Ok(routing)
    }

    /// Creates a stream with `shard_count` shards and its consumer group of the same name
    /// (`POST /coord/v1/streams/{p}`; needs WRITE). An existing stream is reported, not an error.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), rsc_client::ClientError> {
    /// use rsc_client::{CoordinatorClient, CreateStream};
    /// let c = CoordinatorClient::new(["http://127.0.0.1:8080"])?;
    /// match c.create_stream("orders", 12, "deploy-script").await? {
    ///     CreateStream::Created(r) => println!("created {} shards", r.shard_count),
    ///     CreateStream::AlreadyExists => println!("already there"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn create_stream(
        &self,
        stream_prefix: &str,
        shard_count: u32,
        requested_by: &str,
    ) -> Result<CreateStream, ClientError> {
        let body = CreateStreamRequest {
            initial_shard_count: Some(i64::from(shard_count)),
            requested_by: Some(requested_by.to_owned()),
            reason: Some("created by the rsc SDK".to_owned()),
        };
        let segments = ["coord", "v1", "streams", stream_prefix];
        let (status, bytes) = self
            .call(
                Method::POST,
                &segments,
                &[],
                Some(&body),
                self.inner.request_timeout,
            )
            .await?;
        match decode::<CreateStreamResponse>(status, &bytes) {
            Ok(r) => Ok(CreateStream::Created(r)),
            Err(ClientError::Api {
                error_code: Some(code),
                ..
            }) if code == "STREAM_PREFIX_ALREADY_EXISTS" || code == "GROUP_ALREADY_EXISTS" => {
                Ok(CreateStream::AlreadyExists)
            }
            Err(e) => Err(e),
        }
    }

    /// `GET` a JSON document, e.g. a monitoring read. `segments` are path segments, percent-encoded here.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), rsc_client::ClientError> {
    /// let c = rsc_client::CoordinatorClient::new(["http://127.0.0.1:8080"])?;
    /// let health = c.get_json(&["coord", "v1", "monitoring", "health"]).await?;
    /// println!("{}", health["status"]);
    /// # Ok(()) }
    /// ```
    pub async fn get_json(&self, segments: &[&str]) -> Result<serde_json::Value, ClientError> {
        let (status, body) = self
            .call::<()>(Method::GET, segments, &[], None, self.inner.request_timeout)
            .await?;
        decode(status, &body)
    }

    /// Runs one call with fail-over across URLs.
    async fn call<B: Serialize>(
        &self,
        method: Method,
        segments: &[&str],
        query: &[(&str, String)],
        body: Option<&B>,
        timeout: Duration,
    ) -> Result<(StatusCode, Vec<u8>), ClientError> {
        let n = self.inner.urls.len();
        let start = self.inner.current.load(Ordering::Relaxed) % n;
        let mut failures = Vec::new();
        for i in 0..n {
            let idx = (start + i) % n;
            match self
                .attempt(idx, method.clone(), segments, query, body, timeout)
                .await?
            {
                Attempt::Answer(status, bytes) => {
                    self.inner.current.store(idx, Ordering::Relaxed);
                    return Ok((status, bytes));
                }
                Attempt::Next(why) => failures.push(why),
            }
        }
        // Start the next call at the URL after the one tried first, so a dead first URL is not always first.
        self.inner.current.store((start + 1) % n, Ordering::Relaxed);
        Err(ClientError::Unreachable(failures.join("; ")))
    }

    /// One attempt against URL `idx` (logging in first when needed, and once more after a 401).
    async fn attempt<B: Serialize>(
        &self,
        idx: usize,
        method: Method,
        segments: &[&str],
        query: &[(&str, String)],
        body: Option<&B>,
        timeout: Duration,
    ) -> Result<Attempt, ClientError> {
        let base = &self.inner.urls[idx];
        let mut url = join(base, segments)?;
        if !query.is_empty() {
            url.query_pairs_mut()
                .extend_pairs(query.iter().map(|(k, v)| (*k, v.as_str())));
        }
        for try_no in 0..2 {
            let header = match self.auth_header(idx, timeout).await {
                Ok(h) => h,
                Err(AuthFailure::Next(why)) => return Ok(Attempt::Next(why)),
                Err(AuthFailure::Fatal(e)) => return Err(e),
            };
            let bearer = matches!(&header, Some(AuthHeader::Bearer(_)));
            let mut req = self
                .inner
                .http
                .request(method.clone(), url.clone())
                .timeout(timeout);
            req = match header {
                Some(AuthHeader::Bearer(t)) => req.bearer_auth(t),
                Some(AuthHeader::Basic(c)) => req.basic_auth(c.username, Some(c.password)),
                None => req,
            };
            if let Some(b) = body {
                req = req.json(b);
            }
            let resp = match req.send().await {
                Ok(r) => r,
                Err(e) => return Ok(Attempt::Next(format!("{base}: {}", TransportError(&e)))),
            };
            let status = resp.status();
            if status == StatusCode::UNAUTHORIZED && bearer && try_no == 0 {
                self.inner.tokens.lock().await.invalidate();
                continue;
            }
            if matches!(
                status,
                StatusCode::BAD_GATEWAY
                    | StatusCode::SERVICE_UNAVAILABLE
                    | StatusCode::GATEWAY_TIMEOUT
            ) {
                let text = resp.text().await.unwrap_or_default();
                return Ok(Attempt::Next(format!(
                    "{base}: HTTP {} {}",
                    status.as_u16(),
                    text.chars().take(200).collect::<String>()
                )));
            }
            let bytes = match resp.bytes().await {
                Ok(b) => b.to_vec(),
                Err(e) => return Ok(Attempt::Next(format!("{base}: {}", TransportError(&e)))),
            };
            if status == StatusCode::UNAUTHORIZED {
                return Err(ClientError::Unauthorized {
                    url: url.to_string(),
                });
            }
            if status == StatusCode::FORBIDDEN {
                return Err(ClientError::Forbidden {
                    url: url.to_string(),
                });
            }
            return Ok(Attempt::Answer(status, bytes));
        }
        Err(ClientError::Unauthorized {
            url: url.to_string(),
        })
    }

    /// The Authorization header for a call to URL `idx`, logging in if needed.
    async fn auth_header(
        &self,
        idx: usize,
        timeout: Duration,
    ) -> Result<Option<AuthHeader>, AuthFailure> {
        let creds = match &self.inner.auth {
            Auth::None => return Ok(None),
            Auth::Basic(c) => return Ok(Some(AuthHeader::Basic(c.clone()))),
            Auth::Login(c) => c,
        };
        let mut tokens = self.inner.tokens.lock().await;
        if tokens.basic_fallback {
            return Ok(Some(AuthHeader::Basic(creds.clone())));
        }
        if let Some(t) = tokens.current(Instant::now()) {
            return Ok(Some(AuthHeader::Bearer(t.to_owned())));
        }
        let base = &self.inner.urls[idx];
        let url = join(base, &["coord", "v1", "auth", "login"]).map_err(AuthFailure::Fatal)?;
        let started = Instant::now();
        let body = serde_json::json!({"username": creds.username, "password": creds.password});
        let resp = match self
            .inner
            .http
            .post(url.clone())
            .timeout(timeout)
            .json(&body)
            .send()
            .await
        {
            Ok(r) => r,
            Err(e) => {
                return Err(AuthFailure::Next(format!(
                    "{base}: login {}",
                    TransportError(&e)
                )));
            }
        };
        let status = resp.status();
        if status == StatusCode::NOT_FOUND || status == StatusCode::METHOD_NOT_ALLOWED {
            tracing::info!(
                url = %base,
                "coordinator has no login endpoint; sending HTTP Basic credentials instead"
            );
            tokens.basic_fallback = true;
            return Ok(Some(AuthHeader::Basic(creds.clone())));
        }
        if status.is_server_error() {
            return Err(AuthFailure::Next(format!(
                "{base}: login HTTP {}",
                status.as_u16()
            )));
        }
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            return Err(AuthFailure::Fatal(ClientError::Unauthorized {
                url: url.to_string(),
            }));
        }
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| AuthFailure::Next(format!("{base}: login {}", TransportError(&e))))?;
        let login: LoginResponse = decode(status, &bytes).map_err(AuthFailure::Fatal)?;
        let token = login.access_token.or(login.token).ok_or_else(|| {
            AuthFailure::Fatal(ClientError::Protocol(
                "login response has no accessToken".into(),
            ))
        })?;
        let ttl = Duration::from_secs(login.expires_in_seconds.unwrap_or(300).max(1));
        tokens.store(token.clone(), started, ttl);
        Ok(Some(AuthHeader::Bearer(token)))
    }
}

enum AuthHeader {
    Bearer(String),
    Basic(Credentials),
}

enum AuthFailure {
    /// This URL cannot log us in right now; try the next one.
    Next(String),
    Fatal(ClientError),
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct LoginResponse {
    access_token: Option<String>,
    token: Option<String>,
    expires_in_seconds: Option<u64>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ErrorBody {
    error_code: Option<String>,
    message: Option<String>,
}

/// `base` + percent-encoded `segments`.
fn join(base: &Url, segments: &[&str]) -> Result<Url, ClientError> {
    let mut url = base.clone();
    url.path_segments_mut()
        .map_err(|()| ClientError::InvalidConfig(format!("{base} cannot be a base URL")))?
        .pop_if_empty()
        .extend(segments);
    Ok(url)
}

/// Decodes a 2xx body as `T`, anything else as a contract error.
fn decode<T: DeserializeOwned>(status: StatusCode, body: &[u8]) -> Result<T, ClientError> {
    if status.is_success() {
        return serde_json::from_slice(body).map_err(|e| {
            ClientError::Protocol(format!(
                "HTTP {} body does not match the contract: {e}",
                status.as_u16()
            ))
        });
    }
    let parsed: Option<ErrorBody> = serde_json::from_slice(body).ok();
    let (error_code, message) = match parsed {
        Some(b) => (
            b.error_code,
            b.message
                .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned()),
        ),
        None => (
            None,
            String::from_utf8_lossy(body).chars().take(300).collect(),
        ),
    };
    Err(ClientError::Api {
        status: status.as_u16(),
        error_code,
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_segments_are_percent_encoded() {
        let base = Url::parse("http://127.0.0.1:8080/").unwrap();
        let url = join(&base, &["coord", "v1", "streams", "a/b c", "groups", "g"]).unwrap();
        assert_eq!(
            url.as_str(),
            "http://127.0.0.1:8080/coord/v1/streams/a%2Fb%20c/groups/g"
        );
        let base = Url::parse("http://127.0.0.1:8080/prefix/").unwrap();
        let url = join(&base, &["coord"]).unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:8080/prefix/coord");
    }

    #[test]
    fn urls_are_validated() {
        assert!(CoordinatorClient::new(Vec::<String>::new()).is_err());
        assert!(CoordinatorClient::new(["ftp://x"]).is_err());
        let e = CoordinatorClient::new(["http://admin:pw@127.0.0.1:8080"])
            .err()
            .unwrap();
        assert!(!e.to_string().contains("pw"), "{e}");
        assert!(CoordinatorClient::new(["http://127.0.0.1:8080"]).is_ok());
    }

    #[test]
    fn error_bodies_become_typed_errors() {
        let body = br#"{"status":"NOT_FOUND","errorCode":"GROUP_NOT_FOUND","message":"nope"}"#;
        let e = decode::<serde_json::Value>(StatusCode::NOT_FOUND, body).unwrap_err();
        assert_eq!(e.error_code(), Some("GROUP_NOT_FOUND"));
        let e = decode::<serde_json::Value>(StatusCode::BAD_REQUEST, b"plain").unwrap_err();
        assert!(matches!(
            e,
            ClientError::Api {
                status: 400,
                error_code: None,
                ..
            }
        ));
    }
}
