//! The stream record, created from its groups' shard count if it does not exist yet (a stream whose groups
//! were created before stream records existed): read it; if there is none, create it; if another replica
//! created it meanwhile, read it again — at most [`MAX_CAS_ATTEMPTS`] times.

use super::{Answer, Flow, Progress, ReshardError, Step, StreamSnapshot};
use crate::replica::MAX_CAS_ATTEMPTS;
use crate::stream::StreamRecord;

/// Reads, or creates, the stream record.
#[derive(Debug)]
pub struct EnsureStream {
    stream_prefix: String,
    shard_count: u32,
    attempts: usize,
}

impl EnsureStream {
    /// `shard_count`: the count a record created now starts with (its groups').
    pub fn start(
        stream_prefix: &str,
        shard_count: u32,
    ) -> (Self, Progress<Result<StreamSnapshot, ReshardError>>) {
        let flow = EnsureStream {
            stream_prefix: stream_prefix.to_owned(),
            shard_count,
            attempts: 1,
        };
        (flow, Progress::Step(Step::LoadStream))
    }
}

impl<S> Flow<S> for EnsureStream {
    type Output = Result<StreamSnapshot, ReshardError>;

    fn answer(&mut self, answer: Answer<S>, now_ms: i64) -> Progress<Self::Output> {
        match answer {
            Answer::Stream(Ok(Some(s))) | Answer::Created(Ok(Some(s))) => Progress::Done(Ok(s)),
            Answer::Stream(Ok(None)) => Progress::Step(Step::CreateStream(Box::new(
                StreamRecord::new(&self.stream_prefix, self.shard_count, now_ms),
            ))),
            Answer::Created(Ok(None)) if self.attempts < MAX_CAS_ATTEMPTS => {
                self.attempts += 1;
                Progress::Step(Step::LoadStream)
            }
            Answer::Created(Ok(None)) => Progress::Done(Err(ReshardError::StreamKeptChanging)),
            Answer::Stream(Err(_)) | Answer::Created(Err(_)) => {
                Progress::Done(Err(ReshardError::Store))
            }
            _ => Progress::Done(Err(ReshardError::OutOfStep)),
        }
    }
}
