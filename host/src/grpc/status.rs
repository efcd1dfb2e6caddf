//! gRPC status codes (grpc/grpc `doc/statuscodes.md`), read as gRFC A6 reads them in a service
//! config: the integer form or the case-insensitive name (`14`, `"UNAVAILABLE"`,
//! `"unavailable"`).

use crate::field_error::FieldError;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! grpc_codes {
    ($( $(#[doc = $doc:literal])* $code:ident = $number:literal, $name:literal; )*) => {
        /// A gRPC status code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum GrpcCode {
            $( $(#[doc = $doc])* $code, )*
        }

        impl GrpcCode {
            /// Every code, by number.
            pub const ALL: [GrpcCode; 17] = [$(GrpcCode::$code,)*];

            /// Its number on the wire (`grpc-status`).
            pub const fn number(self) -> u8 {
                match self { $(GrpcCode::$code => $number,)* }
            }

            /// Its canonical name (`UNAVAILABLE`).
            pub const fn name(self) -> &'static str {
                match self { $(GrpcCode::$code => $name,)* }
            }
        }
    };
}

grpc_codes! {
    /// Not an error.
    Ok = 0, "OK";
    /// Cancelled, typically by the caller.
    Cancelled = 1, "CANCELLED";
    /// An unknown error.
    Unknown = 2, "UNKNOWN";
    /// The client gave an invalid argument.
    InvalidArgument = 3, "INVALID_ARGUMENT";
    /// The deadline expired before the operation could complete.
    DeadlineExceeded = 4, "DEADLINE_EXCEEDED";
    /// Some requested entity was not found.
    NotFound = 5, "NOT_FOUND";
    /// The entity the client tried to create already exists.
    AlreadyExists = 6, "ALREADY_EXISTS";
    /// The caller may not execute the operation.
    PermissionDenied = 7, "PERMISSION_DENIED";
    /// A resource (a quota, the server's capacity) is exhausted.
    ResourceExhausted = 8, "RESOURCE_EXHAUSTED";
    /// The system is not in a state the operation requires.
    FailedPrecondition = 9, "FAILED_PRECONDITION";
    /// Aborted, typically by a concurrency conflict.
    Aborted = 10, "ABORTED";
    /// The operation was attempted past the valid range.
    OutOfRange = 11, "OUT_OF_RANGE";
    /// The operation is not implemented or supported.
    Unimplemented = 12, "UNIMPLEMENTED";
    /// An internal error.
    Internal = 13, "INTERNAL";
    /// The service is unavailable, most likely for a short while.
    Unavailable = 14, "UNAVAILABLE";
    /// Unrecoverable data loss or corruption.
    DataLoss = 15, "DATA_LOSS";
    /// The request has no valid authentication credentials.
    Unauthenticated = 16, "UNAUTHENTICATED";
}

impl GrpcCode {
    /// The code numbered `number`.
    pub fn from_number(number: u64) -> Option<GrpcCode> {
        GrpcCode::ALL
            .into_iter()
            .find(|c| u64::from(c.number()) == number)
    }

    /// The code called `name`, in any case (gRFC A6 "Validation of retryPolicy").
    pub fn from_name(name: &str) -> Option<GrpcCode> {
        GrpcCode::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(name))
    }

    /// A code as a service config gives it: a JSON integer or a name. The error says what
    /// was expected, naming the valid names (its field is empty: the value is the caller's).
    pub fn from_json(value: &serde_json::Value) -> Result<GrpcCode, FieldError> {
        let found = match value {
            serde_json::Value::Number(n) => n.as_u64().and_then(GrpcCode::from_number),
            serde_json::Value::String(s) => GrpcCode::from_name(s),
            _ => None,
        };
        found.ok_or_else(|| {
            let names = GrpcCode::ALL.map(GrpcCode::name).join(", ");
            FieldError::new(
                "",
                format!("`{value}` is not a gRPC status code: expected 0 to 16 or one of {names}"),
            )
        })
    }
}

impl fmt::Display for GrpcCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Written as its name.
impl Serialize for GrpcCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// Read from its name (any case) or its number.
impl<'de> Deserialize<'de> for GrpcCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        GrpcCode::from_json(&value).map_err(|e| serde::de::Error::custom(e.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// gRFC A6 "Validation of retryPolicy": a code in integer form or case-insensitive string
    /// form (`[14]`, `["UNAVAILABLE"]`, `["unavailable"]`) is the same code; anything else is
    /// refused with the valid names.
    #[test]
    fn codes_are_read_by_number_or_name_in_any_case() {
        for value in [
            serde_json::json!(14),
            serde_json::json!("UNAVAILABLE"),
            serde_json::json!("unavailable"),
        ] {
            assert_eq!(GrpcCode::from_json(&value), Ok(GrpcCode::Unavailable));
        }
        let refused = GrpcCode::from_json(&serde_json::json!("UNAVAILABLEX")).unwrap_err();
        assert!(refused.message.contains("RESOURCE_EXHAUSTED"), "{refused}");
        assert!(GrpcCode::from_json(&serde_json::json!(17)).is_err());
        assert!(GrpcCode::from_json(&serde_json::json!(-1)).is_err());
        assert!(GrpcCode::ALL
            .iter()
            .enumerate()
            .all(|(i, c)| usize::from(c.number()) == i));
    }
}
