//! Where a configuration error is: the file, and the line and column of the value it is
//! about, found from the value's span in the file's text.

use std::ops::Range;
use std::path::Path;

use super::{line_column, ConfigError, Location};

/// Errors about one file's text, placed by the span of what they are about.
pub(super) struct Errors<'a> {
    pub(super) file: &'a Path,
    pub(super) text: &'a str,
}

impl Errors<'_> {
    pub(super) fn at(
        &self,
        span: Range<usize>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> ConfigError {
        let (line, column) = line_column(self.text, span.start);
        ConfigError {
            file: self.file.to_owned(),
            line,
            column,
            field: field.into(),
            message: message.into(),
        }
    }

    /// The place of byte `offset`.
    pub(super) fn location(&self, offset: usize) -> Location {
        let (line, column) = line_column(self.text, offset);
        Location {
            file: self.file.to_owned(),
            line,
            column,
        }
    }
}
