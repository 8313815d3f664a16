//! One error type for the whole engine.
//!
//! Every kind maps to one Python exception class in the binding layer, and
//! every message says what was wrong *and* where (file, line, parameter), so a
//! user can fix the input without reading the source.
//!
//! The type is opaque, as rust-lang/regex's `Error` is: its fields are
//! private (read through `kind()` and `message()`) and `ErrorKind` is
//! `#[non_exhaustive]`, so a new kind or a richer error (a source, a
//! position) is not a breaking change for callers.

use std::fmt;
use std::path::Path;

/// What went wrong, grouped the way the Python exceptions are grouped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A parameter is out of range or inconsistent (`vocab_size`, a regex, ...).
    Parameter,
    /// An input file or text cannot be read or decoded.
    Input,
    /// A model file is malformed, truncated, or from an unknown version.
    ModelFormat,
    /// Special-token text appeared where it is not allowed.
    SpecialToken,
    /// Training could not proceed (e.g. no usable text).
    Training,
    /// An output could not be written.
    Output,
    /// The run was stopped by the caller (Ctrl-C).
    Interrupted,
}

/// The engine's error: a kind plus a complete, human-readable message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into() }
    }
    /// What kind of error this is (decides the Python exception class).
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    /// The complete message (what was wrong and where).
    pub fn message(&self) -> &str {
        &self.message
    }
    /// The same kind with `context` put before the message (e.g. a file and line).
    pub fn with_context(self, context: impl std::fmt::Display) -> Self {
        Error { kind: self.kind, message: format!("{context}: {}", self.message) }
    }
    pub fn parameter(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Parameter, message)
    }
    pub fn input(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Input, message)
    }
    pub fn model(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::ModelFormat, message)
    }
    pub fn special(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::SpecialToken, message)
    }
    pub fn training(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Training, message)
    }
    pub fn output(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Output, message)
    }
    pub fn interrupted() -> Self {
        Self::new(ErrorKind::Interrupted, "interrupted")
    }
    /// An I/O error while reading `path`, with the OS reason.
    pub fn io_read(path: &Path, err: &std::io::Error) -> Self {
        let reason = match err.kind() {
            std::io::ErrorKind::NotFound => "no such file".to_string(),
            std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
            std::io::ErrorKind::UnexpectedEof => {
                "unexpected end of file (is the compressed file truncated?)".to_string()
            }
            _ => err.to_string(),
        };
        Self::input(format!("cannot read {}: {}", path.display(), reason))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
