//! aws-config's `retry_config` provider, whose rules `AwsRetrySettings` keeps
//! (aws-config `default_provider/retry_config.rs` and its tests): per setting, the code wins
//! over `AWS_MAX_ATTEMPTS` / `AWS_RETRY_MODE`, which win over the selected profile's
//! `max_attempts` / `retry_mode`, which win over the standard defaults; 0 and text that is no
//! number are refused for `max_attempts`, an unknown mode for `retry_mode`, each naming where
//! the value came from.

use aws_types::os_shim_internal::{Env, Fs};
use rebound::AwsRetryBehavior;
use rebound_aws::{AwsRetrySettings, SettingsError};

async fn settings(vars: &[(&str, &str)], config: &str) -> Result<AwsRetrySettings, SettingsError> {
    let mut vars = vars.to_vec();
    vars.push(("AWS_CONFIG_FILE", "config"));
    let env = Env::from_slice(&vars);
    let fs = Fs::from_slice(&[("config", config)]);
    AwsRetrySettings::load(&env, &fs, None).await
}

#[tokio::test]
async fn without_settings_the_standard_defaults_hold() {
    let got = settings(&[], "[default]\n").await.unwrap();
    assert_eq!(got, AwsRetrySettings::default());
    assert_eq!(got.max_attempts, 3);
    assert_eq!(got.behavior, AwsRetryBehavior::V2_0);
}

#[tokio::test]
async fn the_environment_wins_over_the_profile_setting_by_setting() {
    let profile = "[default]\nmax_attempts = 7\nretry_mode = standard\n";
    assert_eq!(settings(&[], profile).await.unwrap().max_attempts, 7);
    let got = settings(&[("AWS_MAX_ATTEMPTS", "2")], profile)
        .await
        .unwrap();
    assert_eq!(got.max_attempts, 2);
    let got = settings(&[("AWS_RETRY_MODE", "standard")], profile)
        .await
        .unwrap();
    assert_eq!(
        got.max_attempts, 7,
        "the profile still gives what the environment does not"
    );
}

#[tokio::test]
async fn the_selected_profile_is_read() {
    let config = "[default]\nmax_attempts = 7\n[profile batch]\nmax_attempts = 9\n";
    let got = settings(&[("AWS_PROFILE", "batch")], config).await.unwrap();
    assert_eq!(got.max_attempts, 9);
    let env = Env::from_slice(&[("AWS_CONFIG_FILE", "config")]);
    let fs = Fs::from_slice(&[("config", config)]);
    let got = AwsRetrySettings::load(&env, &fs, Some("batch"))
        .await
        .unwrap();
    assert_eq!(got.max_attempts, 9);
}

#[tokio::test]
async fn the_code_wins_over_the_environment() {
    let got = settings(&[("AWS_MAX_ATTEMPTS", "2")], "[default]\n")
        .await
        .unwrap();
    assert_eq!(got.with_max_attempts(5).max_attempts, 5);
}

#[tokio::test]
async fn zero_and_unparsable_max_attempts_are_refused_naming_the_source() {
    let error = settings(&[("AWS_MAX_ATTEMPTS", "0")], "[default]\n")
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(
        text.starts_with("max_attempts:") && text.contains("AWS_MAX_ATTEMPTS"),
        "{text}"
    );
    let error = settings(&[], "[default]\nmax_attempts = three\n")
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("three") && text.contains("max_attempts"),
        "{text}"
    );
    assert!(
        text.contains("profile"),
        "says it came from the profile: {text}"
    );
}

#[tokio::test]
async fn an_unknown_or_adaptive_retry_mode_is_refused() {
    let error = settings(&[("AWS_RETRY_MODE", "eventually")], "[default]\n")
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(
        text.starts_with("retry_mode:") && text.contains("eventually"),
        "{text}"
    );
    let error = settings(&[], "[default]\nretry_mode = adaptive\n")
        .await
        .unwrap_err();
    assert!(matches!(error, SettingsError::Adaptive { .. }), "{error}");
    assert!(error.to_string().contains("standard"), "{error}");
}

/// aws-config: `AWS_NEW_RETRIES_2026=true` turns on retry behaviour 2.1.
#[tokio::test]
async fn the_new_retries_switch_selects_behaviour_2_1() {
    let got = settings(&[("AWS_NEW_RETRIES_2026", "true")], "[default]\n")
        .await
        .unwrap();
    assert_eq!(got.behavior, AwsRetryBehavior::V2_1);
    assert_eq!(got.params()["behavior"], "2.1");
}
