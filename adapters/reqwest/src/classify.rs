//! A service's HTTP answer as Rebound's classifier reads it: search and views by status (and the
//! views body), query and analytics by the first error code of their JSON body
//! (`{"errors": [{"code": 4040, "msg": "…"}]}`).

use rebound::classify::{classify, Classification, Response};
use rebound::Service;
use serde_json::Value;

/// The classification of an answer with `status` and `body` from `service`; `None` when the
/// host does not classify it (management, or a query/analytics answer without an error code).
pub(crate) fn answer(service: Service, status: u16, body: &str) -> Option<Classification> {
    let response = match service {
        Service::Search => Response::Search { status },
        Service::Views => Response::Views { status, body },
        Service::Query => {
            let (code, message) = first_error(body)?;
            return Some(classify(
                Response::Query {
                    code,
                    message: &message,
                },
                None,
            ));
        }
        Service::Analytics => Response::Analytics {
            code: first_error(body)?.0,
        },
        _ => return None,
    };
    Some(classify(response, None))
}

/// Whether classifying a non-2xx answer with `status` from `service` reads its body: query and
/// analytics answers always (their error codes), views answers with 404 or 500 (reference 001
/// "Response Code Retry List"), others never.
pub(crate) fn reads_body(service: Service, status: u16) -> bool {
    match service {
        Service::Query | Service::Analytics => true,
        Service::Views => matches!(status, 404 | 500),
        _ => false,
    }
}

/// The code and message of the first entry of a JSON body's `errors`.
fn first_error(body: &str) -> Option<(u32, String)> {
    let json: Value = serde_json::from_str(body).ok()?;
    let first = json.get("errors")?.get(0)?;
    let code = u32::try_from(first.get("code")?.as_u64()?).ok()?;
    let message = first
        .get("msg")
        .or_else(|| first.get("message"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    Some((code, message.to_owned()))
}
