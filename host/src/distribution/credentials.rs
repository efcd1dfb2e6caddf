//! Credentials for private OCI registries, by registry: HTTP basic (a user name and a password)
//! or a bearer token. They come from the application ([`RegistryCredentials::with`]), from a
//! Docker or Podman auth file ([`RegistryCredentials::from_auth_file`]), or from where those
//! tools and Rebound's environment variables keep them
//! ([`RegistryCredentials::from_environment`], which the `rebound` binary calls); the library
//! reads no file and no variable unless asked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use oci_client::secrets::RegistryAuth;

/// The variable naming the registry (`host[:port]`) the credential variables are for: they are
/// sent to no other.
pub const REGISTRY_VARIABLE: &str = "REBOUND_REGISTRY";
/// The variable holding a user name (with [`PASSWORD_VARIABLE`]).
pub const USERNAME_VARIABLE: &str = "REBOUND_REGISTRY_USERNAME";
/// The variable holding the password of [`USERNAME_VARIABLE`].
pub const PASSWORD_VARIABLE: &str = "REBOUND_REGISTRY_PASSWORD";
/// The variable holding a bearer token.
pub const TOKEN_VARIABLE: &str = "REBOUND_REGISTRY_TOKEN";

/// One registry's credential.
#[derive(Clone, PartialEq, Eq)]
pub enum Credential {
    /// HTTP basic authentication.
    Basic {
        /// The user name.
        username: String,
        /// The password.
        password: String,
    },
    /// A bearer token, sent as it is.
    Bearer(String),
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credential::Basic { username, .. } => write!(f, "Basic({username}, <redacted>)"),
            Credential::Bearer(_) => write!(f, "Bearer(<redacted>)"),
        }
    }
}

/// A credential and where it was found, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Found {
    credential: Credential,
    source: String,
}

/// Why credentials could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CredentialsError {
    /// The auth file could not be read.
    #[error("registry auth file {path}: {error}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The auth file is not a Docker or Podman auth file.
    #[error("registry auth file {path}: {field}: {message}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The field, as a dotted path (`auths.registry.example.com.auth`).
        field: String,
        /// What is wrong and what was expected.
        message: String,
    },
    /// The credential variables are incomplete.
    #[error("{set} is set but {missing} is not: give {REGISTRY_VARIABLE} (the registry they are for) with {USERNAME_VARIABLE} and {PASSWORD_VARIABLE} for basic authentication, or with {TOKEN_VARIABLE} for a bearer token")]
    HalfSet {
        /// A variable that is set.
        set: &'static str,
        /// One that is missing.
        missing: &'static str,
    },
}

/// Credentials by registry (`host[:port]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistryCredentials {
    by_registry: BTreeMap<String, Found>,
    /// Where credentials were looked for, for the message of a registry that refuses access.
    looked_in: Vec<String>,
}

/// A registry's name as auth files key it: `https://host:port/v1/` and `host:port` alike.
fn registry_key(name: &str) -> String {
    let name = name
        .strip_prefix("https://")
        .or_else(|| name.strip_prefix("http://"))
        .unwrap_or(name);
    name.split('/').next().unwrap_or(name).to_ascii_lowercase()
}

/// One entry of an auth file's `auths`.
#[derive(serde::Deserialize)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    registrytoken: Option<String>,
}

/// A Docker `config.json` or a Podman `auth.json`: only `auths` is read.
#[derive(serde::Deserialize)]
struct AuthFile {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
}

impl RegistryCredentials {
    /// No credentials: every registry is reached anonymously.
    pub fn anonymous() -> Self {
        Self::default()
    }

    /// These credentials, with `credential` for `registry` (`host[:port]`).
    pub fn with(mut self, registry: &str, credential: Credential) -> Self {
        self.by_registry.insert(
            registry_key(registry),
            Found {
                credential,
                source: "the application".to_owned(),
            },
        );
        self
    }

    /// The credentials of a Docker (`config.json`) or Podman (`auth.json`) auth file: each
    /// entry of its `auths` (`auth`, the base64 of `user:password`; `username` and
    /// `password`; or `registrytoken`, a bearer token). Credential helpers (`credsStore`,
    /// `credHelpers`) are not run.
    pub fn from_auth_file(path: &Path) -> Result<Self, CredentialsError> {
        let mut credentials = Self::default();
        credentials.add_auth_file(path)?;
        Ok(credentials)
    }

    /// The credentials where Rebound, Podman and Docker keep them, first found first: for the
    /// registry [`REGISTRY_VARIABLE`] names, [`TOKEN_VARIABLE`] (a bearer token) or
    /// [`USERNAME_VARIABLE`] and [`PASSWORD_VARIABLE`]; then the auth files
    /// `$REGISTRY_AUTH_FILE`, `$XDG_RUNTIME_DIR/containers/auth.json`,
    /// `~/.config/containers/auth.json` and `$DOCKER_CONFIG/config.json` (else
    /// `~/.docker/config.json`), those that exist.
    pub fn from_environment() -> Result<Self, CredentialsError> {
        let mut credentials = Self::default();
        let variable = |name| std::env::var(name).ok().filter(|v: &String| !v.is_empty());
        let registry = variable(REGISTRY_VARIABLE);
        let token = variable(TOKEN_VARIABLE);
        let username = variable(USERNAME_VARIABLE);
        let password = variable(PASSWORD_VARIABLE);
        let half = |set, missing| Err(CredentialsError::HalfSet { set, missing });
        let credential = match (token, username, password) {
            (Some(token), _, _) => Some((Credential::Bearer(token), TOKEN_VARIABLE)),
            (None, Some(username), Some(password)) => {
                Some((Credential::Basic { username, password }, USERNAME_VARIABLE))
            }
            (None, Some(_), None) => return half(USERNAME_VARIABLE, PASSWORD_VARIABLE),
            (None, None, Some(_)) => return half(PASSWORD_VARIABLE, USERNAME_VARIABLE),
            (None, None, None) => None,
        };
        match (registry, credential) {
            (Some(registry), Some((credential, name))) => {
                credentials.by_registry.insert(
                    registry_key(&registry),
                    Found {
                        credential,
                        source: name.to_owned(),
                    },
                );
            }
            (None, Some((_, name))) => return half(name, REGISTRY_VARIABLE),
            (Some(_), None) => return half(REGISTRY_VARIABLE, USERNAME_VARIABLE),
            (None, None) => {}
        }
        credentials
            .looked_in
            .push(format!("{REGISTRY_VARIABLE} and its credential variables"));
        let home = dirs::home_dir();
        let files = [
            variable("REGISTRY_AUTH_FILE").map(PathBuf::from),
            variable("XDG_RUNTIME_DIR").map(|d| Path::new(&d).join("containers/auth.json")),
            dirs::config_dir().map(|d| d.join("containers/auth.json")),
            variable("DOCKER_CONFIG")
                .map(|d| Path::new(&d).join("config.json"))
                .or_else(|| home.map(|h| h.join(".docker/config.json"))),
        ];
        for file in files.into_iter().flatten() {
            if file.is_file() {
                credentials.add_auth_file(&file)?;
            } else {
                credentials.looked_in.push(file.display().to_string());
            }
        }
        Ok(credentials)
    }

    /// Adds the entries of the auth file at `path` for the registries without one yet.
    fn add_auth_file(&mut self, path: &Path) -> Result<(), CredentialsError> {
        let text = std::fs::read_to_string(path).map_err(|source| CredentialsError::Read {
            path: path.to_owned(),
            error: source,
        })?;
        let malformed = |field: String, message: String| CredentialsError::Malformed {
            path: path.to_owned(),
            field,
            message,
        };
        let file: AuthFile =
            serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(&text))
                .map_err(|e| malformed(e.path().to_string(), e.inner().to_string()))?;
        self.looked_in.push(path.display().to_string());
        for (registry, entry) in file.auths {
            let field = |name: &str| format!("auths.{registry}.{name}");
            let credential = if let Some(token) = entry.registrytoken {
                Credential::Bearer(token)
            } else if let Some(auth) = entry.auth.filter(|a| !a.is_empty()) {
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(auth.trim())
                    .ok()
                    .and_then(|bytes| String::from_utf8(bytes).ok())
                    .ok_or_else(|| {
                        malformed(
                            field("auth"),
                            "expected the base64 of `user:password`".into(),
                        )
                    })?;
                let (username, password) = decoded.split_once(':').ok_or_else(|| {
                    malformed(
                        field("auth"),
                        "expected the base64 of `user:password`, found no `:`".into(),
                    )
                })?;
                Credential::Basic {
                    username: username.to_owned(),
                    password: password.to_owned(),
                }
            } else if let (Some(username), Some(password)) = (entry.username, entry.password) {
                Credential::Basic { username, password }
            } else {
                // An entry a credential helper fills in: nothing to use here.
                continue;
            };
            self.by_registry
                .entry(registry_key(&registry))
                .or_insert(Found {
                    credential,
                    source: path.display().to_string(),
                });
        }
        Ok(())
    }

    /// How to authenticate to `registry` (`host[:port]`).
    pub(crate) fn auth(&self, registry: &str) -> RegistryAuth {
        match self.found(registry).map(|found| &found.credential) {
            None => RegistryAuth::Anonymous,
            Some(Credential::Basic { username, password }) => {
                RegistryAuth::Basic(username.clone(), password.clone())
            }
            Some(Credential::Bearer(token)) => RegistryAuth::Bearer(token.clone()),
        }
    }

    fn found(&self, registry: &str) -> Option<&Found> {
        self.by_registry.get(&registry_key(registry))
    }

    /// What was given for `registry`, for the message of a registry that refused access.
    pub(crate) fn describe(&self, registry: &str) -> String {
        match self.found(registry) {
            Some(found) => {
                let kind = match found.credential {
                    Credential::Basic { .. } => "the user name and password",
                    Credential::Bearer(_) => "the bearer token",
                };
                format!("{kind} from {} were refused", found.source)
            }
            None if self.looked_in.is_empty() => {
                format!("no credential was given for {registry}")
            }
            None => format!(
                "no credential for {registry} was found (looked in {})",
                self.looked_in.join(", ")
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth_file(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.json");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    /// docs/registry.md "Private registries": an auth file's `auth` (base64 of
    /// `user:password`), `username`/`password` and `registrytoken` entries, keyed by
    /// registry whether written `host:port` or as a URL; entries left to credential helpers
    /// are skipped.
    #[test]
    fn an_auth_file_gives_basic_and_bearer_credentials_by_registry() {
        let (_dir, path) = auth_file(
            r#"{"auths": {
                "registry.example.com": {"auth": "YWxpY2U6czNjcjN0"},
                "https://other.example.com:5000/v1/": {"username": "bob", "password": "pw"},
                "tokens.example.com": {"registrytoken": "t0k3n"},
                "helper.example.com": {}
            }, "credHelpers": {"helper.example.com": "ecr-login"}}"#,
        );
        let credentials = RegistryCredentials::from_auth_file(&path).unwrap();
        assert!(matches!(
            credentials.auth("registry.example.com"),
            RegistryAuth::Basic(u, p) if u == "alice" && p == "s3cr3t"
        ));
        assert!(matches!(
            credentials.auth("other.example.com:5000"),
            RegistryAuth::Basic(u, p) if u == "bob" && p == "pw"
        ));
        assert!(matches!(
            credentials.auth("tokens.example.com"),
            RegistryAuth::Bearer(t) if t == "t0k3n"
        ));
        assert!(matches!(
            credentials.auth("helper.example.com"),
            RegistryAuth::Anonymous
        ));
        let said = credentials.describe("helper.example.com");
        assert!(
            said.contains("no credential for helper.example.com") && said.contains("auth.json"),
            "{said}"
        );
        let said = credentials.describe("registry.example.com");
        assert!(
            said.contains("user name and password") && said.contains("auth.json"),
            "{said}"
        );
        assert!(!format!("{credentials:?}").contains("s3cr3t"));
    }

    /// A malformed auth file is refused naming the file and the field.
    #[test]
    fn a_malformed_auth_file_names_the_field() {
        let (_dir, path) = auth_file(r#"{"auths": {"r.example.com": {"auth": "not base64!"}}}"#);
        let e = RegistryCredentials::from_auth_file(&path).unwrap_err();
        assert!(
            e.to_string().contains("auths.r.example.com.auth") && e.to_string().contains("base64"),
            "{e}"
        );
        let (_dir, path) = auth_file(r#"{"auths": {"r.example.com": {"username": 3}}}"#);
        let e = RegistryCredentials::from_auth_file(&path).unwrap_err();
        assert!(
            e.to_string().contains("auths.r.example.com.username"),
            "{e}"
        );
    }
}
