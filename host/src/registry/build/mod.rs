//! Building a policy version from its definition: a built-in directly, a component by reading
//! (or pulling) its file and compiling it (`component`). Apart from `version`, the type every
//! part of the registry reads, so that what a build needs (the components' runtime, cache and
//! isolation) is not something the version type depends on.

use std::sync::Arc;

use crate::config::{PolicyDefinition, PolicySource};
#[cfg(feature = "wasm")]
use crate::registry::components::Components;
use crate::registry::error::BuildError;
use crate::registry::version::PolicyVersion;

#[cfg(feature = "wasm")]
mod component;
#[cfg(feature = "wasm")]
pub(super) use component::{fetch_oci, read};

/// What the registry needs to build versions: what running components takes (feature
/// `wasm`); a registry of built-ins needs nothing.
#[derive(Clone, Copy)]
pub(crate) struct BuildContext<'a> {
    #[cfg(feature = "wasm")]
    pub components: &'a Components,
    #[cfg(not(feature = "wasm"))]
    built_ins_only: std::marker::PhantomData<&'a ()>,
}

#[cfg(not(feature = "wasm"))]
impl BuildContext<'_> {
    /// What building a built-in takes: nothing.
    pub(crate) fn built_ins() -> Self {
        BuildContext {
            built_ins_only: std::marker::PhantomData,
        }
    }
}

#[cfg(feature = "wasm")]
impl<'a> BuildContext<'a> {
    /// What building with `components` takes.
    pub(crate) fn of(components: &'a Components) -> Self {
        BuildContext { components }
    }
}

impl PolicyVersion {
    /// Builds policy `name` from its definition, reading its component file if it has one.
    /// `known` is a version already loaded from the same source: its compiled component is
    /// reused when the file's content is unchanged.
    pub(crate) fn build(
        name: &str,
        definition: &PolicyDefinition,
        ctx: &BuildContext<'_>,
        known: &[Arc<PolicyVersion>],
    ) -> Result<PolicyVersion, BuildError> {
        match &definition.source {
            PolicySource::Builtin(builtin) => Ok(Self::builtin(name, builtin, definition)),
            #[cfg(feature = "wasm")]
            PolicySource::Component(path) => {
                Self::from_component_file(name, definition, path, ctx, known)
            }
            #[cfg(feature = "wasm")]
            PolicySource::Oci(reference) => {
                let path = component::fetch_oci(name, reference, definition, ctx)?;
                Self::from_component_file(name, definition, &path, ctx, known)
            }
            #[cfg(not(feature = "wasm"))]
            PolicySource::Component(_) | PolicySource::Oci(_) => {
                let _ = (ctx, known);
                Err(BuildError::ComponentsNeedWasm {
                    policy: name.to_owned(),
                })
            }
        }
    }
}
