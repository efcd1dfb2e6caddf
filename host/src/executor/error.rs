//! How a request run by the executor ends without a value.

use std::fmt::Debug;

use crate::decide_error::DecideError;
use crate::outcome::{ErrorContext, RetryError};

/// How a request ends without a value. `E` is the operation's error type.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecuteError<E: Debug> {
    /// The orchestrator ended the request (reference 002): `RequestCanceled`, an ambiguous or
    /// unambiguous timeout, a terminal error, or a Cassandra rethrow. `last` is the operation's
    /// last error; `None` when the deadline cut an attempt short.
    #[error("{error}")]
    Ended {
        /// The outcome error, with its error context.
        error: RetryError,
        /// The operation's last error.
        last: Option<E>,
    },
    /// The failure is not retried at all: the operation called it final, or the classifier
    /// does not retry the response (e.g. KEY_NOT_FOUND).
    #[error("not retried: {error:?} {context}")]
    NotRetried {
        /// The operation's error.
        error: E,
        /// The request so far.
        context: Box<ErrorContext>,
    },
    /// The policy ignores the failure (Cassandra IGNORE): the operation completes with an
    /// empty result, which only the caller can make.
    #[error("ignored by the retry policy: {error:?} {context}")]
    Ignored {
        /// The operation's error.
        error: E,
        /// The request so far.
        context: Box<ErrorContext>,
    },
    /// The inner service failed to become ready (tower layer).
    #[error("the service is not ready: {0:?}")]
    NotReady(E),
    /// Nothing could decide: the request names a policy or profile that is not configured.
    #[error(transparent)]
    Decide(#[from] DecideError),
}

impl<E: Debug> ExecuteError<E> {
    /// The error context, for every outcome that has one.
    pub fn context(&self) -> Option<&ErrorContext> {
        match self {
            ExecuteError::Ended { error, .. } => Some(error.context()),
            ExecuteError::NotRetried { context, .. } | ExecuteError::Ignored { context, .. } => {
                Some(context)
            }
            ExecuteError::NotReady(_) | ExecuteError::Decide(_) => None,
        }
    }

    /// The outcome error of reference 002, if the orchestrator ended the request.
    pub fn retry_error(&self) -> Option<&RetryError> {
        match self {
            ExecuteError::Ended { error, .. } => Some(error),
            _ => None,
        }
    }
}
