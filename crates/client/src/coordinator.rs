//! `CoordinatorClient`: the SDK's HTTP side of coord/v1 — heartbeats, producer routing, stream creation
//! and reads — with authentication and fail-over between several coordinator URLs.
//!
//! Fail-over: calls go to the URL that last answered. A transport error (connect failure, timeout) or a
//! 502/503/504 moves on to the next URL, each URL tried at most once per call. Any other answer, including a
//! contract error, is returned as is: another replica would say the same.
//!
//! One call's fail-over, authentication and decoding are in `coordinator/transport.rs`.

mod transport;

use transport::*;

use crate::auth::{Auth, Credentials, TokenState};
use crate::error::{ClientError, TransportError};
use reqwest::{Method, StatusCode, Url};
use rsc_protocol::wire::quiesce::{ProducerQuiescedRequest, ProducerQuiescedResponse};
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
    /// The stream exists already (409 `STREAM_PREFIX_ALREADY_EXISTS` or `GROUP_ALREADY_EXISTS`, and its group
    /// answers); nothing changed. Records left by a deleted stream are not a stream: that refusal is returned
    /// as [`ClientError::Api`] with code `STREAM_PREFIX_ALREADY_EXISTS`, naming the keys and the choices.
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

    /// The base URL that answered the last call (the one the next call tries first).
    pub fn current_url(&self) -> String {
        let n = self.inner.urls.len();
        self.inner.urls[self.inner.current.load(Ordering::Relaxed) % n].to_string()
    }

    /// Sends one heartbeat (`POST …/members/{memberId}/heartbeat`) with a per-attempt `timeout`.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), rsc_client::ClientError> {
    /// use rsc_protocol::wire::{HeartbeatRequest, RuntimeConsumerCapacity};
    /// let c = rsc_client::CoordinatorClient::new(["http://127.0.0.1:8080"])?;
    /// let req = HeartbeatRequest {
    ///     protocol_version: 1, request_id: "r1".into(), member_id: "m1".into(), member_name: None,
    ///     client_name: None, client_version: None, group_instance_id: None,
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
        self.producer_routing_as(
            stream_prefix,
            consumer_group,
            observed_metadata_version,
            None,
        )
        .await
    }

    /// [`CoordinatorClient::producer_routing_observed`] naming the producer (`producerId`), so that a scale
    /// with producer quiesce waits for it (see the producer's quiesce).
    pub async fn producer_routing_as(
        &self,
        stream_prefix: &str,
        consumer_group: &str,
        observed_metadata_version: Option<i64>,
        producer_id: Option<&str>,
    ) -> Result<ProducerRoutingResponse, ClientError> {
        let mut query: Vec<(&str, String)> = observed_metadata_version
            .filter(|v| *v > 0)
            .map(|v| ("observedMetadataVersion", v.to_string()))
            .into_iter()
            .collect();
        if let Some(id) = producer_id {
            query.push(("producerId", id.to_owned()));
        }
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

    /// Reports that `producer_id` has stopped publishing for `resharding_id` holding routing version
    /// `routing_version` (`POST /coord/v1/streams/{p}/producers/quiesced`; needs READ). Answers whether the
    /// scale still waits.
    pub async fn report_quiesced(
        &self,
        stream_prefix: &str,
        producer_id: &str,
        resharding_id: &str,
        routing_version: i64,
    ) -> Result<ProducerQuiescedResponse, ClientError> {
        let body = ProducerQuiescedRequest {
            producer_id: Some(producer_id.to_owned()),
            resharding_id: Some(resharding_id.to_owned()),
            observed_routing_version: Some(routing_version),
        };
        let segments = [
            "coord",
            "v1",
            "streams",
            stream_prefix,
            "producers",
            "quiesced",
        ];
        let (status, bytes) = self
            .call(
                Method::POST,
                &segments,
                &[],
                Some(&body),
                self.inner.request_timeout,
            )
            .await?;
        decode(status, &bytes)
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
            ordering: None,
            requested_by: Some(requested_by.to_owned()),
            reason: Some("created by the rsc SDK".to_owned()),
            existing_records: None,
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
            }) if code == "GROUP_ALREADY_EXISTS" => Ok(CreateStream::AlreadyExists),
            Err(ClientError::Api {
                status,
                error_code: Some(code),
                message,
            }) if code == "STREAM_PREFIX_ALREADY_EXISTS" => {
                // The same code answers a prefix that only holds records left by a deleted stream: that
                // is not a stream to use, and the refusal (naming the keys and the choices) goes back.
                if self.stream_group_exists(stream_prefix).await? {
                    Ok(CreateStream::AlreadyExists)
                } else {
                    Err(ClientError::Api {
                        status,
                        error_code: Some(code),
                        message,
                    })
                }
            }
            Err(e) => Err(e),
        }
    }

    /// Whether the stream's own group (named after the stream) exists: a read of it answers (a caller
    /// without READ on it is told 403, which also means it exists), or 404.
    async fn stream_group_exists(&self, stream_prefix: &str) -> Result<bool, ClientError> {
        let segments = [
            "coord",
            "v1",
            "streams",
            stream_prefix,
            "groups",
            stream_prefix,
        ];
        let (status, _) = self
            .call::<()>(
                Method::GET,
                &segments,
                &[],
                None,
                self.inner.request_timeout,
            )
            .await?;
        match status.as_u16() {
            200..=299 | 403 => Ok(true),
            404 => Ok(false),
            other => Err(ClientError::Protocol(format!(
                "reading group {stream_prefix}/{stream_prefix} to tell an existing stream from leftover \
                 records answered HTTP {other}"
            ))),
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
}

impl CoordinatorClient {
    /// Sends one request with an optional JSON body and `X-Request-Id`, and decodes a JSON answer: for
    /// operator tools that speak to any route (admin mutations, monitoring reads). `segments` are path
    /// segments, percent-encoded here; a non-2xx answer is [`ClientError::Api`] with the contract's
    /// `errorCode` and message.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), rsc_client::ClientError> {
    /// use rsc_client::Method;
    /// let c = rsc_client::CoordinatorClient::new(["http://127.0.0.1:8080"])?;
    /// let body = serde_json::json!({"targetShardCount": 8, "requestedBy": "ops", "reason": "peak"});
    /// let answer = c
    ///     .send_json(Method::POST, &["coord", "v1", "streams", "orders", "scale"], &[], Some(&body), Some("req-1"))
    ///     .await?;
    /// println!("{answer}");
    /// # Ok(()) }
    /// ```
    pub async fn send_json(
        &self,
        method: Method,
        segments: &[&str],
        query: &[(&str, String)],
        body: Option<&serde_json::Value>,
        request_id: Option<&str>,
    ) -> Result<serde_json::Value, ClientError> {
        let (status, bytes) = self
            .call_with_id(
                method,
                segments,
                query,
                body,
                self.inner.request_timeout,
                request_id,
            )
            .await?;
        decode(status, &bytes)
    }
}

#[cfg(test)]
mod tests;
