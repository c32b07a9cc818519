//! One call of the coordinator client: fail-over across URLs, one attempt with its authentication header
//! (token login and refresh), URL joining and decoding of answers and error bodies.

use super::*;

impl CoordinatorClient {
    /// Runs one call with fail-over across URLs.
    pub(super) async fn call<B: Serialize>(
        &self,
        method: Method,
        segments: &[&str],
        query: &[(&str, String)],
        body: Option<&B>,
        timeout: Duration,
    ) -> Result<(StatusCode, Vec<u8>), ClientError> {
        self.call_with_id(method, segments, query, body, timeout, None)
            .await
    }

    /// [`Self::call`], sending `X-Request-Id: request_id` when given (the same id on every URL tried).
    pub(super) async fn call_with_id<B: Serialize>(
        &self,
        method: Method,
        segments: &[&str],
        query: &[(&str, String)],
        body: Option<&B>,
        timeout: Duration,
        request_id: Option<&str>,
    ) -> Result<(StatusCode, Vec<u8>), ClientError> {
        let n = self.inner.urls.len();
        let start = self.inner.current.load(Ordering::Relaxed) % n;
        let mut failures = Vec::new();
        for i in 0..n {
            let idx = (start + i) % n;
            match self
                .attempt(
                    idx,
                    &Call {
                        method: method.clone(),
                        segments,
                        query,
                        body,
                        timeout,
                        request_id,
                    },
                )
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
    pub(super) async fn attempt<B: Serialize>(
        &self,
        idx: usize,
        call: &Call<'_, B>,
    ) -> Result<Attempt, ClientError> {
        let Call {
            method,
            segments,
            query,
            body,
            timeout,
            request_id,
        } = call;
        let (segments, query, body, timeout, request_id) =
            (*segments, *query, *body, *timeout, *request_id);
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
            if let Some(id) = request_id {
                req = req.header("X-Request-Id", id);
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
    pub(super) async fn auth_header(
        &self,
        idx: usize,
        timeout: Duration,
    ) -> Result<Option<AuthHeader>, AuthFailure> {
        let creds = match &self.inner.auth {
            Auth::None => return Ok(None),
            Auth::Basic(c) => return Ok(Some(AuthHeader::Basic(c.clone()))),
            Auth::Bearer(t) => return Ok(Some(AuthHeader::Bearer(t.clone()))),
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

/// One call's parameters, the same for every URL tried.
pub(super) struct Call<'a, B> {
    pub(super) method: Method,
    pub(super) segments: &'a [&'a str],
    pub(super) query: &'a [(&'a str, String)],
    pub(super) body: Option<&'a B>,
    pub(super) timeout: Duration,
    pub(super) request_id: Option<&'a str>,
}

pub(super) enum AuthHeader {
    Bearer(String),
    Basic(Credentials),
}

pub(super) enum AuthFailure {
    /// This URL cannot log us in right now; try the next one.
    Next(String),
    Fatal(ClientError),
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct LoginResponse {
    pub(super) access_token: Option<String>,
    pub(super) token: Option<String>,
    pub(super) expires_in_seconds: Option<u64>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ErrorBody {
    pub(super) error_code: Option<String>,
    pub(super) message: Option<String>,
}

/// `base` + percent-encoded `segments`.
pub(super) fn join(base: &Url, segments: &[&str]) -> Result<Url, ClientError> {
    let mut url = base.clone();
    url.path_segments_mut()
        .map_err(|()| ClientError::InvalidConfig(format!("{base} cannot be a base URL")))?
        .pop_if_empty()
        .extend(segments);
    Ok(url)
}

/// Decodes a 2xx body as `T`, anything else as a contract error.
pub(super) fn decode<T: DeserializeOwned>(
    status: StatusCode,
    body: &[u8],
) -> Result<T, ClientError> {
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
