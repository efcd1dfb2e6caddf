//! The SDK's retry settings, resolved as the SDK resolves them, for the `aws` built-in: a team
//! that tuned its clients with `AWS_MAX_ATTEMPTS`, `AWS_RETRY_MODE` or a profile's
//! `max_attempts` and `retry_mode` keeps those settings when Rebound decides. Each setting is
//! taken from the code, else the environment, else the selected profile, else the standard
//! defaults (aws-config's `retry_config` provider, per field), with the SDK's own loaders and
//! its own errors for values it refuses.

use std::borrow::Cow;
use std::str::FromStr;

use aws_runtime::env_config::file::EnvConfigFiles;
use aws_runtime::env_config::section::EnvConfigSections;
use aws_runtime::env_config::{source, EnvConfigValue};
use aws_smithy_types::retry::RetryMode;
use aws_types::os_shim_internal::{Env, Fs};
use rebound::{AwsRetry, AwsRetryBehavior};
use serde_json::{json, Map, Value};

/// The SDK's retry settings that the `aws` built-in takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct AwsRetrySettings {
    /// Attempts per operation, the first included (`AWS_MAX_ATTEMPTS`, `max_attempts`; 3).
    pub max_attempts: u32,
    /// The retry behaviour: 2.1 when `AWS_NEW_RETRIES_2026` is `true`, else 2.0.
    pub behavior: AwsRetryBehavior,
}

/// A retry setting the SDK refuses, or a profile file it cannot read: the message names the
/// setting and where it came from, as the SDK's own errors do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// A value of `AWS_MAX_ATTEMPTS`, `AWS_RETRY_MODE` or a profile's `max_attempts` or
    /// `retry_mode` that the SDK refuses.
    #[error("{setting}: {message}")]
    Invalid {
        /// The setting, as the environment or the profile names it.
        setting: &'static str,
        /// What was wrong, with where the value came from.
        message: String,
    },
    /// `adaptive`: the `aws` built-in implements the standard mode only.
    #[error("retry_mode: `adaptive` ({source_name}): the aws built-in implements the SDK's standard retry mode only; set `standard`")]
    Adaptive {
        /// Where the mode came from.
        source_name: String,
    },
    /// A profile file that cannot be read or parsed.
    #[error("the AWS profile files: {0}")]
    Profile(String),
}

impl Default for AwsRetrySettings {
    /// The standard mode's defaults: 3 attempts, retry behaviour 2.0.
    fn default() -> Self {
        AwsRetrySettings {
            max_attempts: 3,
            behavior: AwsRetryBehavior::default(),
        }
    }
}

impl AwsRetrySettings {
    /// The settings this process's environment and its selected profile (`AWS_PROFILE`, else
    /// `default`, in `~/.aws/config` or `AWS_CONFIG_FILE`) give: read when called, never
    /// otherwise.
    pub async fn from_environment() -> Result<Self, SettingsError> {
        AwsRetrySettings::load(&Env::real(), &Fs::real(), None).await
    }

    /// The settings `env` and the profile files found through `env` on `fs` give, in the
    /// profile `profile` (else the one `env` selects).
    pub async fn load(env: &Env, fs: &Fs, profile: Option<&str>) -> Result<Self, SettingsError> {
        let mut found = source::load(env, fs, &EnvConfigFiles::default())
            .await
            .map_err(|e| SettingsError::Profile(e.to_string()))?;
        if let Some(profile) = profile {
            found.profile = Cow::Owned(profile.to_owned());
        }
        let profiles =
            EnvConfigSections::parse(found).map_err(|e| SettingsError::Profile(e.to_string()))?;
        AwsRetrySettings::resolve(env, Some(&profiles))
    }

    /// The settings `env`, then `profiles`' selected profile, give (aws-config's precedence,
    /// per setting).
    pub fn resolve(env: &Env, profiles: Option<&EnvConfigSections>) -> Result<Self, SettingsError> {
        let mut settings = AwsRetrySettings::default();
        let max_attempts = EnvConfigValue::new()
            .env("AWS_MAX_ATTEMPTS")
            .profile("max_attempts")
            .validate(env, profiles, |value| match value.parse::<u32>() {
                Ok(0) => Err(invalid("must be greater than zero".to_owned())),
                Ok(n) => Ok(n),
                Err(e) => Err(invalid(format!(
                    "failed to parse `{value}` as an integer: {e}"
                ))),
            })
            .map_err(|e| SettingsError::Invalid {
                setting: "max_attempts",
                message: e.to_string(),
            })?;
        if let Some(max_attempts) = max_attempts {
            settings.max_attempts = max_attempts;
        }
        let mode = EnvConfigValue::new()
            .env("AWS_RETRY_MODE")
            .profile("retry_mode");
        let (value, source) = match mode.load(env, profiles) {
            Some((value, source)) => (value.into_owned(), source.to_string()),
            None => (String::new(), String::new()),
        };
        if !source.is_empty() {
            match RetryMode::from_str(&value) {
                Err(e) => {
                    let message = format!("{e}. source: {source}");
                    return Err(SettingsError::Invalid {
                        setting: "retry_mode",
                        message,
                    });
                }
                Ok(RetryMode::Adaptive) => {
                    return Err(SettingsError::Adaptive {
                        source_name: source,
                    })
                }
                Ok(_) => {}
            }
        }
        let new_retries = EnvConfigValue::new()
            .env("AWS_NEW_RETRIES_2026")
            .load(env, profiles);
        if new_retries.is_some_and(|(value, _)| value.eq_ignore_ascii_case("true")) {
            settings.behavior = AwsRetryBehavior::V2_1;
        }
        Ok(settings)
    }

    /// With `max_attempts` set in code: it wins over the environment and the profile.
    pub fn with_max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = max_attempts.max(1);
        self
    }

    /// The `aws` built-in's parameters for these settings (a policy's `params`).
    pub fn params(&self) -> Map<String, Value> {
        let Value::Object(params) =
            json!({ "behavior": self.behavior, "max_attempts": self.max_attempts })
        else {
            unreachable!("an object")
        };
        params
    }

    /// The `aws` built-in with these settings, as a strategy for an orchestrator.
    pub fn strategy(&self) -> AwsRetry {
        AwsRetry::new(self.behavior).max_attempts(self.max_attempts)
    }
}

/// A refusal of `max_attempts`, in the SDK's words.
fn invalid(message: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, message)
}
