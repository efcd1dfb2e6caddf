//! [`PolicyLabel`]: how a policy is named in logs and what its instances share for them.

use std::sync::Arc;

use crate::log_rate_limit::LogRateLimit;

/// Names a policy in logs: its configured name and version (content hash prefix); and the
/// budget of stderr lines all its instances share.
#[derive(Debug, Clone)]
pub(crate) struct PolicyLabel {
    pub name: Arc<str>,
    pub version: Arc<str>,
    pub stderr_lines: Arc<LogRateLimit>,
}
