//! WASI 0.3 for policies built by a toolchain that targets it (wasmCloud 2.5, `wasm32-wasip3`
//! runtimes): such a component imports WASI 0.3 interfaces whether or not its policy uses them,
//! so the host accepts the interfaces of every package it accepts at 0.2 and defines each
//! function as a denial. None is provided: WASI 0.3's functions are async (streams, futures)
//! and a decision runs on a thread that never waits, so a policy that calls one ends its call as
//! a policy failure (`denied`), as a call to an unreachable WASI 0.2 function does.

use wasmtime::component::types::{ComponentInstance, ComponentItem};
use wasmtime::component::{Component, Linker, ResourceType};

use super::WasiView;
use crate::wasm::host_trap::HostTrap;

/// A WASI 0.3 resource: none is ever handed out.
enum Unprovided {}

/// Whether `version` (an import's, after its `@`) is a WASI 0.3 version, a release candidate
/// included (`0.3.0-rc-2025-09-16`).
pub(super) fn is_version(version: &str) -> bool {
    version == "0.3" || version.starts_with("0.3.")
}

/// Whether component `bytes` imports a WASI 0.3 interface at its top level, read before it is
/// compiled: such a component is compiled for the engine that supports the component model's
/// concurrency. Bytes that do not parse import nothing (compiling them says why).
pub(super) fn imported_by(bytes: &[u8]) -> bool {
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        match payload {
            Ok(wasmparser::Payload::Version { .. }) => depth += 1,
            Ok(wasmparser::Payload::End(_)) => depth = depth.saturating_sub(1),
            Ok(wasmparser::Payload::ComponentImportSection(imports)) if depth == 1 => {
                for import in imports.into_iter().flatten() {
                    let name = import.name.name;
                    let version = name.split_once('@').map_or("", |(_, version)| version);
                    if name.starts_with("wasi:") && is_version(version) {
                        return true;
                    }
                }
            }
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    false
}

/// Whether `component` imports a WASI 0.3 async function: its denial is a concurrent function,
/// and wasmtime then calls the component only on a fiber.
pub(super) fn imports_async(component: &Component) -> bool {
    let engine = component.engine();
    wasi_0_3_instances(component).into_iter().any(|(_, instance)| {
        instance.exports(engine).any(|(_, item)| {
            matches!(item.ty, ComponentItem::ComponentFunc(func) if func.async_())
        })
    })
}

/// `component`'s imports of WASI 0.3 interfaces: each one's name and type.
fn wasi_0_3_instances(component: &Component) -> Vec<(String, ComponentInstance)> {
    let engine = component.engine();
    (component.component_type().imports(engine))
        .filter_map(|(import, item)| {
            let version = import.split_once('@').map_or("", |(_, version)| version);
            match item.ty {
                ComponentItem::ComponentInstance(instance)
                    if import.starts_with("wasi:") && is_version(version) =>
                {
                    Some((import.to_owned(), instance))
                }
                _ => None,
            }
        })
        .collect()
}

/// Defines every function of `component`'s WASI 0.3 imports in `linker` as a denial.
pub(super) fn add_to_linker<T: WasiView>(
    linker: &mut Linker<T>,
    component: &Component,
) -> wasmtime::Result<()> {
    let engine = component.engine().clone();
    for (import, instance) in wasi_0_3_instances(component) {
        let mut definitions = linker.instance(&import)?;
        for (name, item) in instance.exports(&engine) {
            let denial = format!(
                "the policy called {import}#{name}: WASI 0.3 functions are not provided to policies"
            );
            match item.ty {
                ComponentItem::Resource(_) => {
                    definitions.resource(name, ResourceType::host::<Unprovided>(), |_, _| Ok(()))?;
                }
                ComponentItem::ComponentFunc(func) if func.async_() => {
                    definitions.func_new_concurrent(name, move |_, _, _, _| {
                        let denial = HostTrap::Denied(denial.clone());
                        Box::pin(async move { Err(denial.into()) })
                    })?;
                }
                ComponentItem::ComponentFunc(_) => {
                    definitions.func_new(name, move |_, _, _, _| {
                        Err(HostTrap::Denied(denial.clone()).into())
                    })?;
                }
                _ => {}
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::is_version;

    /// Releases and release candidates of WASI 0.3 are accepted; 0.2, 0.30 and 1.0 are not.
    #[test]
    fn every_0_3_version_and_candidate_is_wasi_0_3() {
        for version in ["0.3.0", "0.3.1", "0.3.0-rc-2025-09-16", "0.3"] {
            assert!(is_version(version), "{version}");
        }
        for version in ["0.2.6", "0.30.0", "1.0.0", ""] {
            assert!(!is_version(version), "{version}");
        }
    }
}
