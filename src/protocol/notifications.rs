//! Notification payloads: progress, log messages, cancellation.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::is_none;

/// `notifications/progress` parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// The token the request carried in `_meta.progressToken`.
    pub progress_token: Value,
    /// Progress so far; rises with each notification.
    pub progress: f64,
    /// The total, when known.
    #[serde(default, skip_serializing_if = "is_none")]
    pub total: Option<f64>,
    /// A human-readable message (2025-03-26+).
    #[serde(default, skip_serializing_if = "is_none")]
    pub message: Option<String>,
}

/// Syslog severities of `notifications/message`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// Debug.
    Debug,
    /// Info.
    Info,
    /// Notice.
    Notice,
    /// Warning.
    Warning,
    /// Error.
    Error,
    /// Critical.
    Critical,
    /// Alert.
    Alert,
    /// Emergency.
    Emergency,
}

impl LoggingLevel {
    /// The `log` crate level this maps to.
    pub fn to_log_level(self) -> log::Level {
        match self {
            LoggingLevel::Debug => log::Level::Debug,
            LoggingLevel::Info | LoggingLevel::Notice => log::Level::Info,
            LoggingLevel::Warning => log::Level::Warn,
            _ => log::Level::Error,
        }
    }
}

/// `notifications/message` parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggingMessageParams {
    /// Severity.
    pub level: LoggingLevel,
    /// The server-side logger's name.
    #[serde(default, skip_serializing_if = "is_none")]
    pub logger: Option<String>,
    /// The payload: any JSON.
    #[serde(default)]
    pub data: Value,
}
