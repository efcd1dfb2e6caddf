//! TypeScript declarations of a `rebound:policy` version, generated from its WIT: one
//! `declare module` per interface (`rebound:policy/types@V`, `failure`, `host`), and for the
//! exported `strategy` an interface `Strategy` the policy's `strategy` object implements, in
//! the JavaScript shapes componentize-qjs and componentize-js give WIT values (docs/policy-javascript.md).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;
use rebound::wasm::WitVersion;
use wit_parser::{Docs, Function, Resolve, Type, TypeDefKind, TypeOwner, WorldItem};

/// `kebab-name` as `camelCase`.
fn camel(name: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in name.chars() {
        if c == '-' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `kebab-name` as `PascalCase`.
fn pascal(name: &str) -> String {
    let camel = camel(name);
    let mut chars = camel.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// A doc comment, indented by `indent`.
fn doc(out: &mut String, docs: &Docs, indent: &str) {
    if let Some(text) = &docs.contents {
        let _ = writeln!(out, "{indent}/**");
        for line in text.lines() {
            let _ = writeln!(out, "{indent} * {}", line.trim_end());
        }
        let _ = writeln!(out, "{indent} */");
    }
}

/// Renders WIT types as TypeScript, from within one interface.
struct Render<'a> {
    resolve: &'a Resolve,
    version: &'a str,
    /// The interface the declarations are written in.
    here: Option<wit_parser::InterfaceId>,
}

impl Render<'_> {
    /// The module an interface's declarations are in.
    fn module(&self, interface: wit_parser::InterfaceId) -> String {
        let name = self.resolve.interfaces[interface]
            .name
            .as_deref()
            .unwrap_or("anonymous");
        format!("rebound:policy/{name}@{}", self.version)
    }

    fn ty(&self, ty: &Type) -> String {
        match ty {
            Type::Bool => "boolean".into(),
            Type::U8 | Type::U16 | Type::U32 | Type::S8 | Type::S16 | Type::S32 => "number".into(),
            Type::F32 | Type::F64 => "number".into(),
            Type::U64 | Type::S64 => "bigint".into(),
            Type::Char | Type::String => "string".into(),
            Type::ErrorContext => "unknown".into(),
            Type::Id(id) => {
                let def = &self.resolve.types[*id];
                if let (Some(name), TypeOwner::Interface(owner)) = (&def.name, def.owner) {
                    return if Some(owner) == self.here {
                        pascal(name)
                    } else {
                        let interface = self.resolve.interfaces[owner]
                            .name
                            .as_deref()
                            .unwrap_or("anonymous");
                        format!("{}.{}", camel(interface), pascal(name))
                    };
                }
                self.anonymous(&def.kind)
            }
        }
    }

    /// An unnamed type: `option`, `list`, `tuple`, `result`.
    fn anonymous(&self, kind: &TypeDefKind) -> String {
        match kind {
            TypeDefKind::Option(inner) => format!("{} | undefined", self.ty(inner)),
            TypeDefKind::List(Type::U8) => "Uint8Array".into(),
            TypeDefKind::List(inner) => format!("Array<{}>", self.ty(inner)),
            TypeDefKind::Tuple(tuple) => {
                let items: Vec<String> = tuple.types.iter().map(|t| self.ty(t)).collect();
                format!("[{}]", items.join(", "))
            }
            // A function returning a result returns its `ok` value and throws its `err`.
            TypeDefKind::Result(result) => result.ok.as_ref().map_or("void".into(), |t| self.ty(t)),
            TypeDefKind::Type(inner) => self.ty(inner),
            _ => "unknown".into(),
        }
    }

    /// A named type's declaration.
    fn declaration(&self, out: &mut String, name: &str, kind: &TypeDefKind) {
        let name = pascal(name);
        match kind {
            TypeDefKind::Enum(cases) => {
                let values: Vec<String> = cases
                    .cases
                    .iter()
                    .map(|c| format!("\"{}\"", c.name))
                    .collect();
                let _ = writeln!(out, "  export type {name} = {};", values.join(" | "));
            }
            TypeDefKind::Variant(variant) => {
                let _ = writeln!(out, "  export type {name} =");
                for case in &variant.cases {
                    doc(out, &case.docs, "    ");
                    match &case.ty {
                        Some(ty) => {
                            let _ = writeln!(
                                out,
                                "    | {{ tag: \"{}\"; val: {} }}",
                                case.name,
                                self.ty(ty)
                            );
                        }
                        None => {
                            let _ = writeln!(out, "    | {{ tag: \"{}\" }}", case.name);
                        }
                    }
                }
                let _ = writeln!(out, "  ;");
            }
            TypeDefKind::Record(record) => {
                let _ = writeln!(out, "  export interface {name} {{");
                for field in &record.fields {
                    doc(out, &field.docs, "    ");
                    match self.option_of(&field.ty) {
                        // An optional field may be left out, or null, when the policy builds one;
                        // a 64-bit one may be given as a number, as a field that is not optional.
                        Some(inner) => {
                            let ty = match inner {
                                Type::U64 | Type::S64 => "bigint | number".into(),
                                _ => self.ty(&inner),
                            };
                            let _ = writeln!(out, "    {}?: {ty} | null;", camel(&field.name));
                        }
                        // A policy may give a 64-bit field as a number; the host gives a bigint.
                        None if matches!(field.ty, Type::U64 | Type::S64) => {
                            let _ = writeln!(out, "    {}: bigint | number;", camel(&field.name));
                        }
                        None => {
                            let _ = writeln!(
                                out,
                                "    {}: {};",
                                camel(&field.name),
                                self.ty(&field.ty)
                            );
                        }
                    }
                }
                let _ = writeln!(out, "  }}");
            }
            other => {
                let _ = writeln!(out, "  export type {name} = {};", self.anonymous(other));
            }
        }
    }

    /// `option<T>`'s `T`.
    fn option_of(&self, ty: &Type) -> Option<Type> {
        match ty {
            Type::Id(id) => match &self.resolve.types[*id].kind {
                TypeDefKind::Option(inner) => Some(*inner),
                _ => None,
            },
            _ => None,
        }
    }

    /// A function's signature (`name(params): result`).
    fn signature(&self, function: &Function) -> String {
        let params: Vec<String> = function
            .params
            .iter()
            .map(|p| format!("{}: {}", camel(&p.name), self.ty(&p.ty)))
            .collect();
        let result = function
            .result
            .as_ref()
            .map_or("void".into(), |t| self.ty(t));
        format!("{}({}): {result}", camel(&function.name), params.join(", "))
    }
}

/// The declarations of `version`.
pub fn declarations(version: WitVersion) -> anyhow::Result<String> {
    let mut resolve = Resolve::default();
    let package = resolve
        .push_str("policy.wit", version.wit())
        .context("the WIT of this version does not parse")?;
    render(&resolve, package)
}

/// The declarations of the `rebound:policy` package in directory `wit` (a project's WIT,
/// perhaps of an earlier version than this binary's).
pub fn declarations_of_dir(wit: &Path) -> anyhow::Result<String> {
    let mut resolve = Resolve::default();
    let (package, _) = resolve
        .push_dir(wit)
        .with_context(|| format!("{}: the WIT does not parse", wit.display()))?;
    render(&resolve, package)
}

/// The declarations of `package`'s `retry-policy` world.
fn render(resolve: &Resolve, package: wit_parser::PackageId) -> anyhow::Result<String> {
    let world = resolve.select_world(&[package], Some("retry-policy"))?;
    let name = &resolve.packages[package].name;
    let version = name
        .version
        .as_ref()
        .map(ToString::to_string)
        .context("the WIT package has no version")?;
    let mut out = format!(
        "// TypeScript declarations of `{name}`, generated from its WIT by rebound.\n\
         // The shapes are the JavaScript values componentize-qjs and componentize-js give WIT\n\
         // values: an enum is a string, a variant `{{ tag, val }}`, a record an object with\n\
         // camelCase fields, an option a value or undefined, a u64 or s64 a bigint.\n"
    );
    let number = version.as_str();
    let mut interfaces: Vec<(wit_parser::InterfaceId, bool)> = Vec::new();
    for (items, exported) in [
        (&resolve.worlds[world].imports, false),
        (&resolve.worlds[world].exports, true),
    ] {
        for item in items.values() {
            if let WorldItem::Interface { id, .. } = item {
                interfaces.push((*id, exported));
            }
        }
    }
    let names: Vec<String> = interfaces
        .iter()
        .map(|(id, _)| resolve.interfaces[*id].name.clone().unwrap_or_default())
        .collect();
    for (id, exported) in &interfaces {
        let render = Render {
            resolve,
            version: number,
            here: Some(*id),
        };
        let interface = &resolve.interfaces[*id];
        out.push('\n');
        doc(&mut out, &interface.docs, "");
        let _ = writeln!(out, "declare module \"{}\" {{", render.module(*id));
        for (other, name) in interfaces.iter().zip(&names) {
            if other.0 != *id && !name.is_empty() {
                let _ = writeln!(
                    out,
                    "  import type * as {} from \"{}\";",
                    camel(name),
                    render.module(other.0)
                );
            }
        }
        for (name, ty) in &interface.types {
            let def = &resolve.types[*ty];
            doc(&mut out, &def.docs, "  ");
            render.declaration(&mut out, name, &def.kind);
        }
        if *exported {
            let _ = writeln!(
                out,
                "  /** What the policy exports as `strategy`. */\n  export interface {} {{",
                pascal(interface.name.as_deref().unwrap_or("exports"))
            );
            for function in interface.functions.values() {
                doc(&mut out, &function.docs, "    ");
                let _ = writeln!(out, "    {};", render.signature(function));
            }
            let _ = writeln!(out, "  }}");
        } else {
            for function in interface.functions.values() {
                doc(&mut out, &function.docs, "  ");
                let _ = writeln!(out, "  export function {};", render.signature(function));
            }
        }
        let _ = writeln!(out, "}}");
    }
    Ok(out)
}
