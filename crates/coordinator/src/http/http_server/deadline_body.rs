//! A request body that must arrive whole by a fixed deadline (`coordinator.http.body-read-timeout`, counted
//! from when the request head was read). tower-http's body timeout restarts with every frame, so a client
//! sending one byte just inside each period kept a request (and its connection slot) open for ever (issue
//! #32, finding 2); this one does not restart. When the deadline passes, reading fails with
//! [`BodyDeadlineExceeded`], which the extractors and the guard answer 408 `REQUEST_TIMEOUT` (closing an
//! HTTP/1 connection).
//!
//! No timer is armed while the body keeps up: a body that arrived with its head (every heartbeat) is read
//! without ever touching the timer wheel.

use crate::security::access::BodyDeadlineExceeded;
use axum::body::{Bytes, HttpBody};
use hyper::body::{Frame, SizeHint};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::time::{Instant, Sleep};

/// `inner`, failing once `deadline` passes before it has ended.
pub struct DeadlineBody<B> {
    inner: B,
    deadline: Instant,
    timer: Option<Pin<Box<Sleep>>>,
}

impl<B> DeadlineBody<B> {
    pub fn new(inner: B, deadline: Instant) -> Self {
        DeadlineBody {
            inner,
            deadline,
            timer: None,
        }
    }
}

impl<B> HttpBody for DeadlineBody<B>
where
    B: HttpBody<Data = Bytes> + Unpin,
    B::Error: Into<axum::BoxError>,
{
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        let deadline = this.deadline;
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyDeadlineExceeded)))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
