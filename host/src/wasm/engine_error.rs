//! What the WebAssembly engine refuses, in the library's own type. wasmtime is an implementation
//! detail an application should not have to name: an engine it cannot make, a component it
//! cannot compile, an artifact that does not load, a compiler process that failed are each an
//! `EngineError` carrying the explanation (wasmtime's whole chain, said once), so no wasmtime
//! or anyhow type reaches the public API.

/// The engine refused: why, in words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EngineError(String);

impl EngineError {
    /// An error saying `message`: what a [`ComponentCompiler`](crate::wasm::ComponentCompiler)
    /// answers when it cannot compile (a limit passed, a compiler that failed).
    pub fn new(message: impl Into<String>) -> Self {
        EngineError(message.into())
    }

    /// wasmtime's `error`, its causes included.
    pub(crate) fn of(error: &wasmtime::Error) -> Self {
        EngineError(format!("{error:#}"))
    }

    /// The same error, said as the refusal of `what`.
    #[must_use]
    pub(crate) fn doing(self, what: &str) -> Self {
        EngineError(format!("{what}: {}", self.0))
    }
}
