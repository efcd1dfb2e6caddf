//! `wasi:filesystem` and `wasi:sockets`, defined from what each component imports of them, as
//! denials: there are no preopened directories, a socket cannot be created (`access-denied`),
//! a name cannot be resolved (`access-denied`), and since no file or socket can ever be
//! obtained, any other function of these interfaces is unreachable and ends the call.

use std::sync::Arc;

use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, Linker, Resource, ResourceAny, ResourceType, Val};
use wasmtime::StoreContextMut;

use super::inert::{InputStream, IoError, OutputStream, Pollable};
use super::WasiView;
use crate::wasm::host_trap::HostTrap;

/// The denied packages.
pub(super) const DENIED_PACKAGES: [&str; 2] = ["wasi:filesystem/", "wasi:sockets/"];

/// The network handle `instance-network` hands out: it grants nothing.
struct NoNetwork;

/// A file or socket resource: none ever exists.
enum Unobtainable {}

/// The resource type a denied interface's resource named `name` stands for: the inert io
/// types it `use`s from `wasi:io`, the empty network, or a type nothing can obtain.
fn resource_type(name: &str) -> ResourceType {
    match name {
        "input-stream" => ResourceType::host::<InputStream>(),
        "output-stream" => ResourceType::host::<OutputStream>(),
        "error" => ResourceType::host::<IoError>(),
        "pollable" => ResourceType::host::<Pollable>(),
        "network" => ResourceType::host::<NoNetwork>(),
        _ => ResourceType::host::<Unobtainable>(),
    }
}

fn access_denied() -> Val {
    Val::Result(Err(Some(Box::new(Val::Enum("access-denied".into())))))
}

/// The answer of `interface#function`, or `None` when it cannot be called legitimately.
fn answer(
    store: &mut StoreContextMut<'_, impl WasiView>,
    interface: &str,
    function: &str,
) -> wasmtime::Result<Option<Val>> {
    Ok(Some(match (interface, function) {
        ("wasi:filesystem/preopens", "get-directories") => Val::List(Vec::new()),
        ("wasi:filesystem/types", "filesystem-error-code")
        | ("wasi:sockets/network", "network-error-code") => Val::Option(None),
        ("wasi:sockets/tcp-create-socket", "create-tcp-socket")
        | ("wasi:sockets/udp-create-socket", "create-udp-socket")
        | ("wasi:sockets/ip-name-lookup", "resolve-addresses") => access_denied(),
        ("wasi:sockets/instance-network", "instance-network") => {
            let network = Resource::<NoNetwork>::new_own(0);
            Val::Resource(ResourceAny::try_from_resource(network, &mut *store)?)
        }
        _ => return Ok(None),
    }))
}

/// Defines every denied interface `component` imports in `linker`.
pub(super) fn add_to_linker<T: WasiView>(
    linker: &mut Linker<T>,
    component: &Component,
) -> wasmtime::Result<()> {
    let engine = component.engine().clone();
    for (import, item) in component.component_type().imports(&engine) {
        let wasi_0_2 = import.split_once('@').is_some_and(|(_, v)| v.starts_with("0.2."));
        if !wasi_0_2 || !DENIED_PACKAGES.iter().any(|p| import.starts_with(p)) {
            continue;
        }
        let ComponentItem::ComponentInstance(instance) = item.ty else {
            continue;
        };
        let interface: Arc<str> = import.split_once('@').map_or(import, |(i, _)| i).into();
        let mut definitions = linker.instance(import)?;
        for (name, item) in instance.exports(&engine) {
            match item.ty {
                ComponentItem::Resource(_) => {
                    definitions.resource(name, resource_type(name), |_, _| Ok(()))?;
                }
                ComponentItem::ComponentFunc(_) => {
                    let (interface, function) = (Arc::clone(&interface), name.to_owned());
                    definitions.func_new(name, move |mut store, _, _, results| {
                        match answer(&mut store, &interface, &function)? {
                            Some(value) => {
                                results[0] = value;
                                Ok(())
                            }
                            None => Err(HostTrap::Denied(format!(
                                "the policy called {interface}#{function}: the sandbox has no files and no network"
                            ))
                            .into()),
                        }
                    })?;
                }
                _ => {}
            }
        }
    }
    Ok(())
}
