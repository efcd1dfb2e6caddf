//! `rebound classify`: one raw response through the library's classifier (reference 001
//! "Response Code Classification"; unknown KV statuses through a KV error map, reference 004;
//! a plain HTTP status by the default table, a gRPC status).

use std::path::PathBuf;

use std::io::Write;

use anyhow::Context;
use rebound::classify::{classify, Classification, KvOpcode, Response};
use rebound::grpc::GrpcCode;
use rebound::RequestType;

use crate::parse::{load_error_map, parse_number};
use crate::wire::output::{self, failure_kind};

/// Options of `rebound classify`: exactly one kind of response.
#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("response").required(true).args(["kv", "query", "analytics", "search", "views", "http", "grpc"])))]
pub struct Args {
    /// A KV response status (decimal or 0x-hex), with --request.
    #[arg(long, value_parser = parse_number::<u16>, requires = "request")]
    kv: Option<u16>,
    /// The KV request: a request type (get, upsert, unlock, ...) or an opcode in 0x-hex.
    #[arg(long)]
    request: Option<String>,
    /// A KV error map (JSON) for statuses the host does not know.
    #[arg(long)]
    error_map: Option<PathBuf>,
    /// A query error code.
    #[arg(long, value_parser = parse_number::<u32>)]
    query: Option<u32>,
    /// The query error message (some codes are retried only for certain messages).
    #[arg(long, default_value = "")]
    message: String,
    /// An analytics error code.
    #[arg(long, value_parser = parse_number::<u32>)]
    analytics: Option<u32>,
    /// A search HTTP status.
    #[arg(long, value_parser = parse_number::<u16>)]
    search: Option<u16>,
    /// A views HTTP status, with --body.
    #[arg(long, value_parser = parse_number::<u16>)]
    views: Option<u16>,
    /// The views response body.
    #[arg(long, default_value = "")]
    body: String,
    /// A plain HTTP service's status (the default table: 408, 429, 500, 502, 503, 504).
    #[arg(long, value_parser = parse_number::<u16>)]
    http: Option<u16>,
    /// The `--http` answer carried a `Retry-After`: a 413, 429 or 503 is then a failure to
    /// decide about whatever the table.
    #[arg(long, requires = "http")]
    retry_after: bool,
    /// A gRPC status: its number or its name, in any case (UNAVAILABLE, unavailable, 14).
    #[arg(long, value_parser = parse_grpc_code)]
    grpc: Option<GrpcCode>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// A gRPC status code given by number or name.
fn parse_grpc_code(text: &str) -> Result<GrpcCode, String> {
    let value = match text.parse::<u64>() {
        Ok(number) => serde_json::Value::from(number),
        Err(_) => serde_json::Value::from(text),
    };
    GrpcCode::from_json(&value).map_err(|e| e.message)
}

fn opcode(request: &str) -> anyhow::Result<KvOpcode> {
    if request.starts_with("0x") || request.starts_with("0X") {
        return Ok(KvOpcode(parse_number(request).map_err(anyhow::Error::msg)?));
    }
    let ty = RequestType::from_name(request).with_context(|| {
        format!("--request `{request}` is neither a request type (get, upsert, unlock, ...) nor an opcode (0x..)")
    })?;
    KvOpcode::of(ty).with_context(|| format!("--request `{request}` is not a KV request type"))
}

/// Classifies the response the options describe and prints the classification.
pub fn run(args: &Args, out: &mut impl Write) -> anyhow::Result<()> {
    let map = args.error_map.as_deref().map(load_error_map).transpose()?;
    let response = if let Some(status) = args.kv {
        let request = args.request.as_deref().unwrap_or_default();
        Response::Kv {
            opcode: opcode(request)?,
            status,
        }
    } else if let Some(code) = args.query {
        Response::Query {
            code,
            message: &args.message,
        }
    } else if let Some(code) = args.analytics {
        Response::Analytics { code }
    } else if let Some(status) = args.search {
        Response::Search { status }
    } else if let Some(status) = args.views {
        Response::Views {
            status,
            body: &args.body,
        }
    } else if let Some(status) = args.http {
        Response::Http {
            status,
            retry_after: args.retry_after,
        }
    } else if let Some(code) = args.grpc {
        Response::Grpc { code }
    } else {
        unreachable!("clap requires one response")
    };
    let classification = classify(response, map.as_ref());
    let summary = output::classification(&classification);
    if args.json {
        writeln!(out, "{summary}")?;
        return Ok(());
    }
    match classification {
        Classification::Success => writeln!(out, "success")?,
        Classification::Retry { reason, retry_spec } => {
            writeln!(
                out,
                "retry: {} (non-idempotent retry allowed: {}, always retried: {})",
                reason.name(),
                reason.allows_non_idempotent_retry(),
                reason.always_retry()
            )?;
            if let Some(spec) = retry_spec {
                writeln!(
                    out,
                    "error-map retry spec: {}",
                    serde_json::to_string(&spec)?
                )?;
            }
        }
        Classification::Fail(failure) => writeln!(
            out,
            "not retried: {} (code {:#x}): {}",
            failure.name.as_deref().unwrap_or("unnamed"),
            failure.code,
            failure_kind(failure.kind)
        )?,
        other => writeln!(out, "{other:?}")?,
    }
    Ok(())
}
